"""What the store makes up for a row: random ids, and the day (the only time it records)."""

from __future__ import annotations

import datetime as dt
import math
import secrets
from typing import Iterator

import numpy as np


# The largest id a database INTEGER (SQLite's, PostgreSQL's BIGINT) holds: a larger number names no row.
MAX_ROW_ID = 2**63 - 1


def row_id(value) -> int | None:
    """Return ``value`` (an int, or ASCII digits) as a row id, or None when no row can have it (too large, not a number)."""
    if isinstance(value, str):
        value = int(value) if value.isascii() and value.isdigit() else None
    return value if isinstance(value, int) and 0 <= value <= MAX_ROW_ID else None


def today() -> str:
    """Return the current UTC day as YYYY-MM-DD, the only time recorded with a response."""
    return dt.datetime.now(dt.timezone.utc).date().isoformat()


def new_ids(n: int) -> list[str]:
    """Return n random 64-bit response ids as 16 hex digits (their order says nothing of arrival)."""
    raw = secrets.token_bytes(8 * n)
    return [raw[i:i + 8].hex() for i in range(0, 8 * n, 8)]


def sorted_id_blocks(n: int, size: int) -> Iterator[list[str]]:
    """Yield n random 64-bit ids (16 hex digits) in increasing order, ``size`` at a time (the last block fewer).

    They are distributed as n independent uniform draws, sorted: the key space is cut into 2^m
    equal ranges of about ``size`` ids each, how many fall in each range is drawn range by range
    (a binomial of those left over the ranges left: the multinomial, exactly), and each range's
    ids are drawn uniformly within it and sorted. For a bulk load of simulated respondents, who
    are drawn independently of each other: handing these ids out in order stores every batch
    as one sweep of the random-key B-tree's pages instead of a page per row, and the key order
    still says nothing a response's content or its draw could tell apart. Memory: one range.
    """
    if n < 0 or size < 1:
        raise ValueError("n must be >= 0 and size >= 1")
    rng = np.random.default_rng(secrets.randbits(128))
    ranges_log2 = max(0, math.ceil(math.log2(max(n, 1) / size)))
    ranges, width_log2 = 1 << ranges_log2, 64 - ranges_log2
    left, pending = n, []
    for index in range(ranges):
        count = left if index == ranges - 1 else int(rng.binomial(left, 1 / (ranges - index)))
        left -= count
        low = rng.bit_generator.random_raw(count).astype(np.uint64) >> np.uint64(ranges_log2)
        values = np.sort(low + np.uint64(index << width_log2 if width_log2 < 64 else 0))
        pending.extend(f"{value:016x}" for value in values.tolist())
        while len(pending) >= size:
            yield pending[:size]
            pending = pending[size:]
    if pending:
        yield pending
