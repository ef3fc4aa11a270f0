"""Dashboard: results page, results.csv and one question's chart (SVG, PNG) of the real server, against GET /healthz.

Builds, in a temporary directory, a database with the smoking survey and --n simulated
responses (`create` + `simulate`, as bench/aggregate.py) and a survey at the definition
limits (100 choice questions of 64 options, epsilon 20, so 0.2 per question; its TOML is
written next to the database) with --n-limits simulated respondents; adds a researcher
with `user add`, starts `python -m survey --db DB serve --workers W --threads T`, signs in
through POST /login, and times, from one keep-alive connection (ms from sending the
request to the last byte of the answer):

  smoking survey (--n responses), each --repeat times:
    first view after a new response: POST one valid response to /s/smoking-2026/responses,
    then GET the page (so the aggregates are recomputed), for results, results.csv, and the
    chart of one question (cigarettes, 5 options) as SVG and as PNG (each drawn by matplotlib)
    repeat view: GET the page again with no new response
  The dashboard loads each question's chart lazily as an <img>, so a first view costs the
  page plus the charts scrolled into view, each drawn once per change of the data.
  limits survey (100 x 64):
    the very first view after the server started (cold), then first views after a new
    response to it, idle; then the same while another thread submits to the smoking survey
    at --load-rate per second (each on a new connection, so the kernel spreads them over the
    workers), whose latencies p50/p99 are reported for the period before and for the load;
    its charts are those of q000 (64 options); the whole survey in one SVG (chart.svg,
    100 charts) is timed once, cold
  reference: GET /healthz on the same server and connection (median of --healthz requests)

Each figure is printed in ms and as a ratio to the healthz median. The target: results and
results.csv under 200 ms at 1M responses on the first view after a new response.

    python bench/dashboard.py
    python bench/dashboard.py --n 200000 --repeat 5 --n-limits 2000
    python bench/dashboard.py --postgres postgresql://postgres@127.0.0.1/postgres
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

EMAIL = "bench@example.org"
PASSWORD = "password123"
LIMITS_SLUG = "limits-100x64"
TARGET_MS = 200


def limits_toml(questions: int = 100, options: int = 64, epsilon: float = 20.0) -> str:
    """Return a definition at the limits: ``questions`` choice questions of ``options`` options."""
    lines = [f'slug = "{LIMITS_SLUG}"', 'title = "A survey at the definition limits"',
             'description = "100 choice questions of 64 options each, for benchmarks."',
             f"epsilon = {epsilon}", 'allocation = "split"', ""]
    labels = ", ".join(f'"option {k:02d}"' for k in range(options))
    for index in range(questions):
        lines += ["[[questions]]", f'id = "q{index:03d}"', 'kind = "choice"',
                  f'text = "Question {index}: which option?"', f"options = [{labels}]", ""]
    return "\n".join(lines)


class Submitter(threading.Thread):
    """Submit smoking responses at a steady rate, each on a new connection, recording (time, status, seconds)."""

    def __init__(self, origin: str, bodies: list[bytes], rate: float, stop: threading.Event):
        super().__init__(daemon=True)
        self.client = common.respondent(origin)
        self.bodies, self.interval, self.stop = bodies, 1.0 / rate, stop
        self.records: list[tuple[float, int, float]] = []
        self.error: BaseException | None = None

    def run(self):
        try:
            due = time.perf_counter()
            index = 0
            while not self.stop.is_set():
                status, elapsed = common.submit(self.client, self.bodies[index % len(self.bodies)])
                self.records.append((time.perf_counter(), status, elapsed))
                self.client.close()  # each submission on a new connection, like distinct respondents
                index += 1
                due += self.interval
                pause = due - time.perf_counter()
                if pause > 0:
                    self.stop.wait(pause)
                else:
                    due = time.perf_counter()  # behind: carry on at the rate from now, no burst
        except BaseException as exc:  # reported by the main thread
            self.error = exc
        finally:
            self.client.close()

    def between(self, start: float, end: float) -> list[tuple[int, float]]:
        return [(status, elapsed) for at, status, elapsed in self.records if start <= at <= end]


def get_ok(client: common.HttpClient, path: str, kind: str) -> float:
    """GET path, check 200 and the content type; return the seconds."""
    status, headers, body, elapsed = client.get(path)
    content_type = headers.get("Content-Type", "")
    if status != 200 or kind not in content_type or not body:
        raise RuntimeError(f"GET {path} answered {status} {content_type!r} ({len(body)} bytes)")
    return elapsed


PAGES = [("results page", "/surveys/{slug}/results", "text/html"),
         ("results.csv", "/surveys/{slug}/results.csv", "text/csv"),
         ("chart SVG of one question", "/surveys/{slug}/charts/{question}.svg", "image/svg+xml"),
         ("chart PNG of one question", "/surveys/{slug}/charts/{question}.png", "image/png")]
WHOLE = "/surveys/{slug}/chart.svg"
# The question whose chart is timed: 5 options in the smoking survey, 64 in the limits survey.
QUESTION = {common.SLUG: "cigarettes", LIMITS_SLUG: "q000"}


def url(path: str, slug: str) -> str:
    return path.format(slug=slug, question=QUESTION[slug])


def first_after_new(researcher, respondent, bodies, slug, path, kind, repeat) -> list[float]:
    """Return the times of ``repeat`` GETs of ``path``, each right after one new response (201) to ``slug``."""
    times = []
    for _ in range(repeat):
        status, _ = common.submit(respondent, next(bodies), slug=slug)
        if status != 201:
            raise RuntimeError(f"a submission to {slug} answered {status}")
        times.append(get_ok(researcher, url(path, slug), kind))
    return times


def report(name: str, times: list[float], health: float, *, target: bool = False) -> dict:
    med, worst = common.median(times), max(times)
    note = ""
    if target:
        note = f"   target < {TARGET_MS} ms: {'met' if worst * 1e3 < TARGET_MS else 'NOT met'} (max)"
    print(f"  {name:<44} median {common.ms(med)} ({med / health:8.1f} x healthz)  max {common.ms(worst)} "
          f"({worst / health:8.1f} x)  n={len(times)}{note}")
    return {"name": name, "median": med, "max": worst}


def latency_summary(name: str, records: list[tuple[int, float]]) -> None:
    if not records:
        print(f"  {name}: no submissions in this period")
        return
    latencies = [elapsed for _, elapsed in records]
    bad = sum(1 for status, _ in records if status != 201)
    print(f"  {name}: {len(records)} submissions, p50 {common.ms(common.percentile(latencies, 50))}, "
          f"p99 {common.ms(common.percentile(latencies, 99))}, max {common.ms(max(latencies))}, "
          f"non-201 {bad}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--n", type=int, default=1_000_000, help="smoking survey responses (default 1000000)")
    parser.add_argument("--n-limits", type=int, default=10_000,
                        help="respondents of the 100 x 64 survey (default 10000)")
    parser.add_argument("--repeat", type=int, default=9, help="timings per figure (default 9)")
    parser.add_argument("--healthz", type=int, default=200, help="GET /healthz requests of the reference (default 200)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default 2)")
    parser.add_argument("--threads", type=int, default=1, help="threads per worker (default 1, as bench/ingest.py)")
    parser.add_argument("--load-rate", type=float, default=50.0,
                        help="smoking submissions per second during the limits-survey load (default 50)")
    parser.add_argument("--idle-seconds", type=float, default=3.0,
                        help="seconds of submissions alone, before the dashboard load (default 3)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300, help="limit of each subprocess, seconds (default 300)")
    parser.add_argument("--tmp", type=Path, default=None, help="directory for the temporary database")
    parser.add_argument("--postgres", metavar="URL", default=None, help=common.POSTGRES_HELP)
    args = parser.parse_args(argv)
    common.header("dashboard: results page, results.csv and charts vs GET /healthz", args)

    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=args.tmp)))
        db = stack.enter_context(common.database(tmp, "dashboard", args.postgres))
        built = common.build_smoking_db(db, args.n, args.seed, timeout=args.timeout)
        toml = tmp / "limits.toml"
        toml.write_text(limits_toml(), encoding="utf-8")
        start = time.perf_counter()
        common.cli(db, "create", str(toml), timeout=args.timeout)
        common.cli(db, "simulate", LIMITS_SLUG, "--n", str(args.n_limits), "--seed", str(args.seed),
                   timeout=args.timeout)
        limits_built = time.perf_counter() - start
        common.cli(db, "user", "add", EMAIL, timeout=args.timeout, input=f"{PASSWORD}\n")
        for slug in (common.SLUG, LIMITS_SLUG):
            common.cli(db, "share", slug, EMAIL, timeout=args.timeout)
        print(f"built {args.n:,} smoking responses in {built:.1f} s and {args.n_limits:,} responses to the "
              f"100 x 64 survey in {limits_built:.1f} s")
        smoking_bodies = iter(common.make_bodies(common.smoking_design(), len(PAGES) * args.repeat + 10, args.seed))
        limits_design = common.design_of(toml)
        limits_bodies = iter(common.make_bodies(limits_design, 2 * len(PAGES) * args.repeat + 10, args.seed))
        load_bodies = common.make_bodies(common.smoking_design(), 500, args.seed + 1)

        with common.Server(db, workers=args.workers, threads=args.threads, log=tmp / "server.log",
                           start_timeout=120) as server:
            researcher = common.sign_in(server.origin, EMAIL, PASSWORD)
            researcher.timeout = args.timeout
            researcher.close()  # the next request reconnects with that timeout (the cookies stay)
            respondent = common.respondent(server.origin)
            limits_respondent = common.respondent(server.origin, LIMITS_SLUG)

            # The limits survey, the very first time after the server started (nothing cached).
            cold = {name: get_ok(researcher, url(path, LIMITS_SLUG), kind) for name, path, kind in PAGES}
            cold["chart.svg, whole survey in one SVG"] = get_ok(researcher, url(WHOLE, LIMITS_SLUG), "image/svg+xml")

            healthz_times = [get_ok(researcher, "/healthz", "application/json") for _ in range(args.healthz)]
            health = common.median(healthz_times)
            print(f"\nreference GET /healthz: median {common.ms(health)}, p99 "
                  f"{common.ms(common.percentile(healthz_times, 99))} over {args.healthz} requests "
                  f"({args.workers} worker(s) x {args.threads} threads)")

            print(f"\nsmoking survey, {args.n:,} responses (+ the ones added here):")
            results = []
            for name, path, kind in PAGES:
                times = first_after_new(researcher, respondent, smoking_bodies, common.SLUG, path, kind,
                                        args.repeat)
                results.append(report(f"{name}, first view after a new response", times, health,
                                      target="chart" not in name))
                repeat = [get_ok(researcher, url(path, common.SLUG), kind) for _ in range(args.repeat)]
                results.append(report(f"{name}, repeat view", repeat, health))

            print(f"\nlimits survey, 100 questions x 64 options, {args.n_limits:,} responses:")
            print("  first views after the server started, in this order on one connection (one worker): the page "
                  "computes the aggregates, the CSV and the charts reuse them")
            for name in cold:
                print(f"  {name + ', first view (cold)':<44} {common.ms(cold[name])} "
                      f"({cold[name] / health:8.1f} x healthz)")
            for name, path, kind in PAGES:
                times = first_after_new(researcher, limits_respondent, limits_bodies, LIMITS_SLUG,
                                        path, kind, args.repeat)
                report(f"{name}, first view after a new response", times, health)

            print(f"\nthe same while one client submits to the smoking survey at {args.load_rate:g}/s:")
            stop = threading.Event()
            submitter = Submitter(server.origin, load_bodies, args.load_rate, stop)
            submitter.start()
            try:
                idle_start = time.perf_counter()
                time.sleep(args.idle_seconds)
                load_start = time.perf_counter()
                for name, path, kind in PAGES:
                    times = first_after_new(researcher, limits_respondent, limits_bodies,
                                            LIMITS_SLUG, path, kind, args.repeat)
                    report(f"{name}, first view after a new response", times, health)
                load_end = time.perf_counter()
            finally:
                stop.set()
                submitter.join(timeout=60)
            if submitter.error is not None:
                raise submitter.error
            latency_summary(f"submissions before the dashboard load ({load_start - idle_start:.1f} s)",
                            submitter.between(idle_start, load_start))
            latency_summary(f"submissions during the dashboard load ({load_end - load_start:.1f} s)",
                            submitter.between(load_start, load_end))
            for client in (researcher, respondent, limits_respondent):
                client.close()
        print(f"\nserver stopped with SIGTERM, exit status {server.exit_status}")
        worst = max(r["max"] for r in results if "first view" in r["name"] and "chart" not in r["name"])
        print(f"target: results page and results.csv < {TARGET_MS} ms on the first view after a new response at "
              f"{args.n:,} responses: {'met' if worst * 1e3 < TARGET_MS else 'NOT met'} "
              f"(worst {worst * 1e3:.1f} ms)")


if __name__ == "__main__":
    try:
        main()
    finally:
        common.footer()
