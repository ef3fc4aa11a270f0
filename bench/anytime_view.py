"""Anytime intervals on the results page: a 128-option question at 100,000 responses, against GET /healthz.

Builds, in a temporary directory, a survey of one choice question of --options options (epsilon
--epsilon) with --n simulated responses (as bench/dashboard.py does), adds a researcher, starts
`python -m survey --db DB serve --workers W --threads T`, signs in, and times from one keep-alive
connection (ms from sending the request to the last byte of the answer):

  first view after a new response: POST one valid response, then GET the results page with
  ?intervals=anytime (the confidence sequences and the consistent view computed again), --repeat times;
  the same with the fixed-n intervals (the default);
  reference: GET /healthz on the same server and connection (median of --healthz requests).

The first view of all (nothing cached in the worker) is printed apart. The target (issue 31):
under 50 ms after a new response.

    python bench/anytime_view.py
    python bench/anytime_view.py --n 100000 --options 128 --repeat 9 --epsilon 0.5
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from dashboard import EMAIL, PASSWORD, get_ok  # noqa: E402

SLUG = "anytime-128"
TARGET_MS = 50


def survey_toml(options: int, epsilon: float) -> str:
    """Return a definition of one choice question of ``options`` options."""
    labels = ", ".join(f'"option {k:03d}"' for k in range(options))
    # Released after every response: with the default batches a new response is held and the page is not recomputed.
    return "\n".join([f'slug = "{SLUG}"', "release_every = 1", 'title = "One question of many options"',
                      f"epsilon = {epsilon}", "",
                      "[[questions]]", 'id = "q"', 'kind = "choice"', 'text = "Which option?"',
                      f"options = [{labels}]", ""])


def view(client: common.HttpClient, path: str, total: int) -> float:
    """GET the results page, check it is computed from ``total`` responses (the new one counted); return the seconds."""
    status, headers, body, elapsed = client.get(path)
    if status != 200 or "text/html" not in headers.get("Content-Type", ""):
        raise RuntimeError(f"GET {path} answered {status}")
    if f"{total:,} responses".encode() not in body:
        raise RuntimeError(f"GET {path} does not show {total:,} responses: the new response was not counted")
    return elapsed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="simulated responses (default 100000)")
    parser.add_argument("--options", type=int, default=128, help="options of the question (default 128)")
    parser.add_argument("--epsilon", type=float, default=1.0, help="the survey's epsilon (default 1)")
    parser.add_argument("--repeat", type=int, default=9, help="timings per figure (default 9)")
    parser.add_argument("--healthz", type=int, default=200, help="GET /healthz requests of the reference (default 200)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default 2)")
    parser.add_argument("--threads", type=int, default=8, help="threads per worker (default 8, as serve)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300, help="limit of each subprocess, seconds (default 300)")
    parser.add_argument("--tmp", type=Path, default=None, help="directory for the temporary database")
    args = parser.parse_args(argv)
    common.header("anytime view: results page ?intervals=anytime after a new response vs GET /healthz", args)

    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=args.tmp)))
        db = tmp / "anytime.db"
        toml = tmp / "anytime.toml"
        toml.write_text(survey_toml(args.options, args.epsilon), encoding="utf-8")
        built = common.build_survey_db(db, toml, args.n, args.seed, timeout=args.timeout)
        common.cli(db, "user", "add", EMAIL, timeout=args.timeout, input=f"{PASSWORD}\n")
        common.cli(db, "share", SLUG, EMAIL, timeout=args.timeout)
        print(f"built {args.n:,} responses in {built:.1f} s")
        bodies = iter(common.make_bodies(common.design_of(toml), 3 * args.repeat + 10, args.seed))
        with common.Server(db, workers=args.workers, threads=args.threads, log=tmp / "server.log",
                           start_timeout=120) as server:
            researcher = common.sign_in(server.origin, EMAIL, PASSWORD)
            respondent = common.respondent(server.origin, SLUG)
            page = f"/surveys/{SLUG}/results"
            cold = get_ok(researcher, page + "?intervals=anytime", "text/html")
            healthz = [get_ok(researcher, "/healthz", "application/json") for _ in range(args.healthz)]
            health = common.median(healthz)
            print(f"\nreference GET /healthz: median {common.ms(health)} over {args.healthz} requests")
            print(f"  first view of all (cold), anytime: {common.ms(cold)} ({cold / health:.1f} x healthz)")
            total = args.n
            for name, query in (("anytime", "?intervals=anytime"), ("fixed", "")):
                times = []
                for _ in range(args.repeat):
                    status, _ = common.submit(respondent, next(bodies), slug=SLUG)
                    if status != 201:
                        raise RuntimeError(f"a submission answered {status}")
                    total += 1
                    times.append(view(researcher, page + query, total))
                med, worst = common.median(times), max(times)
                verdict = "met" if med * 1e3 < TARGET_MS else "NOT met"
                print(f"  results page, {name} intervals, first view after a new response: median {common.ms(med)} "
                      f"({med / health:.1f} x healthz), max {common.ms(worst)}; target < {TARGET_MS} ms (median): "
                      f"{verdict}")
    common.footer()


if __name__ == "__main__":
    main()
