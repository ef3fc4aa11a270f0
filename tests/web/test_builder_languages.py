"""The builder's translations: a field per language beside each text, filled on import, exported back, missing ones flagged."""

from __future__ import annotations

import re

import pytest
from test_builder import field_error, field_errors_of, fields, page, press

from conftest import OWNER, definition
from survey.core.definition import parse_definition_toml
from survey.core.definition_toml import dump_definition
from survey.core.languages import translation_warnings

THREE = """slug = "health"
title = "Health"
description = "A short survey."
thank_you = "Thank you!"
epsilon = 2.0
languages = ["en", "fr", "ar"]

[translations.fr]
title = "Santé"
description = "Une courte enquête."
thank_you = "Merci !"

[translations.ar]
title = "الصحة"

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"
translations.fr.text = "Fumez-vous ?"
translations.ar.text = "هل تدخن؟"

[[questions]]
id = "pets"
kind = "multi"
text = "Which pets?"
options = ["dog", "cat"]
translations.fr = {text = "Quels animaux ?", options = ["chien", "chat"]}

""" + definition("age")


@pytest.fixture
def owner(app, accounts):
    """Return a test client signed in as the owner of the smoking survey."""
    from test_ownership import signed_in

    return signed_in(app, *OWNER)


def imported(client, text=THREE):
    """Return the builder page after importing ``text``."""
    token = fields(client.get("/surveys/build"), "import")["csrf_token"]
    return client.post("/surveys/build/import", data={"csrf_token": token, "toml": text})


def missing_note(response, name) -> str:
    """Return the missing-translation note beside a translation field (empty when it is translated)."""
    return re.search(rf'<p class="translation-missing" id="{re.escape(name)}-missing"[^>]*>(.*?)</p>',
                     response.get_data(as_text=True), re.S).group(1)


def test_import_fills_a_field_per_language_and_export_gives_the_same_definition(owner):
    response = imported(owner)
    assert response.status_code == 200, field_errors_of(response)
    values = fields(response)
    assert values["translations-fr-title"] == "Santé" and values["translations-ar-title"] == "الصحة"
    assert values["translations-fr-thank_you"] == "Merci !" and values["translations-ar-description"] == ""
    assert values["questions-0-translations-ar-text"] == "هل تدخن؟"
    assert values["questions-1-translations-fr-options"] == "chien\ncat".replace("cat", "chat")
    assert values["questions-2-translations-fr-text"] == ""
    assert "translations" not in values, "the TOML box is gone"
    exported = press(owner, response, "export").get_data(as_text=True)
    defn = parse_definition_toml(THREE)
    assert parse_definition_toml(exported) == defn
    assert exported == dump_definition(defn)
    again = imported(owner, exported)
    drop = lambda form: {k: v for k, v in form.items() if k != "csrf_token"}  # noqa: E731
    assert drop(fields(again)) == drop(values), "import, export, import: the same form"


def test_each_translation_field_is_labelled_with_its_language_and_text(owner):
    body = imported(owner).get_data(as_text=True)
    for name, words in (("translations-fr-title", "Title in French (fr)"),
                        ("translations-ar-thank_you", "Thank-you text in Arabic (ar)"),
                        ("questions-1-translations-fr-options", "options, one per line in the same order, in French")):
        label = re.search(rf'<label for="{name}">(.*?)</label>', body, re.S).group(1)
        assert words in re.sub(r"<[^>]+>", "", label), label
        control = re.search(rf'<(?:input|textarea)\b[^>]*\bid="{name}"[^>]*>', body).group(0)
        assert f'lang="{name.split("translations-")[1].split("-")[0]}"' in control and 'dir="auto"' in control
        assert f"{name}-hint" in control and f"{name}-missing" in control and f"{name}-error" in control
    hint = re.search(r'id="questions-0-translations-fr-text-hint">(.*?)</p>', body).group(1)
    assert "English (en)" in hint and "Do you smoke?" in hint
    label = re.search(r'<label for="questions-0-translations-ar-text">(.*?)</label>', body, re.S).group(1)
    assert "<span data-number>1</span>" in label, "the question's number, renumbered by builder.js on a move"


def test_missing_translations_are_flagged_beside_the_field_and_in_the_summary(owner):
    response = imported(owner)
    assert missing_note(response, "translations-ar-description").startswith("Missing: respondents reading Arabic")
    assert missing_note(response, "questions-1-translations-ar-options")
    assert missing_note(response, "questions-2-translations-fr-text")
    assert not missing_note(response, "translations-fr-title")
    assert not missing_note(response, "questions-0-translations-fr-text")
    body = page(response)
    warnings = translation_warnings(parse_definition_toml(THREE))
    assert len(warnings) == 5
    for warning in warnings:
        assert warning in body, warning
    # Typing a translation removes its flag and its warning.
    response = press(owner, response, "preview", **{"translations-ar-description": "استطلاع قصير."})
    assert not missing_note(response, "translations-ar-description")
    assert "ar: the survey's description" not in page(response)


def test_translations_move_with_their_question_and_a_new_language_gets_fields(owner):
    response = press(owner, imported(owner), "up:1")
    values = fields(response)
    assert values["questions-0-id"] == "pets" and values["questions-0-translations-fr-options"] == "chien\nchat"
    assert values["questions-1-translations-fr-text"] == "Fumez-vous ?"
    response = press(owner, press(owner, response, "remove:2"), "add:choice")
    assert fields(response)["questions-2-translations-ar-options"] == ""
    assert fields(response)["translations-fr-title"] == "Santé"
    response = press(owner, response, "preview", languages="en, fr, ar, de")
    assert fields(response)["translations-de-title"] == "" and "Title in German (de)" in page(response)
    response = press(owner, response, "remove:2", languages="en, fr")
    assert "translations-ar-title" not in fields(response)
    exported = parse_definition_toml(press(owner, response, "export").get_data(as_text=True))
    assert exported.languages == ("en", "fr") and exported.translations == {"fr": THREE_FR}
    assert [q.id for q in exported.questions] == ["pets", "smoker"]
    assert exported.questions[0].translations == {"fr": {"text": "Quels animaux ?", "options": ("chien", "chat")}}
    assert exported.questions[1].translations == {"fr": {"text": "Fumez-vous ?"}}


THREE_FR = {"title": "Santé", "description": "Une courte enquête.", "thank_you": "Merci !"}


def test_a_wrong_translation_is_an_error_beside_its_field(owner):
    response = press(owner, imported(owner), "preview", **{"questions-1-translations-fr-options": "chien"})
    assert response.status_code == 422
    assert "must list 2 non-empty labels" in field_error(response, "questions-1-translations-fr-options")
    assert 'href="#questions-1-translations-fr-options"' in response.get_data(as_text=True)


def test_option_translations_of_a_kind_without_options_are_not_read(owner):
    response = press(owner, imported(owner), "preview", **{"questions-0-translations-fr-options": "oui\nnon"})
    assert response.status_code == 200, field_errors_of(response)
    exported = parse_definition_toml(press(owner, response, "export").get_data(as_text=True))
    assert exported.questions[0].translations["fr"] == {"text": "Fumez-vous ?"}


def test_import_says_which_translations_the_form_cannot_hold(owner):
    response = imported(owner, THREE.replace('languages = ["en", "fr", "ar"]', 'languages = ["en", "fr"]'))
    assert "left out: questions.translations.ar, translations.ar." in page(response)
    assert "translations-ar-title" not in fields(response)


def test_a_wrong_survey_translation_is_named_in_the_error_summary(owner):
    response = press(owner, imported(owner), "preview", **{"translations-fr-title": "x" * 2001})
    assert response.status_code == 422
    assert field_error(response, "translations-fr-title")
    assert re.search(r'href="#translations-fr-title">Translation of title \(fr\)</a>', response.get_data(as_text=True))


def test_a_wrong_language_list_gets_no_duplicate_fields(owner):
    response = press(owner, imported(owner), "preview", languages="en, fr, fr, en, b@d")
    assert response.status_code == 422 and field_error(response, "languages")
    body = response.get_data(as_text=True)
    assert body.count('id="translations-fr-title"') == 1
    assert 'id="translations-en-title"' not in body and "b@d-title" not in body
