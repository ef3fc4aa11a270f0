"""One client floods the real server (gunicorn, 2 workers) beyond --max-submissions-per-minute: 429 JSON,
nothing of it stored, and the limit counted once across the workers."""

from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.request

from concurrent.futures import ThreadPoolExecutor

import pytest

from survey.store import Store

from conftest import create_smoking_db, domain_answers, smoking_design, start_server

pytestmark = [pytest.mark.slow, pytest.mark.both_backends, pytest.mark.serial]

SLUG = "smoking-2026"
LIMIT = 10
SENT = 100
SENDERS = 8
GOOD = domain_answers(smoking_design(), smoker=1, lung_disease=0, cigarettes=2, age=1)


def test_a_flood_beyond_the_limit_gets_429_and_stores_nothing_of_it(tmp_path, db_path):
    create_smoking_db(db_path)
    server = start_server(db_path, tmp_path / "server.log", "--workers", "2",
                          "--max-submissions-per-minute", str(LIMIT))
    try:
        store = Store(db_path)
        design = store.get_design(SLUG)
        store.close()
        opener = urllib.request.build_opener()
        body = json.dumps({"design": design["hash"], "answers": GOOD}).encode()
        headers = {"Content-Type": "application/json"}

        def send(_):
            # urllib opens a new connection each time: either worker may take it.
            request = urllib.request.Request(f"{server.origin}/s/{SLUG}/responses", data=body, method="POST",
                                             headers=headers)
            try:
                with opener.open(request, timeout=10) as reply:
                    return reply.status, dict(reply.headers), reply.read()
            except urllib.error.HTTPError as error:
                with error:
                    return error.code, dict(error.headers), error.read()

        started = time.monotonic()
        with ThreadPoolExecutor(SENDERS) as senders:
            replies = list(senders.map(send, range(SENT)))
        elapsed = time.monotonic() - started
        accepted = [r for r in replies if r[0] == 201]
        refused = [r for r in replies if r[0] == 429]
        assert len(accepted) + len(refused) == SENT
        # One bucket for both workers: LIMIT at once, plus what a minute's refill earned while sending
        # (each worker counting on its own would let through about twice LIMIT).
        assert LIMIT <= len(accepted) <= LIMIT + math.ceil(elapsed * LIMIT / 60)
        for _, headers, body in refused:
            assert headers["Content-Type"].startswith("application/json")
            assert int(headers["Retry-After"]) >= 1
            assert "Nothing was stored" in json.loads(body)["error"]
        store = Store(db_path)
        assert store.response_count(SLUG) == len(accepted)
        store.close()
        log = server.log_text()
        assert "/responses" not in log and " 429" not in log, "refused submissions are not logged"
    finally:
        assert server.stop() == 0
