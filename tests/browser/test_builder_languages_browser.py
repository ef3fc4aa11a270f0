"""The builder's translation fields in Chromium: filled by an import, labelled, keyboard order, axe clean, exported back."""

from __future__ import annotations

import pytest
from werkzeug.security import generate_password_hash

from conftest import signed_in_page
from test_accessibility import axe, violations  # noqa: F401 (the axe fixture)
from survey.core.definition import parse_definition_toml
from survey.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EMAIL, PASSWORD = "translator@example.org", "translates surveys"
DEFINITION = """slug = "health"
title = "Health"
description = "A short survey."
epsilon = 2.0
languages = ["en", "fr", "ar"]

[translations.fr]
title = "Santé"

[[questions]]
id = "pets"
kind = "multi"
text = "Which pets?"
options = ["dog", "cat"]
translations.fr = {text = "Quels animaux ?", options = ["chien", "chat"]}
translations.ar.text = "أي حيوانات؟"
"""


@pytest.mark.parametrize("width", [360, 1280])
def test_translate_side_by_side_in_the_browser(browser, live_server, width, axe):
    store = Store(live_server["db"])
    store.add_user(EMAIL, generate_password_hash(PASSWORD), replace=True)
    store.close()
    context, page, errors = signed_in_page(browser, live_server["origin"], EMAIL, PASSWORD, width=width)
    page.goto(f"{live_server['origin']}/surveys/build")
    page.fill("#toml", DEFINITION)
    with page.expect_navigation():
        page.get_by_role("button", name="Import", exact=True).click()
    assert page.get_by_label("Title in French (fr)").input_value() == "Santé"
    assert page.get_by_label("Question 1 options, one per line in the same order, in French (fr)").input_value() \
        == "chien\nchat"
    arabic = page.get_by_label("Question 1 text in Arabic (ar)")
    assert arabic.get_attribute("lang") == "ar" and arabic.input_value() == "أي حيوانات؟"
    assert page.locator("#translations-ar-title-missing").inner_text().startswith("Missing: respondents reading Arabic")
    assert "ar: the survey's title has no translation" in page.locator("#builder-summary").inner_text()
    # The keyboard goes from a text to its translations, in order.
    page.focus("#title")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "translations-fr-title"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "translations-ar-title"
    page.keyboard.type("الصحة")
    assert page.locator("#translations-ar-title-missing").inner_text() == "", "typing clears the flag in place"
    page.fill("#translations-fr-title", "")
    assert page.locator("#translations-fr-title-missing").inner_text().startswith("Missing: respondents reading French")
    page.fill("#translations-fr-title", "Santé")
    # A question added in place has its translation fields too.
    page.get_by_role("button", name="Add single choice question").click()
    page.locator("#questions-1-translations-fr-options").wait_for()
    page.get_by_role("button", name="Remove question 2").click()
    assert violations(axe, page) == [], width
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), width
    with page.expect_download() as download:
        page.get_by_role("button", name="Export TOML").click()
    exported = parse_definition_toml(download.value.path().read_text(encoding="utf-8"))
    assert exported.translations == {"fr": {"title": "Santé"}, "ar": {"title": "الصحة"}}
    assert exported.questions[0].translations == {"fr": {"text": "Quels animaux ?", "options": ("chien", "chat")},
                                                 "ar": {"text": "أي حيوانات؟"}}
    assert errors == []
    context.close()
