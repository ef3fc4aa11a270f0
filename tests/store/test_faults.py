"""Faults of the database answered clearly: 503 with Retry-After, /readyz, a log line naming the cause.

Each fault is provoked for real: a full filesystem (a small tmpfs filled up), a read-only
one (the tmpfs remounted read-only), a write lock held by another connection longer than
LDP_SURVEY_LOCK_TIMEOUT_MS, and a PostgreSQL server that does not answer (psycopg
connecting to a closed port). Mounting needs root: run as root, or the whole run under
``unshare --user --map-root-user --mount``; without either these tests fail and say so.
Every test checks that nothing acknowledged (201) is lost and that service resumes once
the fault is removed.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import re
import secrets
import sqlite3
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

import pytest

from conftest import (REPO, create_from_toml, domain_answers, free_port, smoking_design, smoking_text, start_server,
                      stored_count)
from survey.store import Store, StoreError, StoreUnavailable
from survey.store.faults import classify

pytestmark = [pytest.mark.both_backends, pytest.mark.serial]

SLUG = "smoking-2026"
EMAIL, PASSWORD = "fault@example.org", "fault password"
SENTENCE = re.compile(r"cannot store answers right now.*kept on this page.*sent again automatically.*nothing was stored",
                      re.S)
LOCK_TIMEOUT_MS = 300
RETRY_AFTER = 1


# The classifier, on real exceptions

def sqlite_error(statements, *, uri: str = ":memory:") -> sqlite3.Error:
    """Run statements on a new connection to ``uri``; return the exception the last one raised."""
    conn = sqlite3.connect(uri, uri=uri.startswith("file:"), isolation_level=None)
    try:
        for statement in statements[:-1]:
            conn.execute(statement)
        with pytest.raises(sqlite3.Error) as caught:
            conn.execute(statements[-1])
        return caught.value
    finally:
        conn.close()


def test_sqlite_faults_are_named(tmp_path):
    full = sqlite_error(["CREATE TABLE t (x TEXT)", "PRAGMA max_page_count = 2",
                         "INSERT INTO t SELECT zeroblob(100000)"])
    assert classify(full) == "disk full"
    path = tmp_path / "a.db"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    assert classify(sqlite_error(["INSERT INTO t VALUES (1)"], uri=f"file:{path}?mode=ro")) == "read-only database"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        locked = sqlite_error(["PRAGMA busy_timeout = 0", "INSERT INTO t VALUES (1)"], uri=f"file:{path}")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert classify(locked) == "database locked"
    with pytest.raises(sqlite3.OperationalError) as cannot_open:
        sqlite3.connect(tmp_path / "no such folder" / "x.db")
    assert classify(cannot_open.value) == "database unreachable"
    assert classify(sqlite3.OperationalError("disk I/O error")) == "database I/O error"


def test_programming_errors_are_not_faults(tmp_path):
    assert classify(sqlite_error(["SELEC 1"])) is None
    assert classify(sqlite_error(["SELECT * FROM nowhere"])) is None
    assert classify(sqlite_error(["CREATE TABLE t (x PRIMARY KEY)", "INSERT INTO t VALUES (1)",
                                  "INSERT INTO t VALUES (1)"])) is None
    closed = sqlite3.connect(":memory:")
    closed.close()
    with pytest.raises(sqlite3.ProgrammingError) as caught:
        closed.execute("SELECT 1")
    assert classify(caught.value) is None
    assert classify(ValueError("database is locked")) is None
    assert classify(OSError(28, "No space left on device")) is None


def test_psycopg_cannot_connect_is_database_unreachable():
    """The hook for "PostgreSQL stopped": the real exception of a connection refused, then the fault SQLSTATEs."""
    import psycopg
    from psycopg import errors

    port = free_port()
    with pytest.raises(psycopg.OperationalError) as refused:
        psycopg.connect(host="127.0.0.1", port=port, dbname="x", user="x", connect_timeout=2)
    assert classify(refused.value) == "database unreachable"
    for sqlstate, cause in (("53100", "disk full"), ("25006", "read-only database"), ("55P03", "database locked"),
                            ("57P01", "database unreachable"), ("57P03", "database unreachable"),
                            ("08006", "database unreachable")):
        assert classify(errors.lookup(sqlstate)("fault")) == cause, sqlstate
    assert classify(errors.lookup("42601")("syntax error")) is None
    assert classify(errors.lookup("23505")("unique violation")) is None


def test_psycopg_pool_timeout_is_database_unreachable():
    from psycopg_pool import ConnectionPool, PoolTimeout

    pool = ConnectionPool(f"host=127.0.0.1 port={free_port()} dbname=x user=x connect_timeout=1", min_size=1,
                          open=False, timeout=0.5, reconnect_timeout=0)
    try:
        with pytest.raises(PoolTimeout) as caught:
            pool.open(wait=True, timeout=0.5)
    finally:
        pool.close()
    assert classify(caught.value) == "database unreachable"


def test_classifying_a_sqlite_error_does_not_load_psycopg():
    code = ("import sqlite3, sys; from survey.store.faults import classify; "
            "classify(sqlite3.OperationalError('database is locked')); classify(ValueError()); "
            "print('psycopg' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.stdout.strip() == "False"


# The store

def test_ready_counts_a_committed_write(db_path, client):
    store = Store(db_path)
    store.ready()
    store.ready()
    assert [tuple(row) for row in store._execute("SELECT id, checks FROM readiness").fetchall()] == [(1, 2)]
    store.close()
    response = client.get("/readyz")
    assert (response.status_code, response.json) == (200, {"status": "ready"})
    assert response.headers["Cache-Control"] == "no-store"


def test_the_lock_timeout_comes_from_the_environment(tmp_path, monkeypatch):
    path = tmp_path / "r.db"
    store = Store(path)
    monkeypatch.setenv("LDP_SURVEY_LOCK_TIMEOUT_MS", str(LOCK_TIMEOUT_MS))
    waiting = Store(path, migrate=False)
    with held_lock(path):
        started = time.monotonic()
        with pytest.raises(StoreUnavailable) as caught:
            waiting.ready()
        waited = time.monotonic() - started
    assert caught.value.cause == "database locked"
    assert LOCK_TIMEOUT_MS / 1000 <= waited < 3
    waiting.ready()
    monkeypatch.setenv("LDP_SURVEY_LOCK_TIMEOUT_MS", "soon")
    with pytest.raises(StoreError, match="LDP_SURVEY_LOCK_TIMEOUT_MS must be a whole number of milliseconds"):
        Store(path)
    waiting.close()
    store.close()


# Real faults

@contextmanager
def held_lock(path: Path):
    """Hold the database's write lock from another connection (BEGIN EXCLUSIVE) for the block."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def run(*command: str):
    """Run a command; fail the test with its words when it fails."""
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        pytest.fail(f"{' '.join(command)} failed: {result.stderr.strip() or result.stdout.strip()}")


@pytest.fixture
def small_disk(tmp_path):
    """Return a folder on a new 4 MiB tmpfs, unmounted at the end; fail (never skip) when it cannot be mounted."""
    if os.geteuid() != 0:
        pytest.fail("mounting a tmpfs needs root: run the tests as root, or under "
                    "`unshare --user --map-root-user --mount python -m pytest tests/store/test_faults.py`")
    folder = tmp_path / "disk"
    folder.mkdir()
    run("mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(folder))
    yield folder
    if subprocess.run(["umount", str(folder)], capture_output=True).returncode:
        run("umount", "-l", str(folder))


def fill(folder: Path) -> Path:
    """Fill the filesystem of ``folder`` to the last byte, growing one file; return it.

    Filled again before each request: a connection closed after a fault may checkpoint
    and delete its write-ahead log, which frees some space.
    """
    filler = folder / "filler"
    with filler.open("ab") as out:
        try:
            for size in (1 << 16, 512, 1):
                while True:
                    out.write(b"\0" * size)
                    out.flush()
        except OSError as exc:
            assert exc.errno == 28, exc
    return filler


def request(origin: str, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    """Send one request to the server; return (status, headers, body)."""
    host, port = origin.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


def submit(origin: str, design: dict, submission: str):
    body = json.dumps({"design": design["hash"], "answers": domain_answers(design), "submission": submission})
    return request(origin, "POST", f"/s/{SLUG}/responses", body.encode(), {"Content-Type": "application/json"})


def sign_in(origin: str) -> tuple[int, dict, bytes]:
    """Sign the researcher in through the login form (a write: the sign-in throttle counts it)."""
    status, headers, page = request(origin, "GET", "/login")
    assert status == 200
    cookie = headers["Set-Cookie"].split(";")[0]
    token = re.search(rb'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1).decode()
    form = urlencode({"csrf_token": token, "email": EMAIL, "password": PASSWORD}).encode()
    return request(origin, "POST", "/login", form, {"Content-Type": "application/x-www-form-urlencoded",
                                                     "Cookie": cookie})


def create_survey(db_path: Path):
    """Create the smoking survey (released after every response) and the researcher's account."""
    from werkzeug.security import generate_password_hash

    create_from_toml(db_path, smoking_text())
    store = Store(db_path)
    try:
        store.add_user(EMAIL, generate_password_hash(PASSWORD))
    finally:
        store.close()


class Ledger:
    """The submissions sent to a server and the ones it acknowledged (201)."""

    def __init__(self, origin: str, design: dict):
        self.origin, self.design = origin, design
        self.acknowledged: set[str] = set()
        self.refused: list[str] = []

    def send(self, count: int, *, fault=lambda: None) -> list[tuple[int, dict, bytes]]:
        """Send ``count`` new submissions, calling ``fault`` before each; return the replies."""
        replies = []
        for _ in range(count):
            fault()
            submission = secrets.token_hex(16)
            status, headers, body = submit(self.origin, self.design, submission)
            assert status in (201, 503), (status, body)
            (self.acknowledged.add if status == 201 else self.refused.append)(submission)
            replies.append((status, headers, body))
        return replies

    def resend_refused(self):
        """Send every refused submission again, unchanged: now each must be stored."""
        for submission in self.refused:
            status, _, body = submit(self.origin, self.design, submission)
            assert status == 201, body
            self.acknowledged.add(submission)
        self.refused = []


def assert_unavailable(replies, cause: str, origin: str, fault=lambda: None):
    """Check what respondents, /readyz and a researcher get while the store cannot take writes (``fault`` before each)."""
    refused = [reply for reply in replies if reply[0] == 503]
    assert refused, f"no submission was refused during the fault ({cause})"
    for _, headers, body in refused:
        assert headers["Retry-After"] == str(RETRY_AFTER)
        payload = json.loads(body)
        assert payload["field"] is None and SENTENCE.search(payload["error"]), payload
    fault()
    status, headers, body = request(origin, "GET", "/readyz")
    assert (status, json.loads(body).get("cause")) == (503, cause)
    assert headers["Retry-After"] == str(RETRY_AFTER) and headers["Cache-Control"] == "no-store"
    fault()
    status, headers, page = sign_in(origin)
    assert status == 503 and headers["Retry-After"] == str(RETRY_AFTER)
    assert headers["Content-Type"].startswith("text/html")
    assert f"cannot take requests right now ({cause}), so nothing was changed" in page.decode()
    assert request(origin, "GET", "/healthz")[0] == 200, "/healthz stays process-only"


def assert_recovered(ledger: Ledger, db_path: Path):
    status, _, body = request(ledger.origin, "GET", "/readyz")
    assert (status, json.loads(body)) == (200, {"status": "ready"})
    ledger.resend_refused()
    assert all(reply[0] == 201 for reply in ledger.send(3))
    assert sign_in(ledger.origin)[0] == 302
    assert stored_count(db_path, SLUG) == len(ledger.acknowledged), "every acknowledged response, each once"


@pytest.fixture
def serve(tmp_path, monkeypatch):
    """Return a function starting the real server (gunicorn) on a database; each is stopped at the end."""
    monkeypatch.setenv("LDP_SURVEY_RETRY_AFTER", str(RETRY_AFTER))
    monkeypatch.setenv("LDP_SURVEY_LOCK_TIMEOUT_MS", str(LOCK_TIMEOUT_MS))
    servers = []

    def start(db_path: Path):
        server = start_server(db_path, tmp_path / f"server{len(servers)}.log", "--workers", "1", "--threads", "4",
                              "--max-submissions-per-minute", "0")
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def test_a_full_disk_is_answered_503_and_nothing_acknowledged_is_lost(small_disk, serve):
    db_path = small_disk / "survey.db"
    create_survey(db_path)
    server = serve(db_path)
    ledger = Ledger(server.origin, smoking_design())
    assert all(reply[0] == 201 for reply in ledger.send(10))
    full = lambda: fill(small_disk)  # noqa: E731
    replies = ledger.send(20, fault=full)
    assert sum(reply[0] == 503 for reply in replies) >= 10
    assert_unavailable(replies, "disk full", server.origin, full)
    assert "store unavailable (disk full): POST /s/smoking-2026/responses" in server.log_text()
    (small_disk / "filler").unlink()
    assert_recovered(ledger, db_path)


@pytest.mark.slow
def test_a_held_lock_is_answered_503_after_the_lock_timeout(tmp_path, serve):
    db_path = tmp_path / "survey.db"
    create_survey(db_path)
    server = serve(db_path)
    ledger = Ledger(server.origin, smoking_design())
    assert all(reply[0] == 201 for reply in ledger.send(5))
    with held_lock(db_path):
        started = time.monotonic()
        replies = ledger.send(3)
        assert time.monotonic() - started >= 3 * LOCK_TIMEOUT_MS / 1000
        assert all(reply[0] == 503 for reply in replies)
        assert_unavailable(replies, "database locked", server.origin)
    assert "store unavailable (database locked): POST /s/smoking-2026/responses" in server.log_text()
    assert_recovered(ledger, db_path)


def test_a_read_only_filesystem_is_answered_503(small_disk, monkeypatch, caplog):
    """Through the app: Linux refuses to remount a filesystem read-only while a file on it is open for writing, and
    a running server keeps its connections open, so the app's connections are closed first (as after a restart)."""
    from survey.web import create_app

    monkeypatch.setenv("LDP_SURVEY_RETRY_AFTER", str(RETRY_AFTER))
    db_path = small_disk / "survey.db"
    create_survey(db_path)
    app = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "test",
                      "MAX_SUBMISSIONS_PER_MINUTE": 0, "WTF_CSRF_ENABLED": False})
    client = app.test_client()
    design = smoking_design()
    sent = lambda submission: client.post(f"/s/{SLUG}/responses", json={  # noqa: E731
        "design": design["hash"], "answers": domain_answers(design), "submission": submission})
    first = secrets.token_hex(16)
    assert sent(first).status_code == 201
    app.extensions["ldp_stores"].close_all()
    run("mount", "-o", "remount,ro", str(small_disk))
    try:
        caplog.set_level(logging.ERROR)
        refused = secrets.token_hex(16)
        response = sent(refused)
        assert response.status_code == 503 and response.headers["Retry-After"] == str(RETRY_AFTER)
        assert response.json["field"] is None and SENTENCE.search(response.json["error"])
        ready = client.get("/readyz")
        assert (ready.status_code, ready.json["cause"]) == (503, "read-only database")
        page = client.post("/login", data={"email": EMAIL, "password": PASSWORD})
        assert page.status_code == 503 and page.headers["Retry-After"] == str(RETRY_AFTER)
        assert "cannot take requests right now (read-only database)" in page.get_data(as_text=True)
        api = client.get("/api/surveys", headers={"Authorization": "Bearer ldps_" + "x" * 43})
        assert api.status_code == 503 and "read-only database" in api.json["error"]
        assert "store unavailable (read-only database): POST /s/smoking-2026/responses" in caplog.text
    finally:
        app.extensions["ldp_stores"].close_all()
        run("mount", "-o", "remount,rw", str(small_disk))
    assert client.get("/readyz").status_code == 200
    assert sent(refused).status_code == 201
    assert sent(first).status_code == 201, "a repeat of a stored submission"
    assert client.post("/login", data={"email": EMAIL, "password": PASSWORD}).status_code == 302
    app.extensions["ldp_stores"].close_all()
    assert stored_count(db_path, SLUG) == 2


def test_a_programming_error_stays_a_500(app, client, smoking_survey):
    """Only faults get 503: a database error that is a bug is not answered "try again"."""

    @app.get("/broken")
    def broken():
        sqlite3.connect(":memory:").execute("SELECT * FROM nowhere")

    app.testing = False
    response = client.get("/broken")
    assert response.status_code == 500 and "Retry-After" not in response.headers


@pytest.mark.slow
@pytest.mark.browser
def test_the_respondent_page_sends_the_same_reports_again_after_a_503(tmp_path, serve, browser):
    """A 503 is a lost send that retries itself after Retry-After: the very same body, stored once."""
    from test_browser import capture, fill_survey

    db_path = tmp_path / "survey.db"
    create_survey(db_path)
    server = serve(db_path)
    context = browser.new_context()
    page = context.new_page()
    requests = capture(page)
    page.goto(f"{server.origin}/s/{SLUG}")
    fill_survey(page)
    with held_lock(db_path):
        page.get_by_role("button", name=re.compile("send", re.I)).click()
        page.get_by_text(re.compile("cannot store answers right now", re.I)).wait_for(timeout=10_000)
        assert page.get_by_text(re.compile(f"Sending again in {RETRY_AFTER} seconds")).is_visible()
    page.get_by_text(re.compile("thank you", re.I)).first.wait_for(timeout=10_000)
    bodies = [r["body"] for r in requests if r["method"] == "POST"]
    assert len(bodies) >= 2 and len(set(bodies)) == 1, "every send carries the same reports and submission id"
    assert stored_count(db_path, SLUG) == 1
    assert "store unavailable (database locked): POST /s/smoking-2026/responses" in server.log_text()
    context.close()


# PostgreSQL's faults, on the suite's own cluster

@contextmanager
def administrator(cluster):
    """Yield an autocommit connection to the cluster's maintenance database, as its superuser."""
    import psycopg

    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        yield conn


def end_sessions(conn, url: str):
    """End every session connected to the database of ``url`` (the server's pooled connections reconnect)."""
    conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid != "
                 "pg_backend_pid()", [url.rsplit("/", 1)[1]])


@pytest.mark.postgresql
def test_a_stopped_postgresql_is_answered_503_and_service_resumes_when_it_is_back(postgres_cluster, pg_url,
                                                                                  serve):
    create_survey(pg_url)
    server = serve(pg_url)
    ledger = Ledger(server.origin, smoking_design())
    assert all(reply[0] == 201 for reply in ledger.send(5))
    postgres_cluster.stop("fast")
    try:
        replies = ledger.send(3)
        assert all(reply[0] == 503 for reply in replies)
        assert_unavailable(replies, "database unreachable", server.origin)
    finally:
        postgres_cluster.start()
    assert "store unavailable (database unreachable): POST /s/smoking-2026/responses" in server.log_text()
    assert_recovered(ledger, pg_url)


@pytest.mark.postgresql
def test_a_read_only_postgresql_is_answered_503(postgres_cluster, pg_url, serve):
    """A database that takes no writes (as a standby after a failover): every write is refused with SQLSTATE 25006."""
    create_survey(pg_url)
    server = serve(pg_url)
    ledger = Ledger(server.origin, smoking_design())
    assert all(reply[0] == 201 for reply in ledger.send(5))
    name = pg_url.rsplit("/", 1)[1]
    with administrator(postgres_cluster) as admin:
        admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        end_sessions(admin, pg_url)
        try:
            replies = ledger.send(3)
            assert all(reply[0] == 503 for reply in replies)
            assert_unavailable(replies, "read-only database", server.origin)
        finally:
            admin.execute(f'ALTER DATABASE "{name}" RESET default_transaction_read_only')
            end_sessions(admin, pg_url)
    assert "store unavailable (read-only database): POST /s/smoking-2026/responses" in server.log_text()
    assert_recovered(ledger, pg_url)


@pytest.mark.slow
@pytest.mark.postgresql
def test_a_held_postgresql_lock_is_answered_503_after_the_lock_timeout(pg_url, serve):
    """A table every submission writes, locked by another session (a long maintenance command): 503 after
    LDP_SURVEY_LOCK_TIMEOUT_MS; sign-ins, which do not write it, go on."""
    import psycopg

    create_survey(pg_url)
    server = serve(pg_url)
    ledger = Ledger(server.origin, smoking_design())
    assert all(reply[0] == 201 for reply in ledger.send(5))
    with psycopg.connect(pg_url) as holder:
        holder.execute("LOCK TABLE tallies IN EXCLUSIVE MODE")
        started = time.monotonic()
        replies = ledger.send(3)
        assert time.monotonic() - started >= 3 * LOCK_TIMEOUT_MS / 1000
        assert all(reply[0] == 503 for reply in replies)
        for _, headers, body in replies:
            assert headers["Retry-After"] == str(RETRY_AFTER) and SENTENCE.search(json.loads(body)["error"])
        status, _, body = request(server.origin, "GET", "/readyz")
        assert (status, json.loads(body)["cause"]) == (503, "database locked")
        assert sign_in(server.origin)[0] == 302
        holder.rollback()
    assert "store unavailable (database locked): POST /s/smoking-2026/responses" in server.log_text()
    assert_recovered(ledger, pg_url)


def test_retry_after_comes_from_the_environment(tmp_path, monkeypatch):
    from survey.web import create_app

    config = {"TESTING": True, "DATABASE": str(tmp_path / "r.db"), "SECRET_KEY": "test"}
    monkeypatch.setenv("LDP_SURVEY_RETRY_AFTER", "30")
    assert create_app(config).config["RETRY_AFTER"] == 30
    monkeypatch.setenv("LDP_SURVEY_RETRY_AFTER", "0")
    with pytest.raises(ValueError, match="LDP_SURVEY_RETRY_AFTER must be a whole number of seconds from 1 to 3600"):
        create_app(config)
