"""In Chromium: the owner makes a join link, the colleague joins at 360 px by keyboard alone; the lock page."""

from __future__ import annotations

import re

import pytest
from werkzeug.security import generate_password_hash

from survey.store import Store

from conftest import signed_in_page
from test_accessibility import axe, violations  # noqa: F401 (the axe fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLUG = "smoking-2026"
OWNER = ("join-owner@example.org", "owner of the survey")
COLLEAGUE = ("colleague@example.org", "colleague's password")
LOCKED = "locked@example.org"


@pytest.fixture(scope="module")
def people(live_server):
    store = Store(live_server["db"])
    try:
        for email, password in (OWNER, (LOCKED, "the right password")):
            store.add_user(email, generate_password_hash(password), replace=True)
        assert store.share(SLUG, OWNER[0]) == "owner"
    finally:
        store.close()


def fits(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def tab_to(page, element_id: str, presses: int = 15):
    """Press Tab until the element with this id has the focus."""
    for _ in range(presses):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == element_id:
            return
    raise AssertionError(f"#{element_id} never got the focus by Tab")


def test_a_colleague_joins_by_keyboard_on_a_small_screen(browser, live_server, people, axe):
    origin = live_server["origin"]
    context, page, errors = signed_in_page(browser, origin, *OWNER)
    page.goto(f"{origin}/surveys/{SLUG}/results#people")
    page.get_by_label("Colleague's email").fill(COLLEAGUE[0])
    page.get_by_role("button", name="Make a join link").click()
    link = page.get_by_label(re.compile("^Join link")).input_value()
    assert re.fullmatch(re.escape(origin) + r"/join/[A-Za-z0-9_-]{43}", link)
    page.screenshot(path="/tmp/accounts-join-link.png", full_page=True)
    page.goto(f"{origin}/surveys/{SLUG}/results#people")
    assert page.get_by_text(f"{COLLEAGUE[0]} (works until").count() == 1
    context.close()

    small = browser.new_context(viewport={"width": 360, "height": 740})
    phone = small.new_page()
    phone_errors: list[str] = []
    phone.on("console", lambda message: phone_errors.append(message.text) if message.type == "error" else None)
    phone.goto(link)
    assert "Join “Smoking" in phone.locator("h1").inner_text()
    assert fits(phone) and violations(axe, phone) == []
    phone.screenshot(path="/tmp/accounts-join-360.png", full_page=True)
    tab_to(phone, "password")
    phone.keyboard.type(COLLEAGUE[1])
    phone.keyboard.press("Tab")
    assert phone.evaluate("document.activeElement.id") == "confirm"
    phone.keyboard.type(COLLEAGUE[1])
    phone.keyboard.press("Enter")
    phone.wait_for_url(re.compile(f"/surveys/{SLUG}/results$"))
    assert phone.get_by_text("you now see this survey as a collaborator").count() == 1
    assert fits(phone)
    phone.screenshot(path="/tmp/accounts-joined-360.png")
    assert errors == [] and phone_errors == []
    phone.goto(link)  # a used link answers 404 (Chromium logs that status as a console error)
    assert phone.locator("h1").inner_text() == "This join link does not work"
    small.close()


def test_the_lock_page_says_when_it_ends(browser, live_server, people, axe):
    small = browser.new_context(viewport={"width": 360, "height": 740})
    page = small.new_page()
    page.goto(f"{live_server['origin']}/login")
    for password in ["wrong"] * 5 + ["the right password"]:
        page.get_by_label("Email").fill(LOCKED)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_load_state()
    notice = page.get_by_role("alert")
    text = notice.inner_text()
    assert "Too many wrong passwords from this device: try again in 15 minutes" in text
    assert f"ldp-survey user unlock {LOCKED}" in text
    assert fits(page) and violations(axe, page) == []
    page.screenshot(path="/tmp/accounts-lock-360.png", full_page=True)
    small.close()
