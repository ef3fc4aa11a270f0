"""What the store makes up for a row: random ids, and the day (the only time it records)."""

from __future__ import annotations

import datetime as dt
import secrets


def today() -> str:
    """Return the current UTC day as YYYY-MM-DD, the only time recorded with a response."""
    return dt.datetime.now(dt.timezone.utc).date().isoformat()


def new_ids(n: int) -> list[str]:
    """Return n random 64-bit response ids as 16 hex digits (their order says nothing of arrival)."""
    raw = secrets.token_bytes(8 * n)
    return [raw[i:i + 8].hex() for i in range(0, 8 * n, 8)]
