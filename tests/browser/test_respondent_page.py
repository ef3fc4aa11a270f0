"""Browser tests of the respondent page's words (issue 13), in headless Chromium against the real server.

Invitation problems and a closed survey are said when the page loads, with no form; a survey
closed while the page was open answers in plain words with no advice to retry; the sentence
under a multi-select question describes its randomized report; the page sets no cookie and
sends the answers without one, as it says; the notices come before the privacy explanation,
which folds on a small screen and opens by keyboard.
"""

from __future__ import annotations

import re

import pytest
from werkzeug.security import generate_password_hash

from conftest import PANEL_TOML, create_from_toml, signed_in_page, stored_count

from survey.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLUG = "smoking-2026"
COMMUTE_TOML = """
slug = "commute"
title = "Getting to work"
epsilon = 6

[[questions]]
id = "modes"
kind = "multi"
text = "How do you get to work?"
options = ["Walking", "Cycling", "Bus"]

[[questions]]
id = "habits"
kind = "multi"
text = "Which of these do you do?"
options = [{habits}]
"""
HABITS = [f"habit {i}" for i in range(16)]
RETRY = re.compile(r"press (the button|send) again|try again", re.I)


@pytest.fixture(scope="module")
def panel(live_server):
    """Create the invitation-only panel survey in the live server's database; return its design."""
    return create_from_toml(live_server["db"], PANEL_TOML)


def invitations(db_path, count: int) -> list[str]:
    store = Store(db_path)
    try:
        return store.create_invitations("panel", count)
    finally:
        store.close()


def open_page(browser, url: str, width: int = 1280):
    context = browser.new_context(viewport={"width": width, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    return context, page, errors


def test_used_unknown_and_missing_invitations_are_said_on_load_with_no_form(browser, live_server, panel):
    used, fresh = invitations(live_server["db"], 2)
    context, page, errors = open_page(browser, f"{live_server['origin']}/s/panel?invite={used}")
    page.get_by_label("Yes").check()
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.locator("#thanks").wait_for(state="visible", timeout=10_000)
    assert stored_count(live_server["db"], "panel") == 1
    context.close()

    cases = {f"?invite={used}": ("#invite-used", "This invitation link has already been used"),
             "?invite=" + "A" * 22: ("#invite-unknown", "This invitation link is not valid for this survey"),
             "?invite=half-a-link": ("#invite-unknown", "This invitation link is not valid for this survey"),
             "": ("#invite-needed", "This survey is by invitation only")}
    for query, (notice, words) in cases.items():
        context, page, errors = open_page(browser, f"{live_server['origin']}/s/panel{query}")
        assert page.locator(notice).is_visible(), query
        assert page.locator(notice).inner_text().startswith(words), query
        assert page.locator("form").count() == 0 and page.locator("input").count() == 0, "no form to fill in"
        assert page.locator("script[src]").count() == 0
        assert errors == []
        context.close()

    context, page, errors = open_page(browser, f"{live_server['origin']}/s/panel?invite={fresh}")
    assert page.locator(".notices .notice:visible").count() == 0, "an unused invitation shows the form"
    assert page.locator("#survey-form").is_visible()
    context.close()
    store = Store(live_server["db"])
    assert store.invitation_counts("panel") == (2, 1), "looking at the page used no invitation"
    store.close()


def fill_smoking(page):
    page.get_by_role("group", name=re.compile("smoke tobacco")).get_by_label("Yes").check()
    page.get_by_role("group", name=re.compile("chronic lung disease")).get_by_label("No").check()
    page.get_by_role("group", name=re.compile("how many cigarettes")).get_by_label("6-10").check()
    page.get_by_role("group", name=re.compile("How old are you")).get_by_role("spinbutton").fill("42")


def test_a_survey_closed_while_the_page_was_open_says_so_in_plain_words(browser, live_server):
    before = stored_count(live_server["db"], SLUG)
    context, page, errors = open_page(browser, f"{live_server['origin']}/s/{SLUG}")
    fill_smoking(page)
    store = Store(live_server["db"])
    store.close_survey(SLUG)
    try:
        page.get_by_role("button", name=re.compile("send", re.I)).click()
        refused = page.locator("#refused")
        refused.wait_for(state="visible", timeout=10_000)
        text = refused.inner_text()
        assert text.startswith("This survey has closed, so your answers were not accepted and nothing about them "
                               "was stored."), text
        assert page.evaluate("document.activeElement.id") == "refused"
        body = page.inner_text("body")
        assert not RETRY.search(body), "no advice to send again"
        assert "survey '" not in body and "takes no" not in body, "no developer text"
        assert page.locator("#survey-form").is_hidden() and page.locator("#thanks").is_hidden()
        assert page.evaluate("Object.keys(localStorage)") == [], "nothing pending, nothing remembered as answered"
        assert stored_count(live_server["db"], SLUG) == before

        page.reload()
        assert page.locator("#survey-closed").inner_text().startswith("This survey has closed")
        assert page.locator("form").count() == 0
        assert errors == []
    finally:
        store.reopen_survey(SLUG)
        store.close()
        context.close()


def test_ticking_two_boxes_says_what_the_randomized_report_sends_for_both_multi_mechanisms(browser, live_server):
    design = create_from_toml(live_server["db"], COMMUTE_TOML.format(habits=", ".join(f'"{h}"' for h in HABITS)))
    assert [q["mechanism"] for q in design["questions"]] == ["rr", "sampled"]
    for _ in range(6):  # several draws: a sampled report marks one option or none
        context, page, errors = open_page(browser, f"{live_server['origin']}/s/commute")
        modes = page.get_by_role("group", name=re.compile("get to work"))
        modes.get_by_label("Walking").check()
        modes.get_by_label("Bus").check()
        habits = page.get_by_role("group", name=re.compile("Which of these"))
        habits.get_by_label("habit 3", exact=True).check()
        habits.get_by_label("habit 7", exact=True).check()
        for group, options in ((modes, ["Walking", "Cycling", "Bus"]), (habits, HABITS)):
            preview = group.locator(".report-preview")
            report = [int(bit) for bit in re.findall(r"\d", preview.get_attribute("data-report"))]
            text = preview.inner_text()
            assert text.startswith("We will send (after randomizing): a report ") and "ticked" in text, text
            assert text.endswith("— this may not be your answer."), text
            marked = [option for option, bit in zip(options, report) if bit]
            if len(marked) == len(options):
                assert "a report with every option ticked" in text, text
                continue
            for option in options:
                assert (f"“{option}”" in text) == (option in marked), (option, report, text)
            if group is habits:
                assert len(marked) <= 1
                assert ("drawn at random" in text) and (("is ticked" in text) == bool(marked)), text
            elif 0 < len(marked) < len(options):
                assert "and every other option not ticked" in text, text
        assert errors == []
        context.close()


def test_the_page_sets_no_cookie_and_sends_answers_without_one_as_it_says(browser, live_server):
    context, page, errors = open_page(browser, f"{live_server['origin']}/s/{SLUG}")
    assert "This page sets no cookie" in page.locator("#stored-note").inner_text()
    assert context.cookies() == []
    fill_smoking(page)
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.locator("#thanks").wait_for(state="visible", timeout=10_000)
    assert context.cookies() == [], "loading, answering and sending set no cookie"
    context.close()

    # A signed-in researcher has a session cookie (and the known-device one of the sign-in throttle);
    # the page sends neither with the answers.
    store = Store(live_server["db"])
    store.add_user("reader@example.org", generate_password_hash("correct horse battery"), replace=True)
    store.close()
    context, page, errors = signed_in_page(browser, live_server["origin"], "reader@example.org",
                                           "correct horse battery")
    assert sorted(cookie["name"] for cookie in context.cookies()) == ["ldp_known_device", "session"]
    headers = []
    page.on("request", lambda r: headers.append(r.all_headers()) if r.method == "POST" else None)
    page.goto(f"{live_server['origin']}/s/{SLUG}")
    page.evaluate("localStorage.clear()")
    page.reload()
    fill_smoking(page)
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.locator("#thanks").wait_for(state="visible", timeout=10_000)
    assert len(headers) == 1 and "cookie" not in headers[0], headers
    context.close()


@pytest.mark.parametrize("width", [360, 1280])
def test_notices_come_before_the_privacy_explanation(browser, live_server, width):
    context, page, errors = open_page(browser, f"{live_server['origin']}/s/{SLUG}", width)
    page.evaluate("localStorage.setItem('ldp-survey:answered:smoking-2026', 'yes')")
    page.reload()
    notice = page.locator("#already-answered")
    assert notice.is_visible()
    assert page.evaluate("""document.getElementById('already-answered')
        .compareDocumentPosition(document.getElementById('protection')) & Node.DOCUMENT_POSITION_FOLLOWING""")
    assert notice.bounding_box()["y"] < page.locator("#protection").bounding_box()["y"]
    assert notice.bounding_box()["y"] < 800, "the notice is on the first screen"
    context.close()


def test_the_privacy_explanation_folds_on_a_small_screen_and_opens_by_keyboard(browser, live_server):
    context, page, errors = open_page(browser, f"{live_server['origin']}/s/{SLUG}", 360)
    details = page.locator("#protection")
    assert details.get_attribute("open") is None
    assert page.locator("#posterior-bound").is_hidden()
    assert page.locator("#q-smoker").bounding_box()["y"] < 800, "the first question is on the first screen"
    page.locator("#protection > summary").focus()
    page.keyboard.press("Enter")
    assert details.get_attribute("open") is not None and page.locator("#posterior-bound").is_visible()
    context.close()
    context, page, errors = open_page(browser, f"{live_server['origin']}/s/{SLUG}", 1280)
    assert page.locator("#protection").get_attribute("open") is not None, "open on a wide screen"
    assert errors == []
    context.close()
