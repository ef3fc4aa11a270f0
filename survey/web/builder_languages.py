"""The builder's translations: one field per language after the first beside each survey and question text.

A survey text's translation is the form field ``translations-LANG-NAME`` (NAME one of SURVEY_TEXT_FIELDS: title,
description, thank_you); a question's is ``questions-I-translations-LANG-text`` and ``...-options`` (one label per
line, in the order of the question's own). A blank field is a missing translation: a warning
(``survey.core.languages.translation_warnings``), not an error.
"""

from __future__ import annotations

from collections.abc import Mapping

from babel import Locale, UnknownLocaleError

from ..core.definition import QUESTION_TEXT_FIELDS, SURVEY_TEXT_FIELDS


def parse_languages(text: str | None) -> list[str]:
    """Return the Languages field's tags, separated by commas or spaces, in order."""
    return [tag.strip() for tag in (text or "").replace(",", " ").split() if tag.strip()]


def field_name(language: str, name: str) -> str:
    """Return the form field (after a question's prefix, if any) of ``name``'s translation into ``language``."""
    return f"translations-{language}-{name}"


def language_name(tag: str) -> str:
    """Return a language's name in English and its tag, e.g. "French (fr)" (the tag alone if Babel knows none)."""
    try:
        name = Locale.parse(tag.replace("-", "_")).get_display_name("en")
    except (UnknownLocaleError, ValueError, TypeError):
        return tag
    return f"{name} ({tag})" if name else tag


def _clean(text) -> str:
    """Return a field's text with the browser's line ends made plain (blank when only spaces)."""
    text = str(text or "").replace("\r\n", "\n")
    return text if text.strip() else ""


def translations_from_form(raw: Mapping, languages: list[str], questions: int) -> tuple[dict, list[dict]]:
    """Return (survey translations, each question's translations) that the form's translation fields hold."""
    survey: dict = {}
    by_question: list[dict] = [{} for _ in range(questions)]
    for language in languages[1:]:
        own = {name: _clean(raw.get(field_name(language, name))) for name in SURVEY_TEXT_FIELDS}
        if any(own.values()):
            survey[language] = {name: text for name, text in own.items() if text}
        for index, texts in enumerate(by_question):
            prefix = f"questions-{index}-"
            text = _clean(raw.get(prefix + field_name(language, "text")))
            options = [line.strip() for line in _clean(raw.get(prefix + field_name(language, "options"))).splitlines()
                       if line.strip()]
            found = {name: value for name, value in (("text", text), ("options", options)) if value}
            if found:
                texts[language] = found
    return survey, by_question


def translation_formdata(data: Mapping) -> dict:
    """Return the translation fields (name -> text) of a definition mapping, for its languages after the first."""
    languages = data.get("languages") if isinstance(data.get("languages"), list) else []
    survey = data.get("translations") if isinstance(data.get("translations"), Mapping) else {}
    questions = data.get("questions") if isinstance(data.get("questions"), list) else []
    fields = {}
    for language in [str(tag) for tag in languages[1:]]:
        own = survey.get(language) if isinstance(survey.get(language), Mapping) else {}
        for name in SURVEY_TEXT_FIELDS:
            if own.get(name) is not None:
                fields[field_name(language, name)] = _text(own[name])
        for index, question in enumerate(questions):
            table = question.get("translations") if isinstance(question, Mapping) else None
            texts = table.get(language) if isinstance(table, Mapping) else None
            for name in QUESTION_TEXT_FIELDS if isinstance(texts, Mapping) else ():
                if texts.get(name) is not None:
                    fields[f"questions-{index}-" + field_name(language, name)] = _text(texts[name])
    return fields


def _text(value) -> str:
    """Return a translation as the form shows it: a list of labels one per line, anything else as text."""
    return "\n".join(map(str, value)) if isinstance(value, list) else str(value)


def left_out(data: Mapping) -> list[str]:
    """Return the translations of a definition mapping that the form has no field for (languages it does not list)."""
    languages = data.get("languages") if isinstance(data.get("languages"), list) else []
    others = {str(tag) for tag in languages[1:]}
    survey = data.get("translations") if isinstance(data.get("translations"), Mapping) else {}
    found = {f"translations.{language}" for language in survey if language not in others}
    for question in data.get("questions") if isinstance(data.get("questions"), list) else []:
        table = question.get("translations") if isinstance(question, Mapping) else None
        if isinstance(table, Mapping):
            found |= {f"questions.translations.{language}" for language in table if language not in others}
    return sorted(found)


def translation_values(raw: Mapping) -> dict:
    """Return the form's translation fields (name -> text) from its posted or imported data, for the page."""
    return {name: raw.get(name) or "" for name in raw if "translations-" in name}
