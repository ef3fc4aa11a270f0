"""The serving layer: gunicorn behind `ldp-survey serve`, /healthz, 413 before the body, graceful SIGTERM.

Most tests run the real server (`python -m survey serve`, see conftest.start_server) and talk
to it over raw sockets, so what is on the wire is what is checked.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from conftest import create_smoking_db, definition, REPO, start_server, stored_count
from survey.cli.operations import DEMO_EMAIL
from survey.core.simulate import complete_truth, simulate_answers
from survey.store import Store

pytestmark = [pytest.mark.slow, pytest.mark.both_backends, pytest.mark.serial]

SLUG = "smoking-2026"
HUGE = 200 * 1024 * 1024  # 200 MiB, declared and never sent
LIMIT = 64 * 1024


@pytest.fixture
def server_db(tmp_path) -> Path:
    """Return a database holding the smoking survey, created through the CLI."""
    db_path = tmp_path / "server.db"
    create_smoking_db(db_path)
    return db_path


@pytest.fixture
def spawn(tmp_path):
    """Return a function starting `ldp-survey serve` on a fresh port; every server is stopped at the end."""
    servers = []

    def start(db_path, *args):
        server = start_server(db_path, tmp_path / f"server{len(servers)}.log", *args)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def read_http_response(sock: socket.socket, timeout: float) -> tuple[bytes, bool]:
    """Read from sock until the server closes it or ``timeout`` passes; return (data, closed by the server)."""
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return data, False
        if not chunk:
            return data, True
        data += chunk
    return data, False


def read_one_response(sock: socket.socket) -> tuple[int, dict, bytes]:
    """Read exactly one response (with a Content-Length) from a kept-alive connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed after {data!r}"
        data += chunk
    status, headers, body = parse_response(data)
    while len(body) < int(headers["content-length"]):
        chunk = sock.recv(65536)
        assert chunk, "connection closed in the body"
        body += chunk
    return status, headers, body


def parse_response(data: bytes) -> tuple[int, dict, bytes]:
    """Split one HTTP/1.1 response into (status, lower-case headers, body)."""
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


def valid_body(db_path: Path) -> bytes:
    """Return a valid submission for the smoking survey, randomized by the Python mirror."""
    store = Store(db_path)
    try:
        design = store.get_design(SLUG)
    finally:
        store.close()
    rng = np.random.default_rng(5)
    [answers] = simulate_answers(design, complete_truth(design, {}, rng), 1, rng)
    return json.dumps({"design": design["hash"], "answers": answers}).encode()



def post_head(port: int, length: int, *extra: str) -> bytes:
    lines = [f"POST /s/{SLUG}/responses HTTP/1.1", f"Host: 127.0.0.1:{port}", "Content-Type: application/json",
             f"Content-Length: {length}", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


# /healthz


@pytest.mark.sqlite_only
def test_healthz_answers_ok_without_touching_the_database(app, db_path):
    db_path.unlink()  # create_app made it; a health check must not make it again
    response = app.test_client().get("/healthz")
    assert response.status_code == 200
    assert response.is_json and response.get_json() == {"status": "ok"}
    assert response.headers["Cache-Control"] == "no-store"
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]
    assert not db_path.exists()


def test_healthz_on_the_real_server(live_server):
    with urllib.request.urlopen(f"{live_server['origin']}/healthz", timeout=10) as reply:
        assert reply.status == 200
        assert reply.headers["Content-Type"] == "application/json"
        assert json.loads(reply.read()) == {"status": "ok"}


# 413 before the body is read


class Unreadable:
    """A wsgi.input that fails the test if anything reads it."""

    def read(self, *args):
        raise AssertionError("the request body was read")

    readline = readlines = read

    def __iter__(self):
        raise AssertionError("the request body was read")


@pytest.mark.parametrize("path, is_json", [(f"/s/{SLUG}/responses", True), ("/login", False),
                                           ("/surveys/new", False)])
def test_a_declared_oversized_body_is_refused_without_reading_it(app, smoking_survey, path, is_json):
    response = app.test_client().post(path, content_type="application/json" if is_json else "text/plain",
                                      environ_overrides={"CONTENT_LENGTH": str(HUGE), "wsgi.input": Unreadable()})
    assert response.status_code == 413
    assert "Content-Security-Policy" in response.headers
    if is_json:
        assert response.get_json() == {"error": f"The request body is larger than the limit of {LIMIT} bytes.",
                                       "field": None}
    else:
        assert f"larger than the limit of {LIMIT} bytes" in response.get_data(as_text=True)


def test_a_body_at_the_limit_is_read_as_usual(app, smoking_survey):
    body = b"{" + b" " * (LIMIT - 2) + b"}"
    response = app.test_client().post(f"/s/{SLUG}/responses", data=body, content_type="application/json")
    assert response.status_code == 400 and response.get_json()["field"] == "design"


@pytest.mark.parametrize("expect", [False, True], ids=["plain", "expect-100-continue"])
def test_the_real_server_answers_413_to_a_declared_200_mib_body_without_waiting_for_it(live_server, expect):
    port = int(live_server["origin"].rsplit(":", 1)[1])
    before = stored_count(live_server["db"], SLUG)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        started = time.monotonic()
        sock.sendall(post_head(port, HUGE, *(["Expect: 100-continue"] if expect else [])))
        data, closed = read_http_response(sock, timeout=5)
        elapsed = time.monotonic() - started
    status, headers, body = parse_response(data)
    assert status == 413, data[:200]  # not "100 Continue": the client is not invited to send the body
    assert headers["connection"] == "close" and closed, "the server closes the connection after answering"
    assert elapsed < 2.5, f"answered after {elapsed:.1f} s"
    assert json.loads(body) == {"error": f"The request body is larger than the limit of {LIMIT} bytes.",
                                "field": None}
    assert stored_count(live_server["db"], SLUG) == before


# graceful stop


def test_sigterm_lets_a_request_in_flight_finish_then_exits_0(server_db, spawn):
    server = spawn(server_db, "--workers", "1", "--threads", "2")
    body = valid_body(server_db)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        # A first request on the same connection: the worker has surely accepted it.
        sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
        assert read_one_response(sock)[0] == 200
        sock.sendall(post_head(server.port, len(body)) + body[:10])
        time.sleep(0.5)  # the worker is now reading the body
        server.process.send_signal(signal.SIGTERM)
        time.sleep(1.5)  # the master has told the worker to stop
        assert server.process.poll() is None, "the server waits for the request in flight"
        sock.sendall(body[10:])
        data, closed = read_http_response(sock, timeout=20)
    status, headers, reply = parse_response(data)
    assert status == 201, data
    assert int(headers["content-length"]) == len(reply)
    assert server.process.wait(timeout=30) == 0
    assert stored_count(server_db, SLUG) == 1
    assert "Handling signal: term" in server.log_text()


# the server process


def test_the_master_holds_no_database_connection_and_logs_no_client(server_db, spawn):
    server = spawn(server_db, "--workers", "2")
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("POST", f"/s/{SLUG}/responses", body=valid_body(server_db),
                       headers={"Content-Type": "application/json", "User-Agent": "canary-agent/1.0"})
    assert connection.getresponse().status == 201
    connection.close()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:  # a malformed request
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        read_http_response(sock, timeout=5)
    fd_dir = Path(f"/proc/{server.process.pid}/fd")
    if fd_dir.is_dir():
        targets = []
        for fd in fd_dir.iterdir():
            try:
                targets.append(os.readlink(fd))
            except OSError:  # closed meanwhile
                pass
        assert not [t for t in targets if t.startswith(str(server_db))], targets
    assert server.stop() == 0
    log = server.log_text()
    assert "Invalid request" in log, log  # gunicorn logged the malformed request...
    assert "ip=127.0.0.1" not in log and "ip=(not logged)" in log  # ...without the client's address
    assert "canary-agent" not in log and f"/s/{SLUG}/responses" not in log  # and there is no access log


def test_serve_on_a_busy_port_prints_one_error_line_and_exits_1(server_db):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        started = time.monotonic()
        result = subprocess.run([sys.executable, "-m", "survey", "--db", str(server_db), "serve", "--port", str(port)],
                                capture_output=True, text=True, timeout=60,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (f"Error: cannot listen on 127.0.0.1:{port} (Address already in use); "
                             "choose another --port or --host\n")
    assert time.monotonic() - started < 15, "no retry loop"


# the CLI


def test_serve_help_shows_the_options_and_examples(cli_runner):
    from survey.cli import main

    result = cli_runner.invoke(main, ["serve", "--help"])
    assert result.exit_code == 0
    for needle in ("--workers", "--threads", "--https", "gunicorn", "Examples:",
                   "ldp-survey --db study.db serve --workers 4 --threads 16", "/healthz"):
        assert needle in result.stdout, needle


OTHER_SURVEY_TOML = '\nslug = "my-study"\ntitle = "A real study"\nepsilon = 1.0\n\n' + definition("one_yes_no")


def test_demo_refuses_a_database_with_other_surveys_unless_forced(cli_runner, tmp_path):
    from survey.cli import main

    db_path, definition, other = tmp_path / "study.db", tmp_path / "study.toml", "my-study"
    definition.write_text(OTHER_SURVEY_TOML, encoding="utf-8")
    assert cli_runner.invoke(main, ["--db", str(db_path), "create", str(definition)]).exit_code == 0

    result = cli_runner.invoke(main, ["--db", str(db_path), "demo", "--no-serve", "--respondents", "50"])
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("Error: ") and other in line and "--db demo.db" in line and "--force" in line
    store = Store(db_path)
    assert [s["slug"] for s in store.list_surveys()] == [other]
    assert store.get_user(DEMO_EMAIL) is None
    store.close()

    result = cli_runner.invoke(main, ["--db", str(db_path), "demo", "--no-serve", "--respondents", "50",
                                      "--force", "--seed", "1"])
    assert result.exit_code == 0, result.output
    store = Store(db_path)
    assert sorted(s["slug"] for s in store.list_surveys()) == sorted([other, SLUG])
    assert store.received_count(SLUG) == 50
    store.close()


def test_demo_help_documents_force(cli_runner):
    from survey.cli import main

    result = cli_runner.invoke(main, ["demo", "--help"])
    assert result.exit_code == 0 and "--force" in result.stdout and "--db demo.db" in result.stdout


def test_the_master_freezes_its_objects_out_of_the_collector_before_each_fork():
    import gc

    from survey.web.server import gunicorn_options

    hook = gunicorn_options(fd=0, workers=1, threads=1, max_body=None)["pre_fork"]
    gc.unfreeze()
    try:
        hook(None, None)
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()
