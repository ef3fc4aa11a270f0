"""Accessibility: axe-core (WCAG 2 A/AA rules) finds no violation on any page, in Chromium."""

from __future__ import annotations

import re

import pytest
from werkzeug.security import generate_password_hash

from survey.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLUG = "smoking-2026"
EMAIL, PASSWORD = "a11y@example.org", "accessible pages"
RULES = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]},
         "resultTypes": ["violations"]}


@pytest.fixture(scope="module")
def axe():
    from axe_playwright_python.sync_playwright import Axe

    return Axe()


@pytest.fixture(scope="module")
def researcher(live_server):
    store = Store(live_server["db"])
    store.add_user(EMAIL, generate_password_hash(PASSWORD), replace=True)
    store.share("smoking-2026", EMAIL)
    store.close()


def console_errors(page) -> list[str]:
    """Collect the page's console errors (a CSP violation or a failed load shows up here)."""
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def violations(axe, page) -> list[str]:
    """Return one line per axe violation on the page: rule, impact and the first offending node."""
    results = axe.run(page, options=RULES).response
    return [f"{v['id']} ({v['impact']}): {v['help']} at {v['nodes'][0]['target']}" for v in results["violations"]]


@pytest.mark.parametrize("width", [360, 1280])
def test_respondent_page(browser, live_server, axe, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors = console_errors(page)
    page.goto(f"{live_server['origin']}/s/{SLUG}")
    assert violations(axe, page) == []
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.locator(".field-error:not(:empty)").first.wait_for()
    assert violations(axe, page) == [], "the page with its validation errors"
    assert errors == []
    page.evaluate("document.querySelector('main').append(document.createElement('img'))")
    assert any(line.startswith("image-alt") for line in violations(axe, page)), "axe really audits the page"
    context.close()


@pytest.mark.parametrize("width", [360, 1280])
def test_researcher_pages(browser, live_server, axe, researcher, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors = console_errors(page)
    origin = live_server["origin"]
    page.goto(f"{origin}/login")
    assert violations(axe, page) == [], "/login"
    page.get_by_label("Email").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile("/surveys$"))
    for path in ("/surveys", f"/surveys/{SLUG}/results", f"/surveys/{SLUG}/results?intervals=posterior&prior=uniform",
                 f"/surveys/{SLUG}/test", f"/surveys/{SLUG}/sandbox",
                 f"/surveys/{SLUG}/regression", "/account/tokens", "/account/password", "/forgot", "/surveys/build",
                 "/surveys/new"):
        page.goto(origin + path)
        assert violations(axe, page) == [], path
        # Wide tables scroll inside their own box; the page itself never scrolls sideways.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), (path, width)
    page.get_by_role("button", name="Preview").click()
    page.wait_for_load_state()
    assert violations(axe, page) == [], "/surveys/new with a preview"
    assert page.get_by_role("heading", name=re.compile("Preview")).is_visible()
    page.goto(origin + "/surveys/build")
    page.get_by_role("button", name="Add number question").click()
    assert errors == [], "no console error: no CSP violation, no failed load"
    page.get_by_role("button", name="Save draft").click()
    page.get_by_role("alert").get_by_text("fields to fix").wait_for()
    # The page with the errors comes with status 422, which Chromium logs; nothing else may be logged.
    assert [line for line in errors if "status of 422" not in line] == []
    errors.clear()
    assert violations(axe, page) == [], "/surveys/build with every error"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), ("/surveys/build", width)
    page.get_by_label("Title").fill("A title")
    page.get_by_label("Address (slug)").fill("a11y-check")
    page.fill("#questions-0-id", "first")
    page.fill("#questions-0-text", "A question?")
    page.fill("#questions-1-id", "second")
    page.fill("#questions-1-text", "A number?")
    page.fill("#questions-1-min", "0")
    page.fill("#questions-1-max", "9")
    page.locator("#questions-1-preview").locator("dt", has_text="Respondents for").wait_for()
    assert violations(axe, page) == [], "/surveys/build with the live preview"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), ("/surveys/build", width)
    assert errors == [], "no console error: no CSP violation, no failed load"
    context.close()
