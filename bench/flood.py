"""Flood limit: the cost of one take() in memory against in the database (SQLite), per submission.

Makes both limiters as the app does (``survey.web.flood``) on a fresh SQLite file in a
temporary directory and times --takes calls of each, from --clients addresses taken in
turn (the limit set high enough that none is refused), --runs times; prints the median
microseconds per take and the rows the database holds at the end.

    python bench/flood.py
    python bench/flood.py --takes 20000 --clients 1000 --synchronous FULL
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from survey.store import Store
from survey.web.db import ThreadStores
from survey.web.flood import DatabaseLimiter, SubmissionLimiter


def time_takes(limiter, addresses: list[str], takes: int) -> float:
    """Return the microseconds per take() over ``takes`` calls cycling through ``addresses``."""
    started = time.perf_counter()
    for n in range(takes):
        assert limiter.take(addresses[n % len(addresses)]) == 0
    return (time.perf_counter() - started) / takes * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--takes", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--synchronous", choices=["NORMAL", "FULL"], default="NORMAL")
    args = parser.parse_args()
    os.environ["LDP_SURVEY_SYNCHRONOUS"] = args.synchronous
    addresses = [f"198.51.{n // 256}.{n % 256}" for n in range(args.clients)]
    per_minute = args.takes * args.runs
    with tempfile.TemporaryDirectory() as directory:
        path = str(Path(directory) / "flood.db")
        Store(path).close()
        stores = ThreadStores(path)
        limiters = {"memory": SubmissionLimiter(per_minute),
                    "database": DatabaseLimiter(per_minute, stores, "bench key " * 4)}
        results = {name: [] for name in limiters}
        for _ in range(args.runs):
            for name, limiter in limiters.items():
                results[name].append(time_takes(limiter, addresses, args.takes))
        rows = stores.get().conn.execute("SELECT count(*) FROM flood_counts").fetchone()[0]
        stores.close_all()
    print(f"SQLite synchronous={args.synchronous}, {args.takes} takes x {args.runs} runs, {args.clients} clients")
    for name, times in results.items():
        print(f"  {name:8}  median {statistics.median(times):8.1f} µs/take  (runs: "
              f"{', '.join(f'{t:.1f}' for t in times)})")
    print(f"  database rows at the end: {rows}")


if __name__ == "__main__":
    main()
