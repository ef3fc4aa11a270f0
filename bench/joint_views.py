"""Joint views: the crosstab page, the crosstab API and the regression API of the real server, against GET /healthz.

For each --n (default 1,000,000 and 10,000,000) builds, in a temporary directory, the smoking survey
with n responses stored as demo stores them (`Store.add_report_columns`, batches of 100,000), the
report patterns kept at insert (survey/store/patterns.py); adds a researcher and an API token,
starts `python -m survey --db DB serve --workers W --threads T`, signs in, and times, from one
keep-alive connection, the first view right after a new response (POSTed first), --repeat times,
and the same view computed afresh (each time at a confidence level not asked before, so no cached
result serves it: what a view costs after a release changes the released count):

  crosstab page   GET /surveys/smoking-2026/crosstab?a=smoker&b=lung_disease
  crosstab API    GET /api/surveys/smoking-2026/crosstab?a=smoker&b=cigarettes
  regression API  GET /api/surveys/smoking-2026/regression?outcome=lung_disease&covariates=smoker,cigarettes

References in the same run: GET /healthz on the same server and connection (median of --healthz),
and a bare SQL scan of the same database (SQLite only): `SELECT q0_0, q1_0, count(*) FROM
reports GROUP BY q0_0, q1_0`, which is what every crosstab view cost before the patterns
(median of 3). The insert cost the patterns add: the build's rate (responses/s) at each n, and,
at --ingest-n (default 1,000,000), the same batches stored (`add_report_columns` only, drawn beforehand)
with the patterns on and off (PATTERN_LIMIT 1: no pattern table, no hook), interleaved --ingest-runs times, and
--single one-by-one `add_response` calls on each.
Targets (issue 31): each view under 50 ms at 10M (median), and within 2x of its time at 1M.

    python bench/joint_views.py
    python bench/joint_views.py --n 1000000 --repeat 5
    python bench/joint_views.py --n 200000 --postgres postgresql://postgres@127.0.0.1/postgres
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

EMAIL = "bench@example.org"
PASSWORD = "password123"
TARGET_MS = 50
VIEWS = [("crosstab page", f"/surveys/{common.SLUG}/crosstab?a=smoker&b=lung_disease", "text/html", False),
         ("crosstab API", f"/api/surveys/{common.SLUG}/crosstab?a=smoker&b=cigarettes", "application/json", True),
         ("regression API", f"/api/surveys/{common.SLUG}/regression?outcome=lung_disease&covariates=smoker,cigarettes",
          "application/json", True)]


def bare_scan(db: Path, repeat: int = 3) -> float:
    """Return the median seconds of the GROUP BY over every report that a crosstab view ran before the patterns."""
    design = common.smoking_design()
    conn = sqlite3.connect(db)
    try:
        common.apply_store_pragmas(conn)
        table = f"reports_{design['hash'][:16]}"
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            conn.execute(f'SELECT q0_0, q1_0, count(*) FROM "{table}" WHERE q0_0 IS NOT NULL AND q1_0 IS NOT NULL '
                         "GROUP BY q0_0, q1_0").fetchall()
            times.append(time.perf_counter() - start)
        return common.median(times)
    finally:
        conn.close()


def api_token(db) -> str:
    from survey.store import Store

    store = Store(db)
    try:
        return store.create_token(EMAIL, "bench")[1]
    finally:
        store.close()


def views_at(n: int, args, tmp: Path) -> dict:
    """Build n responses, serve them and time each view after a new response; return the medians (seconds)."""
    with common.database(tmp, f"joint{n}", args.postgres) as db:
        built = common.build_smoking_db(db, n, args.seed, timeout=args.timeout)
        print(f"n = {n:,}: built in {built:.1f} s ({n / built:,.0f} responses/s, patterns kept at insert)")
        common.cli(db, "user", "add", EMAIL, timeout=args.timeout, input=f"{PASSWORD}\n")
        common.cli(db, "share", common.SLUG, EMAIL, timeout=args.timeout)
        token = api_token(db)
        scan = None if args.postgres else bare_scan(Path(db))
        bodies = iter(common.make_bodies(common.smoking_design(), len(VIEWS) * args.repeat + 10, args.seed))
        results = {"n": n, "build_rate": n / built, "scan": scan}
        with common.Server(db, workers=args.workers, threads=args.threads, log=tmp / f"server{n}.log",
                           start_timeout=120) as server:
            researcher = common.sign_in(server.origin, EMAIL, PASSWORD)
            respondent = common.respondent(server.origin)
            health = common.median([researcher.get("/healthz")[3] for _ in range(args.healthz)])
            results["healthz"] = health
            print(f"  GET /healthz median {common.ms(health)}"
                  + ("" if scan is None else f"; bare GROUP BY over the reports {common.ms(scan)} "
                                             f"({scan / health:,.1f} x healthz)"))
            for name, path, kind, api in VIEWS:
                times = []
                for _ in range(args.repeat):
                    status, _ = common.submit(respondent, next(bodies))
                    if status != 201:
                        raise RuntimeError(f"a submission answered {status}")
                    headers = {"Authorization": f"Bearer {token}"} if api else None
                    status, got, body, elapsed = researcher.request("GET", path, headers=headers)
                    if status != 200 or kind not in got.get("Content-Type", ""):
                        raise RuntimeError(f"GET {path} answered {status}: {body[:200]!r}")
                    times.append(elapsed)
                med = common.median(times)
                results[name] = med
                print(f"  {name:<16} first view after a new response: median {common.ms(med)} "
                      f"({med / health:6.1f} x healthz), max {common.ms(max(times))}, n={len(times)}"
                      + ("" if scan is None else f"; {med / scan:.3f} x the bare scan"))
                # Computed afresh: each level is asked once, so the cached result of another cannot serve it
                # (what a view costs after a release, when the released count, and so the key, changes).
                fresh = []
                for index in range(args.repeat):
                    headers = {"Authorization": f"Bearer {token}"} if api else None
                    status, _, body, elapsed = researcher.request(
                        "GET", f"{path}&level={0.95 - 0.001 * (index + 1):.3f}", headers=headers)
                    if status != 200:
                        raise RuntimeError(f"GET {path} answered {status}: {body[:200]!r}")
                    fresh.append(elapsed)
                med = common.median(fresh)
                results[name + " fresh"] = med
                print(f"  {name:<16} computed afresh (a level not asked before): median {common.ms(med)} "
                      f"({med / health:6.1f} x healthz), max {common.ms(max(fresh))}"
                      + ("" if scan is None else f"; {med / scan:.3f} x the bare scan"))
    return results


def ingest(args, tmp: Path) -> None:
    """Build --ingest-n responses with the patterns on and off, interleaved; time --single add_response calls."""
    import numpy as np

    import survey.store.patterns as patterns
    from survey.core.simulate import complete_truth, simulate_report_batches
    from survey.store import Store

    limit = patterns.PATTERN_LIMIT
    rates: dict[str, list[float]] = {"on": [], "off": []}
    single: dict[str, list[float]] = {"on": [], "off": []}
    answers = [json.loads(body)["answers"] for body in common.make_bodies(common.smoking_design(), args.single, 7)]
    for run in range(args.ingest_runs):
        for mode in ("off", "on"):
            patterns.PATTERN_LIMIT = limit if mode == "on" else 1
            patterns._CHOSEN.clear()
            try:
                with common.database(tmp, f"ingest{mode}{run}", args.postgres) as db:
                    common.cli(db, "create", str(common.SMOKING_TOML), timeout=args.timeout)
                    store = Store(db)
                    try:
                        design = store.get_design(common.SLUG)
                        rng = np.random.default_rng(args.seed)
                        truth = complete_truth(design, {}, rng)
                        batches = list(simulate_report_batches(design, truth, n=args.ingest_n, batch=100_000, rng=rng))
                        start = time.perf_counter()
                        for columns, asked in batches:
                            store.add_report_columns(common.SLUG, design["hash"], columns, asked=asked)
                        rates[mode].append(args.ingest_n / (time.perf_counter() - start))
                        start = time.perf_counter()
                        for answer in answers:
                            store.add_response(common.SLUG, design["hash"], answer)
                        single[mode].append(args.single / (time.perf_counter() - start))
                    finally:
                        store.close()
            finally:
                patterns.PATTERN_LIMIT = limit
                patterns._CHOSEN.clear()
    for mode in ("off", "on"):
        print(f"  patterns {mode:>3}: bulk build of {args.ingest_n:,} "
              f"{', '.join(f'{rate:,.0f}' for rate in rates[mode])} responses/s; {args.single:,} add_response "
              f"{', '.join(f'{rate:,.0f}' for rate in single[mode])} /s")
    print(f"  with the patterns / without: bulk {max(rates['on']) / max(rates['off']):.3f} (best of "
          f"{args.ingest_runs} each), {common.median(rates['on']) / common.median(rates['off']):.3f} (medians); "
          f"one by one {max(single['on']) / max(single['off']):.3f} (best), "
          f"{common.median(single['on']) / common.median(single['off']):.3f} (medians)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--n", type=int, nargs="*", default=[1_000_000, 10_000_000],
                        help="responses of each build (default 1000000 10000000; none: only the ingest comparison)")
    parser.add_argument("--repeat", type=int, default=5, help="first views per figure (default 5)")
    parser.add_argument("--healthz", type=int, default=100, help="GET /healthz of the reference (default 100)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default 2)")
    parser.add_argument("--threads", type=int, default=1, help="threads per worker (default 1)")
    parser.add_argument("--ingest-n", type=int, default=1_000_000,
                        help="responses of the ingest comparison (default 1000000; 0 skips it)")
    parser.add_argument("--ingest-runs", type=int, default=2, help="interleaved builds with and without (default 2)")
    parser.add_argument("--single", type=int, default=3000, help="add_response calls timed per ingest build")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800, help="limit of each subprocess, seconds")
    parser.add_argument("--tmp", type=Path, default=None, help="directory for the temporary databases")
    parser.add_argument("--postgres", metavar="URL", default=None, help=common.POSTGRES_HELP)
    args = parser.parse_args(argv)
    common.header("joint views: crosstab page, crosstab API, regression API vs GET /healthz", args)
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=args.tmp)))
        if args.ingest_n:
            ingest(args, tmp)
        found = [views_at(n, args, tmp) for n in args.n]
    if len(found) > 1:
        first, last = found[0], found[-1]
        for name in [view[0] + suffix for view in VIEWS for suffix in ("", " fresh")]:
            ratio = last[name] / first[name]
            met = last[name] * 1e3 < TARGET_MS and ratio <= 2
            print(f"  {name:<22} {last['n']:,}: {common.ms(last[name])}, {ratio:.2f} x its time at {first['n']:,}; "
                  f"target < {TARGET_MS} ms and within 2x: {'met' if met else 'NOT met'}")
    common.footer()


if __name__ == "__main__":
    main()
