"""Tell a database fault (the store cannot take a request now) from a programming error.

``classify`` names the fault in a few words ("disk full", "database locked", ...) for
SQLite's and psycopg 3's exceptions, and returns None for anything else: a bug must stay a
500 and never be answered "try again later". psycopg is imported only when the exception
comes from it, so SQLite users never load it. No Flask here.
"""

from __future__ import annotations

import os
import sqlite3
import sys

DISK_FULL = "disk full"
READ_ONLY = "read-only database"
LOCKED = "database locked"
UNREACHABLE = "database unreachable"
IO_ERROR = "database I/O error"

# SQLite's primary result codes (the low byte of an extended code).
_SQLITE_CODES = {13: DISK_FULL, 8: READ_ONLY, 5: LOCKED, 6: LOCKED, 14: UNREACHABLE, 10: IO_ERROR}
# The same faults by message, for errors raised without a result code.
_SQLITE_MESSAGES = (("database or disk is full", DISK_FULL), ("readonly database", READ_ONLY),
                    ("database is locked", LOCKED), ("database table is locked", LOCKED),
                    ("unable to open database file", UNREACHABLE), ("disk i/o error", IO_ERROR))
# PostgreSQL SQLSTATEs: exact codes first, then classes (the first two characters).
_SQLSTATES = {"53100": DISK_FULL, "25006": READ_ONLY, "55P03": LOCKED, "57P01": UNREACHABLE,
              "57P02": UNREACHABLE, "57P03": UNREACHABLE, "58030": IO_ERROR}
_SQLSTATE_CLASSES = {"08": UNREACHABLE}


def classify(exc: BaseException) -> str | None:
    """Return the fault an exception means ("disk full", ...), or None when it is not a database fault."""
    if isinstance(exc, sqlite3.DatabaseError):
        return _sqlite(exc)
    if type(exc).__module__.partition(".")[0] in ("psycopg", "psycopg_pool"):
        return _psycopg(exc)
    return None


def classify_at(exc: BaseException, path: str) -> str | None:
    """Return ``classify(exc)`` for the database file at ``path``, told by its filesystem when SQLite cannot say.

    SQLite says "unable to open database file" for a WAL database on a read-only
    filesystem, and "disk I/O error" when a full disk leaves no room for its shared-memory
    file: the filesystem's read-only flag and free blocks name those faults.
    """
    cause = classify(exc)
    if cause not in (UNREACHABLE, IO_ERROR):
        return cause
    try:
        disk = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return cause
    if disk.f_flag & os.ST_RDONLY:
        return READ_ONLY
    return DISK_FULL if disk.f_bavail == 0 else cause


def _sqlite(exc: sqlite3.DatabaseError) -> str | None:
    if not isinstance(exc, sqlite3.OperationalError) and type(exc) is not sqlite3.DatabaseError:
        return None  # IntegrityError, ProgrammingError, ...: the request or the code is wrong
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _SQLITE_CODES:
        return _SQLITE_CODES[code & 0xFF]
    message = str(exc).lower()
    return next((cause for text, cause in _SQLITE_MESSAGES if text in message), None)


def _psycopg(exc: BaseException) -> str | None:
    psycopg = sys.modules.get("psycopg")
    if psycopg is None or not isinstance(exc, psycopg.Error):
        return None
    pool = sys.modules.get("psycopg_pool")
    if pool is not None and isinstance(exc, pool.PoolTimeout):
        return UNREACHABLE
    state = exc.sqlstate
    if state is not None:
        return _SQLSTATES.get(state) or _SQLSTATE_CLASSES.get(state[:2])
    # No SQLSTATE: the client failed to reach the server or lost it (refused, closed, timed out).
    return UNREACHABLE if isinstance(exc, psycopg.OperationalError) else None
