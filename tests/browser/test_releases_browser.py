"""Releases in Chromium: respondents answer through the real page, and the dashboard moves only at a release boundary.

The survey releases every 2 responses. After the first answer the dashboard, its CSV and the API
still show nothing (the answer is held, the page says 1 of 2 received); after the second, both
responses appear at once. The respondent page tells respondents who sees what.
"""

from __future__ import annotations

import re

import pytest
from conftest import REPO, signed_in_page
from test_browser import fill_survey, send_and_wait_for_thanks
from werkzeug.security import generate_password_hash

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLUG = "smoking-pairs"
RESEARCHER = ("pairs@example.org", "pairs password")


@pytest.fixture(scope="module")
def pairs(live_server):
    """Create the smoking survey released every 2 responses, owned by RESEARCHER; return an API token."""
    text = (REPO / "examples" / "smoking.toml").read_text(encoding="utf-8").replace(
        'slug = "smoking-2026"', f'slug = "{SLUG}"\nrelease_every = 2')
    store = Store(live_server["db"])
    try:
        store.add_user(RESEARCHER[0], generate_password_hash(RESEARCHER[1]))
        store.create_survey(text, build_design(parse_definition_toml(text)), owner=RESEARCHER[0])
        return store.create_token(RESEARCHER[0])[1]
    finally:
        store.close()


def answer_once(browser, origin: str):
    """Answer the survey as a new respondent (a fresh browser context: nothing remembered)."""
    context = browser.new_context(viewport={"width": 360, "height": 800})
    page = context.new_page()
    page.goto(f"{origin}/s/{SLUG}")
    assert "only totals over at least 2 people" in page.locator("#release-note").text_content()
    fill_survey(page)
    send_and_wait_for_thanks(page)
    context.close()


def reads(page, origin: str, token: str) -> dict:
    """Return the dashboard's released count and progress, the aggregates CSV and the API's rows."""
    page.goto(f"{origin}/surveys/{SLUG}/results")
    api = page.request.get(f"{origin}/api/surveys/{SLUG}/results", headers={"Authorization": f"Bearer {token}"})
    assert api.status == 200
    return {"released": " ".join(page.locator("#release-sentence").text_content().split()),  # folded (issue 27)
            "meter": page.locator("#release-meter").get_attribute("value"),
            "csv": page.request.get(f"{origin}/surveys/{SLUG}/results.csv").body(),
            "api": api.json()["rows"], "api_release": api.json()["release"]}


def test_the_dashboard_moves_only_at_a_release_boundary(browser, live_server, pairs):
    origin = live_server["origin"]
    context, page, errors = signed_in_page(browser, origin, *RESEARCHER)
    empty = reads(page, origin, pairs)
    assert "the 0 responses released so far; 0 more" in empty["released"]

    answer_once(browser, origin)
    held = reads(page, origin, pairs)
    assert "the 0 responses released so far; 1 more have arrived" in held["released"]
    assert held["meter"] == "1"
    assert (held["csv"], held["api"]) == (empty["csv"], empty["api"])
    assert held["api_release"]["held"] == 1 and held["api_release"]["to_go"] == 1

    answer_once(browser, origin)
    released = reads(page, origin, pairs)
    assert "the 2 responses released so far; 0 more" in released["released"]
    assert released["meter"] == "0"
    assert released["csv"] != empty["csv"]
    assert all(row["n"] == 2 for row in released["api"])
    assert re.search(r"\b2 responses released\.", page.content())
    assert not errors
    context.close()
