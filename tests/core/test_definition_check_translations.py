"""definition_errors and translations: each translation is checked with the survey's languages and options."""

from __future__ import annotations

from survey.core.definition_check import FieldError, definition_errors

VALID = {"slug": "s", "title": "T", "description": "D", "epsilon": 1.0, "languages": ["en", "fr"],
         "translations": {"fr": {"title": "T-fr", "description": "D-fr"}},
         "questions": [{"id": "q", "kind": "choice", "text": "Q?", "options": ["a", "b"], "decline": True,
                        "translations": {"fr": {"text": "Q-fr ?", "options": ["a-fr", "b-fr"]}}}]}


def test_a_mistake_elsewhere_does_not_flag_the_valid_translations():
    assert definition_errors(VALID) == []
    errors = definition_errors({**VALID, "epsilon": "two"})
    assert [error.field for error in errors] == ["epsilon"]


def test_each_wrong_translation_is_found_with_its_question():
    wrong = {**VALID, "translations": {"de": {"title": "T-de"}},
             "questions": [{**VALID["questions"][0], "translations": {"fr": {"options": ["a-fr"]}}}]}
    errors = definition_errors(wrong)
    assert [(error.question, error.field) for error in errors] == [(None, "translations"), (0, "translations")]
    assert "one of the other languages (fr)" in errors[0].message
    assert errors[1].message.startswith("fr.options must list 2 non-empty labels"), "decline's label is not translated"


def test_a_translation_of_a_text_the_survey_lacks_is_an_error():
    errors = definition_errors({**VALID, "translations": {"fr": {"thank_you": "Merci"}}})
    assert errors == [FieldError(None, "translations", errors[0].message)]
    assert "'thank_you'" in errors[0].message
