"""In Chromium: the owner sets a deletion date, then deletes a survey with its responses from the confirmation page,
at 360 and 1280 px (screenshots in /tmp), by keyboard; axe finds no violation on the confirmation page."""

from __future__ import annotations

import re

import pytest
from werkzeug.security import generate_password_hash

from survey.store import Store

from conftest import signed_in_page
from test_accessibility import axe, violations  # noqa: F401 (the axe fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLUG = "smoking-2026"
OWNER = ("delete-owner@example.org", "owner of the survey")
ANSWERS = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}


@pytest.fixture(scope="module")
def owned(live_server):
    store = Store(live_server["db"])
    try:
        store.add_user(*(OWNER[0], generate_password_hash(OWNER[1])), replace=True)
        assert store.share(SLUG, OWNER[0]) == "owner"
        design = store.get_design(SLUG)
        store.add_responses(SLUG, design["hash"], [ANSWERS] * 12)
    finally:
        store.close()


def test_the_owner_dates_then_deletes_the_survey_after_the_confirmation(browser, live_server, owned, axe):
    origin = live_server["origin"]
    phone_context, phone, errors = signed_in_page(browser, origin, *OWNER, width=360)
    phone.goto(f"{origin}/surveys/{SLUG}/results#keeping")
    phone.get_by_label("Deletion date").fill("2030-06-30")
    phone.get_by_role("button", name="Set the date").click()
    assert "Deletion date: 2030-06-30" in phone.locator(".retention-line").inner_text()
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "the dashboard fits 360 px"
    phone.locator("#keeping").screenshot(path="/tmp/delete-keeping-360.png")
    phone.get_by_role("link", name="Delete survey and all its data…").click()
    phone.wait_for_url(re.compile(f"/surveys/{SLUG}/delete$"))
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "no sideways scroll at 360 px"
    assert "12 released responses" in phone.locator("main").inner_text()
    assert phone.get_by_role("link", name="Download the data package (ZIP)").is_visible()
    assert violations(axe, phone) == []
    phone.screenshot(path="/tmp/delete-confirm-360.png", full_page=True)

    desk_context, desk, _ = signed_in_page(browser, origin, *OWNER, width=1280)
    desk.goto(f"{origin}/surveys/{SLUG}/delete")
    button = desk.get_by_role("button", name="Delete survey and all its data")
    style = button.evaluate("b => [getComputedStyle(b).backgroundColor, getComputedStyle(b).borderStyle]")
    assert style == ["rgb(255, 255, 255)", "dashed"], "outlined, unlike Publish's filled red"
    desk.screenshot(path="/tmp/delete-confirm-1280.png", full_page=True)
    desk_context.close()

    # The checkbox must be ticked: the browser keeps the form until it is.
    phone.get_by_role("button", name="Delete survey and all its data").click()
    assert phone.url.endswith(f"/surveys/{SLUG}/delete")
    phone.get_by_label(re.compile("I understand")).focus()
    phone.keyboard.press("Space")
    phone.keyboard.press("Tab")
    phone.keyboard.press("Enter")
    phone.wait_for_url(re.compile("/surveys$"))
    assert f"Deleted {SLUG} and all its data." in phone.locator("main").inner_text()
    assert errors == []
    phone_context.close()
    store = Store(live_server["db"])
    try:
        assert not store.survey_exists(SLUG)
    finally:
        store.close()
