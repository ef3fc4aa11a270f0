"""Clients that send their requests slowly cannot shut respondents out of a server exposed directly.

Each worker reads a request whole, in its main loop, before a thread serves it
(``survey.web.buffering``): 32 connections that declare a 60 kB body and send it a byte a
second hold no thread, and are answered 408 and closed once READ_DEADLINE passes.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
from pathlib import Path

import pytest

from conftest import create_smoking_db, start_server, stored_count
from test_server import SLUG, post_head, valid_body

from survey.web.buffering import READ_DEADLINE

pytestmark = [pytest.mark.slow, pytest.mark.serial]

TRICKLERS = 32
SUBMISSIONS = 20
PATIENCE = 5.0


class Trickle:
    """TRICKLERS connections, each declaring a 60 kB body and sending one byte of it a second; reconnect when closed."""

    def __init__(self, port: int):
        self.port = port
        self.stop = threading.Event()
        self.timeouts = 0  # 408 answers received
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=2)
        sock.sendall(post_head(self.port, 60_000))
        sock.setblocking(False)
        return sock

    def _run(self):
        socks = [self._connect() for _ in range(TRICKLERS)]
        while not self.stop.wait(1.0):
            for index, sock in enumerate(socks):
                try:
                    answer = sock.recv(4096)
                except BlockingIOError:
                    answer = None
                except OSError:
                    answer = b""
                if answer is not None:
                    self.timeouts += b" 408 " in answer
                    sock.close()
                    socks[index] = self._connect()
                    continue
                try:
                    sock.send(b" ")
                except OSError:
                    sock.close()
                    socks[index] = self._connect()
        for sock in socks:
            sock.close()


def submit(port: int, body: bytes) -> float | None:
    """POST one valid submission; return the seconds it took to be stored (201), None if not within PATIENCE."""
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE)
    try:
        conn.request("POST", f"/s/{SLUG}/responses", body=body, headers={"Content-Type": "application/json"})
        status = conn.getresponse().status
    except OSError:
        return None
    finally:
        conn.close()
    elapsed = time.monotonic() - started
    return elapsed if status == 201 and elapsed <= PATIENCE else None


def measure(port: int, body: bytes) -> tuple[list[float | None], int]:
    """Send SUBMISSIONS valid submissions, one a second, under the trickle; return their times and the 408s seen."""
    trickle = Trickle(port)
    trickle.thread.start()
    time.sleep(2)  # every trickling connection is open and has sent its head
    try:
        times = []
        for _ in range(SUBMISSIONS):
            times.append(submit(port, body))
            time.sleep(max(0.0, 1.0 - (times[-1] or 0)))
    finally:
        trickle.stop.set()
        trickle.thread.join(timeout=10)
    return times, trickle.timeouts


def test_trickling_clients_do_not_stop_valid_submissions(tmp_path: Path):
    db_path = tmp_path / "server.db"
    create_smoking_db(db_path)
    server = start_server(db_path, tmp_path / "server.log", "--workers", "2", "--threads", "8",
                          "--max-submissions-per-minute", "0")
    try:
        body = valid_body(db_path)
        times, timeouts = measure(server.port, body)
    finally:
        server.stop()
    completed = [t for t in times if t is not None]
    assert len(completed) >= SUBMISSIONS - 1, f"only {len(completed)} of {SUBMISSIONS} stored within {PATIENCE} s"
    assert stored_count(db_path, SLUG) >= len(completed)
    # The run outlasts READ_DEADLINE, so the first trickling connections were answered 408 and closed.
    assert SUBMISSIONS + 2 > READ_DEADLINE and timeouts >= TRICKLERS // 2, timeouts
