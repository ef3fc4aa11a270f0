"""Interviewer (handover) sessions on the web: start and end from the dashboard, who may, the page, the allowance,
the flood limit it replaces, invitation-only surveys, and ended or expired links refused cleanly."""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from survey.core.interviews import EXPIRY_GRACE_HOURS
from survey.store import Store
from survey.web import create_app

from conftest import OTHER, OWNER, PANEL_TOML, create_from_toml, domain_answers, smoking_design, stored_count

pytestmark = pytest.mark.both_backends

SLUG = "smoking-2026"
GOOD = domain_answers(smoking_design(), smoker=1, lung_disease=0, cigarettes=2, age=1)


def login(client, email, password):
    page = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    assert client.post("/login", data={"csrf_token": token, "email": email, "password": password}).status_code == 302


def dashboard_token(client, slug=SLUG):
    page = client.get(f"/surveys/{slug}/results").get_data(as_text=True)
    return re.search(r'id="interview-csrf" name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)


def start(client, slug=SLUG, **fields):
    """Start a session from the dashboard; return (status, the link's path or None, the page)."""
    data = {"csrf_token": dashboard_token(client, slug), "label": "Tablet 3", "hours": 2, "allowance": 3, **fields}
    response = client.post(f"/surveys/{slug}/interviews", data=data)
    page = response.get_data(as_text=True)
    found = re.search(r'id="interview-link" value="http://localhost(/s/[^"]+)"', page)
    return response.status_code, found.group(1) if found else None, page


def send(client, link, design_hash, submission=None, **extra):
    body = {"design": design_hash, "answers": GOOD, **extra}
    if submission:
        body["submission"] = submission
    return client.post(f"{link}/responses", data=json.dumps(body), content_type="application/json")


@pytest.fixture
def owner(client, accounts):
    login(client, *OWNER)
    return client


def test_the_owner_starts_a_session_whose_link_is_shown_once_and_answers(owner, db_path, smoking_survey):
    status, link, page = start(owner)
    assert status == 200 and link and "Tablet 3" in page
    token = link.rsplit("/", 1)[1]
    store = Store(db_path)
    try:
        assert token not in json.dumps(store._execute("SELECT * FROM interview_sessions").fetchall())
    finally:
        store.close()
    dashboard = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "Active interviewer sessions" in dashboard and "0 of 3" in dashboard and token not in dashboard
    shown = owner.get(link)
    text = shown.get_data(as_text=True)
    assert shown.status_code == 200 and 'data-handover="yes"' in text and 'id="interviewer-bar"' in text
    assert "Hand the device to the next person" in text and 'id="protection"' in text
    assert "set-cookie" not in {name.lower() for name in shown.headers.keys()}
    assert shown.headers["Cache-Control"] == "no-store"


def test_responses_count_against_the_allowance_once_each_and_then_the_link_refuses(client, db_path, smoking_survey):
    store = Store(db_path)
    token, _ = store.start_interview(SLUG, allowance=2)
    store.close()
    link = f"/s/{SLUG}/interview/{token}"
    first = send(client, link, smoking_survey["hash"], submission="a" * 32)
    again = send(client, link, smoking_survey["hash"], submission="a" * 32)
    assert (first.status_code, again.status_code) == (201, 201)
    assert send(client, link, smoking_survey["hash"]).status_code == 201
    refused = send(client, link, smoking_survey["hash"], submission="b" * 32)
    assert refused.status_code == 410 and refused.get_json()["field"] == "interview"
    late_retry = send(client, link, smoking_survey["hash"], submission="a" * 32)
    assert late_retry.status_code == 201, "a retry of a stored response is answered as stored, once"
    assert stored_count(db_path, SLUG) == 2
    page = client.get(link)
    assert page.status_code == 410 and 'id="interview-used-up"' in page.get_data(as_text=True)
    assert 'id="survey-form"' not in page.get_data(as_text=True)


def test_a_refused_response_gives_its_count_back(client, db_path, smoking_survey):
    store = Store(db_path)
    token, _ = store.start_interview(SLUG, allowance=1)
    store.close()
    link = f"/s/{SLUG}/interview/{token}"
    bad = send(client, link, smoking_survey["hash"], answers={**GOOD, "smoker": 7})
    assert bad.status_code == 400
    stale = send(client, link, "0" * 64)
    assert stale.status_code == 409
    assert send(client, link, smoking_survey["hash"], invite="x" * 22).status_code == 400
    assert send(client, link, smoking_survey["hash"]).status_code == 201
    assert stored_count(db_path, SLUG) == 1


def test_ended_expired_and_unknown_links_are_refused_cleanly(owner, db_path, smoking_survey):
    _, link, _ = start(owner)
    store = Store(db_path)
    try:
        (session,) = store.interview_sessions(SLUG)
        # Past its expiry and its grace for sends queued offline (EXPIRY_GRACE_HOURS).
        expired, _ = store.start_interview(SLUG, hours=1, now=time.time() - 3601 - EXPIRY_GRACE_HOURS * 3600)
    finally:
        store.close()
    ending = {"csrf_token": dashboard_token(owner)}
    assert owner.post(f"/surveys/{SLUG}/interviews/{session['id']}/end", data=ending).status_code == 302
    assert "No active interviewer session" in owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    for path, status, notice in ((link, 410, "interview-ended"), (f"/s/{SLUG}/interview/{expired}", 410, "interview-expired"),
                                 (f"/s/{SLUG}/interview/{'z' * 32}", 404, "interview-unknown"),
                                 (f"/s/{SLUG}/interview/short", 404, "interview-unknown")):
        page = owner.get(path)
        assert page.status_code == status and f'id="{notice}"' in page.get_data(as_text=True), path
        refused = send(owner, path, smoking_survey["hash"])
        assert refused.status_code == (403 if status == 404 else 410) and refused.get_json()["field"] == "interview"
        assert "Traceback" not in refused.get_data(as_text=True)
    assert stored_count(db_path, SLUG) == 0


def test_an_expired_session_still_stores_sends_queued_offline_within_its_grace_but_shows_no_form(client, db_path,
                                                                                                  smoking_survey):
    store = Store(db_path)
    try:
        late, _ = store.start_interview(SLUG, hours=1, allowance=2, now=time.time() - 3601)
        ended, _ = store.start_interview(SLUG, hours=1, now=time.time() - 3601)
        store.end_interview_token(SLUG, ended)
    finally:
        store.close()
    link = f"/s/{SLUG}/interview/{late}"
    page = client.get(link)
    text = page.get_data(as_text=True)
    # No form, but the page still sends (and so reports) what waits for the session: its queue and its address.
    assert page.status_code == 410 and 'id="interview-expired"' in text and 'id="survey-form"' not in text
    assert f'data-action="{link}/responses"' in text and 'data-queue="smoking-2026 interview ' in text
    assert "/static/js/page/respond-handover.js" in text
    submission = "ab" * 16
    assert send(client, link, smoking_survey["hash"], submission=submission).status_code == 201
    assert send(client, link, smoking_survey["hash"], submission=submission).status_code == 201
    assert send(client, link, smoking_survey["hash"]).status_code == 201
    assert stored_count(db_path, SLUG) == 2, "a repeat is stored once"
    used_up = send(client, link, smoking_survey["hash"])
    assert used_up.status_code == 410 and used_up.get_json()["field"] == "interview", "the allowance still holds"
    refused = send(client, f"/s/{SLUG}/interview/{ended}", smoking_survey["hash"])
    assert refused.status_code == 410 and refused.get_json()["field"] == "interview", "an ended session has no grace"
    assert stored_count(db_path, SLUG) == 2


def test_the_device_ends_its_own_session(client, db_path, smoking_survey):
    store = Store(db_path)
    token, _ = store.start_interview(SLUG)
    store.close()
    link = f"/s/{SLUG}/interview/{token}"
    foreign = client.post(f"{link}/end", data="{}", content_type="application/json",
                          headers={"Sec-Fetch-Site": "cross-site"})
    assert foreign.status_code == 403
    ended = client.post(f"{link}/end", data="{}", content_type="application/json")
    assert ended.status_code == 200 and ended.get_json() == {"ended": True}
    assert "set-cookie" not in {name.lower() for name in ended.headers.keys()}
    assert client.get(link).status_code == 410
    assert client.post(f"/s/{SLUG}/interview/{'q' * 32}/end", data="{}", content_type="application/json").status_code == 404


def test_only_the_owner_and_collaborators_manage_sessions_and_only_of_an_open_survey(client, db_path, accounts,
                                                                                     smoking_survey):
    login(client, *OTHER)
    assert client.post(f"/surveys/{SLUG}/interviews", data={"label": "x", "hours": 1, "allowance": 1}).status_code == 404
    assert client.post(f"/surveys/{SLUG}/interviews/1/end", data={}).status_code == 404
    store = Store(db_path)
    store.share(SLUG, OTHER[0])
    store.close()
    status, link, _ = start(client)
    assert status == 200 and link, "a collaborator may start a session"
    assert start(client, hours=0)[1] is None and start(client, allowance=10_001)[1] is None
    store = Store(db_path)
    store.close_survey(SLUG)
    store.close()
    assert 'id="interview-csrf"' not in client.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert client.get(link).status_code == 410


def test_an_invitation_only_survey_takes_answers_through_a_session_without_invitations(client, db_path,
                                                                                      smoking_survey):
    panel = create_from_toml(db_path, PANEL_TOML)
    store = Store(db_path)
    if store.survey_status("panel") == "draft":
        store.publish_survey("panel")
    token, _ = store.start_interview("panel", allowance=1)
    store.close()
    answers = domain_answers(panel, **{q["id"]: 0 for q in panel["questions"]})
    body = json.dumps({"design": panel["hash"], "answers": answers})
    assert client.post("/s/panel/responses", data=body, content_type="application/json").status_code == 403
    page = client.get(f"/s/panel/interview/{token}")
    assert page.status_code == 200 and 'data-handover="yes"' in page.get_data(as_text=True)
    assert client.post(f"/s/panel/interview/{token}/responses", data=body,
                       content_type="application/json").status_code == 201
    assert client.post(f"/s/panel/interview/{token}/responses", data=body,
                       content_type="application/json").status_code == 410
    assert stored_count(db_path, "panel") == 1
    store = Store(db_path)
    try:
        assert store.invitation_counts("panel") == (0, 0)
    finally:
        store.close()


@pytest.mark.sqlite_only
def test_a_session_replaces_the_flood_limit_which_still_holds_for_everyone_else(db_path, smoking_survey):
    app = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "test",
                      "MAX_SUBMISSIONS_PER_MINUTE": 2, "FLOOD_STORE": "memory"})
    try:
        client = app.test_client()
        store = Store(db_path)
        token, _ = store.start_interview(SLUG, allowance=5)
        store.close()
        link = f"/s/{SLUG}/interview/{token}"
        assert [send(client, link, smoking_survey["hash"]).status_code for _ in range(5)] == [201] * 5
        plain = [client.post(f"/s/{SLUG}/responses", data=json.dumps({"design": smoking_survey["hash"], "answers": GOOD}),
                             content_type="application/json").status_code for _ in range(3)]
        assert plain == [201, 201, 429]
        assert send(client, f"/s/{SLUG}/interview/{'w' * 32}", smoking_survey["hash"]).status_code == 429
        assert stored_count(db_path, SLUG) == 7
    finally:
        app.extensions["ldp_stores"].close_all()


def test_a_session_link_is_hidden_in_log_lines():
    from survey.web.log_privacy import scrub_path

    token = "A" * 32
    for path in (f"/s/{SLUG}/interview/{token}", f"/s/{SLUG}/interview/{token}/responses",
                 f"/login?next=%2Fs%2F{SLUG}%2Finterview%2F{token}"):
        assert token not in scrub_path(path) and "(hidden)" in scrub_path(path), path


@pytest.mark.sqlite_only
def test_the_write_ahead_log_is_emptied_after_each_response_through_a_session(client, db_path, smoking_survey):
    store = Store(db_path)
    token, _ = store.start_interview(SLUG)
    store.close()
    for number in range(2):
        assert send(client, f"/s/{SLUG}/interview/{token}", smoking_survey["hash"]).status_code == 201
        assert os.path.getsize(f"{db_path}-wal") == 0, "the WAL keeps no order of the count and the response"


def test_the_dashboard_lists_an_expired_session_still_taking_late_sends_apart_and_ending_it_refuses_them(
        owner, db_path, smoking_survey):
    store = Store(db_path)
    try:
        late, session = store.start_interview(SLUG, label="Tablet 7", hours=1, allowance=4,
                                              now=time.time() - 3 * 3600 - 60)  # expired 2 h ago
        store.start_interview(SLUG, label="Tablet 8", hours=1, now=time.time() - 3601 - EXPIRY_GRACE_HOURS * 3600)
    finally:
        store.close()
    page = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "No active interviewer session" in page and "Tablet 8" not in page, "past its grace it is not listed"
    item = re.search(r'<li id="late-interview-(\d+)">(.*?)</li>', page, re.S)
    assert item and int(item.group(1)) == session["id"], page
    words = " ".join(item.group(2).split())
    assert "Tablet 7" in words and "0 of 4 answered" in words and "Expired 2 h ago" in words
    assert "still accepts answers randomized on the device before the expiry, until " in words
    assert "end it to refuse them" in words and 'aria-label="End the session Tablet 7 and refuse its late answers"' in words
    link = f"/s/{SLUG}/interview/{late}"
    assert send(owner, link, smoking_survey["hash"]).status_code == 201, "in its grace a late send is stored"
    token = re.search(rf'id="end-interview-csrf-{session["id"]}" name="csrf_token" type="hidden" value="([^"]+)"',
                      page).group(1)
    ended = owner.post(f"/surveys/{SLUG}/interviews/{session['id']}/end", data={"csrf_token": token})
    assert ended.status_code == 302
    after = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "not even late sends" in after and 'id="late-interview-' not in after
    refused = send(owner, link, smoking_survey["hash"], submission="cd" * 16)
    assert refused.status_code == 410 and refused.get_json()["field"] == "interview"
    assert stored_count(db_path, SLUG) == 1, "nothing stored from the refused late send"
