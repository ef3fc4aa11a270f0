"""Test mode in Chromium: the owner answers a draft through the real page, and nothing real changes.

The test answer runs respond.js's own randomization and the server's validation, lands in
the survey's sandbox, and leaves the aggregates, crosstabs, every export, the API and the
response count as they were, the draft's design unfrozen; the sandbox view counts it and
clears it. Screenshots at 360 and 1280 px go to /tmp/shots-testmode/.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from werkzeug.security import generate_password_hash

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.store import Store

from conftest import REPO, signed_in_page
from test_browser import fill_survey, send_and_wait_for_thanks

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DRAFT = "smoking-draft"
TESTER = ("tester@example.org", "tester password")
SHOTS = Path("/tmp/shots-testmode")


@pytest.fixture(scope="module")
def draft(live_server):
    """Create a draft owned by TESTER in the live server's database; return its definition text and an API token."""
    text = (REPO / "examples" / "smoking.toml").read_text(encoding="utf-8").replace(
        'slug = "smoking-2026"', f'slug = "{DRAFT}"')
    store = Store(live_server["db"])
    try:
        store.add_user(TESTER[0], generate_password_hash(TESTER[1]))
        store.create_survey(text, build_design(parse_definition_toml(text)), owner=TESTER[0], status="draft")
        token = store.create_token(TESTER[0])[1]
    finally:
        store.close()
    return text, token


def snapshot(page, origin: str, token: str) -> dict:
    """Return every real read of the draft: the exports, the crosstab, the API and the dashboard's count."""
    paths = [f"/surveys/{DRAFT}/results.csv", f"/surveys/{DRAFT}/responses.csv", f"/surveys/{DRAFT}/codebook.json",
             f"/surveys/{DRAFT}/crosstab.csv?a=smoker&b=lung_disease"]
    reads = {path: page.request.get(origin + path).body() for path in paths}
    for path in (f"/api/surveys/{DRAFT}/results", f"/api/surveys/{DRAFT}/codebook",
                 f"/api/surveys/{DRAFT}/crosstab?a=smoker&b=lung_disease"):
        response = page.request.get(origin + path, headers={"Authorization": f"Bearer {token}"})
        assert response.status == 200, path
        reads[path] = response.body()
    dashboard = page.request.get(f"{origin}/surveys/{DRAFT}/results").text()
    reads["count"] = re.search(r"([\d,]+) responses?(?: released)?\.", dashboard).group(1)
    return reads


def test_the_owner_answers_a_draft_in_test_mode_and_nothing_real_changes(browser, live_server, draft):
    origin, (text, token) = live_server["origin"], draft
    SHOTS.mkdir(parents=True, exist_ok=True)
    public = browser.new_context()
    assert public.new_page().goto(f"{origin}/s/{DRAFT}").status == 404  # a draft stays hidden from the public
    public.close()

    context, page, errors = signed_in_page(browser, origin, *TESTER)
    before = snapshot(page, origin, token)
    assert before["count"] == "0"
    requests = []
    page.on("request", lambda request: requests.append(request) if request.method == "POST" else None)
    for width in (1280, 360):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{origin}/surveys/{DRAFT}/test")
        banner = page.locator("#test-mode")
        assert banner.is_visible() and "nothing you send here counts" in banner.inner_text()
        # The banner comes first, above the survey's own title.
        assert banner.bounding_box()["y"] < page.get_by_role("heading", level=1).bounding_box()["y"]
        page.screenshot(path=str(SHOTS / f"test-page-{width}.png"), full_page=True)
        fill_survey(page)
        send_and_wait_for_thanks(page)
        assert page.locator("#test-thanks").is_visible()
    # The page sent only randomized reports to the test endpoint, and kept nothing on this device.
    assert [request.url for request in requests] == [f"{origin}/surveys/{DRAFT}/test/responses"] * 2
    sent = [json.loads(request.post_data) for request in requests]
    assert all(set(body["answers"]) == {"smoker", "lung_disease", "cigarettes", "age"} for body in sent)
    assert all(body["answers"]["age"] != 42 for body in sent)  # a randomized level or bit, never the true age
    assert page.evaluate("Object.keys(localStorage).filter((key) => key.startsWith('ldp-survey'))") == []

    assert snapshot(page, origin, token) == before
    store = Store(live_server["db"])
    try:
        assert store.sandbox_counts(DRAFT) == {"test": 2, "simulated": 0}
        assert store.response_count(DRAFT) == 0 and store.survey_status(DRAFT) == "draft"
        # The design is not frozen: the draft can still be replaced (here by itself, edited).
        edited = text.replace("Smoking", "Smoking (edited)", 1)
        store.create_survey(edited, build_design(parse_definition_toml(edited)), replace=True, status="draft")
        store.create_survey(text, build_design(parse_definition_toml(text)), replace=True, status="draft")
    finally:
        store.close()

    # The edit made another design: its sandbox starts empty. Answer once more, then see and clear it.
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{origin}/surveys/{DRAFT}/test")
    fill_survey(page)
    send_and_wait_for_thanks(page)
    page.goto(f"{origin}/surveys/{DRAFT}/results")
    assert "test answers: 1" in page.locator("#kept-apart").inner_text()
    page.locator("#kept-apart").get_by_role("link", name=re.compile("test answers")).click()
    assert page.locator("#sandbox-test").inner_text().startswith("Test answers: 1")
    assert page.locator("#sandbox-estimates").is_visible()
    for width in (1280, 360):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(SHOTS / f"sandbox-view-{width}.png"), full_page=True)
    page.get_by_role("button", name="Clear the test answers").click()
    assert "Cleared the test answers (1 deleted)" in page.locator(".flash").inner_text()
    assert page.locator("#sandbox-test").inner_text().startswith("Test answers: 0")
    assert snapshot(page, origin, token) == before
    assert errors == []
    context.close()
