"""One survey in English, French, Spanish and Arabic (right to left), answered in Chromium at 360 px.

The language changes the words only: every body carries the one design hash and the same keys,
and nothing of the language reaches the database. Screenshots of each language are saved under
the test's tmp folder (tmp_path_factory: language-screens*) to be looked at by eye.
"""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
from babel.messages.pofile import read_po

from conftest import create_from_toml, definition
from test_accessibility import RULES
from survey.web.i18n import catalog_paths

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLUG = "daily-health"
LANGUAGES = ("en", "fr", "es", "ar")
SEND_LINE = "We will send (after randomizing): %(report)s — this may not be your answer."
PROGRESS = "Question %(place)s of %(count)s · %(answered)s answered"


@pytest.fixture(scope="module")
def survey(live_server) -> dict:
    """Create the four-language survey (tests/definitions/languages.toml) in the live server's database."""
    return create_from_toml(live_server["db"], definition("languages"))


def translated(language: str, message: str) -> str:
    """Return the shipped catalog's translation of ``message`` (English: the message itself)."""
    if language == "en":
        return message
    with catalog_paths()[language].open("rb") as source:
        return read_po(source, locale=language)[message].string


def answer_and_send(page) -> None:
    """Answer the four questions by their fields (the same true answers in every language) and press send."""
    page.locator("#q-smoker-yes").check()
    page.locator("#q-transport-1").check()
    page.locator("#q-sports-0").check()
    page.locator("#q-sleep-value").fill("7")
    page.locator("#q-sleep-value").blur()
    page.locator('button[type="submit"]').click()
    page.locator("#thanks").wait_for(state="visible", timeout=10_000)


def test_the_survey_is_answered_in_each_language_with_one_design(browser, live_server, survey, tmp_path_factory):
    shots = tmp_path_factory.mktemp("language-screens")
    bodies = {}
    for language in LANGUAGES:
        context = browser.new_context(viewport={"width": 360, "height": 800})
        page = context.new_page()
        sent = []
        page.on("request", lambda request: sent.append(request.post_data) if request.method == "POST" else None)
        page.goto(f"{live_server['origin']}/s/{SLUG}?lang={language}")
        html = page.locator("html")
        assert html.get_attribute("lang") == language
        assert html.get_attribute("dir") == ("rtl" if language == "ar" else "ltr")
        assert page.get_by_role("navigation").get_by_role("link", name=re.compile(".")).count() == 4
        page.locator("#q-smoker-yes").check()
        line = page.locator("#q-smoker-report")
        before, _, after = translated(language, SEND_LINE).partition("%(report)s")
        yes, no = translated(language, "Yes"), translated(language, "No")
        assert re.fullmatch(re.escape(before) + f"({re.escape(yes)}|{re.escape(no)})" + re.escape(after),
                            line.inner_text()), line.inner_text()
        # The progress line of a four-question survey, in the page's language.
        progress = translated(language, PROGRESS) % {"place": 1, "count": 4, "answered": 1}
        assert page.locator("#progress-text").inner_text() == progress
        # The page is no wider than the screen, in either direction.
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        page.screenshot(path=str(shots / f"{language}-form.png"), full_page=True)
        answer_and_send(page)
        page.screenshot(path=str(shots / f"{language}-sent.png"), full_page=True)
        bodies[language] = json.loads(next(body for body in sent if body))
        context.close()
    assert {body["design"] for body in bodies.values()} == {survey["hash"]}
    assert all(set(body) == {"design", "answers", "submission"} for body in bodies.values())
    assert all(set(body["answers"]) == {"smoker", "transport", "sports", "sleep"} for body in bodies.values())
    assert all("lang" not in json.dumps(body) for body in bodies.values())
    assert not stored_language(live_server["db"]), "no language in any stored row"


def stored_language(db_path) -> list[str]:
    """Return every stored cell outside the survey's own definition that names a language or holds one's tag."""
    found = []
    with sqlite3.connect(db_path) as conn:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]
            found += [f"{table}.{column}" for column in columns if "lang" in column.lower()]
            if table == "surveys":
                continue  # the definition and design: the survey's texts in its languages, not a respondent's
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                found += [f"{table}: {cell!r}" for cell in row
                          if isinstance(cell, str) and (cell in LANGUAGES or "lang" in cell.lower())]
    return found


@pytest.mark.parametrize(("language", "width"), [("ar", 360), ("ar", 1280), ("fr", 360)])
def test_each_language_passes_axe(browser, live_server, survey, language, width):
    from axe_playwright_python.sync_playwright import Axe

    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server['origin']}/s/{SLUG}?lang={language}")
    page.locator("#q-smoker-report").wait_for(state="visible")
    results = Axe().run(page, options=RULES).response
    assert [f"{v['id']}: {v['nodes'][0]['target']}" for v in results["violations"]] == []
    page.locator('button[type="submit"]').click()
    page.locator(".field-error:not(:empty)").first.wait_for()
    results = Axe().run(page, options=RULES).response
    assert [f"{v['id']}: {v['nodes'][0]['target']}" for v in results["violations"]] == [], "with its errors"
    context.close()


BRANCHED = """slug = "habits-fr"
title = "Habits"
epsilon = 2.0
languages = ["en", "fr"]

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"
translations.fr.text = "Fumez-vous ?"

[[questions]]
id = "brand"
kind = "choice"
text = "Which brand?"
options = ["Red", "Blue"]
show_if = { question = "smoker", equals = "yes" }
translations.fr.options = ["Rouge", "Bleue"]
"""


def test_display_logic_speaks_the_pages_language(browser, live_server):
    create_from_toml(live_server["db"], BRANCHED)
    context = browser.new_context(viewport={"width": 360, "height": 800})
    page = context.new_page()
    page.goto(f"{live_server['origin']}/s/habits-fr?lang=fr")
    note = " ".join(page.locator("#branching-note").text_content().split())  # folded at 360 px: its text
    assert note.startswith("Certaines questions ne s’affichent"), note
    page.locator("#q-smoker-yes").check()
    assert page.locator("#q-brand").is_visible()
    assert page.locator("#q-brand label").all_inner_texts() == ["Rouge", "Bleue"], "“Does not apply” is not offered"
    page.locator("#q-smoker-no").check()
    status = page.locator("#branching-status").text_content()
    words = translated("fr", "No longer asked (a randomized report is still sent): %(questions)s.")
    assert status == words % {"questions": "“Which brand?”"}, status
    context.close()
