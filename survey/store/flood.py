"""Submission counts per client and window that every server shares, for the flood limit (SQL only).

A row holds a client's keyed hash (made by the web app, ``survey.web.flood``; its key
changes every window), the window's number and the client's submissions in it, and nothing
else. A row still weighs in the next window's sliding estimate, so it is deleted as soon as
that window is over too: at most two windows (two minutes) after the client was counted.
The statements are portable between SQLite (3.35 or newer, for RETURNING) and PostgreSQL.
"""

from __future__ import annotations

import sqlite3


def take(conn: sqlite3.Connection, client: str, window: int, previous_client: str, limit: int,
         previous_weight: float) -> tuple[bool, int, int]:
    """Count one submission of a client in ``window`` unless that goes over ``limit``, in the caller's transaction.

    ``previous_client`` is the same client's hash under the previous window's key; the
    estimate is ``previous count * previous_weight + count``. Returns (whether it was
    counted, the window's count, the previous window's count); a refused submission counts
    nothing. Rows that no longer weigh in any estimate are deleted first.
    """
    sweep(conn, window)
    row = conn.execute(
        "INSERT INTO flood_counts (client, window_number, count) VALUES (?, ?, 1) "
        "ON CONFLICT (client, window_number) DO UPDATE SET count = flood_counts.count + 1 "
        "RETURNING count, (SELECT previous.count FROM flood_counts AS previous "
        "WHERE previous.client = ? AND previous.window_number = ?)",
        [client, window, previous_client, window - 1]).fetchone()
    current, previous = row[0], row[1] or 0
    if previous * previous_weight + current <= limit:
        return True, current, previous
    conn.execute("UPDATE flood_counts SET count = count - 1 WHERE client = ? AND window_number = ?", [client, window])
    return False, current - 1, previous


def sweep(conn: sqlite3.Connection, window: int) -> int:
    """Delete the rows that no longer weigh in ``window`` (of windows before the previous one); return how many."""
    return conn.execute("DELETE FROM flood_counts WHERE window_number < ?", [window - 1]).rowcount
