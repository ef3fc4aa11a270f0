"""In Chromium at 360 px (issue 27): the survey list scrolls inside a labelled region, Publish and Delete draft look
apart, the results page shows its first estimate on the first phone screen, the respondent page starts in plain
words (ε′ and the file list folded). Screenshots in /tmp/ldp-daily; axe finds no violation on the changed pages."""

from __future__ import annotations

from pathlib import Path

import pytest
from werkzeug.security import generate_password_hash

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.store import Store

from conftest import domain_answers, signed_in_page, smoking_text
from test_accessibility import axe, violations  # noqa: F401 (the axe fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLUG = "smoking-2026"
DRAFT = "smoking-draft"
OWNER = ("daily-owner@example.org", "owner of the survey")
SHOTS = Path("/tmp/ldp-daily")
PHONE = {"width": 360, "height": 740}


@pytest.fixture(scope="module")
def owned(live_server):
    store = Store(live_server["db"])
    try:
        store.add_user(OWNER[0], generate_password_hash(OWNER[1]), replace=True)
        assert store.share(SLUG, OWNER[0]) == "owner"
        if store.survey_status(SLUG) == "draft":
            store.publish_survey(SLUG)
        design = store.get_design(SLUG)
        store.add_responses(SLUG, design["hash"], [domain_answers(design, smoker=1)] * 12)
        text = smoking_text().replace('slug = "smoking-2026"', f'slug = "{DRAFT}"')
        store.create_survey(text, build_design(parse_definition_toml(text)), owner=OWNER[0], status="draft")
    finally:
        store.close()


def test_the_daily_pages_at_360_px(browser, live_server, owned, axe):
    SHOTS.mkdir(exist_ok=True)
    origin = live_server["origin"]
    context, page, errors = signed_in_page(browser, origin, *OWNER, width=360)
    page.set_viewport_size(PHONE)
    # The survey list: the page itself never scrolls sideways; the table scrolls inside its labelled region.
    page.goto(f"{origin}/surveys")
    region = page.get_by_role("region", name="Your surveys (scrolls sideways)")
    assert region.is_visible() and region.evaluate("e => getComputedStyle(e).overflowX") == "auto"
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    assert region.evaluate("e => e.getBoundingClientRect().right") <= 360
    page.screenshot(path=str(SHOTS / "survey-list-360.png"), full_page=True)
    assert violations(axe, page) == []
    # A draft: Publish filled, Delete draft dashed red with its warning sign.
    page.goto(f"{origin}/surveys/{DRAFT}/results#manage")
    publish = page.get_by_role("button", name="Publish…")
    delete = page.get_by_role("button", name="Delete draft…")
    style = "e => { const s = getComputedStyle(e); return [s.backgroundColor, s.borderTopStyle, s.color]; }"
    publish_style, delete_style = publish.evaluate(style), delete.evaluate(style)
    assert publish_style[1] == "solid" and delete_style[1] == "dashed" and publish_style[0] != delete_style[0]
    assert delete.evaluate("e => getComputedStyle(e, '::before').content") == '"⚠ "'
    page.locator("#manage").screenshot(path=str(SHOTS / "draft-actions-360.png"))
    # The results page: the first estimate on the first phone screen; the release mechanics folded.
    page.goto(f"{origin}/surveys/{SLUG}/results")
    first = page.locator(".finding ul li").first
    page.screenshot(path=str(SHOTS / "results-first-screen-360.png"))
    page.screenshot(path=str(SHOTS / "results-full-360.png"), full_page=True)
    # Its first two lines ("Between …% and …% of respondents answered …") on the first phone screen.
    assert first.is_visible() and first.evaluate("e => e.getBoundingClientRect().top") <= PHONE["height"] - 60, \
        "the first estimate is on the first phone screen"
    assert not page.locator("#release-sentence").is_visible() and page.locator("#releases-title").is_visible()
    assert violations(axe, page) == []
    # The respondent page: plain words first, ε′ and the JavaScript file names folded.
    page.goto(f"{origin}/s/{SLUG}")
    page.locator("#q-smoker-note").wait_for()
    assert page.locator("#q-smoker-note").is_visible() and "ε′" not in page.locator("#q-smoker-note").inner_text()
    assert not page.get_by_text("ε′ = ").first.is_visible()
    assert not page.locator("#check-files a").first.is_visible()
    page.locator("#q-smoker .epsilon-fold summary").click()
    assert page.locator("#q-smoker .epsilon-fold p").is_visible()
    page.screenshot(path=str(SHOTS / "respondent-360.png"))
    assert violations(axe, page) == []
    assert errors == []
    context.close()
