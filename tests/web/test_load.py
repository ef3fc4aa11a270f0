"""Concurrent submissions to the real server (gunicorn on 127.0.0.1) lose nothing and store nothing invalid."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections import Counter

import numpy as np
import pytest

from survey.core.simulate import complete_truth, simulate_answers
from survey.store import Store

pytestmark = [pytest.mark.slow, pytest.mark.serial]

SLUG = "smoking-2026"
CLIENTS = 8
PER_CLIENT = 30
INVALID_EVERY = 5


def valid_answers(design: dict, n: int, seed: int) -> list[dict]:
    """Return n randomized responses to the design, made by the simulator (the Python mirror)."""
    rng = np.random.default_rng(seed)
    return simulate_answers(design, complete_truth(design, {}, rng), n, rng)


def client(origin: str, design: dict, answers: list[dict], results: list):
    """Send each response, as the respondent page does (every INVALID_EVERY-th one out of domain)."""
    opener = urllib.request.build_opener()
    for index, response in enumerate(answers):
        invalid = index % INVALID_EVERY == INVALID_EVERY - 1
        sent = {**response, "smoker": 7} if invalid else response
        body = json.dumps({"design": design["hash"], "answers": sent}).encode()
        request = urllib.request.Request(f"{origin}/s/{SLUG}/responses", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with opener.open(request, timeout=15) as reply:
                status = reply.status
        except urllib.error.HTTPError as error:
            status = error.code
            error.close()
        results.append((invalid, status, response))


def test_concurrent_submissions_are_all_stored_exactly_once(live_server):
    origin = live_server["origin"]
    store = Store(live_server["db"])
    design = store.get_design(SLUG)
    before = Counter(json.dumps(a, sort_keys=True) for a in store.iter_answers(SLUG))
    store.close()

    answers = valid_answers(design, CLIENTS * PER_CLIENT, seed=11)
    results: list = []
    threads = [threading.Thread(target=client, args=(origin, design, answers[i::CLIENTS], results))
               for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "clients did not finish in time"

    assert len(results) == CLIENTS * PER_CLIENT
    statuses = Counter((invalid, status) for invalid, status, _ in results)
    expected_invalid = CLIENTS * (PER_CLIENT // INVALID_EVERY)
    assert statuses == {(False, 201): CLIENTS * PER_CLIENT - expected_invalid, (True, 400): expected_invalid}

    store = Store(live_server["db"])
    stored = Counter(json.dumps(a, sort_keys=True) for a in store.iter_answers(SLUG))
    store.close()
    sent = Counter(json.dumps(response, sort_keys=True) for invalid, _, response in results if not invalid)
    assert stored - before == sent, "every accepted response is stored exactly once, nothing else"
