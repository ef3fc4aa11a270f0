"""Admit one response at most once: single-use invitation tokens and idempotent submission ids (SQL only).

Both live apart from the reports (docs/explanation/privacy.md). An invitation row
holds the SHA-256 of its token, the survey and the day it was made, and is never changed;
an invitation not yet used also has a row (its hash and survey) in ``unused_invitations``,
and using it *deletes* that row in the transaction that stores the response. Nothing is
written about the use, so no live row carries the transaction (PostgreSQL's ``xmin``)
or the moment of the response: the invitation is used when its unused row is gone. A
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
from collections.abc import Callable

from ..core.design import release_every
from .schema import column_names, pending_table_name, table_name

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
    insert_invitations(conn, slug, tokens, day)
    return tokens


def insert_invitations(conn: sqlite3.Connection, slug: str, tokens: list[str], day: str):
    """Insert the invitations of these tokens (their hashes only) in the caller's transaction."""
    hashes = sorted(invite_hash(token) for token in tokens)
    conn.executemany("INSERT INTO invitations (token_hash, survey, created_day) VALUES (?, ?, ?)",
                     [(key, slug, day) for key in hashes])
    conn.executemany("INSERT INTO unused_invitations (token_hash, survey) VALUES (?, ?)",
                     [(key, slug) for key in hashes])


def invitation_counts(conn: sqlite3.Connection, slug: str) -> tuple[int, int]:
    """Return (invitations made, invitations used) of a survey."""
    made, unused = conn.execute("SELECT (SELECT count(*) FROM invitations WHERE survey = ?), "
                                "(SELECT count(*) FROM unused_invitations WHERE survey = ?)", [slug, slug]).fetchone()
    return made, made - unused


def stored_with_same_answers(execute: Callable, key: str, check: str) -> bool:
    """Return True when the submission id is stored with the same answers (a retry); raise SubmissionConflict otherwise."""
    stored = execute("SELECT answers_check FROM submissions WHERE id_hash = ?", [key]).fetchone()[0]
    if not secrets.compare_digest(stored, check):
        raise SubmissionConflict(
            "this submission id was already stored with different answers; nothing more was stored")
    return True


def claim_submission(conn: sqlite3.Connection, slug: str, key: str, check: str) -> bool:
    """Record a submission id in the caller's transaction; return False when it was stored before with the same answers.

    ``key`` and ``check`` are submission_hash and answers_check, computed before the write
    lock is taken. One INSERT in the usual case of a new id; raises SubmissionConflict when
    the id was stored with other answers. The caller's rollback undoes the claim if the
    response is then refused.
    """
    claimed = conn.execute("INSERT INTO submissions (id_hash, survey, answers_check) VALUES (?, ?, ?) "
                           "ON CONFLICT (id_hash) DO NOTHING", [key, slug, check]).rowcount
    return bool(claimed) or not stored_with_same_answers(conn.execute, key, check)


# A submission with an id and no invitation (the browser's) is one INSERT into a TEMP view of
# the connection, whose INSTEAD OF trigger stores the response and records the id, or neither.
REFUSED = "ldp-survey: the survey is not open or its design was replaced"


def _submit_view(design: dict) -> str:
    return f"submit_{design['hash'][:16]}"


def _submit_columns(design: dict) -> list[str]:
    return ["id_hash", "survey", "answers_check", "design_hash", "id", "received_day", *column_names(design)]


_SUBMIT_SQL: dict[str, str] = {}


def create_submit_view(conn: sqlite3.Connection, design: dict):
    """Give the connection the TEMP view and trigger that ``submit`` inserts into (gone when it closes).

    The trigger refuses (RAISE, so the whole statement stores nothing) a new id for a survey
    that is not open or whose design is no longer this one; stores the row into the report
    table (or the held responses) unless the id is recorded; then records the id, which is
    a no-op for a recorded one. A TEMP trigger may write the main database's tables.
    """
    view, columns = _submit_view(design), _submit_columns(design)
    names = column_names(design)
    table = table_name(design) if release_every(design) == 1 else pending_table_name(design)
    known = "EXISTS (SELECT 1 FROM submissions WHERE id_hash = NEW.id_hash)"
    conn.execute(f'CREATE TEMP VIEW IF NOT EXISTS "{view}" AS SELECT {", ".join(f"NULL AS {c}" for c in columns)}')
    conn.execute(f'CREATE TEMP TRIGGER IF NOT EXISTS "{view}_insert" INSTEAD OF INSERT ON "{view}"\n'
                 f"BEGIN\n"
                 f"  SELECT RAISE(ABORT, '{REFUSED}') WHERE NOT {known} AND NOT EXISTS (SELECT 1 FROM surveys "
                 "WHERE slug = NEW.survey AND design_hash = NEW.design_hash AND status = 'open');\n"
                 f'  INSERT INTO "{table}" (id, received_day{"".join(", " + c for c in names)}) '
                 f'SELECT NEW.id, NEW.received_day{"".join(", NEW." + c for c in names)} WHERE NOT {known};\n'
                 "  INSERT INTO submissions (id_hash, survey, answers_check) "
                 "VALUES (NEW.id_hash, NEW.survey, NEW.answers_check) ON CONFLICT (id_hash) DO NOTHING;\n"
                 "END")


def submit(conn: sqlite3.Connection, execute: Callable, slug: str, design: dict, row: tuple, key: str,
           check: str) -> bool | None:
    """Store one response admitted by a submission id in one statement; return True, False for a retry, None if refused.

    ``row`` is the report table's row, ``key`` and ``check`` as for claim_submission;
    ``execute`` runs a statement, waiting for the write lock. None means nothing was stored
    because the survey is not open or its design was replaced (the caller says which). An
    id stored with other answers raises SubmissionConflict; a collision of the random
    response id raises sqlite3.IntegrityError, as a plain INSERT does.
    """
    sql = _SUBMIT_SQL.get(design["hash"])
    if sql is None:
        columns = _submit_columns(design)
        sql = f'INSERT INTO "{_submit_view(design)}" ({", ".join(columns)}) VALUES ({", ".join("?" * len(columns))})'
        _SUBMIT_SQL[design["hash"]] = sql
    params = (key, slug, check, design["hash"], *row)
    before = conn.total_changes
    for attempt in range(2):
        try:
            execute(sql, params)
            break
        except sqlite3.IntegrityError as exc:
            if REFUSED in str(exc):
                return None
            raise
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            if attempt or _submit_view(design) not in str(exc):
                return None  # the report table is gone: the design was replaced since it was read
            create_submit_view(conn, design)
    if conn.total_changes > before:
        return True
    return not stored_with_same_answers(execute, key, check)


def invitation_status(conn: sqlite3.Connection, slug: str, invite: str) -> str:
    """Return "unused", "used" or "unknown" for an invitation token of a survey: one read, nothing written."""
    key = invite_hash(invite)
    row = conn.execute("SELECT EXISTS (SELECT 1 FROM invitations WHERE token_hash = ? AND survey = ?), "
                       "EXISTS (SELECT 1 FROM unused_invitations WHERE token_hash = ? AND survey = ?)",
                       [key, slug, key, slug]).fetchone()
    if not row[0]:
        return "unknown"
    return "unused" if row[1] else "used"


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
    """Use the invitation (delete its unused row), in the transaction that stored the response it admitted."""
    if invite is None:
        return
    # A deletion, not an update: no live row is written by the transaction that stored the
    # response. Of two submissions racing with one invitation (PostgreSQL runs them at once),
    # the second deletes nothing and is refused, and its transaction rolled back.
    if not conn.execute("DELETE FROM unused_invitations WHERE token_hash = ? AND survey = ?",
                        [invite_hash(invite), slug]).rowcount:
        raise InvitationUsed("this invitation link has already been used to answer; nothing was stored")
