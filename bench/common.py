"""Helpers shared by the benchmarks: the real CLI and server as subprocesses, HTTP sessions, timing.

Nothing here is a test. Every subprocess is started with a hard timeout and every server
is stopped with SIGTERM (then SIGKILL if it overstays) when the benchmark ends.
"""

from __future__ import annotations

import datetime as dt
import http.client
import http.cookies
import json
import os
import platform
import queue
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

PYTHON = sys.executable
SLUG = "smoking-2026"
SMOKING_TOML = ROOT / "examples" / "smoking.toml"
CLK_TCK = os.sysconf("SC_CLK_TCK")
CSRF_INPUT = re.compile(r'<input[^>]*name="csrf_token"[^>]*value="([^"]+)"')


def child_env() -> dict:
    """Return the environment for subprocesses: this working tree first on PYTHONPATH."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(ROOT) + (os.pathsep + path if path else "")}


def store_pragmas() -> dict:
    """Return the PRAGMAs a Store connection runs with here (journal_mode, synchronous, cache_size)."""
    import tempfile

    from survey.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "pragmas.db", migrate=False)
        try:
            return {name: store.conn.execute(f"PRAGMA {name}").fetchone()[0]
                    for name in ("journal_mode", "synchronous", "cache_size")}
        finally:
            store.close()


def apply_store_pragmas(conn: sqlite3.Connection) -> None:
    """Give a plain sqlite3 connection the same journal mode, synchronous level and cache as a Store's."""
    for name, value in store_pragmas().items():
        conn.execute(f"PRAGMA {name} = {value}")


SYNCHRONOUS_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def header(title: str, args) -> None:
    """Print what was run, where, and on how many cores."""
    import survey

    print(f"# {title}")
    print(f"date {dt.date.today().isoformat()}  os.cpu_count() = {os.cpu_count()}  "
          f"python {platform.python_version()}  sqlite {sqlite3.sqlite_version}  "
          f"numpy {np.__version__}")
    print(f"survey package: {Path(survey.__file__).parent}")
    pragmas = store_pragmas()
    print(f"Store PRAGMAs here: journal_mode={pragmas['journal_mode']} "
          f"synchronous={SYNCHRONOUS_NAMES.get(pragmas['synchronous'], pragmas['synchronous'])} "
          f"cache_size={pragmas['cache_size']} (LDP_SURVEY_SYNCHRONOUS={os.environ.get('LDP_SURVEY_SYNCHRONOUS')})")
    print(f"options: {vars(args)}")
    print(flush=True)
    global _START
    _START = (time.perf_counter(), machine_busy(), own_cpu_seconds())


_START: tuple | None = None


def own_cpu_seconds() -> float:
    """Return the CPU seconds of this process and of its children that have been waited for."""
    import resource

    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def footer() -> None:
    """Print how busy the whole machine was since header(), and how much of that was this benchmark."""
    if _START is None:
        return
    wall = time.perf_counter() - _START[0]
    (busy, total), own = machine_busy(), own_cpu_seconds()
    busy -= _START[1][0]
    total -= _START[1][1]
    own -= _START[2]
    print(f"\nwhole machine during this benchmark ({wall:.0f} s): busy {100 * busy / wall:.0f}% of "
          f"{100 * total / wall:.0f}%; this benchmark and its subprocesses {100 * own / wall:.0f}%, "
          f"other processes {100 * (busy - own) / wall:.0f}%")


def cli(db: str | Path, *args: str, timeout: float, input: str | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m survey --db DB ARGS`` to completion (killed after ``timeout`` s); raise on failure."""
    command = [PYTHON, "-m", "survey", "--db", str(db), *args]
    result = subprocess.run(command, env=child_env(), capture_output=True, text=True, input=input,
                            timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return result


def timed_cli(db: str | Path, *args: str, timeout: float) -> float:
    """Return the wall time of one ``python -m survey`` run (start-up included)."""
    start = time.perf_counter()
    cli(db, *args, timeout=timeout)
    return time.perf_counter() - start


def best_of(repeat: int, work: Callable[[], object]) -> tuple[float, object]:
    """Return the shortest wall time of ``repeat`` calls of ``work`` and its last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - start)
    return best, result


def percentile(values, q: float) -> float:
    """Return the q-th percentile (0-100) of values, linear interpolation (numpy's default)."""
    return float(np.percentile(np.asarray(values, dtype=float), q))


def smoking_design() -> dict:
    """Return the design of examples/smoking.toml (the hash the server will have)."""
    from survey.core.definition import parse_definition_toml
    from survey.core.design import build_design

    text = SMOKING_TOML.read_text(encoding="utf-8")
    return build_design(parse_definition_toml(text, source=str(SMOKING_TOML)))


def design_of(toml: Path) -> dict:
    """Return the design of a definition file."""
    from survey.core.definition import parse_definition_toml
    from survey.core.design import build_design

    return build_design(parse_definition_toml(toml.read_text(encoding="utf-8"), source=str(toml)))


def make_bodies(design: dict, n: int, seed: int) -> list[bytes]:
    """Return n valid randomized submissions of the design as JSON bodies."""
    from survey.core.simulate import complete_truth, simulate_answers

    rng = np.random.default_rng(seed)
    answers = simulate_answers(design, complete_truth(design, {}, rng), n, rng)
    return [json.dumps({"design": design["hash"], "answers": a}, separators=(",", ":")).encode()
            for a in answers]


def build_survey_db(db: Path, toml: Path, n: int, seed: int, *, timeout: float) -> float:
    """Create the survey of ``toml`` in ``db`` with the CLI and store n simulated respondents as its real responses.

    `ldp-survey simulate` keeps simulated respondents in the survey's sandbox, where the dashboard
    and the aggregates never read them; the benchmarks need them as responses, so they are drawn
    as `simulate` draws them and stored with `Store.add_report_columns`, as `demo` does.
    Returns the seconds the whole build took.
    """
    from survey.core.simulate import complete_truth, simulate_report_batches
    from survey.store import Store

    start = time.perf_counter()
    cli(db, "create", str(toml), timeout=timeout)
    design = design_of(toml)
    slug = design["slug"]
    rng = np.random.default_rng(seed)
    store = Store(db)
    try:
        truth = complete_truth(design, {}, rng)
        for columns, asked in simulate_report_batches(design, truth, n=n, batch=100_000, rng=rng):
            store.add_report_columns(slug, design["hash"], columns, asked=asked)
        count = store.response_count(slug)
    finally:
        store.close()
    elapsed = time.perf_counter() - start
    if count != n:
        raise RuntimeError(f"expected {n} responses in {db}, found {count}")
    return elapsed


def build_smoking_db(db: Path, n: int, seed: int = 1, *, timeout: float = 600) -> float:
    """Create the smoking survey in ``db`` with n simulated respondents (CLI); return the seconds."""
    return build_survey_db(db, SMOKING_TOML, n, seed, timeout=timeout)


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# Processes and CPU time (Linux /proc)

def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()  # fields from 3 (state) on


def children_of(pid: int) -> list[int]:
    """Return the pids whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields and int(fields[1]) == pid:
                found.append(int(entry))
    return found


def cpu_seconds(pids) -> float:
    """Return the user+system CPU seconds used so far by the live processes ``pids`` (all their threads)."""
    total = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields:
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / CLK_TCK


def socket_inodes(pid: int) -> set[str]:
    """Return the inodes of the sockets the process has open (its /proc/PID/fd links to socket:[INODE])."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        pass
    return inodes


def established_inodes(port: int) -> set[str]:
    """Return the inodes of the ESTABLISHED TCP sockets whose local port is ``port`` (server side)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def machine_busy() -> tuple[float, float]:
    """Return (busy, total) CPU seconds of the whole machine so far, summed over cores (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    total = sum(values[:8])
    return (total - idle) / CLK_TCK, total / CLK_TCK


class Server:
    """``python -m survey --db DB serve`` on 127.0.0.1 as a subprocess, ready once it printed "Serving".

    Use as a context manager; on exit it is stopped with SIGTERM and given ``stop_timeout``
    seconds before SIGKILL (of the master and its workers).
    """

    def __init__(self, db: Path, *, workers: int, threads: int, log: Path, start_timeout: float = 60,
                 stop_timeout: float = 40, flood: tuple[str, ...] = ("--max-submissions-per-minute", "0")):
        self.db, self.workers, self.threads, self.flood = db, workers, threads, flood
        self.log_path, self.start_timeout, self.stop_timeout = log, start_timeout, stop_timeout
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.worker_pids: list[int] = []
        self.exit_status: int | None = None

    def __enter__(self) -> "Server":
        self.log = open(self.log_path, "ab")
        # By default no flood limit: wrk sends thousands of submissions a second from one address.
        command = [PYTHON, "-m", "survey", "--db", str(self.db), "serve", "--host", "127.0.0.1",
                   "--port", str(self.port), "--workers", str(self.workers), "--threads", str(self.threads),
                   *self.flood]
        self.process = subprocess.Popen(command, env=child_env(), stdout=subprocess.PIPE, stderr=self.log)
        lines: queue.Queue = queue.Queue()

        def drain():
            for line in self.process.stdout:
                lines.put(line.decode(errors="replace"))
            lines.put(None)

        threading.Thread(target=drain, daemon=True).start()
        deadline = time.monotonic() + self.start_timeout
        try:
            while True:
                try:
                    line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
                except queue.Empty:
                    raise RuntimeError(f"no 'Serving' line within {self.start_timeout} s") from None
                if line is None:
                    raise RuntimeError(f"server exited ({self.process.wait()}); see {self.log_path}")
                if line.startswith("Serving"):
                    break
            # "Serving" is printed when the master listens; wait until every worker answers.
            while len(self.worker_pids) < self.workers:
                if time.monotonic() > deadline:
                    raise RuntimeError("workers did not start in time")
                self.worker_pids = children_of(self.process.pid)
                time.sleep(0.05)
            for _ in range(4 * self.workers):
                status = HttpClient(self.origin, timeout=max(1.0, deadline - time.monotonic())).get("/healthz")[0]
                if status != 200:
                    raise RuntimeError(f"/healthz answered {status}")
        except BaseException:
            self._stop()
            raise
        return self

    def pids(self) -> list[int]:
        """Return the master's and the workers' pids (as now)."""
        return [self.process.pid, *children_of(self.process.pid)]

    def cpu_seconds(self) -> float:
        """Return the CPU seconds used so far by the master and its live workers."""
        return cpu_seconds(self.pids())

    def cpu_by_process(self) -> dict[int, float]:
        """Return the CPU seconds used so far by each of the master and its live workers."""
        return {pid: cpu_seconds([pid]) for pid in self.pids()}

    def connections_by_worker(self) -> dict[int, int]:
        """Return how many established client connections each live worker holds now."""
        established = established_inodes(self.port)
        return {pid: len(socket_inodes(pid) & established) for pid in children_of(self.process.pid)}

    def _stop(self):
        if self.process is None or self.process.poll() is not None:
            self.exit_status = None if self.process is None else self.process.returncode
            return
        workers = children_of(self.process.pid)
        self.process.send_signal(signal.SIGTERM)
        try:
            self.exit_status = self.process.wait(timeout=self.stop_timeout)
        except subprocess.TimeoutExpired:
            for pid in [self.process.pid, *workers]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.exit_status = self.process.wait(timeout=10)

    def __exit__(self, *exc):
        self._stop()
        self.log.close()
        return False


# HTTP

class HttpClient:
    """One keep-alive HTTP/1.1 connection with a cookie jar of its own (reconnects when the server closes)."""

    def __init__(self, origin: str, *, timeout: float = 30):
        parts = urllib.parse.urlsplit(origin)
        self.host, self.port, self.timeout = parts.hostname, parts.port, timeout
        self.cookies: dict[str, str] = {}
        self.conn: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict | None = None) -> tuple[int, dict, bytes, float]:
        """Send one request; return (status, headers, body, seconds from sending to the last byte read)."""
        headers = dict(headers or {})
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                start = time.perf_counter()
                self.conn.request(method, path, body=body, headers=headers)
                response = self.conn.getresponse()
                data = response.read()
                elapsed = time.perf_counter() - start
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if attempt:
                    raise
        for value in response.headers.get_all("Set-Cookie") or []:
            cookie = http.cookies.SimpleCookie()
            cookie.load(value)
            for name, morsel in cookie.items():
                self.cookies[name] = morsel.value
        if response.will_close:
            self.close()
        return response.status, dict(response.headers), data, elapsed

    def get(self, path: str) -> tuple[int, dict, bytes, float]:
        return self.request("GET", path)

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def respondent(origin: str, slug: str = SLUG) -> HttpClient:
    """Return a client that has loaded the survey page, as a respondent does (it sets no cookie)."""
    client = HttpClient(origin)
    status, _, _, _ = client.get(f"/s/{slug}")
    if status != 200:
        raise RuntimeError(f"GET /s/{slug} answered {status}")
    return client


def submit(client: HttpClient, body: bytes, slug: str = SLUG) -> tuple[int, float]:
    """POST one submission as the respondent page does (JSON, no cookie, no token); return (status, seconds)."""
    status, _, _, elapsed = client.request("POST", f"/s/{slug}/responses", body=body,
                                           headers={"Content-Type": "application/json"})
    return status, elapsed


def sign_in(origin: str, email: str, password: str) -> HttpClient:
    """Return a client signed in as the researcher (POST /login with the form's CSRF token)."""
    client = HttpClient(origin)
    status, _, page, _ = client.get("/login")
    if status != 200:
        raise RuntimeError(f"GET /login answered {status}")
    token = CSRF_INPUT.search(page.decode()).group(1)
    form = urllib.parse.urlencode({"csrf_token": token, "email": email, "password": password}).encode()
    status, headers, _, _ = client.request("POST", "/login", body=form,
                                           headers={"Content-Type": "application/x-www-form-urlencoded"})
    if status != 302:
        raise RuntimeError(f"sign-in failed: POST /login answered {status}")
    status = client.get("/surveys")[0]
    if status != 200:
        raise RuntimeError(f"GET /surveys after sign-in answered {status}")
    return client


def response_count(db: Path, slug: str) -> int:
    """Return the survey's stored response count (Store.response_count)."""
    from survey.store import Store

    store = Store(db, migrate=False)
    try:
        return store.response_count(slug)
    finally:
        store.close()


def received_count(db: Path, slug: str) -> int:
    """Return how many responses the survey has stored: released, and held for its next release (Store.received_count)."""
    from survey.store import Store

    store = Store(db, migrate=False)
    try:
        return store.received_count(slug)
    finally:
        store.close()


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.2f} ms"


def median(values) -> float:
    return statistics.median(values)
