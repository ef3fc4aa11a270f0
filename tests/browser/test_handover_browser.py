"""Handover mode in headless Chromium against the real server: five respondents answer in turn on one page.

After each respondent the page starts again with nothing of them in the DOM (the form is a new one, no
answer, no back-navigation), in localStorage or in sessionStorage; exactly five responses are stored,
the interviewer's bar counts five, and ending the session on the device makes its link refuse.
Screenshots of the start screen and the interviewer's bar at 360 px and 1280 px go to SHOTS.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conftest import create_from_toml, released_at_once, stored_count
from field_steps import REMNANTS_JS, RESPONDENTS, answer_handover
from test_accessibility import RULES

from survey.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLUG = "smoking-2026"
SHOTS = Path(os.environ.get("LDP_SURVEY_SHOTS", "/work/shots/handover"))
def shoot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=False)


def test_five_respondents_in_turn_leave_nothing_behind_and_ending_refuses_the_link(browser, live_server):
    store = Store(live_server["db"])
    try:
        token, _ = store.start_interview(SLUG, label="Tablet 3", allowance=20)
    finally:
        store.close()
    link = f"{live_server['origin']}/s/{SLUG}/interview/{token}"
    before = stored_count(live_server["db"], SLUG)
    context = browser.new_context(viewport={"width": 360, "height": 740})
    page = context.new_page()
    page.goto(link)
    start = page.locator("#handover-start")
    start.wait_for(state="visible")
    assert page.locator("#protection").evaluate("d => d.open"), "the privacy explanation is open on the start screen"
    assert not page.locator("#survey-form").is_visible()
    shoot(page, "start-360.png")
    page.locator("#interviewer-bar").screenshot(path=str(SHOTS / "bar-360.png"))
    history = page.evaluate("history.length")
    for number, respondent in enumerate(RESPONDENTS, 1):
        # By keyboard: the start screen has focus; Tab reaches its button.
        assert page.evaluate("document.activeElement.id") == "handover-start"
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        page.locator("#survey-form").wait_for(state="visible")
        answer_handover(page, respondent)
        page.evaluate("window.__previousForm = document.getElementById('survey-form')")
        page.get_by_role("button", name=re.compile("send", re.I)).click()
        page.locator("#handover-sent").wait_for(state="visible", timeout=10_000)
        assert page.locator("#handover-answered").text_content() == str(number)
        left = page.evaluate(REMNANTS_JS)
        assert left == {"checked": 0, "values": [], "oldFormAttached": False, "local": 0, "session": 0,
                        "history": history, "formHidden": True, "errors": []}, (number, left)
        assert not page.locator("#thanks").is_visible() and not page.locator("#already-answered").is_visible()
    assert stored_count(live_server["db"], SLUG) == before + 5
    assert page.locator("#handover-waiting").text_content() == "0"
    page.set_viewport_size({"width": 1280, "height": 900})
    shoot(page, "start-1280.png")
    page.locator("#interviewer-bar").screenshot(path=str(SHOTS / "bar-1280.png"))
    # The slot an offline queue fills: its module, as served, writes the count the bar shows.
    page.evaluate("async () => (await import('/static/js/respond-waiting.js')).setWaiting(3)")
    assert page.locator("#handover-waiting").text_content() == "3"
    page.locator("#handover-end").click()
    page.locator("#handover-confirm").wait_for(state="visible")
    assert page.evaluate("document.activeElement.id") == "handover-end-no"
    page.locator("#handover-end-no").click()
    assert page.locator("#handover-confirm").is_hidden()
    page.locator("#handover-end").click()
    page.locator("#handover-end-yes").click()
    page.locator("#handover-ended").wait_for(state="visible", timeout=10_000)
    assert not page.locator("#survey-form").is_visible() and not start.is_visible()
    reloaded = page.goto(link)
    assert reloaded.status == 410 and page.locator("#interview-ended").is_visible()
    refused = page.request.post(f"{link}/responses", data="{}", headers={"Content-Type": "application/json"})
    assert refused.status == 410
    assert stored_count(live_server["db"], SLUG) == before + 5
    context.close()


SERIES_TOML = """
slug = "habits-handover"
title = "Habits in the field"
epsilon = 2
series = "habits-field"

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"

[[questions]]
id = "sport"
kind = "yes_no"
text = "Do you play a sport?"
"""


def test_a_series_in_handover_keeps_no_memo_and_the_page_is_axe_clean_at_360_px(browser, live_server):
    from axe_playwright_python.sync_playwright import Axe

    create_from_toml(live_server["db"], released_at_once(SERIES_TOML))
    store = Store(live_server["db"])
    try:
        token, _ = store.start_interview("habits-handover", label="Shelter")
    finally:
        store.close()
    context = browser.new_context(viewport={"width": 360, "height": 800})
    page = context.new_page()
    page.goto(f"{live_server['origin']}/s/habits-handover/interview/{token}")
    page.locator("#handover-start").wait_for(state="visible")
    assert page.locator("#series").count() == 0, "no series memo section in handover mode"
    for step in ("start", "form", "confirm"):
        if step == "form":
            page.locator("#handover-begin").click()
            page.get_by_role("group", name=re.compile("Do you smoke")).get_by_label("Yes").check()
        if step == "confirm":
            page.locator("#handover-end").click()
        results = Axe().run(page, options=RULES).response
        assert [v["id"] for v in results["violations"]] == [], step
        assert page.evaluate("document.documentElement.scrollWidth") <= 360, step
    page.locator("#handover-end-no").click()
    for smokes in ("Yes", "No"):
        if not page.locator("#survey-form").is_visible():
            page.locator("#handover-begin").click()
        page.get_by_role("group", name=re.compile("Do you smoke")).get_by_label(smokes).check()
        page.get_by_role("group", name=re.compile("play a sport")).get_by_label("No").check()
        page.get_by_role("button", name=re.compile("send", re.I)).click()
        page.locator("#handover-sent").wait_for(state="visible", timeout=10_000)
        assert page.evaluate("localStorage.length + sessionStorage.length") == 0
    assert page.locator("#handover-answered").text_content() == "2"
    assert stored_count(live_server["db"], "habits-handover") == 2
    context.close()


def test_an_expired_session_taking_late_sends_is_listed_on_the_dashboard_and_ended_by_keyboard_at_360_px(
        browser, live_server):
    import time

    from axe_playwright_python.sync_playwright import Axe
    from werkzeug.security import generate_password_hash

    email, password = "late-sends@example.org", "late sends refused"
    store = Store(live_server["db"])
    try:
        store.add_user(email, generate_password_hash(password), replace=True)
        store.share(SLUG, email)
        token, session = store.start_interview(SLUG, label="Tablet 5", hours=1, now=time.time() - 2 * 3600)
    finally:
        store.close()
    context = browser.new_context(viewport={"width": 360, "height": 800})
    page = context.new_page()
    page.goto(f"{live_server['origin']}/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile("/surveys$"))
    page.goto(f"{live_server['origin']}/surveys/{SLUG}/results")
    item = page.locator(f"#late-interview-{session['id']}")
    assert "Expired 1 h ago" in item.text_content() and item.is_visible()
    assert [v["id"] for v in Axe().run(page, options=RULES).response["violations"]] == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#interviews").screenshot(path=str(SHOTS / "late-sends-360.png"))
    end = "End the session Tablet 5 and refuse its late answers"
    for _ in range(400):  # by keyboard alone: Tab until the session's End button has focus
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('aria-label')") == end:
            break
    else:
        pytest.fail("Tab never reached the End button of the late session")
    page.keyboard.press("Enter")
    page.get_by_text("not even late sends").wait_for()
    assert page.locator(f"#late-interview-{session['id']}").count() == 0
    refused = page.request.post(f"{live_server['origin']}/s/{SLUG}/interview/{token}/responses", data="{}",
                                headers={"Content-Type": "application/json"})
    assert refused.status == 410
    context.close()
