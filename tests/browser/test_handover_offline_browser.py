"""Handover mode offline (issue 29, items 1 and 2 joined), in headless Chromium against a real server process.

An interviewer session's page opened online is reloaded offline (its service worker keeps it) and answered by
five respondents in turn. After each reset the device holds only randomized bodies, in the session's own queue
(IndexedDB), each within the design's report domain, and no true answer anywhere (IndexedDB, localStorage,
sessionStorage, the DOM); the interviewer's bar counts them waiting. Online again, exactly five responses are
stored, each once, and the bar counts them answered: also across a server restart on the same port and database.
A survey closed, or the session ended, in between: the page (the session's own, reopened after the session
ended) says plainly that the waiting answers were refused, how many, and why.
"""

from __future__ import annotations

import json
import re

import pytest

from test_accessibility import axe, violations  # noqa: F401 (the axe fixture)

from conftest import create_from_toml, free_port, smoking_text, stored_count
from field_steps import (CACHED_JS, QUEUE_JS, REMNANTS_JS, RESPONDENTS, SHOWN_JS, STORAGE_JS, answer_handover,
                         in_domain, ready_offline, serve, wait_stored, wait_text)

from survey.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SURVEYS = ("handover-online", "handover-restart", "handover-closed", "handover-ended")


@pytest.fixture(scope="module")
def field(tmp_path_factory):
    """Yield {"db", "directory", "server"}: copies of the smoking survey, each with a session, and their server."""
    directory = tmp_path_factory.mktemp("handover-offline")
    db_path = directory / "field.db"
    for slug in SURVEYS:
        create_from_toml(db_path, smoking_text().replace('slug = "smoking-2026"', f'slug = "{slug}"'))
    store = Store(db_path)
    try:
        # The restart's session allows exactly the five: offline, the page lets no sixth respondent start.
        allowances = {"handover-online": 20, "handover-restart": 5, "handover-closed": 20, "handover-ended": 20}
        tokens = {slug: store.start_interview(slug, label="Tablet 3", allowance=allowances[slug])[0]
                  for slug in SURVEYS}
    finally:
        store.close()
    state = {"db": db_path, "directory": directory, "tokens": tokens,
             "server": serve(db_path, directory, free_port())}
    yield state
    assert state["server"].stop() == 0


def bar(page) -> tuple[str, str]:
    """Return the interviewer's bar's counts: (answered, waiting)."""
    return page.locator("#handover-answered").text_content(), page.locator("#handover-waiting").text_content()


def check_device(page, slug: str, shown: list[dict], design: dict):
    """Check that the device keeps only the randomized bodies of ``shown``, in the session's queue, and nothing true."""
    records = page.evaluate(QUEUE_JS)
    assert len(records) == len(shown)
    assert all(set(record) == {"submission", "slug", "body"} for record in records)
    assert all(re.fullmatch(rf"{slug} interview \d+", record["slug"]) for record in records), records
    bodies = [json.loads(record["body"]) for record in records]
    # No invitation, no time, no order: the reports, the design's hash and a random submission id only.
    assert all(set(body) == {"answers", "design", "submission"} for body in bodies), bodies
    assert sorted(json.dumps(body["answers"], sort_keys=True) for body in bodies) == \
        sorted(json.dumps(reports, sort_keys=True) for reports in shown), "the queue holds the reports shown"
    questions = {question["id"]: question for question in design["questions"]}
    for body in bodies:
        assert body["design"] == design["hash"]
        assert all(in_domain(questions[qid], report) for qid, report in body["answers"].items()), body
    kept = json.dumps([records, page.evaluate(STORAGE_JS)])
    for words in {respondent[2] for respondent in RESPONDENTS} | {"Yes", "No", "tobacco", "How old"}:
        assert words not in kept, f"{words!r} is kept on the device"
    assert {method for method, _url, _text in page.evaluate(CACHED_JS)} == {"GET"}


def open_offline(context, field, slug: str):
    """Open the session's page online until its worker keeps it, then go offline and reload it; return (page, link)."""
    origin = field["server"].origin
    link = f"{origin}/s/{slug}/interview/{field['tokens'][slug]}"
    page = context.new_page()
    ready_offline(page, link, f"{origin}/s/{slug}/design.json")
    context.set_offline(True)
    page.reload()
    page.locator("#handover-start").wait_for(state="visible")
    assert page.evaluate("navigator.onLine") is False
    return page, link


def five_offline(page, field, slug: str, respondents: int = 5):
    """Let the five respondents (or the first few) answer in turn offline, checking the page and the device after each
    reset."""
    design = json.loads(page.locator("#design").text_content())
    history = page.evaluate("history.length")
    shown = []
    for number, respondent in enumerate(RESPONDENTS[:respondents], 1):
        page.locator("#handover-begin").click()
        page.locator("#survey-form").wait_for(state="visible")
        answer_handover(page, respondent)
        shown.append(page.evaluate(SHOWN_JS))
        page.evaluate("window.__previousForm = document.getElementById('survey-form')")
        page.get_by_role("button", name=re.compile("send", re.I)).click()
        page.locator("#handover-queued").wait_for(state="visible", timeout=40_000)
        assert not page.locator("#handover-sent").is_visible() and not page.locator("#thanks").is_visible()
        assert wait_text(page.locator("#handover-waiting"), str(number)) == str(number)
        assert page.locator("#handover-answered").text_content() == "0"
        left = page.evaluate(REMNANTS_JS)
        assert left == {"checked": 0, "values": [], "oldFormAttached": False, "local": 0, "session": 0,
                        "history": history, "formHidden": True, "errors": []}, (number, left)
        check_device(page, slug, shown, design)
    assert stored_count(field["db"], slug) == 0


def test_five_respondents_offline_then_online_store_five_once_and_the_bar_counts_them(browser, field, axe):
    slug = "handover-online"
    context = browser.new_context(viewport={"width": 360, "height": 740})
    page, link = open_offline(context, field, slug)
    five_offline(page, field, slug)
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    assert violations(axe, page) == [], "the start screen after a queued send, at 360 px"
    context.set_offline(False)
    wait_stored(field["db"], slug, 5)
    assert wait_text(page.locator("#handover-answered"), "5") == "5"
    assert bar(page) == ("5", "0") and page.evaluate(QUEUE_JS) == []
    page.get_by_text("5 answer(s) waiting on this device were sent").wait_for(timeout=40_000)
    # The kept copy was refreshed with the count: offline again, a reload shows the bar as it is.
    for _ in range(50):
        kept = {url: text for _method, url, text in page.evaluate(CACHED_JS)}
        if 'data-answered="5"' in kept.get(link, ""):
            break
        page.wait_for_timeout(100)
    context.set_offline(True)
    page.reload()
    page.locator("#handover-start").wait_for(state="visible")
    assert bar(page) == ("5", "0")
    context.set_offline(False)
    page.reload()
    page.locator("#handover-start").wait_for(state="visible")
    page.wait_for_timeout(300)
    assert bar(page) == ("5", "0") and stored_count(field["db"], slug) == 5, "nothing is counted twice"
    store = Store(field["db"])
    try:
        (session,) = store.interview_sessions(slug)
    finally:
        store.close()
    assert session["answered"] == 5, "the session's allowance counted each stored response once"
    context.close()


def test_a_server_restart_in_between_loses_nothing(browser, field):
    slug = "handover-restart"
    context = browser.new_context()
    page, _link = open_offline(context, field, slug)
    five_offline(page, field, slug)
    page.locator("#handover-begin").click()
    page.locator("#handover-full").wait_for(state="visible")
    assert "allowance of 5 responses" in page.locator("#handover-full").inner_text()
    assert not page.locator("#survey-form").is_visible()
    port = field["server"].port
    assert field["server"].stop() == 0
    field["server"] = serve(field["db"], field["directory"], port)
    context.set_offline(False)
    wait_stored(field["db"], slug, 5)
    assert wait_text(page.locator("#handover-answered"), "5") == "5"
    assert bar(page) == ("5", "0") and page.evaluate(QUEUE_JS) == []
    page.locator("#handover-begin").click()
    assert page.locator("#handover-full").is_visible(), "online, the used-up allowance still holds"
    context.close()


def test_a_survey_closed_in_between_says_how_many_waiting_answers_were_refused_and_why(browser, field):
    slug = "handover-closed"
    context = browser.new_context(viewport={"width": 360, "height": 740})
    page, link = open_offline(context, field, slug)
    five_offline(page, field, slug)
    store = Store(field["db"])
    try:
        store.close_survey(slug)
    finally:
        store.close()
    context.set_offline(False)
    refused = page.locator("#offline-refused")
    refused.wait_for(state="visible", timeout=40_000)
    assert re.search(r"5 answer\(s\) waiting on this device were refused, because the survey has closed",
                     refused.inner_text()), refused.inner_text()
    assert bar(page) == ("0", "0") and page.evaluate(QUEUE_JS) == []
    assert stored_count(field["db"], slug) == 0
    # Online, the session's page says the survey closed, and the kept copy of the form is gone (a 410).
    assert page.goto(link).status == 410 and page.locator("#survey-closed").is_visible()
    assert link not in {url for _method, url, _text in page.evaluate(CACHED_JS)}
    context.close()


def test_a_session_ended_in_between_its_page_reopened_says_its_waiting_answers_were_refused(browser, field, axe):
    slug = "handover-ended"
    context = browser.new_context(viewport={"width": 360, "height": 740})
    page, link = open_offline(context, field, slug)
    five_offline(page, field, slug, respondents=2)
    page.close()  # the tab is closed while the answers wait
    store = Store(field["db"])
    try:
        store.end_interview_token(slug, field["tokens"][slug])
    finally:
        store.close()
    context.set_offline(False)
    page = context.new_page()
    # The ended session's page has no form, but it still sends what waits for the session, and says what happened.
    assert page.goto(link).status == 410 and page.locator("#interview-ended").is_visible()
    refused = page.locator("#offline-refused")
    refused.wait_for(state="visible", timeout=40_000)
    assert re.search(r"2 answer\(s\) waiting on this device were refused, because the interviewer session had ended",
                     refused.inner_text()), refused.inner_text()
    assert page.evaluate(QUEUE_JS) == [] and stored_count(field["db"], slug) == 0
    assert violations(axe, page) == []
    assert link not in {url for _method, url, _text in page.evaluate(CACHED_JS)}, "the 410 dropped the kept copy"
    context.close()
