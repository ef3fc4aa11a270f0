"""Bulk storing at 1M and 10M: `demo --no-serve` end to end, and the store's bulk path with sorted and random ids.

For each size N (default 1,000,000 and 10,000,000), each into a fresh SQLite file:

  demo         `python -m survey --db DB demo --no-serve --respondents N --seed 1` (a subprocess):
               wall time, its CPU seconds (user + system) and peak RSS
  sorted ids   in process: simulate_reports batches of 100,000 + Store.add_report_columns with
               ids from survey.store.ids.sorted_id_blocks (what simulate and demo do)
  random ids   the same with fresh random ids per batch (what they did before; --random-ids)
  (--postgres URL: sorted and random ids only, each into a new database at that server; the
  reference is then a placeholder of 1 s and its ratios mean nothing)
  reference    the same number of rows of the same width inserted with executemany into a plain
               rowid table (append only), 100,000 per call, in one transaction, with the Store's
               PRAGMAs; only the executemany calls are timed

Prints respondents/s by wall time and by CPU time, the ratio of each size's rate to the
first size's (the goal: 10M at >= 0.8x the 1M rate) and to the reference of the same size. The
machine may be shared: the CPU rates are those to trust when it is loaded (footer: its load).

    python bench/bulk.py
    python bench/bulk.py --sizes 1000000 --random-ids
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import numpy as np  # noqa: E402

BATCH = 100_000


def cpu() -> float:
    """Return this process's CPU seconds (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def demo(db: Path, n: int, timeout: float) -> tuple[float, float, int]:
    """Return wall seconds, CPU seconds and peak RSS (KiB) of `demo --no-serve --respondents n` (GNU time's)."""
    with tempfile.NamedTemporaryFile("r") as measured:
        subprocess.run([shutil.which("time") or "/usr/bin/time", "-f", "%e %U %S %M", "-o", measured.name,
                        common.PYTHON, "-m", "survey", "--db", str(db), "demo", "--no-serve", "--respondents",
                        str(n), "--seed", "1"], env=common.child_env(), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=timeout, check=True)
        wall, user, system, rss = measured.read().split()[-4:]
    return float(wall), float(user) + float(system), int(rss)


def in_process(db: Path | str, n: int, *, sorted_ids: bool) -> tuple[float, float]:
    """Return wall and CPU seconds of simulating and storing n respondents with add_report_columns."""
    from survey.core.simulate import complete_truth, simulate_reports
    from survey.store import Store
    from survey.store.ids import sorted_id_blocks

    design = common.smoking_design()
    store = Store(db)
    try:
        store.create_survey(common.SMOKING_TOML.read_text(encoding="utf-8"), design)
        rng = np.random.default_rng(1)
        truth = complete_truth(design, {}, rng)
        blocks = sorted_id_blocks(n, BATCH) if sorted_ids else iter(lambda: None, 0)
        start, used = time.perf_counter(), cpu()
        for begin in range(0, n, BATCH):
            columns, asked = simulate_reports(design, truth, min(BATCH, n - begin), rng)
            store.add_report_columns(design["slug"], design["hash"], columns, asked=asked, ids=next(blocks))
        elapsed, used = time.perf_counter() - start, cpu() - used
        if store.received_count(design["slug"]) != n:
            raise SystemExit("MISMATCH: in-process count")
    finally:
        store.close()
    return elapsed, used


def reference(db: Path, n: int, words: int) -> tuple[float, float]:
    """Return wall and CPU seconds of executemany of n rows (made batch by batch, untimed) into a rowid table."""
    from survey.store.ids import new_ids

    conn = sqlite3.connect(db, isolation_level=None)
    try:
        common.apply_store_pragmas(conn)
        columns = "".join(f", w{i} INTEGER" for i in range(words))
        conn.execute(f"CREATE TABLE t (rowid_ INTEGER PRIMARY KEY, id TEXT NOT NULL, day TEXT NOT NULL{columns})")
        sql = f"INSERT INTO t (id, day{''.join(f', w{i}' for i in range(words))}) VALUES ({', '.join('?' * (2 + words))})"
        rng = np.random.default_rng(1)
        elapsed = used = 0.0
        conn.execute("BEGIN")
        for begin in range(0, n, BATCH):
            count = min(BATCH, n - begin)
            rows = [(rid, "2026-11-26", *values) for rid, values in
                    zip(new_ids(count), rng.integers(0, 2, size=(count, words)).tolist())]
            start, before = time.perf_counter(), cpu()
            conn.executemany(sql, rows)
            elapsed, used = elapsed + time.perf_counter() - start, used + cpu() - before
        start, before = time.perf_counter(), cpu()
        conn.execute("COMMIT")
        elapsed, used = elapsed + time.perf_counter() - start, used + cpu() - before
    finally:
        conn.close()
    return elapsed, used


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--random-ids", action="store_true", help="also time the bulk path with random ids")
    parser.add_argument("--no-demo", action="store_true", help="skip the end-to-end demo runs")
    parser.add_argument("--timeout", type=float, default=3600, help="limit of each demo, seconds")
    parser.add_argument("--tmp", type=Path, default=Path("/tmp"), help="directory for the databases")
    parser.add_argument("--postgres", metavar="URL", help="time the bulk path (sorted and random ids) on "
                        "PostgreSQL instead, in databases made and dropped at this server (no demo, no reference)")
    args = parser.parse_args(argv)
    common.header("bulk: storing 1M and 10M respondents (demo, the bulk path with sorted/random ids, reference)",
                  args)
    from survey.core import codec

    words = sum(codec.word_count(q) for q in common.smoking_design()["questions"])
    results: dict[str, dict[int, tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        def fresh(name: str, n: int) -> Path:
            return Path(tmp) / f"{name}-{n}.db"

        def clear():
            for path in Path(tmp).iterdir():
                path.unlink()

        def on_postgres(n: int, sorted_ids: bool):
            with common.database(Path(tmp), "bulk", args.postgres) as url:
                return in_process(url, n, sorted_ids=sorted_ids)

        for n in args.sizes:
            if args.postgres:
                runs = {"reference": lambda: (1.0, 1.0), "sorted ids": lambda: on_postgres(n, True),
                        "random ids": lambda: on_postgres(n, False)}
            else:
                runs = {"reference": lambda: reference(fresh("ref", n), n, words),
                        "sorted ids": lambda: in_process(fresh("sorted", n), n, sorted_ids=True)}
            if args.random_ids and not args.postgres:
                runs["random ids"] = lambda: in_process(fresh("random", n), n, sorted_ids=False)
            if not args.no_demo and not args.postgres:
                runs["demo --no-serve"] = lambda: demo(fresh("demo", n), n, args.timeout)
            for name, run in runs.items():
                result = run()
                clear()
                results.setdefault(name, {})[n] = result
                rss = f"  peak RSS {result[2] / 1024:.0f} MiB" if len(result) > 2 else ""
                print(f"{name:<16} {n:>11,}: {result[0]:8.2f} s wall {n / result[0]:>10,.0f}/s   "
                      f"{result[1]:8.2f} s CPU {n / result[1]:>10,.0f}/s{rss}", flush=True)
    first = args.sizes[0]
    print(f"\nrates against {first:,} (wall, CPU) and against the reference of the same size (wall, CPU):")
    for name, by_size in results.items():
        for n, (wall, used, *_) in by_size.items():
            ref_wall, ref_cpu = results["reference"][n][:2]
            base_wall, base_cpu = by_size[first][:2]
            print(f"{name:<16} {n:>11,}: {(n / wall) / (first / base_wall):5.2f}x {(n / used) / (first / base_cpu):5.2f}x"
                  f"   vs reference {ref_wall / wall:5.3f}x {ref_cpu / used:5.3f}x")
    common.footer()


if __name__ == "__main__":
    main()
