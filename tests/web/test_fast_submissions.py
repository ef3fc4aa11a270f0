"""The fast path of submissions answers as the app does, and hands everything else to the app without doing it twice."""

from __future__ import annotations

import secrets

import pytest

from survey.store import Store, StoreUnavailable
from survey.web import create_app
from survey.web.fast_submissions import FastSubmissions

from conftest import create_smoking_db, domain_answers, smoking_design, stored_count

pytestmark = pytest.mark.both_backends

SLUG = "smoking-2026"
ANSWERS = domain_answers(smoking_design(), smoker=1, lung_disease=0, cigarettes=2, age=1)


def make_app(db_path, **config):
    return create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "test",
                       "MAX_SUBMISSIONS_PER_MINUTE": 0, **config})


class Counting:
    """The app behind the fast path, counting the requests handed to it."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = 0

    def __call__(self, environ, start_response):
        self.calls += 1
        return self.inner(environ, start_response)


def behind(app) -> Counting:
    assert isinstance(app.wsgi_app, FastSubmissions)
    app.wsgi_app.inner = Counting(app.wsgi_app.inner)
    return app.wsgi_app.inner


def submission(**extra) -> dict:
    return {"design": smoking_design()["hash"], "answers": ANSWERS, "submission": secrets.token_hex(16), **extra}


def answer(response) -> tuple[int, bytes, list[tuple[str, str]]]:
    return response.status_code, response.get_data(), sorted(response.headers.items())


@pytest.mark.slow
@pytest.mark.parametrize("hsts", [False, True])
def test_a_stored_submission_gets_the_apps_own_201_without_the_app(db_path, hsts):
    create_smoking_db(db_path)
    fast, slow = make_app(db_path, HSTS=hsts), make_app(db_path, HSTS=hsts)
    slow.wsgi_app = slow.wsgi_app.inner  # the app alone
    handed = behind(fast)
    try:
        fast_answer = answer(fast.test_client().post(f"/s/{SLUG}/responses", json=submission()))
        slow_answer = answer(slow.test_client().post(f"/s/{SLUG}/responses", json=submission()))
    finally:
        for app in (fast, slow):
            app.extensions["ldp_stores"].close_all()
    assert handed.calls == 0
    assert fast_answer == slow_answer
    assert fast_answer[0] == 201 and ("Referrer-Policy", "no-referrer") in fast_answer[2]
    assert any(name == "Strict-Transport-Security" for name, _ in fast_answer[2]) == hsts
    assert stored_count(db_path, SLUG) == 2


@pytest.mark.slow
@pytest.mark.parametrize("request_args", [
    {"data": b'{"design": 1}', "content_type": "text/plain"},
    {"json": {"answers": {}}, "headers": {"Sec-Fetch-Site": "cross-site"}},
    {"json": {"answers": {}}, "method": "PUT"},
    {"json": {"answers": "not answers"}},
], ids=["not-json", "other-site", "other-method", "invalid"])
def test_what_will_not_be_stored_is_answered_by_the_app(db_path, request_args):
    create_smoking_db(db_path)
    app = make_app(db_path)
    handed = behind(app)
    args = dict(request_args)
    method = args.pop("method", "POST")
    try:
        response = app.test_client().open(f"/s/{SLUG}/responses", method=method, **args)
    finally:
        app.extensions["ldp_stores"].close_all()
    assert handed.calls == 1
    assert 400 <= response.status_code < 500 and "error" in response.get_json()
    assert stored_count(db_path, SLUG) == 0


@pytest.mark.slow
def test_a_refusal_by_the_store_is_answered_by_the_app_and_counted_once_by_the_flood_limit(db_path):
    create_smoking_db(db_path)
    store = Store(db_path)
    store.close_survey(SLUG)
    store.close()
    app = make_app(db_path, MAX_SUBMISSIONS_PER_MINUTE=3)
    handed = behind(app)
    client = app.test_client()
    try:
        statuses = [client.post(f"/s/{SLUG}/responses", json=submission()).status_code for _ in range(4)]
    finally:
        app.extensions["ldp_stores"].close_all()
    # Counted twice, the second would already be over the limit of 3.
    assert statuses == [410, 410, 410, 429]
    assert handed.calls == 4
    assert stored_count(db_path, SLUG) == 0


@pytest.mark.slow
def test_a_store_fault_on_the_fast_path_is_a_503_and_the_store_is_tried_once(db_path, monkeypatch):
    create_smoking_db(db_path)
    app = make_app(db_path)
    handed = behind(app)
    tries = []

    def unavailable(self, *args, **kwargs):
        tries.append(args)
        raise StoreUnavailable("the disk is full", cause="disk full")

    monkeypatch.setattr(type(app.extensions["ldp_stores"].get()), "add_submission", unavailable)
    try:
        response = app.test_client().post(f"/s/{SLUG}/responses", json=submission())
    finally:
        app.extensions["ldp_stores"].close_all()
    assert response.status_code == 503 and response.headers["Retry-After"] == "10"
    assert "nothing was stored" in response.get_json()["error"]
    assert len(tries) == 1 and handed.calls == 1


@pytest.mark.slow
@pytest.mark.parametrize("path", ["fast", "app"])
def test_an_open_survey_refuses_an_invite_key_even_when_null(db_path, path):
    create_smoking_db(db_path)
    app = make_app(db_path)
    if path == "app":
        app.wsgi_app = app.wsgi_app.inner  # the app alone
    client = app.test_client()
    try:
        answers = [client.post(f"/s/{SLUG}/responses", json=submission(invite=value)) for value in (None, "x" * 43)]
        accepted = client.post(f"/s/{SLUG}/responses", json=submission())
    finally:
        app.extensions["ldp_stores"].close_all()
    for response in answers:
        body = response.get_json()
        assert response.status_code == 400 and body["field"] == "invite" and "nothing was stored" in body["error"]
    assert accepted.status_code == 201
    assert stored_count(db_path, SLUG) == 1, "only the submission without the key"
