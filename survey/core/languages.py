"""Surveys in several languages: which language a respondent gets, the design's texts in it, missing translations.

A definition's texts (title, description, questions, options, any SURVEY_TEXT_FIELDS) are in
its first language; ``translations`` give them in the others. Languages change texts only:
the mechanisms, thresholds and hash of the design are the same in every language, and the
language is never part of a report. Pure: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable

from .branching import NOT_APPLICABLE_LABEL, YES_NO_OPTIONS
from .definition import DECLINE_LABEL, SURVEY_TEXT_FIELDS, SurveyDefinition
from .wording import N_

# The language of a definition that names none: every definition written before languages existed.
DEFAULT_LANGUAGE = "en"
# The option decline = true adds, marked for the catalogs: each language's page shows its own words.
DECLINE_WORDS = N_("Prefer not to say")
assert DECLINE_WORDS == DECLINE_LABEL
# The labels display logic adds (survey.core.branching): a branched yes/no question is a choice of these.
GENERATED_WORDS = (N_("Yes"), N_("No"), N_("Does not apply"))
assert GENERATED_WORDS == (*YES_NO_OPTIONS, NOT_APPLICABLE_LABEL)


def design_languages(design: dict) -> list[str]:
    """Return the languages a design's texts are in, the first being that of its own fields."""
    return list(design.get("languages") or [DEFAULT_LANGUAGE])


def pick_language(design: dict, asked: str | None, accepted: Iterable[tuple[str, float]]) -> str:
    """Return the language of the respondent page: ``asked`` (the link's ?lang=), else the best of ``accepted``.

    ``accepted`` holds (tag, quality) pairs of Accept-Language; a tag matches a language equal to it or to
    its primary subtag ("fr-CA" matches "fr"). Else the survey's first language.
    """
    languages = design_languages(design)
    if asked in languages:
        return asked
    for tag, quality in sorted(accepted, key=lambda pair: -pair[1]):
        if quality <= 0:
            continue
        tag = tag.lower()
        for language in languages:
            if tag == language.lower() or tag.split("-")[0] == language.lower():
                return language
    return languages[0]


def localized(design: dict, language: str, translate: Callable[[str], str] = str) -> dict:
    """Return a copy of the design whose texts are in ``language``; every other field, the hash included, is kept.

    The copy drops the translations (the page needs only its own language's). A one-language design comes
    back equal to itself, so the page of such a survey embeds exactly its design.json.

    A text without a translation stays in the first language. ``translate`` gives the interface's
    own words, here the option labels the product adds ("Prefer not to say", "Does not apply", a branched
    yes/no question's "Yes" and "No").
    """
    page = copy.deepcopy(design)
    own = (design.get("translations") or {}).get(language, {}) if language != design_languages(design)[0] else {}
    for name, text in own.items():
        if text:
            page[name] = text
    for question in page["questions"]:
        texts = (question.pop("translations", None) or {}).get(language, {})
        if texts.get("text"):
            question["text"] = texts["text"]
        if question.get("options"):
            shown = _shown_options(question, texts.get("options"), translate)
            if shown != question["options"]:
                # What the options are, whatever they read as (a series' fingerprint, client_js/series.js).
                question["source_options"] = question["options"]
                question["options"] = shown
    page.pop("translations", None)
    return page


def _shown_options(question: dict, translated: list | None, translate: Callable[[str], str]) -> list[str]:
    """Return a design question's option labels in the page's language.

    The survey's own labels come from its translation (else stay as written); the labels the product adds
    come from the catalogs: "Prefer not to say" (decline), "Does not apply" (show_if) and a branched yes/no
    question's "Yes" and "No".
    """
    options = list(question["options"])
    added: list[str] = []
    if question.get("show_if") and options[-1] == NOT_APPLICABLE_LABEL:
        added.insert(0, options.pop())
    if question.get("decline") and options and options[-1] == DECLINE_LABEL:
        added.insert(0, options.pop())
    if question.get("show_if") and not (question.get("decline") or translated) and tuple(options) == YES_NO_OPTIONS:
        # A branched yes/no question (or a choice of the same two English words): every label is the product's.
        added[:0], options = options, []
    own = list(translated) if translated else options
    return own + [translate(label) for label in added]


def translation_warnings(defn: SurveyDefinition) -> list[str]:
    """Return one sentence per text missing in one of the definition's other languages (empty when none is)."""
    if not defn.languages or len(defn.languages) < 2:
        return []
    warnings = []
    survey = defn.translations or {}
    for language in defn.languages[1:]:
        for name in SURVEY_TEXT_FIELDS:
            if getattr(defn, name, "") and not survey.get(language, {}).get(name):
                warnings.append(f"{language}: the survey's {name} has no translation; it is shown in "
                                f"{defn.languages[0]}")
        for question in defn.questions:
            texts = (question.translations or {}).get(language, {})
            missing = [name for name in ("text", "options")
                       if getattr(question, name) and not texts.get(name)]
            if missing:
                warnings.append(f"{language}: question {question.id!r} has no translation of its "
                                f"{' and '.join(missing)}; shown in {defn.languages[0]}")
    return warnings
