"""The builder's precision warning and crosstab preview in Chromium: they follow the respondents typed, live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect
from werkzeug.security import generate_password_hash

from survey.store import Store
from conftest import signed_in_page
from test_precision import IMPRECISE_TOML

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EMAIL, PASSWORD = "precise@example.org", "plans surveys"
# Screenshots of the builder for review, when LDP_SURVEY_SHOTS names a directory.
SHOTS = os.environ.get("LDP_SURVEY_SHOTS")


@pytest.mark.parametrize("width", [360, 1280])
def test_the_warning_follows_the_respondents_typed(browser, live_server, width):
    store = Store(live_server["db"])
    store.add_user(EMAIL, generate_password_hash(PASSWORD), replace=True)
    store.close()
    context, page, errors = signed_in_page(browser, live_server["origin"], EMAIL, PASSWORD, width=width)
    page.goto(f"{live_server['origin']}/surveys/build")
    page.locator("#toml").fill(IMPRECISE_TOML)
    page.get_by_role("button", name="Import").click()
    page.locator("#builder[data-enhanced=yes]").wait_for(state="attached")
    sports = page.locator("#questions-2-preview .warning")
    expect(sports).to_contain_text("With 1,000 respondents the estimates of this question will be within ±54.9 points")

    respondents = page.get_by_label("Respondents you expect")
    respondents.fill("200000")
    expect(page.locator("#questions .warning")).to_have_count(0)
    expect(page.locator("#builder-summary .warning")).to_have_count(0)
    respondents.fill("1000")
    expect(sports).to_contain_text("±54.9 points")
    expect(page.locator("#builder-summary .warning")).to_contain_text("All 4 questions are too imprecise")

    page.get_by_label("First question (A)").select_option("sector")
    page.get_by_label("Second question (B)").select_option("cheated")
    crosstab = page.locator("#crosstab-preview")
    expect(crosstab).to_contain_text("among those who choose a given option of sector (25% of respondents)")
    expect(crosstab.locator(".warning")).to_contain_text("it needs about")
    respondents.fill("300000")
    expect(crosstab.locator(".warning")).to_have_count(0)
    expect(page.get_by_label("First question (A)")).to_have_value("sector"), "the pair chosen stays"
    respondents.fill("1000")
    expect(crosstab.locator(".warning")).to_contain_text("it needs about")
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.locator("#crosstab-pair").scroll_into_view_if_needed()
        page.screenshot(path=f"{SHOTS}/builder-crosstab-{width}.png")
        sports.scroll_into_view_if_needed()
        page.screenshot(path=f"{SHOTS}/builder-warning-{width}.png")
    assert not page.locator("body").evaluate("b => b.scrollWidth > window.innerWidth"), "no sideways scrolling"
    assert errors == []
    context.close()
