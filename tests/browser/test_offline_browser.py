"""Browser tests of offline field mode (issue 29, item 1), in headless Chromium against the real server.

A survey page opened online is reloaded and answered offline (served by its service worker); the
device then holds only randomized bodies (IndexedDB), checked against the design's report domain,
and no true answer (IndexedDB, localStorage, the service worker's cache, the DOM); online again,
exactly the queued responses are stored, each once: also across a server restart on the same port
and database, and, for a survey closed or changed in between, the page says that its answers were refused and why.
"""

from __future__ import annotations

import json
import re

import pytest

from test_accessibility import axe, violations  # noqa: F401 (the axe fixture)

from conftest import create_from_toml, free_port, smoking_text, stored_count
from field_steps import CACHED_JS, QUEUE_JS, SHOWN_JS, STORAGE_JS, in_domain, ready_offline, serve, wait_stored

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design

from survey.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Two respondents' true answers: (smoker, lung disease, cigarettes option, age).
ANSWERS = [("Yes", "No", "6-10", "42"), ("No", "Yes", "more than 20", "67"), ("Yes", "Yes", "1-5", "29")]


@pytest.fixture(scope="module")
def field(tmp_path_factory):
    """Yield {"db", "directory", "server"}: a database of three copies of the smoking survey, and its server."""
    directory = tmp_path_factory.mktemp("offline")
    db_path = directory / "offline.db"
    for slug in ("field-online", "field-restart", "field-closed", "field-changed"):
        create_from_toml(db_path, smoking_text().replace('slug = "smoking-2026"', f'slug = "{slug}"'))
    state = {"db": db_path, "directory": directory, "server": serve(db_path, directory, free_port())}
    yield state
    assert state["server"].stop() == 0


def answer(page, answers):
    """Give one respondent's true answers and send them; return the reports the page showed."""
    smoker, lung, cigarettes, age = answers
    page.locator("#survey-form").wait_for(state="visible")
    page.get_by_role("group", name=re.compile("smoke tobacco")).get_by_label(smoker, exact=True).check()
    page.get_by_role("group", name=re.compile("chronic lung disease")).get_by_label(lung, exact=True).check()
    page.get_by_role("group", name=re.compile("how many cigarettes")).get_by_label(cigarettes, exact=True).check()
    page.get_by_role("group", name=re.compile("How old are you")).get_by_role("spinbutton").fill(age)
    shown = page.evaluate(SHOWN_JS)
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.locator("#thanks").wait_for(state="visible", timeout=40_000)
    assert "keeps their randomized reports" in page.locator("#thanks-text").inner_text()
    return shown


def next_respondent(page):
    """Let the next respondent answer on this device (handover): forget the answered mark and reload offline."""
    page.evaluate("Object.keys(localStorage).forEach((key) => localStorage.removeItem(key))")
    page.reload()


def check_device(page, origin: str, slug: str, shown: list[dict], design: dict):
    """Check that the device keeps only the randomized bodies of ``shown`` and nothing true."""
    records = page.evaluate(QUEUE_JS)
    assert len(records) == len(shown)
    bodies = [json.loads(record["body"]) for record in records]
    assert all(set(record) == {"submission", "slug", "body"} and record["slug"] == slug for record in records)
    assert all(set(body) == {"answers", "design", "submission"} for body in bodies), bodies
    assert [body["submission"] for body in bodies] == sorted(record["submission"] for record in records)
    assert sorted(json.dumps(body["answers"], sort_keys=True) for body in bodies) == \
        sorted(json.dumps(reports, sort_keys=True) for reports in shown), "the queue holds the reports shown"
    questions = {question["id"]: question for question in design["questions"]}
    for body in bodies:
        assert body["design"] == design["hash"]
        assert all(in_domain(questions[qid], report) for qid, report in body["answers"].items()), body
    kept = json.dumps([records, page.evaluate(STORAGE_JS)])
    # The answers' words (option labels, question texts) are nowhere; numbers are checked by the domain above.
    for words in {text for answers in ANSWERS for text in answers[2:3]} | {"Yes", "No", "tobacco", "How old"}:
        assert words not in kept, f"{words!r} is kept on the device"
    assert set(page.evaluate(STORAGE_JS)) <= {f"ldp-survey:answered:{slug}"}
    cached = page.evaluate(CACHED_JS)
    assert {method for method, _url, _text in cached} == {"GET"}
    assert {url for _method, url, _text in cached} <= {
        f"{origin}/s/{slug}", f"{origin}/s/{slug}/design.json", f"{origin}/s/{slug}/manifest.webmanifest",
        f"{origin}/static/js/style.css", *(url for _m, url, _t in cached if "/static/js/page/respond.js?" in url)}
    assert not page.evaluate("[...document.querySelectorAll('input')].some((i) => i.checked || i.value && "
                             "i.type === 'number')"), "the page keeps no answer after sending"


def answer_offline(context, field, slug: str, respondents: int):
    """Open the survey online, go offline, reload it and answer it ``respondents`` times; return the page."""
    origin = field["server"].origin
    page = context.new_page()
    ready_offline(page, f"{origin}/s/{slug}", f"{origin}/s/{slug}/design.json")
    context.set_offline(True)
    page.reload()
    assert page.locator("#survey-form").is_visible(), "the page loads offline from its service worker"
    design = json.loads(page.locator("#design").text_content())
    shown = []
    for index in range(respondents):
        if index:
            next_respondent(page)
        shown.append(answer(page, ANSWERS[index]))
    expected = "1 answer waiting" if respondents == 1 else f"{respondents} answers waiting to be sent"
    assert expected in page.locator("#offline-status").inner_text()
    assert "offline" in page.locator("#offline-status").inner_text()
    check_device(page, origin, slug, shown, design)
    return page


def no_sideways_scroll(page) -> bool:
    """Return whether the page fits its width (no horizontal scrolling)."""
    return page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def test_answers_given_offline_wait_randomized_and_are_stored_once_online(browser, field, axe):
    context = browser.new_context(viewport={"width": 360, "height": 740})
    page = answer_offline(context, field, "field-online", 3)
    assert stored_count(field["db"], "field-online") == 0
    assert violations(axe, page) == [] and no_sideways_scroll(page)
    context.set_offline(False)
    wait_stored(field["db"], "field-online", 3)
    page.get_by_text("3 answer(s) waiting on this device were sent").wait_for(timeout=40_000)
    assert page.evaluate(QUEUE_JS) == []
    assert page.locator("#offline-status").inner_text() == ""
    page.reload()
    page.wait_for_timeout(500)
    assert stored_count(field["db"], "field-online") == 3, "nothing is counted twice"
    context.close()


def test_a_server_restart_in_between_loses_nothing(browser, field):
    context = browser.new_context()
    page = answer_offline(context, field, "field-restart", 2)
    port = field["server"].port
    assert field["server"].stop() == 0
    field["server"] = serve(field["db"], field["directory"], port)
    context.set_offline(False)
    wait_stored(field["db"], "field-restart", 2)
    page.get_by_text("2 answer(s) waiting on this device were sent").wait_for(timeout=40_000)
    assert page.evaluate(QUEUE_JS) == []
    context.close()


def test_a_survey_closed_in_between_says_its_waiting_answers_were_refused(browser, field, axe):
    context = browser.new_context(viewport={"width": 360, "height": 740})
    page = answer_offline(context, field, "field-closed", 2)
    page.close()  # the tab is closed while the answers wait
    store = Store(field["db"])
    try:
        store.close_survey("field-closed")
    finally:
        store.close()
    context.set_offline(False)
    page = context.new_page()
    page.goto(f"{field['server'].origin}/s/field-closed")
    assert page.locator("#survey-closed").is_visible()
    refused = page.locator("#offline-refused")
    # Both refusals are counted, whether one flush or two (after a lost send) met them; a later flush
    # comes every 30 s (client_js/offline.js), so the wait covers two of them.
    page.get_by_text(re.compile(r"2 answer\(s\) waiting on this device were refused, because the survey has "
                                r"closed")).wait_for(timeout=90_000)
    assert refused.is_visible()
    assert page.evaluate(QUEUE_JS) == []
    assert stored_count(field["db"], "field-closed") == 0
    assert violations(axe, page) == [] and no_sideways_scroll(page)
    # Network first: the kept copy of the page is now the closed page, never the stale form.
    kept = {url: text for _method, url, text in page.evaluate(CACHED_JS)}
    assert 'id="survey-closed"' in kept[f"{field['server'].origin}/s/field-closed"]
    context.close()


def test_a_design_changed_in_between_says_its_waiting_answers_were_refused(browser, field):
    context = browser.new_context()
    page = answer_offline(context, field, "field-changed", 1)
    text = smoking_text().replace('slug = "smoking-2026"', 'slug = "field-changed"').replace(
        "epsilon = 2.0", "epsilon = 1.5", 1)
    store = Store(field["db"])
    try:
        store.create_survey(text, build_design(parse_definition_toml(text, source="changed")), replace=True)
    finally:
        store.close()
    context.set_offline(False)
    refused = page.locator("#offline-refused")
    refused.wait_for(state="visible", timeout=40_000)
    assert "1 answer(s) waiting on this device were refused, because the survey was changed" in refused.inner_text()
    assert page.evaluate(QUEUE_JS) == []
    assert stored_count(field["db"], "field-changed") == 0
    context.close()
