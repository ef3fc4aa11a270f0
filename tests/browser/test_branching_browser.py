"""Display logic in headless Chromium: the branched smoking survey answered by a smoker and a non-smoker.

Both send a body with the same keys, every report in its question's output domain; the
non-smoker is never shown the smokers' questions, and their reports are randomized from the
declared "does not apply" value, which the page never offers as an answer.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import released_at_once, start_server
from test_accessibility import RULES

from survey.core.reports import validate_submission
from survey.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SLUG = "smoking-branched"
SAMPLED = "smoking-branched-sampled"


@pytest.fixture(scope="module")
def branched_server(tmp_path_factory):
    """Serve a database holding examples/smoking-branched.toml (created with the CLI); yield {"origin", "db"}."""
    directory = tmp_path_factory.mktemp("browser-branching")
    db_path = directory / "branching.db"
    definition = directory / "smoking-branched.toml"
    definition.write_text(released_at_once((REPO / "examples" / "smoking-branched.toml").read_text(encoding="utf-8")),
                          encoding="utf-8")
    sampled = directory / "smoking-branched-sampled.toml"
    sampled.write_text(definition.read_text(encoding="utf-8").replace(f'slug = "{SLUG}"', f'slug = "{SAMPLED}"').replace(
        "epsilon = 3.0", 'epsilon = 3.0\nallocation = "sample"\nsample = 2'), encoding="utf-8")
    for path in (definition, sampled):
        subprocess.run([sys.executable, "-m", "survey", "--db", str(db_path), "create", str(path)],
                       check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    server = start_server(db_path, directory / "server.log", "--workers", "1")
    yield {"origin": server.origin, "db": db_path}
    assert server.stop() == 0, server.log_text()[-3000:]


def answer_page(browser, origin: str, smoker: bool):
    """Answer as a smoker or a non-smoker; return (the body sent, the design, what the page showed)."""
    context = browser.new_context(viewport={"width": 360, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    sent = []
    page.on("request", lambda r: sent.append(json.loads(r.post_data)) if r.method == "POST" else None)
    page.goto(f"{origin}/s/{SLUG}")
    design = json.loads(page.locator("#design").text_content())
    assert "this device sends a report for it, drawn at random" in " ".join(page.locator("#branching-note").text_content().split())
    cigarettes = page.locator('fieldset[data-question="cigarettes"]')
    quit_ = page.locator('fieldset[data-question="quit"]')
    assert cigarettes.is_hidden() and quit_.is_hidden(), "nothing depending on an unanswered question is shown"
    smoking = page.get_by_role("group", name=re.compile("smoke tobacco"))
    smoking.get_by_label("Yes" if smoker else "No").check()
    shown = {"cigarettes": cigarettes.is_visible(), "quit": quit_.is_visible()}
    if smoker:
        assert quit_.get_by_label("Does not apply").count() == 0, "the page never offers the declared value"
        cigarettes.get_by_role("spinbutton").fill("15")
        quit_.get_by_label("Once", exact=True).check()
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.locator("#thanks").wait_for(state="visible", timeout=10_000)
    context.close()
    assert errors == []
    [body] = sent
    return body, design, shown


def test_a_smoker_and_a_non_smoker_send_bodies_of_the_same_keys(browser, branched_server):
    smoker, design, smoker_shown = answer_page(browser, branched_server["origin"], smoker=True)
    other, _, other_shown = answer_page(browser, branched_server["origin"], smoker=False)
    assert smoker_shown == {"cigarettes": True, "quit": True}
    assert other_shown == {"cigarettes": False, "quit": False}
    assert set(smoker) == set(other) == {"design", "answers", "submission"}
    assert set(smoker["answers"]) == set(other["answers"]) == {q["id"] for q in design["questions"]}
    for body in (smoker, other):
        validate_submission(design, body)  # every report in its mechanism's output domain
        for question in design["questions"]:
            assert type(body["answers"][question["id"]]) is int
    store = Store(branched_server["db"])
    try:
        assert store.response_count(SLUG) == 2
    finally:
        store.close()


def test_changing_the_deciding_answer_hides_the_question_and_still_sends_it(browser, branched_server):
    context = browser.new_context()
    page = context.new_page()
    sent = []
    page.on("request", lambda r: sent.append(json.loads(r.post_data)) if r.method == "POST" else None)
    page.goto(f"{branched_server['origin']}/s/{SLUG}")
    smoking = page.get_by_role("group", name=re.compile("smoke tobacco"))
    smoking.get_by_label("Yes").check()
    cigarettes = page.locator('fieldset[data-question="cigarettes"]')
    cigarettes.get_by_role("spinbutton").fill("99")  # out of range, but it will stop applying
    assert page.locator('fieldset[data-question="quit"] .question-number').inner_text() == "3."
    smoking.get_by_label("No").check()
    assert cigarettes.is_hidden()
    assert "No longer asked (a randomized report is still sent)" in page.locator("#branching-status").text_content()
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.locator("#thanks").wait_for(state="visible", timeout=10_000)
    [body] = sent
    assert set(body["answers"]) == {"smoker", "cigarettes", "quit"}
    context.close()


def test_under_sample_allocation_the_deciding_question_is_asked_and_not_sent(browser, branched_server):
    """Drawn: cigarettes and quit (not smoker). The smoker question is shown to decide, and nothing is sent for it."""
    context = browser.new_context()
    page = context.new_page()
    design = page.request.get(f"{branched_server['origin']}/s/{SAMPLED}/design.json").json()
    key = f"ldp-survey:sample:{SAMPLED}:{design['hash']}"
    context.add_init_script(f"window.localStorage.setItem({json.dumps(key)}, '[1,2]')")
    sent = []
    page.on("request", lambda r: sent.append(json.loads(r.post_data)) if r.method == "POST" else None)
    page.goto(f"{branched_server['origin']}/s/{SAMPLED}")
    smoker = page.locator('fieldset[data-question="smoker"]')
    assert smoker.is_visible() and "nothing is sent for it" in smoker.inner_text()
    assert page.locator('fieldset[data-question="cigarettes"]').is_hidden()
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    assert "Please choose an answer" in smoker.inner_text(), "the deciding question needs an answer"
    assert sent == []
    smoker.get_by_label("No").check()
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.locator("#thanks").wait_for(state="visible", timeout=10_000)
    [body] = sent
    assert set(body["answers"]) == {"cigarettes", "quit"}
    validate_submission(design, body)
    context.close()


def test_the_branched_page_has_no_axe_violation_at_360_px_in_either_branch(browser, branched_server):
    from axe_playwright_python.sync_playwright import Axe

    axe = Axe()
    context = browser.new_context(viewport={"width": 360, "height": 800})
    page = context.new_page()
    page.goto(f"{branched_server['origin']}/s/{SLUG}")
    smoking = page.get_by_role("group", name=re.compile("smoke tobacco"))
    for answer in ("Yes", "No"):
        smoking.get_by_label(answer).check()
        found = [v["id"] for v in axe.run(page, options=RULES).response["violations"]]
        assert found == [], (answer, found)
    context.close()
