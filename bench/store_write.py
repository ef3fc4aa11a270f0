"""Where a submission's time in the store goes: one process, then several storing at once into one SQLite file.

In process, no server: the smoking survey (a release every 370 responses) in a fresh SQLite file, and
`Store.add_submission` called in a loop with the browser's randomized answers and a fresh submission
id each, as the server's hot path calls it.

  one process   per call: median and mean wall time, CPU time; the calls that completed a release
                (their survey then holds none back) apart, and within them the time spent emptying
                the WAL (`_forget_order`): what a release costs the request that completes it, and
                what it adds to every response on average
  P processes   --processes (default 1 2 4) processes, each with its own connection, storing
                --calls responses each at once: submissions/s in all, and its ratio to one process
                (1.0 would mean the write lock costs nothing; the server's workers share it)
  reference     an empty write transaction (BEGIN IMMEDIATE; COMMIT) on the same connection, and
                reading the survey's design (`Store.get_design`, what every submission does first)

The ratios are what to compare between machines; the absolute figures depend on the machine and
its load (footer).

    python bench/store_write.py
    python bench/store_write.py --calls 20000 --processes 1 2
"""

from __future__ import annotations

import argparse
import multiprocessing
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

SLUG = "smoking-2026"


def _answers(design: dict, n: int, seed: int) -> list[dict]:
    """Return n randomized answers of the design, as the browser sends them."""
    import numpy as np

    from survey.core.simulate import complete_truth, simulate_answers

    rng = np.random.default_rng(seed)
    return simulate_answers(design, complete_truth(design, {}, rng), n, rng)


def _open(db: str):
    """Open the Store on ``db`` as a server's worker thread does (no migrations)."""
    from survey.store import Store

    return Store(db, migrate=False)


def _per_call(label: str, calls: int, work) -> float:
    """Run ``work`` ``calls`` times; print and return its mean wall time in seconds."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        work()
    wall, cpu = (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls
    print(f"  {label:46s} wall {1e6 * wall:7.1f} µs  CPU {1e6 * cpu:7.1f} µs")
    return wall


def one_process(db: str, calls: int, seed: int) -> None:
    """Time add_submission per call in this process, releases and WAL emptying apart, against the references."""
    store = _open(db)
    design = store.get_design(SLUG)
    answers = _answers(design, calls, seed)
    print("one process:")

    def empty():
        store.conn.execute("BEGIN IMMEDIATE")
        store.conn.execute("COMMIT")

    empty_wall = _per_call("reference: empty write transaction", 2000, empty)
    _per_call("reference: Store.get_design", 2000, lambda: store.get_design(SLUG))
    forget, emptied = store._forget_order, []

    def timed_forget():
        start = time.perf_counter()
        try:
            return forget()
        finally:
            emptied.append(time.perf_counter() - start)

    store._forget_order = timed_forget
    plain, releasing, cpu = [], [], time.process_time()
    for answer in answers:
        before = len(emptied)
        start = time.perf_counter()
        store.add_submission(SLUG, design["hash"], answer, submission=secrets.token_hex(16))
        took = time.perf_counter() - start
        (releasing if len(emptied) > before else plain).append(took)
    cpu = (time.process_time() - cpu) / calls
    store.close()
    every = plain + releasing
    total = sum(every)
    print(f"  add_submission, {calls:,} calls                  wall median {1e6 * statistics.median(every):.1f} µs, "
          f"mean {1e6 * total / calls:.1f} µs ({total / calls / empty_wall:.1f}x the empty transaction); "
          f"CPU {1e6 * cpu:.1f} µs")
    print(f"    {len(plain):,} calls that held their response: median {1e6 * statistics.median(plain):.1f} µs, "
          f"mean {1e6 * statistics.mean(plain):.1f} µs, p99 {1e6 * common.percentile(plain, 99):.0f} µs")
    if releasing:
        print(f"    {len(releasing):,} calls that completed a release: median {1e3 * statistics.median(releasing):.2f} ms, "
              f"of which emptying the WAL median {1e3 * statistics.median(emptied):.2f} ms")
        print(f"    releases: {100 * sum(releasing) / total:.0f}% of all the time in the store "
              f"(the WAL emptying {100 * sum(emptied) / total:.0f}%), "
              f"{1e6 * sum(releasing) / calls:.1f} µs per response on average")


def _worker(db: str, calls: int, seed: int, start, results) -> None:
    """Store ``calls`` responses once ``start`` is set; put (wall seconds, CPU seconds) on ``results``."""
    store = _open(db)
    design = store.get_design(SLUG)
    answers = _answers(design, calls, seed)
    start.wait()
    wall, cpu = time.perf_counter(), time.process_time()
    for answer in answers:
        store.add_submission(SLUG, design["hash"], answer, submission=secrets.token_hex(16))
    results.put((time.perf_counter() - wall, time.process_time() - cpu))
    store.close()


def processes(db: str, counts: list[int], calls: int, seed: int) -> None:
    """Print submissions/s with P processes storing at once, and each rate's ratio to one process's."""
    context = multiprocessing.get_context("spawn")
    print("processes storing at once (each its own connection, one SQLite file):")
    first = None
    for count in counts:
        start, results = context.Event(), context.Queue()
        workers = [context.Process(target=_worker, args=(db, calls, seed + index, start, results))
                   for index in range(count)]
        for worker in workers:
            worker.start()
        time.sleep(2.0)  # every process has opened the store and drawn its answers
        began = time.perf_counter()
        start.set()
        figures = [results.get() for _ in workers]
        wall = time.perf_counter() - began
        for worker in workers:
            worker.join()
        rate = count * calls / wall
        first = first or rate
        cpu = sum(seconds for _, seconds in figures) / (count * calls)
        print(f"  {count} process(es): {rate:,.0f} submissions/s in all ({rate / first:.2f}x one process); "
              f"per call wall {1e6 * statistics.mean(w for w, _ in figures) / calls:.0f} µs, CPU {1e6 * cpu:.0f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=10_000, help="submissions per process (default 10000)")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4],
                        help="numbers of processes storing at once (default 1 2 4)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tmp", help="directory for the temporary database")
    args = parser.parse_args()
    common.header("store_write: a submission's time in the store, in one process and in several at once", args)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        db = str(Path(tmp) / "store.db")
        common.cli(db, "create", str(common.SMOKING_TOML), timeout=120)
        one_process(db, args.calls, args.seed)
        processes(db, args.processes, args.calls, args.seed + 100)
    common.footer()


if __name__ == "__main__":
    main()
