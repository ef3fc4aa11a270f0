"""Simulation of N respondents (default 1,000,000) into a fresh database, against a bare executemany INSERT.

Times, each into a fresh SQLite file in a temporary directory with the smoking survey:

  end to end   `python -m survey --db DB simulate smoking-2026 --n N --seed S` (a subprocess;
               start-up included, and also shown minus `python -m survey --version`)
  in process   simulate_column_batches (simulate_columns per --batch) + Store.add_report_columns
  reference    N pre-made rows of the same width (id TEXT, day TEXT and one INTEGER per report
               word) inserted with one executemany into a plain table with an INTEGER PRIMARY KEY
               (rowid), in one transaction, with the Store's PRAGMAs (journal mode, synchronous level, cache)

and prints respondents/s and the ratios (respondents/s ÷ reference rows/s). The reference
rows are built before its clock starts; the simulations draw and randomize inside theirs.

    python bench/simulate.py
    python bench/simulate.py --n 200000
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import numpy as np  # noqa: E402


def reference_insert(path: Path, rows: list[tuple], words: int) -> float:
    """Return the seconds of one executemany of rows into a plain rowid table, in one transaction."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        common.apply_store_pragmas(conn)
        columns = "".join(f", w{i} INTEGER" for i in range(words))
        conn.execute(f"CREATE TABLE t (rowid_ INTEGER PRIMARY KEY, id TEXT NOT NULL, day TEXT NOT NULL{columns})")
        names = "".join(f", w{i}" for i in range(words))
        sql = f"INSERT INTO t (id, day{names}) VALUES ({', '.join('?' * (2 + words))})"
        start = time.perf_counter()
        conn.execute("BEGIN")
        conn.executemany(sql, rows)
        conn.execute("COMMIT")
        elapsed = time.perf_counter() - start
        if conn.execute("SELECT count(*) FROM t").fetchone()[0] != len(rows):
            raise SystemExit("MISMATCH: reference row count")
    finally:
        conn.close()
    return elapsed


def in_process(db: Path, n: int, seed: int, batch: int) -> tuple[float, float]:
    """Return the seconds of simulate_column_batches + add_report_columns of n respondents (like the CLI),
    and the part spent in add_report_columns."""
    from survey.core.simulate import complete_truth, simulate_column_batches
    from survey.store import Store

    design = common.smoking_design()
    store = Store(db)
    try:
        store.create_survey(common.SMOKING_TOML.read_text(encoding="utf-8"), design)
        truth_rng, answer_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
        storing = 0.0
        start = time.perf_counter()
        truth = complete_truth(design, {}, truth_rng)
        for columns in simulate_column_batches(design, truth, n=n, batch=batch, rng=answer_rng):
            stored = time.perf_counter()
            store.add_report_columns(design["slug"], design["hash"], columns)
            storing += time.perf_counter() - stored
        elapsed = time.perf_counter() - start
        if store.response_count(design["slug"]) != n:
            raise SystemExit("MISMATCH: in-process response count")
    finally:
        store.close()
    return elapsed, storing


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--n", type=int, default=1_000_000, help="respondents (default 1000000)")
    parser.add_argument("--batch", type=int, default=100_000,
                        help="respondents per transaction in process (default 100000, the CLI's default)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per timing, best kept (default 1)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300, help="limit of each subprocess, seconds (default 300)")
    parser.add_argument("--tmp", type=Path, default=None, help="directory for the temporary databases")
    args = parser.parse_args(argv)
    common.header("simulate: simulated respondents into a fresh database vs a bare executemany INSERT", args)
    from survey import codec
    from survey.store import Store

    design = common.smoking_design()
    words = sum(codec.word_count(q) for q in design["questions"])
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        tmp = Path(tmp)
        run = iter(range(10**6))

        def fresh(name):
            return tmp / f"{name}-{next(run)}.db"

        def end_to_end():
            db = fresh("cli")
            common.cli(db, "create", str(common.SMOKING_TOML), timeout=args.timeout)
            start = time.perf_counter()
            common.cli(db, "simulate", common.SLUG, "--n", str(args.n), "--seed", str(args.seed),
                       timeout=args.timeout)
            elapsed = time.perf_counter() - start
            store = Store(db)
            try:
                if store.response_count(common.SLUG) != args.n:
                    raise SystemExit("MISMATCH: CLI response count")
            finally:
                store.close()
            return elapsed

        cli = min(end_to_end() for _ in range(args.repeat))
        version, _ = common.best_of(3, lambda: common.timed_cli(fresh("v"), "--version", timeout=args.timeout))
        inproc, storing = min(in_process(fresh("inproc"), args.n, args.seed, args.batch) for _ in range(args.repeat))

        rng = np.random.default_rng(args.seed)
        ids = common_ids(args.n)
        values = rng.integers(0, 2, size=(args.n, words)).tolist()
        rows = [(rid, "2026-11-22", *vals) for rid, vals in zip(ids, values)]
        del values
        reference = min(reference_insert(fresh("ref"), rows, words) for _ in range(args.repeat))

    ref_rate = args.n / reference
    print(f"row width: id, received_day + {words} INTEGER report words")

    def line(name, seconds):
        rate = args.n / seconds
        print(f"{name:<58} {seconds:7.2f} s  {rate:>11,.0f} /s  ratio {rate / ref_rate:6.3f} x reference")

    line(f"reference: executemany INSERT of {args.n:,} rows, rowid table", reference)
    line("in process: simulate_columns + add_report_columns", inproc)
    line("  of which add_report_columns (encode rows, insert, tallies)", storing)
    line("  of which simulate_columns (draw, randomize, check)", inproc - storing)
    line("`ldp-survey simulate` end to end (subprocess)", cli)
    line("  minus `ldp-survey --version` (start-up floor "
         f"{version * 1e3:.0f} ms)", cli - version)
    rate = args.n / cli
    print(f"\ntarget: simulate >= 100,000 respondents/s: {'met' if rate >= 100_000 else 'NOT met'} "
          f"({rate:,.0f}/s end to end, {args.n / inproc:,.0f}/s in process)")


def common_ids(n: int) -> list[str]:
    """Return n random 16-hex-digit ids like the Store's."""
    from survey.store import new_ids

    return new_ids(n)


if __name__ == "__main__":
    try:
        main()
    finally:
        common.footer()
