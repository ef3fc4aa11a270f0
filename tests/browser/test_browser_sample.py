"""Browser tests of sample allocation: the page shows exactly m of the k questions and sends exactly those.

Headless Chromium (Playwright) against the real server with examples/athletes.toml (2 of 6
questions per respondent); the request body is captured as the page sends it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from survey.store import Store

from conftest import REPO, released_at_once, start_server
from test_accessibility import RULES

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLUG = "athletes-2026"
M, K = 2, 6


@pytest.fixture(scope="module")
def sample_server(tmp_path_factory):
    """Serve a database holding examples/athletes.toml (created with the CLI); yield {"origin", "db"}."""
    directory = tmp_path_factory.mktemp("browser-sample")
    db_path = directory / "sample.db"
    definition = directory / "athletes.toml"
    definition.write_text(released_at_once((REPO / "examples" / "athletes.toml").read_text(encoding="utf-8")),
                          encoding="utf-8")
    subprocess.run([sys.executable, "-m", "survey", "--db", str(db_path), "create", str(definition)],
                   check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(REPO)})
    server = start_server(db_path, directory / "server.log", "--workers", "1")
    yield {"origin": server.origin, "db": db_path}
    assert server.stop() == 0, server.log_text()[-3000:]


def stored(db_path) -> list[dict]:
    store = Store(db_path)
    try:
        return [response["answers"] for response in store.iter_responses(SLUG)]
    finally:
        store.close()


def answer_visible(page, question: dict):
    """Give a true answer to one shown question through its labelled controls."""
    group = page.locator(f'fieldset[data-question="{question["id"]}"]')
    if question["kind"] == "yes_no":
        group.get_by_label("Yes").check()
    elif question["kind"] == "choice":
        group.get_by_label(question["options"][1]).check()
    elif question["kind"] == "multi":
        group.get_by_label(question["options"][0]).check()
    else:
        group.get_by_role("spinbutton").fill("12")


def test_the_page_shows_m_questions_sends_exactly_those_and_they_are_stored(browser, sample_server):
    origin = sample_server["origin"]
    for attempt in range(4):
        context = browser.new_context(viewport={"width": 360, "height": 800})
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        posts = []
        page.on("request", lambda request: posts.append(request.post_data) if request.method == "POST" else None)
        page.goto(f"{origin}/s/{SLUG}")
        page.locator("#survey-form button[type=submit]:not([disabled])").wait_for()
        if attempt == 0:
            design = json.loads(page.request.get(f"{origin}/s/{SLUG}/design.json").text())
            questions = {question["id"]: question for question in design["questions"]}
        before = len(stored(sample_server["db"]))
        page.locator("#protection > summary").click()  # folded at first on a small screen
        text = page.locator("#sample-note").inner_text()
        assert f"Each person answers {M} of the {K} questions, chosen at random on your device" in text
        assert "at most ε = 1" in page.locator(".protection").inner_text()

        shown = page.locator("fieldset[data-question]:visible")
        assert shown.count() == M
        shown_ids = [shown.nth(i).get_attribute("data-question") for i in range(M)]
        assert [shown.nth(i).locator(".question-number").inner_text() for i in range(M)] == ["1.", "2."]
        # The same draw after a reload: the choice of questions cannot be re-rolled by reloading.
        page.reload()
        page.locator("#survey-form button[type=submit]:not([disabled])").wait_for()
        again = page.locator("fieldset[data-question]:visible")
        assert [again.nth(i).get_attribute("data-question") for i in range(M)] == shown_ids

        # Sending with a shown question unanswered points at it; hidden ones are never required.
        first = questions[shown_ids[0]]
        if first["kind"] != "multi":
            for qid in shown_ids[1:]:
                answer_visible(page, questions[qid])
            page.get_by_role("button", name=re.compile("send", re.I)).click()
            assert page.locator(f'fieldset[data-question="{first["id"]}"] .field-error').inner_text()
            assert posts == []
        for qid in shown_ids:
            answer_visible(page, questions[qid])
        page.get_by_role("button", name=re.compile("send", re.I)).click()
        page.get_by_text(re.compile("thank you", re.I)).first.wait_for(timeout=10_000)

        assert len(posts) == 1
        body = json.loads(posts[0])
        assert body["design"] == design["hash"]
        assert sorted(body["answers"]) == sorted(shown_ids), "exactly the shown questions are sent"
        assert "12" not in json.dumps(body["answers"])
        assert not errors
        after = stored(sample_server["db"])
        assert len(after) == before + 1 and sorted(shown_ids) in [sorted(answers) for answers in after]
        context.close()
    responses = stored(sample_server["db"])
    assert len(responses) == 4 and all(len(answers) == M for answers in responses)


def test_the_sampled_page_is_accessible_and_fits_360_px(browser, sample_server):
    from axe_playwright_python.sync_playwright import Axe

    context = browser.new_context(viewport={"width": 360, "height": 900})
    page = context.new_page()
    page.goto(f"{sample_server['origin']}/s/{SLUG}")
    page.locator("#survey-form button[type=submit]:not([disabled])").wait_for()
    found = Axe().run(page, options=RULES).response["violations"]
    assert found == [], [f"{v['id']}: {v['help']}" for v in found]
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    context.close()
