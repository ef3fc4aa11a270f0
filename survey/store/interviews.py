"""Interviewer (handover) sessions: a survey's secret session links, each with its allowance and a count (SQL only).

``Interviews`` is a part of ``Store`` (``base``). A session row holds the SHA-256 of its token
(the token itself is shown once), the survey, a label, the day it was made, the second it
expires, its allowance, ``answered`` (how many responses it admitted) and whether it ended.
A response stores nothing of its session, and the session's count is taken in a transaction
of its own, before the response's (``take_interview``) and given back if the response is then
not stored or was stored before (``give_back_interview``): no transaction writes both, and the
order of the two is then forgotten (``forget_interview_order``).
Migration ``m018_interview_sessions`` is registered here, after the ones of ``schema``.
"""

from __future__ import annotations

import hashlib
import secrets
import time

from ..core import interviews as rules
from . import admission
from .admission import AdmissionError
from .errors import StoreError, StoreUnavailable
from .ids import row_id, today
from .location import is_postgres_url
from .schema import migrations


@migrations()
def m018_interview_sessions(db):
    """Add interviewer sessions: each token's hash, survey, label, day made, expiry, allowance, count and end."""
    db.conn.execute("""CREATE TABLE interview_sessions (
                        id INTEGER PRIMARY KEY,
                        survey TEXT NOT NULL REFERENCES surveys(slug) ON DELETE CASCADE,
                        token_hash TEXT NOT NULL UNIQUE, label TEXT NOT NULL, created_day TEXT NOT NULL,
                        expires_at BIGINT NOT NULL, allowance INTEGER NOT NULL,
                        answered INTEGER NOT NULL DEFAULT 0, ended INTEGER NOT NULL DEFAULT 0 CHECK (ended IN (0, 1)))""")
    db.conn.execute("CREATE INDEX interview_sessions_survey ON interview_sessions (survey)")


class InterviewRefused(AdmissionError):
    """A session cannot admit a response: unknown (403), or ended, expired or used up (410); nothing was stored."""

    field = "interview"

    def __init__(self, message: str, *, state: str):
        super().__init__(message)
        self.state = state
        self.status = 403 if state == "unknown" else 410


REFUSALS = {
    "unknown": "this interviewer session link is not valid for this survey; nothing was stored",
    "ended": "this interviewer session has ended; nothing was stored",
    "expired": "this interviewer session has expired; nothing was stored",
    "used-up": "this interviewer session has used its whole allowance of responses; nothing was stored",
}
_FIELDS = ("id", "label", "created_day", "expires_at", "allowance", "answered", "ended")
_COLUMNS = ", ".join(_FIELDS)


def interview_hash(token: str) -> str:
    """Return the SHA-256 hex digest of a session token, the only form in which it is stored."""
    return hashlib.sha256(b"ldp-survey interview\0" + token.encode("ascii", "replace")).hexdigest()


def _session(row, now: float) -> dict:
    session = dict(zip(_FIELDS, row))
    session["ended"] = bool(session["ended"])
    session["state"] = rules.session_state(session["ended"], session["expires_at"], session["answered"],
                                           session["allowance"], now)
    session["late_sends_until"] = int(rules.late_sends_until(session["expires_at"]))
    return session


class Interviews:
    """A survey's interviewer sessions: start, list, look up, end, and count the responses each admits."""

    def start_interview(self, slug: str, *, label: str = "", hours: int = rules.DEFAULT_HOURS,
                        allowance: int = rules.DEFAULT_ALLOWANCE, now: float | None = None) -> tuple[str, dict]:
        """Start a session of an open survey; return its token (shown once) and the session.

        Raises StoreError for a survey that is not open, or a label, lifetime or allowance out of bounds.
        """
        try:
            label, hours, allowance = rules.check_label(label), rules.check_hours(hours), rules.check_allowance(allowance)
        except ValueError as exc:
            raise StoreError(str(exc)) from None
        if self.survey_status(slug) != "open":
            raise StoreError(f"survey {slug!r} is not open: an interviewer session takes answers for an open survey only")
        now = time.time() if now is None else now
        token = secrets.token_urlsafe(24)
        with self._write() as conn:
            conn.execute("INSERT INTO interview_sessions (survey, token_hash, label, created_day, expires_at, allowance) "
                         "VALUES (?, ?, ?, ?, ?, ?)",
                         [slug, interview_hash(token), label, today(), int(now + hours * 3600), allowance])
        return token, self.interview_session(slug, token, now=now)

    def interview_session(self, slug: str, token: str, *, now: float | None = None) -> dict | None:
        """Return a survey's session of this token with its state, or None when there is none (nothing is written)."""
        if not isinstance(token, str) or not rules.TOKEN_RE.fullmatch(token):
            return None
        row = self._execute(f"SELECT {_COLUMNS} FROM interview_sessions WHERE token_hash = ? AND survey = ?",
                            [interview_hash(token), slug]).fetchone()
        return None if row is None else _session(row, time.time() if now is None else now)

    def interview_sessions(self, slug: str, *, now: float | None = None, late_sends: bool = False) -> list[dict]:
        """Return a survey's sessions that still take new respondents, the newest first.

        With ``late_sends``, also those past their expiry that still store late sends (state
        "late-sends": not ended, expired less than ``rules.EXPIRY_GRACE_HOURS`` ago, allowance left),
        the sessions a researcher may still want to end. Each has its ``late_sends_until``.
        """
        now = time.time() if now is None else now
        after = now - rules.EXPIRY_GRACE_HOURS * 3600 if late_sends else now
        rows = self._execute(f"SELECT {_COLUMNS} FROM interview_sessions WHERE survey = ? AND ended = 0 "
                             "AND expires_at > ? AND answered < allowance ORDER BY id DESC", [slug, after]).fetchall()
        return [_session(row, now) for row in rows]

    def end_interview(self, slug: str, session_id: int) -> bool:
        """End a survey's session by its id (its link stops working); return False when there was none to end."""
        if row_id(session_id) is None:
            return False
        with self._write() as conn:
            return bool(conn.execute("UPDATE interview_sessions SET ended = 1 WHERE id = ? AND survey = ? AND ended = 0",
                                     [session_id, slug]).rowcount)

    def end_interview_token(self, slug: str, token: str) -> bool:
        """End a survey's session by its token (from its own device); return False when there was none to end."""
        if not isinstance(token, str) or not rules.TOKEN_RE.fullmatch(token):
            return False
        with self._write() as conn:
            return bool(conn.execute("UPDATE interview_sessions SET ended = 1 WHERE token_hash = ? AND survey = ? "
                                     "AND ended = 0", [interview_hash(token), slug]).rowcount)

    def take_interview(self, slug: str, token: str, *, now: float | None = None) -> int:
        """Count one response against a session's allowance, in a transaction of its own; return the new count.

        Raises InterviewRefused (nothing counted) unless the session is active, or expired less than
        ``rules.EXPIRY_GRACE_HOURS`` ago (a body randomized offline before the expiry, sent later).
        """
        now = time.time() if now is None else now
        if isinstance(token, str) and rules.TOKEN_RE.fullmatch(token):
            with self._write() as conn:
                row = conn.execute("UPDATE interview_sessions SET answered = answered + 1 WHERE token_hash = ? "
                                   "AND survey = ? AND ended = 0 AND expires_at > ? AND answered < allowance "
                                   "RETURNING answered", [interview_hash(token), slug,
                                                          now - rules.EXPIRY_GRACE_HOURS * 3600]).fetchone()
            if row is not None:
                return row[0]
        session = self.interview_session(slug, token, now=now)
        state = "unknown" if session is None else session["state"]
        raise InterviewRefused(REFUSALS.get(state, REFUSALS["used-up"]), state=state)

    def submission_stored(self, slug: str, submission: str, answers: dict) -> bool:
        """Return whether this submission id was stored with these answers (a retry); nothing is written."""
        row = self._execute("SELECT answers_check FROM submissions WHERE id_hash = ?",
                            [admission.submission_hash(slug, submission)]).fetchone()
        return row is not None and secrets.compare_digest(row[0], admission.answers_check(submission, answers))

    def forget_interview_order(self) -> bool:
        """Forget which write came after a session's count: empty SQLite's WAL, vacuum the sessions on PostgreSQL.

        The WAL holds the pages written since it was last emptied in the order written, the
        session's count beside the response that followed it; PostgreSQL keeps a counted row's
        old versions until a vacuum (best effort, as for invitations: ``_forget_order``).
        """
        if not is_postgres_url(self.path):
            return self._forget_order()
        try:
            self._execute("VACUUM (SKIP_LOCKED) interview_sessions")
        except StoreUnavailable:
            return False
        return True

    def give_back_interview(self, slug: str, token: str) -> int:
        """Undo one take_interview (the response was not stored, or was stored before); return the new count."""
        with self._write() as conn:
            row = conn.execute("UPDATE interview_sessions SET answered = answered - 1 WHERE token_hash = ? "
                               "AND survey = ? AND answered > 0 RETURNING answered",
                               [interview_hash(token), slug]).fetchone()
        return 0 if row is None else row[0]
