"""Time aggregation of N stored responses against a raw SQLite scan of the same rows.

Builds a temporary database with the example smoking survey and N simulated responses,
then reports the best of --repeat runs (time.perf_counter) of:

  raw scan    select answers from responses where survey = ?  (fetch every row; the reference)
  decode      json.loads of every fetched row                  (the floor of any Python aggregation)
  aggregate   aggregate(design, Store.iter_answers(slug))       (JSON decode, count, debias, CIs)
  rows_to_csv formatting the aggregate rows as CSV

and each one's ratio to the raw scan. Run by hand:

  python bench/bench_aggregate.py --n 100000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from survey.aggregate import aggregate, rows_to_csv  # noqa: E402
from survey.definition import parse_definition_toml  # noqa: E402
from survey.design import build_design  # noqa: E402
from survey.resources import resource_dir  # noqa: E402
from survey.simulate import complete_truth, simulate_batches  # noqa: E402
from survey.store import Store  # noqa: E402


def best_of(repeat: int, work) -> tuple[float, object]:
    """Return the shortest wall time of ``repeat`` calls of ``work`` and its last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - start)
    return best, result


def build_database(path: Path, n: int, seed: int) -> tuple[Store, dict]:
    """Create the smoking survey at ``path`` and store n simulated responses."""
    text = (resource_dir("examples") / "smoking.toml").read_text(encoding="utf-8")
    design = build_design(parse_definition_toml(text, source="smoking.toml"))
    store = Store(path)
    store.create_survey(text, design)
    rng = np.random.default_rng(seed)
    truth = complete_truth(design, {}, rng)
    for answers in simulate_batches(design, truth, n=n, batch=10_000, rng=rng):
        store.add_responses(design["slug"], design["hash"], answers)
    return store, design


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="simulated responses (default 100000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing, best kept (default 3)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        store, design = build_database(Path(tmp) / "bench.db", args.n, args.seed)
        print(f"built {args.n} responses in {time.perf_counter() - start:.2f} s")
        slug = design["slug"]
        try:
            raw, fetched = best_of(args.repeat, lambda: store.db.execute(
                "select answers from responses where survey = ?", [slug]).fetchall())
            decode, _ = best_of(args.repeat, lambda: [json.loads(answers) for (answers,) in fetched])
            agg, rows = best_of(args.repeat, lambda: aggregate(design, store.iter_answers(slug)))
            csv_time, _ = best_of(args.repeat, lambda: rows_to_csv(rows))
        finally:
            store.close()
    assert len(fetched) == args.n and rows[0].n == args.n
    print(f"raw scan     {raw * 1e3:9.1f} ms  (reference)")
    print(f"decode       {decode * 1e3:9.1f} ms  ratio {decode / raw:7.2f} x raw scan")
    print(f"aggregate    {agg * 1e3:9.1f} ms  ratio {agg / raw:7.2f} x raw scan")
    print(f"rows_to_csv  {csv_time * 1e3:9.3f} ms  ratio {csv_time / raw:7.4f} x raw scan")


if __name__ == "__main__":
    main()
