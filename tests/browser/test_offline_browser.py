"""Browser tests of offline field mode (issue 29, item 1), in headless Chromium against the real server.

A survey page opened online is reloaded and answered offline (served by its service worker); the
device then holds only randomized bodies (IndexedDB), checked against the design's report domain,
and no true answer (IndexedDB, localStorage, the service worker's cache, the DOM); online again,
exactly the queued responses are stored, each once: also across a server restart on the same port
and database, and, for a survey closed or changed in between, the page says that its answers were refused and why.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from test_accessibility import axe, violations  # noqa: F401 (the axe fixture)

from conftest import REPO, ServerProcess, create_from_toml, free_port, smoking_text, stored_count, wait_for_line

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design

from survey.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CACHE = "ldp-survey-offline-v1"
# Two respondents' true answers: (smoker, lung disease, cigarettes option, age).
ANSWERS = [("Yes", "No", "6-10", "42"), ("No", "Yes", "more than 20", "67"), ("Yes", "Yes", "1-5", "29")]
QUEUE_JS = """() => new Promise((resolve, reject) => {
  const open = indexedDB.open('ldp-survey-offline');
  open.onerror = () => reject(open.error);
  open.onsuccess = () => {
    const request = open.result.transaction('queue').objectStore('queue').getAll();
    request.onsuccess = () => { resolve(request.result); open.result.close(); };
  };
})"""
CACHED_JS = f"""async () => {{
  const cache = await caches.open('{CACHE}');
  const kept = [];
  for (const request of await cache.keys()) {{
    kept.push([request.method, request.url, await (await cache.match(request, {{ ignoreVary: true }})).text()]);
  }}
  return kept;
}}"""
STORAGE_JS = "() => Object.fromEntries(Object.keys(localStorage).map((key) => [key, localStorage.getItem(key)]))"


def serve(db_path, directory, port: int) -> ServerProcess:
    """Start `ldp-survey serve` on ``port`` of 127.0.0.1 over ``db_path``; return once it serves."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with (directory / f"server-{time.monotonic_ns()}.log").open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "survey", "--db", str(db_path), "serve", "--host",
                                    "127.0.0.1", "--port", str(port), "--workers", "1",
                                    "--max-submissions-per-minute", "0"],
                                   env=env, stdout=subprocess.PIPE, stderr=stderr, bufsize=0)
    server = ServerProcess(process, port, directory / "server.log")
    try:
        wait_for_line(process, b"Serving ", 30)
    except (TimeoutError, EOFError):
        server.stop(signal.SIGKILL)
        raise
    return server


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


def ready_offline(page, origin: str, slug: str):
    """Open the survey online and wait until its service worker controls it and keeps its files."""
    page.goto(f"{origin}/s/{slug}")
    # Polled here: wait_for_function's polling evaluates strings, which the page's CSP forbids.
    for _ in range(150):
        if page.evaluate("navigator.serviceWorker.controller !== null"):
            break
        page.wait_for_timeout(100)
    assert page.evaluate("navigator.serviceWorker.controller !== null"), "the service worker controls the page"
    for _ in range(100):
        urls = {url for _method, url, _text in page.evaluate(CACHED_JS)}
        if f"{origin}/s/{slug}" in urls and f"{origin}/s/{slug}/design.json" in urls and len(urls) >= 5:
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"the page's files were not kept: {urls}")


def answer(page, answers):
    """Give one respondent's true answers and send them; return the reports the page showed."""
    smoker, lung, cigarettes, age = answers
    page.locator("#survey-form").wait_for(state="visible")
    page.get_by_role("group", name=re.compile("smoke tobacco")).get_by_label(smoker, exact=True).check()
    page.get_by_role("group", name=re.compile("chronic lung disease")).get_by_label(lung, exact=True).check()
    page.get_by_role("group", name=re.compile("how many cigarettes")).get_by_label(cigarettes, exact=True).check()
    page.get_by_role("group", name=re.compile("How old are you")).get_by_role("spinbutton").fill(age)
    shown = page.evaluate("""Object.fromEntries([...document.querySelectorAll('.report-preview')].map(
        (p) => [p.closest('fieldset').dataset.question, JSON.parse(p.dataset.report)]))""")
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.locator("#thanks").wait_for(state="visible", timeout=10_000)
    assert "keeps their randomized reports" in page.locator("#thanks-text").inner_text()
    return shown


def next_respondent(page):
    """Let the next respondent answer on this device (handover): forget the answered mark and reload offline."""
    page.evaluate("Object.keys(localStorage).forEach((key) => localStorage.removeItem(key))")
    page.reload()


def in_domain(question: dict, report) -> bool:
    """Return whether ``report`` is in the output domain of the design's question (not an answer's form)."""
    if isinstance(report, list):
        return len(report) == len(question["options"]) and set(report) <= {0, 1}
    size = {"rr": 2, "duchi": 2, "grr": len(question.get("options", ())), "piecewise": question.get("bins"),
            "hybrid": question.get("levels"), "opm": question.get("levels")}[question["mechanism"]]
    return isinstance(report, int) and 0 <= report < size


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


def wait_stored(db_path, slug: str, count: int):
    """Wait until the survey has stored ``count`` responses (at most 20 s)."""
    for _ in range(200):
        if stored_count(db_path, slug) >= count:
            break
        time.sleep(0.1)
    assert stored_count(db_path, slug) == count


def answer_offline(context, field, slug: str, respondents: int):
    """Open the survey online, go offline, reload it and answer it ``respondents`` times; return the page."""
    origin = field["server"].origin
    page = context.new_page()
    ready_offline(page, origin, slug)
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
    page.get_by_text("3 answer(s) waiting on this device were sent").wait_for(timeout=10_000)
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
    page.get_by_text("2 answer(s) waiting on this device were sent").wait_for(timeout=10_000)
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
    refused.wait_for(state="visible", timeout=10_000)
    assert re.search(r"2 answer\(s\) waiting on this device were refused, because the survey has closed",
                     refused.inner_text()), refused.inner_text()
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
    refused.wait_for(state="visible", timeout=10_000)
    assert "1 answer(s) waiting on this device were refused, because the survey was changed" in refused.inner_text()
    assert page.evaluate(QUEUE_JS) == []
    assert stored_count(field["db"], "field-changed") == 0
    context.close()
