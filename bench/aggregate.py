"""Aggregation of N stored responses (default 1,000,000) against a bare GROUP BY of as many rows (SQLite or PostgreSQL).

Builds a database in a temporary directory with `python -m survey --db DB create
examples/smoking.toml` and `simulate smoking-2026 --n N --seed S`, then times (best of
--repeat, time.perf_counter):

  in process   aggregate_counts(design, Store(db).question_counts(slug))  (tallies kept at insert)
  end to end   `python -m survey --db DB aggregate smoking-2026` (a subprocess), and the same minus
               `python -m survey --version` (the process start-up floor)
  recount      Store.recount(slug): the same counts recomputed by a full scan of the reports
  reference    a bare sqlite3 table t(v INTEGER) of N rows with an index on v (Store's PRAGMAs):
               SELECT v, count(*) FROM t GROUP BY v, once per question of the survey, summed

and prints each one's ratio to the reference. The in-process aggregation is also timed
on a second database of --n-small responses, to show whether its time depends on N.

    python bench/aggregate.py
    python bench/aggregate.py --n 200000 --repeat 3
    python bench/aggregate.py --postgres postgresql://postgres@127.0.0.1/postgres
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import numpy as np  # noqa: E402


def build_reference(path: Path, n: int, values: int, seed: int) -> sqlite3.Connection:
    """Return a connection to a new plain table t(v INTEGER) of n random values in [0, values), indexed on v."""
    conn = sqlite3.connect(path, isolation_level=None)
    common.apply_store_pragmas(conn)
    conn.execute("CREATE TABLE t (v INTEGER)")
    rng = np.random.default_rng(seed)
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO t (v) VALUES (?)", ((v,) for v in rng.integers(0, values, n).tolist()))
    conn.execute("COMMIT")
    conn.execute("CREATE INDEX t_v ON t (v)")
    conn.execute("ANALYZE")
    return conn


def build_reference_postgres(url: str, n: int, values: int, seed: int):
    """Return a psycopg connection to a new plain table t(v BIGINT) of n random values in [0, values), indexed on v."""
    import psycopg

    conn = psycopg.connect(url, autocommit=True)
    conn.execute("CREATE TABLE t (v BIGINT)")
    rng = np.random.default_rng(seed)
    with conn.cursor().copy("COPY t (v) FROM STDIN") as copy:
        for v in rng.integers(0, values, n).tolist():
            copy.write_row((v,))
    conn.execute("CREATE INDEX t_v ON t (v)")
    conn.execute("ANALYZE t")
    return conn


def time_inprocess(db: Path, slug: str, repeat: int):
    """Return (best seconds of question_counts + aggregate_counts, best of recount, rows, both counts)."""
    from survey.core.aggregate import aggregate_counts
    from survey.store import Store

    store = Store(db)
    try:
        design = store.get_design(slug)
        agg, rows = common.best_of(repeat, lambda: aggregate_counts(design, store.question_counts(slug)))
        counts_only, counts = common.best_of(repeat, lambda: store.question_counts(slug))
        debias_only, _ = common.best_of(repeat, lambda: aggregate_counts(design, counts))
        recount, recounted = common.best_of(repeat, lambda: store.recount(slug)) if repeat else (None, None)
        released = store.response_count(slug)
    finally:
        store.close()
    return {"aggregate": agg, "counts": counts_only, "debias": debias_only, "recount": recount,
            "rows": rows, "question_counts": counts, "recounted": recounted, "questions": len(design["questions"]),
            "released": released}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--n", type=int, default=1_000_000, help="simulated responses (default 1000000)")
    parser.add_argument("--n-small", type=int, default=1_000,
                        help="responses in the second database, for the size dependence (default 1000)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per timing, best kept (default 5)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300, help="limit of each subprocess, seconds (default 300)")
    parser.add_argument("--tmp", type=Path, default=None, help="directory for the temporary databases")
    parser.add_argument("--postgres", metavar="URL", default=None,
                        help=common.POSTGRES_HELP + "; the reference is then the same GROUP BY in PostgreSQL")
    args = parser.parse_args(argv)
    common.header("aggregate: aggregation of stored responses vs a bare GROUP BY", args)
    slug = common.SLUG

    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=args.tmp)))
        db = stack.enter_context(common.database(tmp, "bench", args.postgres))
        small = stack.enter_context(common.database(tmp, "small", args.postgres))
        built = common.build_smoking_db(db, args.n, args.seed, timeout=args.timeout)
        common.build_smoking_db(small, args.n_small, args.seed, timeout=args.timeout)
        print(f"built {args.n:,} responses with `create` + `simulate` in {built:.2f} s")

        start = time.perf_counter()
        if args.postgres:
            reference_conn = build_reference_postgres(stack.enter_context(common.database(tmp, "reference",
                                                                                          args.postgres)),
                                                      args.n, values=5, seed=args.seed)
        else:
            reference_conn = build_reference(tmp / "reference.db", args.n, values=5, seed=args.seed)
        print(f"built the reference table t(v) of {args.n:,} rows + index in {time.perf_counter() - start:.2f} s\n")

        big = time_inprocess(db, slug, args.repeat)
        little = time_inprocess(small, slug, args.repeat)
        questions = big["questions"]

        def reference_work():
            for _ in range(questions):
                reference_conn.execute("SELECT v, count(*) FROM t GROUP BY v").fetchall()

        reference, _ = common.best_of(args.repeat, reference_work)
        explain = "EXPLAIN" if args.postgres else "EXPLAIN QUERY PLAN"
        plan = " ".join(str(row[-1]).strip() for row in reference_conn.execute(
            f"{explain} SELECT v, count(*) FROM t GROUP BY v").fetchall())
        reference_conn.close()

        version, _ = common.best_of(args.repeat, lambda: common.timed_cli(db, "--version", timeout=args.timeout))
        cli, _ = common.best_of(args.repeat, lambda: common.timed_cli(db, "aggregate", slug, timeout=args.timeout))

    if big["question_counts"] != big["recounted"]:
        raise SystemExit("MISMATCH: question_counts (tallies) differ from recount (full scan)")
    if big["rows"][0].n != big["released"]:
        raise SystemExit(f"MISMATCH: aggregate saw n = {big['rows'][0].n}, expected {big['released']} (released)")

    def line(name, seconds, note=""):
        print(f"{name:<46} {common.ms(seconds)}   {seconds / reference:9.4f} x reference{note}")

    print(f"reference: {questions} x SELECT v, count(*) FROM t GROUP BY v over {args.n:,} rows "
          f"({plan}) = {common.ms(reference)}  (1.0000 x)")
    line(f"in process, {args.n:,} responses: counts + debias", big["aggregate"])
    line("  of which Store.question_counts", big["counts"])
    line("  of which aggregate_counts", big["debias"])
    line(f"in process, {args.n_small:,} responses: counts + debias", little["aggregate"],
         f"   (size {args.n:,} / {args.n_small:,}: time ratio {big['aggregate'] / little['aggregate']:.2f})")
    line("`ldp-survey aggregate` end to end (subprocess)", cli)
    line("`ldp-survey --version` (start-up floor)", version)
    line("aggregate minus the start-up floor", cli - version)
    line(f"Store.recount (full scan of {args.n:,} reports)", big["recount"])
    ratio = big["aggregate"] / reference
    print(f"\ntarget: aggregation of {args.n:,} responses <= 1.5 x the reference, or constant time: "
          f"{'met' if ratio <= 1.5 else 'NOT met'} ({ratio:.4f} x; recount would be "
          f"{big['recount'] / reference:.2f} x)")
    print("checks: question_counts == recount, and every estimate has n = the released responses: OK")


if __name__ == "__main__":
    try:
        main()
    finally:
        common.footer()
