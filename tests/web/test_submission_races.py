"""Requests sent at the same moment by many threads of one server (each with its own connection): an interviewer
session's allowance, one submission id and one invitation each admit what they promise, no more (both backends).

The threads wait at a barrier and then send together; whatever order the database puts them in,
the answers and what is stored must be the same.
"""

from __future__ import annotations

import json
import threading

import pytest

from survey.store import Store
from survey.store.checks import check_counts

from conftest import PANEL_TOML, create_from_toml, domain_answers, smoking_design, stored_count

pytestmark = pytest.mark.both_backends

SLUG = "smoking-2026"
GOOD = domain_answers(smoking_design(), smoker=1, lung_disease=0, cigarettes=2, age=1)
THREADS = 8


def _together(app, path: str, bodies: list[dict]) -> list[int]:
    """Post each body from its own thread and test client, all released at once; return the statuses in order."""
    barrier, statuses = threading.Barrier(len(bodies)), [None] * len(bodies)

    def send(index: int):
        client = app.test_client()
        barrier.wait()
        statuses[index] = client.post(path, data=json.dumps(bodies[index]), content_type="application/json").status_code

    threads = [threading.Thread(target=send, args=(index,)) for index in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return statuses


def _no_count_problems(db_path, slug: str):
    store = Store(db_path)
    try:
        assert check_counts(store, slug)[1] == []
    finally:
        store.close()


def test_a_session_of_allowance_k_sent_to_by_many_at_once_stores_exactly_k(app, db_path, smoking_survey):
    store = Store(db_path)
    token, _ = store.start_interview(SLUG, allowance=3)
    store.close()
    bodies = [{"design": smoking_survey["hash"], "answers": GOOD, "submission": f"{index:x}" * 32}
              for index in range(THREADS)]
    statuses = _together(app, f"/s/{SLUG}/interview/{token}/responses", bodies)
    assert sorted(statuses) == [201] * 3 + [410] * (THREADS - 3)
    assert stored_count(db_path, SLUG) == 3
    store = Store(db_path)
    try:
        assert store.interview_session(SLUG, token)["answered"] == 3
    finally:
        store.close()
    _no_count_problems(db_path, SLUG)


def test_one_submission_id_sent_by_many_at_once_is_stored_once_and_each_gets_201(app, db_path, smoking_survey):
    body = {"design": smoking_survey["hash"], "answers": GOOD, "submission": "c" * 32}
    statuses = _together(app, f"/s/{SLUG}/responses", [body] * THREADS)
    assert statuses == [201] * THREADS
    assert stored_count(db_path, SLUG) == 1
    _no_count_problems(db_path, SLUG)


def test_one_invitation_used_by_many_at_once_stores_once(app, db_path, smoking_survey):
    panel = create_from_toml(db_path, PANEL_TOML)
    store = Store(db_path)
    [token] = store.create_invitations("panel", 1)
    store.close()
    bodies = [{"design": panel["hash"], "answers": {"remote": index % 2}, "invite": token,
               "submission": f"{index:x}" * 32} for index in range(THREADS)]
    statuses = _together(app, "/s/panel/responses", bodies)
    assert sorted(statuses) == [201] + [409] * (THREADS - 1)
    assert stored_count(db_path, "panel") == 1
    _no_count_problems(db_path, "panel")
