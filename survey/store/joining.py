"""Single-use join links that make a colleague a survey's collaborator (SQL only).

A link's token is 256 random bits; only its SHA-256 is stored, with the survey, the
invited email, the owner who made it and the last day (UTC) it works. Using, revoking or
outliving it deletes the row.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import sqlite3

JOIN_DAYS = 7
_FIELDS = ("id", "survey", "email", "invited_by", "expires_day")


def new_token() -> str:
    """Return a new join token: 256 random bits, URL-safe (43 characters)."""
    return secrets.token_urlsafe(32)


def join_hash(token: str) -> str:
    """Return the SHA-256 hex digest of a join token, the only form in which it is stored."""
    return hashlib.sha256(b"ldp-survey join\0" + token.encode("utf-8", "replace")).hexdigest()


def last_day(today: str, days: int = JOIN_DAYS) -> str:
    """Return the last day a link made ``today`` works: ``days`` days later."""
    return (dt.date.fromisoformat(today) + dt.timedelta(days=days)).isoformat()


def purge(conn: sqlite3.Connection, today: str):
    """Delete every link whose last day has passed."""
    conn.execute("DELETE FROM collaborator_invitations WHERE expires_day < ?", [today])


def add(conn: sqlite3.Connection, slug: str, email: str, invited_by: int, today: str) -> tuple[str, dict]:
    """Make a link for ``email`` (replacing any earlier one for that email and survey); return the token and its record."""
    purge(conn, today)
    conn.execute("DELETE FROM collaborator_invitations WHERE survey = ? AND lower(email) = lower(?)", [slug, email])
    token, expires = new_token(), last_day(today)
    row_id = conn.execute("INSERT INTO collaborator_invitations (token_hash, survey, email, invited_by, expires_day) "
                          "VALUES (?, ?, ?, ?, ?) RETURNING id",
                          [join_hash(token), slug, email, invited_by, expires]).fetchone()[0]
    return token, dict(zip(_FIELDS, (row_id, slug, email, invited_by, expires)))


def pending(conn: sqlite3.Connection, slug: str, today: str) -> list[dict]:
    """Return the survey's links that still work, by email."""
    return [dict(zip(_FIELDS, row)) for row in conn.execute(
        f"SELECT {', '.join(_FIELDS)} FROM collaborator_invitations WHERE survey = ? AND expires_day >= ? "
        "ORDER BY lower(email)", [slug, today]).fetchall()]


def find(conn: sqlite3.Connection, token: str, today: str) -> dict | None:
    """Return the record of a link that still works, or None (unknown, used, revoked and expired alike)."""
    row = conn.execute(f"SELECT {', '.join(_FIELDS)} FROM collaborator_invitations "
                       "WHERE token_hash = ? AND expires_day >= ?", [join_hash(token), today]).fetchone()
    return dict(zip(_FIELDS, row)) if row else None


def revoke(conn: sqlite3.Connection, slug: str, invitation_id: int) -> dict | None:
    """Delete one of the survey's links; return its record, or None if it has no such link."""
    row = conn.execute(f"SELECT {', '.join(_FIELDS)} FROM collaborator_invitations WHERE survey = ? AND id = ?",
                       [slug, invitation_id]).fetchone()
    if row is None:
        return None
    conn.execute("DELETE FROM collaborator_invitations WHERE id = ?", [invitation_id])
    return dict(zip(_FIELDS, row))


def use(conn: sqlite3.Connection, invitation_id: int) -> bool:
    """Delete a link once it has been used; return False if another request used it first (PostgreSQL runs them at once)."""
    return bool(conn.execute("DELETE FROM collaborator_invitations WHERE id = ?", [invitation_id]).rowcount)
