"""Admit one response at most once: single-use invitation tokens and idempotent submission ids (SQL only).

Both live apart from the reports (docs/explanation/privacy.md). An invitation row
holds the SHA-256 of its token, the survey, a used flag and the day it was made; a
submission row holds a hash of the browser's random id and a check of its answers salted
by that id, so it cannot be matched to a report by content without the id, which only the
respondent's browser ever knew. Neither holds a response id, and both tables are keyed by
their hash, so their physical order is random, like the reports'.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3

MAX_INVITATIONS = 100_000


class AdmissionError(Exception):
    """A submission is refused before anything is stored; ``status`` is its HTTP status."""

    status = 409
    field = None


class InvitationUnknown(AdmissionError):
    """The invitation token is not one of this survey's (403)."""

    status = 403
    field = "invite"


class InvitationUsed(AdmissionError):
    """The invitation token has already admitted a response (409)."""

    status = 409
    field = "invite"


class SubmissionConflict(AdmissionError):
    """The submission id was stored before with other answers (409)."""

    status = 409
    field = "submission"


def new_token() -> str:
    """Return a new invitation token: 128 random bits, URL-safe (22 characters)."""
    return secrets.token_urlsafe(16)


def invite_hash(token: str) -> str:
    """Return the SHA-256 hex digest of an invitation token, the only form in which it is stored."""
    return hashlib.sha256(b"ldp-survey invitation\0" + token.encode("ascii")).hexdigest()


def submission_hash(slug: str, submission: str) -> str:
    """Return the stored key of a submission id: SHA-256 of the survey and the id."""
    return hashlib.sha256(f"ldp-survey submission\0{slug}\0{submission}".encode("ascii")).hexdigest()


def answers_check(submission: str, answers: dict) -> str:
    """Return the SHA-256 of the answers' canonical JSON salted by the (secret, random) submission id."""
    canonical = json.dumps(answers, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{submission}\0{canonical}".encode("utf-8")).hexdigest()


def add_invitations(conn: sqlite3.Connection, slug: str, count: int, day: str) -> list[str]:
    """Insert ``count`` new invitations of a survey in the caller's transaction; return their tokens."""
    tokens = [new_token() for _ in range(count)]
    conn.executemany("INSERT INTO invitations (token_hash, survey, used, created_day) VALUES (?, ?, 0, ?)",
                     [(invite_hash(token), slug, day) for token in tokens])
    return tokens


def invitation_counts(conn: sqlite3.Connection, slug: str) -> tuple[int, int]:
    """Return (invitations made, invitations used) of a survey."""
    made, used = conn.execute("SELECT count(*), CAST(coalesce(sum(used), 0) AS BIGINT) FROM invitations "
                              "WHERE survey = ?", [slug]).fetchone()
    return made, used


def claim_submission(conn: sqlite3.Connection, slug: str, key: str, check: str) -> bool:
    """Record a submission id in the caller's transaction; return False when it was stored before with the same answers.

    ``key`` and ``check`` are submission_hash and answers_check, computed before the write
    lock is taken. One INSERT in the usual case of a new id; raises SubmissionConflict when
    the id was stored with other answers. The caller's rollback undoes the claim if the
    response is then refused.
    """
    claimed = conn.execute("INSERT INTO submissions (id_hash, survey, answers_check) VALUES (?, ?, ?) "
                           "ON CONFLICT (id_hash) DO NOTHING", [key, slug, check]).rowcount
    if claimed:
        return True
    stored = conn.execute("SELECT answers_check FROM submissions WHERE id_hash = ?", [key]).fetchone()[0]
    if not secrets.compare_digest(stored, check):
        raise SubmissionConflict(
            "this submission id was already stored with different answers; nothing more was stored")
    return False


def invitation_status(conn: sqlite3.Connection, slug: str, invite: str) -> str:
    """Return "unused", "used" or "unknown" for an invitation token of a survey: one read, nothing written."""
    row = conn.execute("SELECT used FROM invitations WHERE token_hash = ? AND survey = ?",
                       [invite_hash(invite), slug]).fetchone()
    if row is None:
        return "unknown"
    return "used" if row[0] else "unused"


def check_invitation(conn: sqlite3.Connection, slug: str, invite: str | None):
    """Raise InvitationUnknown or InvitationUsed unless the token is an unused invitation of the survey."""
    if invite is None:
        return
    status = invitation_status(conn, slug, invite)
    if status == "unknown":
        raise InvitationUnknown("this invitation link is not valid for this survey; nothing was stored")
    if status == "used":
        raise InvitationUsed("this invitation link has already been used to answer; nothing was stored")


def use_invitation(conn: sqlite3.Connection, slug: str, invite: str | None):
    """Mark the invitation used, in the transaction that stored the response it admitted."""
    if invite is None:
        return
    # "AND used = 0": of two submissions racing with one invitation (PostgreSQL runs them at
    # once), the second updates nothing and is refused, and its transaction rolled back.
    if not conn.execute("UPDATE invitations SET used = 1 WHERE token_hash = ? AND survey = ? AND used = 0",
                        [invite_hash(invite), slug]).rowcount:
        raise InvitationUsed("this invitation link has already been used to answer; nothing was stored")
