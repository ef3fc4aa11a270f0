"""Ingest: valid randomized submissions POSTed by wrk to the real server, against GET /healthz on it.

Starts `python -m survey --db DB serve --workers W --threads T` (--servers of them, on
different ports, against the one database) on a fresh SQLite file in a temporary directory
(the smoking survey, no responses) or on --db, writes a wrk Lua script that cycles --bodies
pre-made submissions (survey.core.simulate.simulate_answers), sent as the respondent page
sends them (JSON, no cookie, no token; each with a fresh random "submission" id, unless
--no-submission-ids), and counts response statuses, warms up for 1 s, then runs --runs
rounds of

  1. wrk POST /s/smoking-2026/responses  for --duration s  (accepted = status 201)
  2. wrk GET /healthz                    for --duration s  (the reference: same servers, same wrk settings)

With several servers each round runs one wrk per server at once (wrk cannot spread one
run over several hosts) and sums their counts. Prints per round accepted submissions/s,
latency p50/p99 (wrk's; per server when there are several), non-2xx, the CPU used by wrk
(getrusage of the children) and by each server process (/proc/PID/stat), how many of wrk's
connections each worker held; then the medians and the ratio submissions/s ÷ healthz
requests/s, and checks that the database holds exactly the accepted submissions plus the
ones wrk had in flight when its clock ran out (the servers finish those; wrk never reads
their answers), counting those held for the survey's next release. Every --reuse-th
request asks for "Connection: close", so wrk reconnects and the kernel shares the
connections anew between the workers: with keep-alive connections opened in one burst, one
gunicorn worker often takes nearly all of them (see --reuse 0). --compare runs everything
with 1 worker and with 2 workers per server. Every subprocess has a hard timeout; the
servers are stopped with SIGTERM.

The defaults (1 server of 2 workers x 1 thread, 16 connections) gave the most
submissions/s with p99 < 50 ms on the 2-core development machine (bench/README.md).

    python bench/ingest.py
    python bench/ingest.py --compare
    python bench/ingest.py --no-submission-ids
    python bench/ingest.py --workers 2 --threads 4 --connections 32 --duration 5 --runs 1
    python bench/ingest.py --servers 2 --workers 1 --connections 8
    python bench/ingest.py --db /tmp/shared.db --servers 2 --workers 1
    python bench/ingest.py --db postgresql://localhost/ldp_bench --servers 3
    python bench/ingest.py --flood database   # the flood limit on, counted in the database
    python bench/ingest.py --lock-waits       # also: time spent polling for the write lock, group commit sizes
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

WRK = "/usr/bin/wrk"

LUA = r"""-- Written by bench/ingest.py: MODE %(mode)s.
local bodies = {
%(bodies)s
}
local mode = "%(mode)s"
local reuse = %(reuse)d
local ids = %(ids)s
local path = "%(path)s"
local threads = {}
local thread_count = 0

function setup(thread)
   thread:set("id", thread_count)
   thread_count = thread_count + 1
   table.insert(threads, thread)
end

function init(args)
   statuses = {}
   sent = 0
   answered = 0
   prepared = {}
   closing = {}
   for k = 1, math.max(#bodies, 1) do
      local headers = {}
      local body = nil
      if mode == "post" then
         headers = {["Content-Type"] = "application/json"}
         body = bodies[k]
      end
      prepared[k] = wrk.format(mode == "post" and "POST" or "GET", path, headers, body)
      headers["Connection"] = "close"
      closing[k] = wrk.format(mode == "post" and "POST" or "GET", path, headers, body)
   end
   nxt = (id * 101) %% #prepared
   -- args[1]: a salt of this wrk process, so that concurrent wrks (--servers) draw different ids.
   math.randomseed(os.time() * 1000 + id * 7919 + (tonumber(args[1]) or 0))
end

function hex16()
   return string.format("%%04x", math.random(0, 65535))
end

function request()
   sent = sent + 1
   nxt = nxt %% #prepared + 1
   local close = reuse > 0 and sent %% reuse == 0
   if ids and mode == "post" then
      -- A fresh 128-bit submission id per request, as the browser makes one per respondent.
      local headers = {["Content-Type"] = "application/json"}
      if close then headers["Connection"] = "close" end
      local submission = ""
      for _ = 1, 8 do submission = submission .. hex16() end
      local body = string.sub(bodies[nxt], 1, -2) .. ',"submission":"' .. submission .. '"}'
      return wrk.format("POST", path, headers, body)
   end
   if close then
      return closing[nxt]
   end
   return prepared[nxt]
end

function response(status, headers, body)
   answered = answered + 1
   statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
   local total, all_sent, all_answered = {}, 0, 0
   for _, t in ipairs(threads) do
      for status, count in pairs(t:get("statuses")) do
         total[tostring(status)] = (total[tostring(status)] or 0) + count
      end
      all_sent = all_sent + t:get("sent")
      all_answered = all_answered + t:get("answered")
   end
   local parts = {}
   for status, count in pairs(total) do
      table.insert(parts, string.format('"%%s": %%d', status, count))
   end
   local e = summary.errors
   io.write(string.format(
      'BENCH-JSON {"duration_us": %%d, "requests": %%d, "bytes": %%d, "sent": %%d, "answered": %%d, ' ..
      '"threads": %%d, "p50_us": %%d, "p90_us": %%d, "p99_us": %%d, "max_us": %%d, "mean_us": %%.1f, ' ..
      '"errors": {"connect": %%d, "read": %%d, "write": %%d, "status": %%d, "timeout": %%d}, ' ..
      '"statuses": {%%s}}\n',
      summary.duration, summary.requests, summary.bytes, all_sent, all_answered, #threads,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
      e.connect, e.read, e.write, e.status, e.timeout, table.concat(parts, ", ")))
end
"""


def lua_string(text: str) -> str:
    """Return text as a Lua long-bracket string literal that cannot be closed early."""
    level = 1
    while f"]{'=' * level}]" in text:
        level += 1
    return f"[{'=' * level}[{text}]{'=' * level}]"


def write_script(path: Path, mode: str, url_path: str, bodies, reuse: int, ids: bool = False) -> None:
    path.write_text(LUA % {
        "mode": mode, "path": url_path, "reuse": reuse, "ids": "true" if ids else "false",
        "bodies": ",\n".join(f"   {lua_string(b.decode())}" for b in bodies) or "",
    })


def run_wrk(servers: list[common.Server], script: Path, url_path: str, args, duration: int | None = None) -> dict:
    """Run one wrk per server, all at once; return their Lua summaries summed, plus wrk's, the servers' and the machine's CPU.

    Each wrk gets --connections connections. The summed summary keeps every wrk's p50 and
    p99 (``p50s_us``, ``p99s_us``); ``p99_us`` is the largest, an upper bound of the p99
    of all requests together (no more than 1% of any wrk's answers took longer). Also
    samples, every 0.5 s, how many of wrk's connections each worker holds (how the
    connections were shared between the workers).
    """
    duration = duration or args.duration
    commands = [[WRK, "-t", str(args.wrk_threads), "-c", str(args.connections), "-d", f"{duration}s",
                 "--timeout", "10s", "--latency", "-s", str(script), f"{server.origin}{url_path}",
                 "--", str(secrets.randbelow(2**31))]
                for server in servers]
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    before_server = [server.cpu_by_process() for server in servers]
    before_busy, before_total = common.machine_busy()
    start = time.perf_counter()
    processes = []
    try:
        for command in commands:
            processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        samples: list[list[dict[int, int]]] = [[] for _ in servers]
        deadline = start + duration - 0.5
        while time.perf_counter() < deadline and all(p.poll() is None for p in processes):
            time.sleep(0.5)
            for server, taken in zip(servers, samples):
                taken.append(server.connections_by_worker())
        outputs = [process.communicate(timeout=duration + 60) for process in processes]
    except BaseException:
        for process in processes:
            process.kill()
            process.wait(timeout=10)
        raise
    wall = time.perf_counter() - start
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    after_server = [server.cpu_by_process() for server in servers]
    after_busy, after_total = common.machine_busy()
    summaries = []
    for process, (stdout, stderr) in zip(processes, outputs):
        if process.returncode != 0:
            raise RuntimeError(f"wrk failed ({process.returncode}): {stderr}")
        line = next((text for text in stdout.splitlines() if text.startswith("BENCH-JSON ")), None)
        if line is None:
            raise RuntimeError(f"wrk printed no summary:\n{stdout}\n{stderr}")
        summaries.append(json.loads(line[len("BENCH-JSON "):]))
    summary = {
        "duration_us": max(s["duration_us"] for s in summaries),
        "sent": sum(s["sent"] for s in summaries), "answered": sum(s["answered"] for s in summaries),
        "wrk_runs": len(summaries),
        "p50s_us": [s["p50_us"] for s in summaries], "p99s_us": [s["p99_us"] for s in summaries],
        "p99_us": max(s["p99_us"] for s in summaries), "max_us": max(s["max_us"] for s in summaries),
        "errors": {kind: sum(s["errors"][kind] for s in summaries) for kind in summaries[0]["errors"]},
        "statuses": {},
    }
    for s in summaries:
        for status, count in s["statuses"].items():
            summary["statuses"][status] = summary["statuses"].get(status, 0) + count
    summary["wrk_cpu"] = ((after_children.ru_utime - before_children.ru_utime)
                          + (after_children.ru_stime - before_children.ru_stime))
    summary["server_cpu"], summary["worker_cpu"], summary["worker_connections"] = 0.0, [], []
    for server, before, after, taken in zip(servers, before_server, after_server, samples):
        per_process = {pid: after[pid] - before.get(pid, 0.0) for pid in after}
        summary["server_cpu"] += sum(per_process.values())
        workers = [pid for pid in sorted(per_process) if pid != server.process.pid]
        summary["worker_cpu"].append([per_process[pid] for pid in workers])
        summary["worker_connections"].append([statistics.mean(sample.get(pid, 0) for sample in taken)
                                              if taken else 0 for pid in workers])
    summary["machine_busy"] = after_busy - before_busy
    summary["machine_total"] = after_total - before_total
    summary["wall"] = wall
    return summary


def describe(name: str, s: dict, *, ok_status: int) -> float:
    """Print one round (one wrk per server); return the rate of ok_status answers per second, summed over the servers."""
    seconds = s["duration_us"] / 1e6
    ok = s["statuses"].get(str(ok_status), 0)
    rate = ok / seconds
    non2xx = sum(count for status, count in s["statuses"].items() if not status.startswith("2"))
    errors = s["errors"]
    socket_errors = errors["connect"] + errors["read"] + errors["write"] + errors["timeout"]
    wall = s["wall"]
    workers = "; ".join(", ".join(f"{100 * cpu / wall:.0f}%" for cpu in server) for server in s["worker_cpu"])
    connections = "; ".join(", ".join(f"{count:.1f}" for count in server) for server in s["worker_connections"])
    if s["wrk_runs"] == 1:
        latency = f"latency p50 {s['p50s_us'][0] / 1e3:.2f} ms, p99 {s['p99_us'] / 1e3:.2f} ms"
    else:
        latency = (f"latency p50 per server {', '.join(f'{p / 1e3:.2f}' for p in s['p50s_us'])} ms, "
                   f"p99 per server {', '.join(f'{p / 1e3:.2f}' for p in s['p99s_us'])} ms")
    print(f"  {name}: {ok} x {ok_status} in {seconds:.2f} s = {rate:,.0f}/s; {latency}, "
          f"max {s['max_us'] / 1e3:.2f} ms; non-2xx {non2xx}, socket errors {socket_errors}")
    print(f"      CPU over {wall:.1f} s: wrk {100 * s['wrk_cpu'] / wall:.0f}% of one core; server "
          f"{100 * s['server_cpu'] / wall:.0f}% (workers {workers}; mean connections held {connections}); "
          f"whole machine {100 * s['machine_busy'] / wall:.0f}% of {100 * s['machine_total'] / wall:.0f}%, "
          f"other processes {100 * (s['machine_busy'] - s['wrk_cpu'] - s['server_cpu']) / wall:.0f}%")
    return rate


def settled_count(db: str) -> int:
    """Return the stored response count once it stopped changing (the warm-up's requests in flight are done)."""
    count = common.received_count(db, common.SLUG)
    for _ in range(100):
        time.sleep(0.2)
        now = common.received_count(db, common.SLUG)
        if now == count:
            return count
        count = now
    raise RuntimeError("the response count kept changing after the warm-up")


def is_url(db: str) -> bool:
    """Return whether --db names a database server (``postgresql://…``) rather than a SQLite file."""
    return "://" in db


def prepare_database(db: str):
    """Create the smoking survey in ``db`` with the CLI unless it is there already (a --db used before)."""
    from survey.store import Store

    if is_url(db) or Path(db).exists():
        store = Store(db)
        try:
            if store.survey_exists(common.SLUG):
                return
        finally:
            store.close()
    common.cli(db, "create", str(common.SMOKING_TOML), timeout=60)


@contextlib.contextmanager
def lock_waits(prefix: Path | None):
    """While servers start inside the block, load bench/lock_waits/sitecustomize.py into them, counting into ``prefix``."""
    if prefix is None:
        yield
        return
    saved = {name: os.environ.get(name) for name in ("PYTHONPATH", "LDP_BENCH_LOCK_WAITS")}
    os.environ["LDP_BENCH_LOCK_WAITS"] = str(prefix)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent / "lock_waits"),
                                                             saved["PYTHONPATH"]]))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def report_lock_waits(prefix: Path, stored: int) -> None:
    """Print the servers' lock-poll sleeps and group commits (all rounds, warm-up included) per stored response."""
    totals = {"sleeps": 0, "slept_s": 0.0, "transactions": 0, "statements": 0}
    for path in prefix.parent.glob(prefix.name + ".*"):
        for key, value in json.loads(path.read_text(encoding="utf-8")).items():
            totals[key] += value
    per = max(stored, 1)
    grouped = (f"; group commit: {totals['statements']:,} statements in {totals['transactions']:,} transactions "
               f"({totals['statements'] / max(totals['transactions'], 1):.2f} a transaction)"
               if totals["transactions"] else "; no group commit")
    print(f" lock waits: {totals['sleeps']:,} sleeps polling for the write lock, {totals['slept_s']:.2f} s in all "
          f"({1e3 * totals['slept_s'] / per:.3f} ms per stored response){grouped}")


def run_config(tmp: Path, workers: int, args, bodies) -> dict:
    """Run --runs rounds of (submissions, healthz) on --servers servers of ``workers`` workers sharing one database.

    The database is --db, else a fresh SQLite file in ``tmp``.
    """
    db = args.db or str(tmp / f"ingest-w{workers}.db")
    prepare_database(db)
    print(f"== {args.servers} server(s) x {workers} worker(s) x {args.threads} threads, one wrk -t{args.wrk_threads} "
          f"-c{args.connections} -d{args.duration}s per server, {args.runs} run(s) of each", flush=True)
    posts, healths = [], []
    flood = (("--max-submissions-per-minute", "0") if args.flood == "off" else
             ("--max-submissions-per-minute", "1000000", "--flood-store", args.flood))
    waits = tmp / f"lock-waits-w{workers}"
    with contextlib.ExitStack() as stack:
        # One after the other: each runs the migrations and reads the session key file as it starts.
        with lock_waits(waits if args.lock_waits else None):
            servers = [stack.enter_context(common.Server(db, workers=workers, threads=args.threads,
                                                         log=tmp / f"server-w{workers}-{n}.log", flood=flood))
                       for n in range(args.servers)]
        for server in servers:
            common.respondent(server.origin).close()
        post_path, health_path = f"/s/{common.SLUG}/responses", "/healthz"
        post_script, health_script = tmp / "post.lua", tmp / "healthz.lua"
        write_script(post_script, "post", post_path, bodies, args.reuse, ids=args.submission_ids)
        write_script(health_script, "healthz", health_path, [], args.reuse)
        # Warm-up (not reported): every worker thread opens its connection and compiles templates.
        run_wrk(servers, health_script, health_path, args, duration=1)
        run_wrk(servers, post_script, post_path, args, duration=1)
        before = settled_count(db)
        for run in range(args.runs):
            print(f" run {run + 1}:")
            posts.append(run_wrk(servers, post_script, post_path, args))
            post_rate = describe("POST /s/smoking-2026/responses", posts[-1], ok_status=201)
            healths.append(run_wrk(servers, health_script, health_path, args))
            health_rate = describe("GET /healthz (reference)      ", healths[-1], ok_status=200)
            posts[-1]["rate"], healths[-1]["rate"] = post_rate, health_rate
            print(f"      ratio {post_rate / health_rate:.3f}", flush=True)
    if not is_url(db):
        wal = Path(f"{db}-wal")
        print(f" WAL file when the server stopped: {wal.stat().st_size / 2**20:.1f} MiB" if wal.exists()
              else " WAL file when the server stopped: none (checkpointed and removed)")
    # The servers have stopped (SIGTERM waits for requests in flight): every answer is stored.
    stored = common.received_count(db, common.SLUG) - before
    accepted = sum(p["statuses"].get("201", 0) for p in posts)
    # Each wrk calls request() once more than it sends (it checks the script's request once, on thread 0).
    in_flight = sum(p["sent"] - p["wrk_runs"] - p["answered"] for p in posts)
    verdict = "OK" if stored == accepted + in_flight else "MISMATCH"
    exits = ", ".join(str(server.exit_status) for server in servers)
    print(f" server exit status {exits}; stored in the database: {stored} new responses = {accepted} "
          f"answered 201 + {in_flight} in flight when wrk stopped: {verdict}")
    if args.lock_waits:
        report_lock_waits(waits, stored)
    submit_rate = statistics.median(p["rate"] for p in posts)
    health_rate = statistics.median(h["rate"] for h in healths)
    ratio = submit_rate / health_rate
    p99s = [p["p99_us"] / 1e3 for p in posts]
    p50s = [statistics.median(p["p50s_us"]) / 1e3 for p in posts]
    met = ratio >= 0.5 and max(p99s) < 50
    print(f" median of {args.runs}: {submit_rate:,.0f} submissions/s (p50 {statistics.median(p50s):.2f} ms, p99 per run "
          f"{', '.join(f'{p:.1f}' for p in p99s)} ms), healthz {health_rate:,.0f}/s; ratio {ratio:.3f}  "
          f"(target >= 0.5 with p99 < 50 ms: {'met' if met else 'NOT met'})\n", flush=True)
    return {"workers": workers, "submit_rate": submit_rate, "health_rate": health_rate, "ratio": ratio,
            "p50": statistics.median(p50s), "p99": max(p99s), "verdict": verdict}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default 2)")
    parser.add_argument("--threads", type=int, default=1, help="threads per worker (default 1)")
    parser.add_argument("--connections", type=int, default=16,
                        help="wrk connections, per server (default 16)")
    parser.add_argument("--servers", type=int, default=1,
                        help="`serve` processes on different ports against the one database, each with "
                             "--workers workers and a wrk of its own, run at once; rates are summed (default 1)")
    parser.add_argument("--db", default=None, metavar="URL_OR_PATH",
                        help="the database the servers share: a SQLite file (the smoking survey is created in "
                             "it unless it is there; responses stored before are left alone) or a "
                             "postgresql:// URL, once that store exists (default: a fresh SQLite file in --tmp)")
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run (default 10)")
    parser.add_argument("--wrk-threads", type=int, default=1, help="wrk threads (default 1)")
    parser.add_argument("--bodies", type=int, default=300, help="distinct pre-made submissions (default 300)")
    parser.add_argument("--submission-ids", action=argparse.BooleanOptionalAction, default=True,
                        help="give every request a fresh random submission id, as the browser does (default); "
                             "--no-submission-ids posts the bodies without one (the path of API clients)")
    parser.add_argument("--reuse", type=int, default=50,
                        help="every REUSE-th request of a wrk thread asks the server to close its connection, "
                             "so wrk reconnects and the connections are shared anew between the workers "
                             "(0: keep every connection for the whole run) (default 50)")
    parser.add_argument("--runs", type=int, default=3,
                        help="rounds of (submissions, healthz); medians are reported (default 3)")
    parser.add_argument("--compare", action="store_true", help="run with 1 worker and with 2 workers")
    parser.add_argument("--synchronous", choices=["NORMAL", "FULL"], default=None,
                        help="the server's LDP_SURVEY_SYNCHRONOUS (default: as in the environment, else the "
                             "Store's default)")
    parser.add_argument("--flood", choices=["off", "memory", "database"], default="off",
                        help="the flood limit: off (default), or on at 1,000,000 a minute (never reached), "
                             "counted in memory or in the database")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tmp", type=Path, default=None, help="directory for the temporary database")
    parser.add_argument("--lock-waits", action="store_true",
                        help="count the servers' sleeps polling for SQLite's write lock and their group commits "
                             "(bench/lock_waits/sitecustomize.py)")
    args = parser.parse_args(argv)
    if args.connections < args.wrk_threads:
        parser.error("--connections must be at least --wrk-threads")
    if args.servers < 1:
        parser.error("--servers must be at least 1")
    if args.synchronous:
        os.environ["LDP_SURVEY_SYNCHRONOUS"] = args.synchronous  # inherited by the server
    common.header("ingest: wrk POST submissions vs GET /healthz on the same server", args)
    design = common.smoking_design()
    bodies = common.make_bodies(design, args.bodies, args.seed)
    results = []
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for workers in ([1, 2] if args.compare else [args.workers]):
            results.append(run_config(Path(tmp), workers, args, bodies))
    if len(results) > 1:
        print("summary:")
        for r in results:
            print(f"  {r['workers']} worker(s) x {args.threads} threads: {r['submit_rate']:,.0f} submissions/s "
                  f"(p50 {r['p50']:.2f} ms, worst run's p99 {r['p99']:.2f} ms), healthz {r['health_rate']:,.0f}/s, "
                  f"ratio {r['ratio']:.3f}, stored check {r['verdict']}")
        best = max(results, key=lambda r: r["submit_rate"])
        print(f"  faster for submissions here: {best['workers']} worker(s)")
    if any(r["verdict"] != "OK" for r in results):
        sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    finally:
        common.footer()
