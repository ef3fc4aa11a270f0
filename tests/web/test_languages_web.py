"""The respondent page in the survey's languages: chosen from ?lang=, then Accept-Language, then the first."""

from __future__ import annotations

import io
import json
import re

import pytest

from conftest import create_from_toml, definition, domain_answers

SLUG = "daily-health"


@pytest.fixture
def survey(db_path) -> dict:
    return create_from_toml(db_path, definition("languages"))


def page_of(client, query: str = "", **headers) -> str:
    response = client.get(f"/s/{SLUG}{query}", headers=headers)
    assert response.status_code == 200
    return response.get_data(as_text=True)


def html_tag(body: str) -> str:
    return re.search(r"<html[^>]*>", body).group(0)


def embedded(body: str, element: str) -> dict:
    return json.loads(re.search(rf'<script type="application/json" id="{element}">(.*?)</script>', body, re.S).group(1))


def test_the_link_chooses_then_the_browser_then_the_survey(client, survey):
    assert 'lang="fr" dir="ltr"' in html_tag(page_of(client, "?lang=fr", **{"Accept-Language": "ar"}))
    assert 'lang="ar" dir="rtl"' in html_tag(page_of(client, "", **{"Accept-Language": "de, ar;q=0.8, fr;q=0.5"}))
    assert 'lang="es"' in html_tag(page_of(client, "?lang=xx", **{"Accept-Language": "es-MX"}))
    assert 'lang="en"' in html_tag(page_of(client, "", **{"Accept-Language": "de"}))


def test_the_page_its_texts_and_its_script_words_are_in_the_language(client, survey):
    body = page_of(client, "?lang=ar")
    assert "<h1>الصحة والحياة اليومية</h1>" in body
    assert "تُخلط إجاباتك على هذا الجهاز قبل أن تغادره" in body, "the privacy explanation"
    assert "تُرسل إجابتك الحقيقية باحتمال" in body, "a mechanism's protection note"
    note = re.search(r'<p class="protection-note" id="q-[^"]+-note">([^<]*)</p>', body).group(1)
    assert "ε′" not in note, "the privacy figure is folded away in every language, not only in English"
    assert re.search(r'<details class="epsilon-fold"><summary>[^<]+</summary><p>\u2066ε′', body)
    assert "بالمواصلات العامة" in body and "أفضّل عدم الإجابة" in body, "options and the decline option"
    assert "Your answers are scrambled" not in body
    messages = embedded(body, "messages")
    assert messages["Yes"] == "نعم"
    assert messages["We will send (after randomizing): %(report)s — this may not be your answer."].startswith("سنرسل")
    page_design = embedded(body, "design")
    assert page_design["hash"] == survey["hash"]
    assert "translations" not in page_design


def test_the_page_carries_only_the_script_words_its_language_changes(client, survey):
    """The #messages blob holds the translated words only: none in English (the script shows a message it
    lacks as written), every one marked in French."""
    assert embedded(page_of(client, "?lang=en"), "messages") == {}
    french = embedded(page_of(client, "?lang=fr"), "messages")
    assert len(french) > 20 and all(words != message for message, words in french.items())


def test_the_switcher_names_each_language_in_itself_and_keeps_the_invitation(client, survey):
    nav = re.search(r'<nav class="language-switcher" aria-label="Langue">.*?</nav>',
                    page_of(client, "?lang=fr"), re.S).group(0)
    links = re.findall(r'<a href="([^"]+)" lang="(\w+)" hreflang="\w+" dir="(\w+)"( aria-current="page")?>([^<]+)</a>',
                       nav)
    assert [(lang, name, bool(current)) for _url, lang, _dir, current, name in links] == [
        ("en", "English", False), ("fr", "Français", True), ("es", "Español", False), ("ar", "العربية", False)]
    assert links[3][2] == "rtl"


def test_a_one_language_survey_stays_english_and_has_no_switcher(client, smoking_survey):
    body = client.get("/s/smoking-2026?lang=fr", headers={"Accept-Language": "fr"}).get_data(as_text=True)
    assert 'lang="en"' in html_tag(body) and "language-switcher" not in body
    assert "Your answers are scrambled on this device" in body


def test_a_respondent_error_page_is_in_their_language(client, survey):
    response = client.get("/s/no-such-survey", headers={"Accept-Language": "es"})
    assert response.status_code == 404
    body = response.get_data(as_text=True)
    assert 'lang="es"' in html_tag(body) and "No hay ninguna encuesta en esta dirección." in body
    assert client.get("/s/no-such-survey/design.json").get_json()["error"] == "There is no survey at this address."


def test_researcher_pages_stay_english(client, survey):
    body = client.get("/login", headers={"Accept-Language": "ar"}).get_data(as_text=True)
    assert 'lang="en" dir="ltr"' in html_tag(body)


def test_a_body_sent_from_any_language_is_the_same_and_stores_no_language(client, survey, db_path):
    body = {"design": survey["hash"], "answers": domain_answers(survey)}
    for language in ("fr", "ar"):
        response = client.post(f"/s/{SLUG}/responses?lang={language}", json=body,
                               headers={"Accept-Language": language})
        assert response.status_code == 201
    design = client.get(f"/s/{SLUG}/design.json?lang=ar").get_json()
    assert design == survey, "design.json is the one design, whatever the language asked"


PANEL_BRANCHED = """slug = "habits"
title = "Habits"
epsilon = 2.0
languages = ["en", "fr", "ar"]
thank_you = "Thanks for your time."
translations.fr.thank_you = "Merci pour votre temps."

[panel]
parameters = ["PROLIFIC_PID"]
code = "C0DE-7"
redirect = "https://app.prolific.com/submissions/complete?cc={code}"

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"

[[questions]]
id = "daily"
kind = "yes_no"
text = "Every day?"
show_if = { question = "smoker", equals = "yes" }

[[questions]]
id = "brand"
kind = "choice"
text = "Which brand?"
options = ["Red", "Blue"]
show_if = { question = "smoker", equals = "yes" }
translations.fr.options = ["Rouge", "Bleue"]

[[questions]]
id = "cups"
kind = "number"
text = "Cups of coffee a day?"
min = 0
max = 10
"""


def test_the_thanks_completion_progress_and_display_logic_are_in_the_language(client, db_path):
    survey = create_from_toml(db_path, PANEL_BRANCHED)
    body = client.get("/s/habits?lang=fr").get_data(as_text=True)
    assert '<p id="thanks-custom" class="thanks-custom">Merci pour votre temps.</p>' in body
    for words in ("Confirmez votre participation", "Votre code de validation\u00a0:", "C0DE-7",
                  "retourner sur le site de l’étude", "Certaines questions ne s’affichent que si une réponse"):
        assert words in body, words
    for english in ("Thanks for your time", "Confirm your participation", "Some questions are shown"):
        assert english not in body, english
    page_design = embedded(body, "design")
    assert page_design["hash"] == survey["hash"] and page_design["thank_you"] == "Merci pour votre temps."
    assert [q.get("options") for q in page_design["questions"][1:3]] == [
        ["Oui", "Non", "Ne s’applique pas"], ["Rouge", "Bleue", "Ne s’applique pas"]]
    messages = embedded(body, "messages")
    assert messages["Question %(place)s of %(count)s · %(answered)s answered"].startswith("Question %(place)s sur")
    assert messages["No longer asked (a randomized report is still sent): %(questions)s."].startswith("Questions qui")
    arabic = client.get("/s/habits?lang=ar").get_data(as_text=True)
    assert "Thanks for your time." in arabic, "an untranslated thank-you is shown in the first language"
    assert "أكّد مشاركتك" in arabic and "لا ينطبق" in arabic


@pytest.mark.parametrize("slug", [SLUG, "habits"])
def test_every_message_of_the_joined_page_script_is_in_the_pages_words(client, survey, db_path, slug):
    from babel.messages.extract import extract

    if slug == "habits":
        create_from_toml(db_path, PANEL_BRANCHED)
    body = client.get(f"/s/{slug}?lang=fr").get_data(as_text=True)
    src = re.search(r'<script type="module" src="([^"]+)"></script>', body).group(1).replace("&amp;", "&")
    script = client.get(src)
    assert script.status_code == 200 and b'define("respond.js"' in script.data
    marked = {message for _line, message, _comments, _context in
              extract("javascript", io.BytesIO(script.data), keywords={"_": None})}
    messages = embedded(body, "messages")
    assert len(marked) > 20 and marked <= set(messages), marked - set(messages)
    assert [message for message in marked if messages[message] == message] == [], "each one in French"
