"""Seeded fuzzing of POST /s/<slug>/responses: every body gets 201 or a 4xx JSON error, never a 500,
and exactly the accepted responses are stored, each in its mechanism's output domain."""

from __future__ import annotations

import copy
import json

import numpy as np

from survey.core.reports import validate_submission
from survey.core.simulate import complete_truth, simulate_answers
from survey.store import Store

SLUG = "smoking-2026"
CASES = 600
ODD_VALUES = [None, True, False, -1, 2, 5, 1.5, 0.0, "1", "", [], [1], [0, 1], {}, {"a": 1}, 2**64,
              -(2**63), "yes", [None], [0] * 5, [1] * 100]


def mutate(body: dict, rng: np.random.Generator) -> dict:
    """Return a copy of a valid body with one random change (or none, a quarter of the time)."""
    body = copy.deepcopy(body)
    answers = body["answers"]
    qids = list(answers)
    choice = rng.integers(0, 8)
    if choice == 0:
        return body
    if choice == 1:
        answers[qids[rng.integers(len(qids))]] = ODD_VALUES[rng.integers(len(ODD_VALUES))]
    elif choice == 2:
        del answers[qids[rng.integers(len(qids))]]
    elif choice == 3:
        answers[f"extra{rng.integers(100)}"] = 1
    elif choice == 4:
        body["design"] = ODD_VALUES[rng.integers(len(ODD_VALUES))]
    elif choice == 5:
        body["answers"] = ODD_VALUES[rng.integers(len(ODD_VALUES))]
    elif choice == 6:
        del body[["design", "answers"][rng.integers(2)]]
    return body


def test_fuzzed_submissions_never_fail_the_server(app, smoking_survey, db_path):
    app.config["WTF_CSRF_ENABLED"] = False
    client = app.test_client()
    rng = np.random.default_rng(2026)
    valid = simulate_answers(smoking_survey, complete_truth(smoking_survey, {}, rng), CASES, rng)
    accepted = 0
    statuses = set()
    for answers in valid:
        body = mutate({"design": smoking_survey["hash"], "answers": answers}, rng)
        response = client.post(f"/s/{SLUG}/responses", data=json.dumps(body), content_type="application/json")
        statuses.add(response.status_code)
        assert response.status_code in (201, 400, 409), (body, response.get_data(as_text=True))
        assert response.is_json
        if response.status_code == 201:
            accepted += 1
        else:
            assert isinstance(response.json["error"], str) and response.json["error"]
    assert statuses == {201, 400, 409}, "the fuzzer reached success, bad reports and stale designs"

    store = Store(db_path)
    stored = list(store.iter_answers(SLUG))
    store.close()
    assert len(stored) == accepted
    for answers in stored:
        validate_submission(smoking_survey, {"design": smoking_survey["hash"], "answers": answers})


def test_pathological_json_is_a_400_not_a_500(app, smoking_survey, db_path):
    app.config["WTF_CSRF_ENABLED"] = False
    client = app.test_client()
    bodies = [b'{"design": ' + b"1" * 5000 + b"}",
              b"[" * 20000 + b"]" * 20000,
              ('{"design": "%s", "answers": {"smoker": 1e999}}' % smoking_survey["hash"]).encode()]
    for body in bodies:
        response = client.post(f"/s/{SLUG}/responses", data=body, content_type="application/json")
        assert response.status_code == 400 and response.is_json, response.get_data(as_text=True)[:200]
    store = Store(db_path)
    assert store.response_count(SLUG) == 0
    store.close()


def test_fuzzed_hybrid_levels_are_accepted_exactly_inside_the_domain(app, db_path):
    """Seeded reports around 0..G+1 of a hybrid number: in-domain integers are stored and tallied, the rest refused."""
    from survey.core import codec
    from survey.core.definition import parse_definition
    from survey.core.design import build_design

    design = build_design(parse_definition({"slug": "hours", "title": "Hours", "epsilon": 4.0, "release_every": 1, "questions": [
        {"id": "hours", "kind": "number", "text": "Hours?", "min": 0, "max": 80, "mechanism": "hybrid"}]}))
    question = design["questions"][0]
    assert question["mechanism"] == "hybrid"
    levels = question["levels"]
    store = Store(db_path)
    store.create_survey("", design)
    store.close()
    app.config["WTF_CSRF_ENABLED"] = False
    client = app.test_client()
    rng = np.random.default_rng(2027)
    sent = []
    for _ in range(300):
        if rng.random() < 0.2:
            report = ODD_VALUES[rng.integers(len(ODD_VALUES))]
        else:
            report = int(rng.integers(-3, levels + 3))
        response = client.post("/s/hours/responses", json={"design": design["hash"], "answers": {"hours": report}})
        inside = type(report) is int and 0 <= report < levels
        assert response.status_code == (201 if inside else 400), (report, response.get_data(as_text=True))
        if inside:
            sent.append(report)
        else:
            assert response.json["field"] == "hours" or report is None
    assert {report for report in sent} >= {0, levels - 2, levels - 1}, "the fuzzer reached Duchi's two levels"
    store = Store(db_path)
    try:
        counts = store.question_counts("hours")
        assert counts["hours"] == (len(sent), [int(x) for x in codec.tally(question, np.array(sent))])
        assert counts == store.recount("hours")
        assert sorted(answers["hours"] for answers in store.iter_answers("hours")) == sorted(sent)
    finally:
        store.close()
