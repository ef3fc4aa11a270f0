"""Ingest: valid randomized submissions POSTed by wrk to the real server, against GET /healthz on it.

Starts `python -m survey --db DB serve --workers W --threads T` on a fresh SQLite file in
a temporary directory (the smoking survey, no responses), fetches --sessions respondent
sessions (cookie + CSRF token from GET /s/smoking-2026) in Python, writes a wrk Lua
script that cycles --bodies pre-made submissions (survey.simulate.simulate_answers) over
those sessions round-robin and counts response statuses, and runs

  1. wrk POST /s/smoking-2026/responses  for --duration s  (accepted = status 201)
  2. wrk GET /healthz                    for --duration s  (the reference: same server, same wrk settings)

Prints accepted submissions/s, latency p50/p99, non-2xx, the ratio submissions/s ÷
healthz requests/s, the CPU used by wrk and by the server's processes (from
/proc/PID/stat) over each run, and checks that the database holds exactly the accepted
submissions plus the ones wrk had in flight when its clock ran out (the server finishes
those; wrk never reads their answers). --compare runs the whole thing with 1 worker and
with 2 workers. Every subprocess has a hard timeout; the server is stopped with SIGTERM.

    python bench/ingest.py
    python bench/ingest.py --compare
    python bench/ingest.py --workers 1 --threads 8 --connections 32 --duration 5
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

WRK = "/usr/bin/wrk"

LUA = r"""-- Written by bench/ingest.py: MODE %(mode)s.
local sessions = {
%(sessions)s
}
local bodies = {
%(bodies)s
}
local mode = "%(mode)s"
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
   if mode == "post" then
      for k = 1, #bodies do
         local s = sessions[((k - 1 + id * 13) %% #sessions) + 1]
         prepared[k] = wrk.format("POST", path, {["Content-Type"] = "application/json",
                                                  ["X-CSRFToken"] = s[2],
                                                  ["Cookie"] = "session=" .. s[1]}, bodies[k])
      end
   else
      prepared[1] = wrk.format("GET", path)
   end
   nxt = (id * 101) %% #prepared
end

function request()
   sent = sent + 1
   nxt = nxt %% #prepared + 1
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


def write_script(path: Path, mode: str, url_path: str, sessions, bodies) -> None:
    path.write_text(LUA % {
        "mode": mode, "path": url_path,
        "sessions": ",\n".join(f"   {{{lua_string(c)}, {lua_string(t)}}}" for c, t in sessions) or "",
        "bodies": ",\n".join(f"   {lua_string(b.decode())}" for b in bodies) or "",
    })


def run_wrk(server: common.Server, script: Path, url_path: str, args) -> dict:
    """Run wrk against the server; return its Lua summary plus wrk's, the server's and the machine's CPU."""
    command = [WRK, "-t", str(args.wrk_threads), "-c", str(args.connections), "-d", f"{args.duration}s",
               "--timeout", "10s", "--latency", "-s", str(script), f"{server.origin}{url_path}"]
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    before_server = server.cpu_seconds()
    before_busy, before_total = common.machine_busy()
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, timeout=args.duration + 60)
    wall = time.perf_counter() - start
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_cpu = server.cpu_seconds() - before_server
    after_busy, after_total = common.machine_busy()
    if result.returncode != 0:
        raise RuntimeError(f"wrk failed ({result.returncode}): {result.stderr}")
    line = next((l for l in result.stdout.splitlines() if l.startswith("BENCH-JSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no summary:\n{result.stdout}\n{result.stderr}")
    summary = json.loads(line[len("BENCH-JSON "):])
    summary["wrk_cpu"] = ((after_children.ru_utime - before_children.ru_utime)
                          + (after_children.ru_stime - before_children.ru_stime))
    summary["server_cpu"] = server_cpu
    summary["machine_busy"] = after_busy - before_busy
    summary["machine_total"] = after_total - before_total
    summary["wall"] = wall
    summary["stdout"] = result.stdout
    return summary


def describe(name: str, s: dict, *, ok_status: int) -> float:
    """Print one wrk run; return the rate of ok_status answers per second."""
    seconds = s["duration_us"] / 1e6
    ok = s["statuses"].get(str(ok_status), 0)
    rate = ok / seconds
    non2xx = sum(count for status, count in s["statuses"].items() if not status.startswith("2"))
    errors = s["errors"]
    socket_errors = errors["connect"] + errors["read"] + errors["write"] + errors["timeout"]
    cores = s["machine_total"] / s["wall"]
    print(f"{name}: {ok} x {ok_status} in {seconds:.2f} s = {rate:,.0f}/s; "
          f"latency p50 {s['p50_us'] / 1e3:.2f} ms, p90 {s['p90_us'] / 1e3:.2f} ms, "
          f"p99 {s['p99_us'] / 1e3:.2f} ms, max {s['max_us'] / 1e3:.2f} ms; "
          f"non-2xx {non2xx}, socket errors {socket_errors}; statuses {s['statuses']}")
    print(f"    CPU over {s['wall']:.2f} s: wrk {s['wrk_cpu']:.2f} s ({100 * s['wrk_cpu'] / s['wall']:.0f}% of one "
          f"core), server {s['server_cpu']:.2f} s ({100 * s['server_cpu'] / s['wall']:.0f}%), whole machine "
          f"{100 * s['machine_busy'] / s['wall']:.0f}% of {100 * cores:.0f}% (other processes "
          f"{100 * (s['machine_busy'] - s['wrk_cpu'] - s['server_cpu']) / s['wall']:.0f}%)")
    return rate


def run_config(tmp: Path, workers: int, args, design: dict, bodies) -> dict:
    """Run the submission and the healthz benchmarks on a fresh database served with ``workers``."""
    db = tmp / f"ingest-w{workers}.db"
    common.cli(db, "create", str(common.SMOKING_TOML), timeout=60)
    with common.Server(db, workers=workers, threads=args.threads, log=tmp / f"server-w{workers}.log") as server:
        sessions = []
        for _ in range(args.sessions):
            client, token = common.respondent(server.origin)
            sessions.append((client.cookies["session"], token))
            client.close()
        post_path, health_path = f"/s/{common.SLUG}/responses", "/healthz"
        post_script, health_script = tmp / "post.lua", tmp / "healthz.lua"
        write_script(post_script, "post", post_path, sessions, bodies)
        write_script(health_script, "healthz", health_path, [], [])
        # Warm-up (not reported): every worker thread opens its connection and compiles templates.
        warm = argparse.Namespace(**{**vars(args), "duration": 1})
        run_wrk(server, health_script, health_path, warm)
        before = common.response_count(db, common.SLUG)
        posts = run_wrk(server, post_script, post_path, args)
        health = run_wrk(server, health_script, health_path, args)
    # The server has stopped (SIGTERM waits for requests in flight): every answer is on disk.
    stored = common.response_count(db, common.SLUG) - before
    print(f"\n== {workers} worker(s) x {args.threads} threads, wrk -t{args.wrk_threads} -c{args.connections} "
          f"-d{args.duration}s; server exit status {server.exit_status}")
    submit_rate = describe("POST /s/smoking-2026/responses", posts, ok_status=201)
    health_rate = describe("GET /healthz (reference)       ", health, ok_status=200)
    accepted = posts["statuses"].get("201", 0)
    # wrk calls request() once more than it sends (it checks the script's request once on thread 0).
    in_flight = posts["sent"] - 1 - posts["answered"]
    verdict = "OK" if stored == accepted + in_flight else "MISMATCH"
    print(f"stored in the database: {stored} new responses = {accepted} answered 201 + {in_flight} in flight "
          f"when wrk stopped: {verdict}")
    ratio = submit_rate / health_rate
    p99 = posts["p99_us"] / 1e3
    print(f"ratio submissions/s / healthz requests/s = {ratio:.3f}   (target >= 0.5 with p99 < 50 ms: "
          f"{'met' if ratio >= 0.5 and p99 < 50 else 'NOT met'}; p99 {p99:.2f} ms)")
    return {"workers": workers, "submit_rate": submit_rate, "health_rate": health_rate, "ratio": ratio,
            "p50": posts["p50_us"] / 1e3, "p99": p99, "verdict": verdict}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default 2)")
    parser.add_argument("--threads", type=int, default=4, help="threads per worker (default 4)")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections (default 16)")
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run (default 10)")
    parser.add_argument("--wrk-threads", type=int, default=1, help="wrk threads (default 1)")
    parser.add_argument("--sessions", type=int, default=64, help="respondent sessions (cookie + token) (default 64)")
    parser.add_argument("--bodies", type=int, default=300, help="distinct pre-made submissions (default 300)")
    parser.add_argument("--compare", action="store_true", help="run with 1 worker and with 2 workers")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tmp", type=Path, default=None, help="directory for the temporary database")
    args = parser.parse_args(argv)
    if args.connections < args.wrk_threads:
        parser.error("--connections must be at least --wrk-threads")
    common.header("ingest: wrk POST submissions vs GET /healthz on the same server", args)
    design = common.smoking_design()
    bodies = common.make_bodies(design, args.bodies, args.seed)
    results = []
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for workers in ([1, 2] if args.compare else [args.workers]):
            results.append(run_config(Path(tmp), workers, args, design, bodies))
    if len(results) > 1:
        print("\nsummary:")
        for r in results:
            print(f"  {r['workers']} worker(s) x {args.threads} threads: {r['submit_rate']:,.0f} submissions/s "
                  f"(p50 {r['p50']:.2f} ms, p99 {r['p99']:.2f} ms), healthz {r['health_rate']:,.0f}/s, "
                  f"ratio {r['ratio']:.3f}, stored check {r['verdict']}")
        best = max(results, key=lambda r: r["submit_rate"])
        print(f"  faster for submissions here: {best['workers']} worker(s)")
    if any(r["verdict"] != "OK" for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
