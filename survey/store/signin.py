"""Wrong-password counts shared by every server process and the command line (SQL only).

A row counts the failures of one account from one client until it expires: the account
is a SHA-256 of its lower-cased email (so an address someone typed is never kept as
text), or ANY_ACCOUNT for a client's count over every email it tried; the client a keyed
hash made by the web app (``survey.web.throttle``), or ACCOUNT_WIDE for the count over all
clients. No address is stored.
"""

from __future__ import annotations

import hashlib
import sqlite3
from typing import Sequence

# The client key of an account's count over every client.
ACCOUNT_WIDE = ""
# The account key of a client's count over every email (no email's SHA-256 is this short).
ANY_ACCOUNT = "*"


def account_key(email: str) -> str:
    """Return the stored key of an account: the SHA-256 of its trimmed, lower-cased email."""
    return hashlib.sha256(b"ldp-survey sign-in\0" + email.strip().lower().encode("utf-8")).hexdigest()


def reserve(conn: sqlite3.Connection, limits: Sequence[tuple[str, str, int, float]],
            now: float) -> tuple[float, tuple[str, str] | None]:
    """Count one attempt against every (account, client, limit, window) of ``limits`` unless one is full, in the caller's transaction.

    Returns (0, None) when the attempt may go ahead, else (seconds until the full count
    expires, its (account, client) key); a refused attempt counts nothing. Expired rows are deleted.
    """
    conn.execute("DELETE FROM sign_in_failures WHERE expires <= ?", [now])
    for account, client, limit, _ in limits:
        row = conn.execute("SELECT failures, expires FROM sign_in_failures WHERE account = ? AND client = ?",
                           [account, client]).fetchone()
        if row is not None and row[0] >= limit:
            return row[1] - now, (account, client)
    conn.executemany("INSERT INTO sign_in_failures (account, client, failures, expires) VALUES (?, ?, 1, ?) "
                     "ON CONFLICT (account, client) DO UPDATE SET failures = sign_in_failures.failures + 1",
                     [(account, client, now + window) for account, client, _, window in limits])
    return 0.0, None


def forget(conn: sqlite3.Connection, account: str, client: str, shared: Sequence[tuple[str, str]]):
    """Forget one client's failures on an account after it signed in, and its reserved attempt on the ``shared`` counts.

    ``shared`` names the (account, client) keys of the other counts the attempt was
    reserved on (the account-wide count, the client's count over every email).
    """
    conn.execute("DELETE FROM sign_in_failures WHERE account = ? AND client = ?", [account, client])
    conn.executemany("UPDATE sign_in_failures SET failures = failures - 1 WHERE account = ? AND client = ? "
                     "AND failures > 0", list(shared))


def unlock(conn: sqlite3.Connection, account: str) -> int:
    """Forget every failure on an account, from every client; return how many clients had failures counted."""
    clients = conn.execute("SELECT count(*) FROM sign_in_failures WHERE account = ? AND client != ?",
                           [account, ACCOUNT_WIDE]).fetchone()[0]
    conn.execute("DELETE FROM sign_in_failures WHERE account = ?", [account])
    return clients
