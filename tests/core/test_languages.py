"""Surveys in several languages: the definition's translations, the warnings, the language chosen, one design."""

from __future__ import annotations

import pytest

from conftest import definition
from survey.core.definition import DefinitionError, parse_definition_toml
from survey.core.definition_toml import dump_definition
from survey.core.design import build_design
from survey.core.languages import localized, pick_language, translation_warnings

ONE_LANGUAGE = """slug = "s"
title = "Health"
epsilon = 1.0

[[questions]]
id = "fruit"
kind = "choice"
text = "Fruit?"
options = ["Apple", "Pear"]
decline = true
"""


def with_languages(extra_head: str = "", extra_question: str = "") -> str:
    head, questions = ONE_LANGUAGE.split("\n[[questions]]\n")
    return f"{head}{extra_head}\n[[questions]]\n{questions}{extra_question}"


def test_a_definition_without_languages_is_unchanged():
    defn = parse_definition_toml(ONE_LANGUAGE)
    assert defn.languages is None and defn.translations is None and defn.questions[0].translations is None
    design = build_design(defn)
    assert localized(design, "en") == design, "the page embeds exactly the design"
    assert "languages" not in design and "translations" not in design
    assert "translations" not in design["questions"][0]
    assert translation_warnings(defn) == []


def test_translations_round_trip_through_toml():
    defn = parse_definition_toml(definition("languages"))
    assert defn.languages == ("en", "fr", "es", "ar")
    assert defn.translations["ar"]["title"] == "الصحة والحياة اليومية"
    assert defn.questions[1].translations["fr"]["options"] == ("À pied", "À vélo", "En voiture", "En transports en commun")
    assert parse_definition_toml(dump_definition(defn)) == defn
    assert translation_warnings(defn) == []


def test_missing_translations_are_warnings_not_errors():
    text = with_languages('languages = ["en", "fr"]\ntranslations.fr.title = "Santé"\n')
    defn = parse_definition_toml(text)
    assert translation_warnings(defn) == [
        "fr: question 'fruit' has no translation of its text and options; shown in en"]


@pytest.mark.parametrize(("head", "question", "field", "words"), [
    ('languages = "en"\n', "", "languages", "list of 1 to"),
    ('languages = ["en", "EN!"]\n', "", "languages", "tag such as"),
    ('languages = ["en", "en"]\n', "", "languages", "distinct"),
    ('translations.fr.title = "Santé"\n', "", "translations", "listed in `languages`"),
    ('languages = ["en", "fr"]\ntranslations.de.title = "Gesundheit"\n', "", "translations", "one of the other"),
    ('languages = ["en", "fr"]\ntranslations.fr.slug = "x"\n', "", "translations", "may give"),
    ('languages = ["en", "fr"]\n', 'translations.fr.options = ["Pomme"]\n', "translations", "must list 2"),
    ('languages = ["en", "fr"]\n', 'translations.fr.options = ["Pomme", "Pomme"]\n', "translations", "distinct"),
    ('languages = ["en", "fr"]\n', 'translations.fr.min = 1\n', "translations", "may give"),
])
def test_bad_translations_name_their_field(head, question, field, words):
    with pytest.raises(DefinitionError) as raised:
        parse_definition_toml(with_languages(head, question))
    assert raised.value.field == field and words in raised.value.reason


def test_every_language_shares_one_design_and_its_hash():
    design = build_design(parse_definition_toml(definition("languages")))
    pages = {language: localized(design, language, lambda text: f"<{text}>") for language in design["languages"]}
    assert {page["hash"] for page in pages.values()} == {design["hash"]}
    texts = ("text", "options", "translations", "source_options")
    for page in pages.values():
        for shown, question in zip(page["questions"], design["questions"]):
            assert ({key: value for key, value in shown.items() if key not in texts}
                    == {key: value for key, value in question.items() if key not in texts})
            assert len(shown.get("options", ())) == len(question.get("options", ()))
    assert pages["fr"]["title"] == "Santé et vie quotidienne"
    assert pages["ar"]["questions"][1]["options"][-1] == "<Prefer not to say>"
    assert pages["ar"]["questions"][1]["source_options"] == design["questions"][1]["options"]
    assert pages["en"]["questions"][0]["text"] == "Do you smoke?"


def test_the_texts_are_part_of_the_one_design_not_of_a_language():
    text = definition("languages")
    other = text.replace('translations.fr.text = "Fumez-vous ?"', 'translations.fr.text = "Vous fumez ?"')
    assert build_design(parse_definition_toml(other))["hash"] != build_design(parse_definition_toml(text))["hash"]


@pytest.mark.parametrize(("asked", "accepted", "chosen"), [
    ("fr", [("ar", 1.0)], "fr"),
    ("de", [("ar", 1.0)], "ar"),
    (None, [("es-MX", 1.0), ("fr", 0.9)], "es"),
    (None, [("fr", 0.5), ("ar", 0.8)], "ar"),
    (None, [("de", 1.0), ("ar", 0)], "en"),
    (None, [], "en"),
])
def test_the_language_comes_from_the_link_then_the_browser_then_the_survey(asked, accepted, chosen):
    design = build_design(parse_definition_toml(definition("languages")))
    assert pick_language(design, asked, accepted) == chosen


BRANCHED = """slug = "b"
title = "Habits"
epsilon = 2.0
languages = ["en", "fr"]
thank_you = "Thanks for your time."
translations.fr.thank_you = "Merci pour votre temps."

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
options = ["Yes", "No"]
decline = true
show_if = { question = "smoker", equals = "yes" }
translations.fr.options = ["Oui, celle-ci", "Non, une autre"]
"""


def test_the_labels_display_logic_adds_come_from_the_catalogs_and_thank_you_is_translated():
    defn = parse_definition_toml(BRANCHED)
    assert defn.translations == {"fr": {"thank_you": "Merci pour votre temps."}}
    assert dump_definition(parse_definition_toml(dump_definition(defn))) == dump_definition(defn)
    design = build_design(defn)
    page = localized(design, "fr", lambda text: f"<{text}>")
    assert page["thank_you"] == "Merci pour votre temps." and page["hash"] == design["hash"]
    daily, brand = page["questions"][1], page["questions"][2]
    assert daily["options"] == ["<Yes>", "<No>", "<Does not apply>"], "a branched yes/no's labels are the product's"
    assert daily["source_options"] == ["Yes", "No", "Does not apply"]
    assert brand["options"] == ["Oui, celle-ci", "Non, une autre", "<Prefer not to say>", "<Does not apply>"]
    english = localized(design, "en", lambda text: f"<{text}>")
    assert english["questions"][2]["options"] == ["Yes", "No", "<Prefer not to say>", "<Does not apply>"]
    assert localized(design, "en")["questions"][1]["options"] == design["questions"][1]["options"]
    assert translation_warnings(defn) == ["fr: the survey's title has no translation; it is shown in en",
                                          "fr: question 'smoker' has no translation of its text; shown in en",
                                          "fr: question 'daily' has no translation of its text; shown in en",
                                          "fr: question 'brand' has no translation of its text; shown in en"]
