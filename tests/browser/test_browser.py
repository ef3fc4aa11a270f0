"""Browser tests: headless Chromium (Playwright) against the real WSGI server on 127.0.0.1.

They check the privacy invariants where they hold: in the page. The true answers stay in
the browser, only in-domain randomized reports are sent, randomness comes from
crypto.getRandomValues, no other origin is contacted, and without JavaScript nothing is sent.
The live_server and browser fixtures are in conftest.py.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

import pytest

from survey.store import Store
from conftest import stored_count

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLUG = "smoking-2026"

# Count crypto.getRandomValues calls and make any Math.random call fail loudly.
INSTRUMENT = """
window.__randomCalls = 0;
window.__mathRandomCalls = 0;
const original = crypto.getRandomValues.bind(crypto);
crypto.getRandomValues = (array) => { window.__randomCalls += 1; return original(array); };
Math.random = () => { window.__mathRandomCalls += 1; throw new Error('Math.random is banned'); };
"""

# Record when send is pressed (capture phase, before the form's handler) and when the request
# is made, with the button's state at that moment.
SEND_TIMING = """
window.__sendTiming = {};
document.addEventListener('click', (event) => {
  if (event.target.closest('button[type="submit"]')) window.__sendTiming.pressed = performance.now();
}, true);
const originalFetch = window.fetch.bind(window);
window.fetch = (...args) => {
  const button = document.querySelector('button[type="submit"]');
  window.__sendTiming.fetched = performance.now();
  window.__sendTiming.button = { disabled: button.disabled, text: button.textContent };
  return originalFetch(...args);
};
"""
SEND_DELAY_MS = 400



def fill_survey(page):
    """Answer every question of the smoking survey with known true answers."""
    page.get_by_role("group", name=re.compile("smoke tobacco")).get_by_label("Yes").check()
    page.get_by_role("group", name=re.compile("chronic lung disease")).get_by_label("No").check()
    page.get_by_role("group", name=re.compile("how many cigarettes")).get_by_label("6-10").check()
    page.get_by_role("group", name=re.compile("How old are you")).get_by_role("spinbutton").fill("42")


def send_and_wait_for_thanks(page):
    """Press send and wait until the page shows its thank-you state."""
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.get_by_text(re.compile("thank you", re.I)).first.wait_for(timeout=10_000)


def capture(page):
    requests = []
    page.on("request", lambda request: requests.append(
        {"url": request.url, "method": request.method, "body": request.post_data}))
    return requests


def test_survey_sends_only_randomized_reports(browser, live_server):
    origin = live_server["origin"]
    before = stored_count(live_server["db"], SLUG)
    context = browser.new_context(viewport={"width": 390, "height": 844})
    context.add_init_script(INSTRUMENT)
    page = context.new_page()
    requests = capture(page)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{origin}/s/{SLUG}")
    design = json.loads(page.request.get(f"{origin}/s/{SLUG}/design.json").text())

    fill_survey(page)
    send_and_wait_for_thanks(page)

    posts = [r for r in requests if r["method"] == "POST"]
    assert len(posts) == 1 and posts[0]["url"] == f"{origin}/s/{SLUG}/responses"
    body = json.loads(posts[0]["body"])
    assert set(body) == {"design", "answers", "submission"}
    assert re.fullmatch(r"[0-9a-f]{32}", body["submission"])
    assert body["design"] == design["hash"]
    answers = body["answers"]
    assert set(answers) == {"smoker", "lung_disease", "cigarettes", "age"}
    assert answers["smoker"] in (0, 1) and answers["lung_disease"] in (0, 1)
    assert answers["age"] in (0, 1), "the number is sent as one randomized bit, never as 42"
    cigarettes = next(q for q in design["questions"] if q["id"] == "cigarettes")
    assert cigarettes["mechanism"] == "ss", "five options at this budget: subset selection"
    assert len(answers["cigarettes"]) == 5 and set(answers["cigarettes"]) <= {0, 1}
    assert sum(answers["cigarettes"]) == cigarettes["subset_size"]
    assert "42" not in json.dumps(answers)

    assert {urlsplit(r["url"]).netloc for r in requests} == {urlsplit(origin).netloc}
    assert page.evaluate("window.__randomCalls") > 0
    assert page.evaluate("window.__mathRandomCalls") == 0
    assert not errors
    assert stored_count(live_server["db"], SLUG) == before + 1

    names = page.evaluate("[...document.querySelectorAll('input, select, textarea')]"
                          ".filter(e => e.hasAttribute('name')).map(e => e.name)")
    assert names == [], "true-answer inputs carry no name"
    context.close()


def test_incomplete_survey_is_not_sent(browser, live_server):
    before = stored_count(live_server["db"], SLUG)
    context = browser.new_context()
    page = context.new_page()
    requests = capture(page)
    page.goto(f"{live_server['origin']}/s/{SLUG}")
    page.get_by_role("group", name=re.compile("smoke tobacco")).get_by_label("Yes").check()
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.wait_for_timeout(1000)
    assert not [r for r in requests if r["method"] == "POST"]
    assert stored_count(live_server["db"], SLUG) == before
    context.close()


def test_without_javascript_nothing_is_sent(browser, live_server):
    before = stored_count(live_server["db"], SLUG)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    requests = capture(page)
    page.goto(f"{live_server['origin']}/s/{SLUG}")
    assert "without JavaScript" in page.content() or "JavaScript" in page.inner_text("body")
    fill_survey(page)
    button = page.get_by_role("button", name=re.compile("send", re.I))
    if button.is_enabled():
        button.click()
        page.wait_for_timeout(1000)
    assert not [r for r in requests if r["method"] == "POST"]
    assert not [r for r in requests[1:] if urlsplit(r["url"]).query or r["body"]]
    assert stored_count(live_server["db"], SLUG) == before
    context.close()


def test_request_leaves_a_fixed_delay_after_send(browser, live_server):
    """The randomization's running time must not show in when the request leaves (a lower bound the code enforces)."""
    context = browser.new_context()
    context.add_init_script(SEND_TIMING)
    page = context.new_page()
    page.goto(f"{live_server['origin']}/s/{SLUG}")
    fill_survey(page)
    send_and_wait_for_thanks(page)
    timing = page.evaluate("window.__sendTiming")
    assert timing["fetched"] - timing["pressed"] >= SEND_DELAY_MS
    assert timing["button"] == {"disabled": True, "text": "Sending…"}
    context.close()


def test_retry_resends_the_same_reports_even_for_a_changed_answer_unless_confirmed(browser, live_server):
    """Randomizing an answer again would spend its budget twice: a retry reuses its report (test_respondent_trust.py
    checks the confirmed change)."""
    before = stored_count(live_server["db"], SLUG)
    context = browser.new_context()
    page = context.new_page()
    requests = capture(page)
    attempts = {"count": 0}

    def fail_twice(route):
        attempts["count"] += 1
        if attempts["count"] <= 2:
            route.abort("connectionrefused")
        else:
            route.continue_()

    page.route(f"{live_server['origin']}/s/{SLUG}/responses", fail_twice)
    page.goto(f"{live_server['origin']}/s/{SLUG}")
    fill_survey(page)
    button = page.get_by_role("button", name=re.compile("send", re.I))
    button.click()
    page.get_by_text(re.compile("could not be sent", re.I)).wait_for(timeout=10_000)
    button.click()
    page.get_by_text(re.compile("could not be sent", re.I)).wait_for(timeout=10_000)
    page.wait_for_function("!document.querySelector('button[type=submit]').disabled")
    page.get_by_role("group", name=re.compile("How old are you")).get_by_role("spinbutton").fill("43")
    button.click()
    page.get_by_text(re.compile("thank you", re.I)).first.wait_for(timeout=10_000)

    bodies = [json.loads(r["body"])["answers"] for r in requests if r["method"] == "POST"]
    assert len(bodies) == 3
    assert bodies[0] == bodies[1], "a retry with unchanged answers resends the same reports"
    unchanged = {"smoker", "lung_disease", "cigarettes"}
    assert {q: bodies[2][q] for q in unchanged} == {q: bodies[0][q] for q in unchanged}
    assert bodies[2]["age"] == bodies[0]["age"], "the changed answer keeps its report until a change is confirmed"
    assert stored_count(live_server["db"], SLUG) == before + 1
    context.close()


# Every random word is 0, so u53() = 0 is below every threshold: RR always flips, subset
# selection keeps "6-10" (index 2) in the subset and Floyd's below(4) = 0 adds "none" (index 0),
# and Duchi rounds 42 in 18..90 up (below(72) = 0 < 24) before flipping it to 0.
ZERO_WORDS = "crypto.getRandomValues = (array) => { array.fill(0); return array; };"


def test_the_form_sends_the_randomized_report_not_the_answer(browser, live_server):
    """With a rigged random source the report is known: it must differ from the true answers."""
    context = browser.new_context()
    context.add_init_script(ZERO_WORDS)
    page = context.new_page()
    requests = capture(page)
    page.goto(f"{live_server['origin']}/s/{SLUG}")
    fill_survey(page)
    send_and_wait_for_thanks(page)
    [post] = [r for r in requests if r["method"] == "POST"]
    assert json.loads(post["body"])["answers"] == {"smoker": 0, "lung_disease": 1, "cigarettes": [1, 0, 1, 0, 0], "age": 0}
    context.close()


@pytest.mark.parametrize("epsilon, mechanism", [(6.0, "hybrid"), (20.0, "piecewise"), (6.0, "opm")])
def test_a_level_number_is_sent_as_one_output_level(browser, live_server, epsilon, mechanism):
    """A number leaves the page as one level of its level mechanism (as the definition asks), never the answer."""
    from survey.core import codec
    from survey.core.definition import parse_definition
    from survey.core.design import build_design

    slug = f"income-{mechanism}"
    design = build_design(parse_definition({
        "slug": slug, "title": "Income", "epsilon": epsilon, "release_every": 1,
        "questions": [{"id": "income", "kind": "number", "text": "Yearly income in euros?",
                       "min": 100000, "max": 100250, "mechanism": mechanism}]}))
    question = design["questions"][0]
    assert question["mechanism"] == mechanism
    store = Store(live_server["db"])
    try:
        store.create_survey("", design)
    finally:
        store.close()
    origin = live_server["origin"]
    context = browser.new_context()
    context.add_init_script(INSTRUMENT)
    page = context.new_page()
    requests = capture(page)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{origin}/s/{slug}")
    page.get_by_role("spinbutton").fill("100123")
    send_and_wait_for_thanks(page)
    posts = [r for r in requests if r["method"] == "POST"]
    assert len(posts) == 1
    body = json.loads(posts[0]["body"])
    level = body["answers"]["income"]
    levels = question.get("levels") or question["bins"]
    assert set(body["answers"]) == {"income"} and isinstance(level, int) and 0 <= level < levels
    assert "100123" not in posts[0]["body"]
    assert page.evaluate("window.__randomCalls") > 0 and page.evaluate("window.__mathRandomCalls") == 0
    assert not errors
    store = Store(live_server["db"])
    try:
        assert list(store.iter_answers(slug)) == [{"income": level}]
        score = codec.level_scores(question)[level]
        assert store.question_counts(slug)["income"] == (1, [score, score * score])
    finally:
        store.close()
    context.close()
