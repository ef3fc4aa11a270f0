"""The builder's translations: one TOML block per language, to and from the definition's translation tables.

The form's Translations box holds, for each language after the first, its texts keyed as in the
definition: ``[fr]`` with title, description, thank_you (any survey text field), and ``[fr.questions.ID]`` with a
question's text and options. Missing translations are warnings (``survey.core.languages``), not errors.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping

from ..core.definition_toml import toml_string, toml_value


def translations_from_text(text: str) -> tuple[dict, dict, list[str]]:
    """Return (survey translations, {question id: its translations}, errors) of the Translations box."""
    if not text.strip():
        return {}, {}, []
    try:
        data = tomllib.loads(text.replace("\r\n", "\n"))
    except (tomllib.TOMLDecodeError, ValueError, RecursionError) as exc:
        return {}, {}, [f"The translations are not valid TOML ({exc})."]
    survey: dict = {}
    by_question: dict = {}
    errors = []
    for language, texts in data.items():
        if not isinstance(texts, Mapping):
            errors.append(f"[{language}] must be a table of texts, e.g. title = \"...\".")
            continue
        own = {name: value for name, value in texts.items() if name != "questions"}
        if own:
            survey[language] = own
        questions = texts.get("questions", {})
        if not isinstance(questions, Mapping):
            errors.append(f"[{language}.questions] must hold one table per question id.")
            continue
        for qid, question in questions.items():
            by_question.setdefault(qid, {})[language] = question
    return survey, by_question, errors


def unknown_questions(by_question: dict, ids: list[str]) -> list[str]:
    """Return an error for each translated question id the survey does not have."""
    return [f"The translations name a question {qid!r} that the survey does not have." for qid in by_question
            if qid not in ids]


def translations_to_text(data: Mapping) -> str:
    """Return the Translations box's text for a definition mapping (its languages after the first)."""
    languages = data.get("languages") if isinstance(data.get("languages"), list) else []
    survey = data.get("translations") if isinstance(data.get("translations"), Mapping) else {}
    questions = [q for q in data.get("questions") or [] if isinstance(q, Mapping)]
    blocks = []
    for language in [str(tag) for tag in languages[1:]]:
        lines = [f"[{toml_string(language)}]"]
        own = survey.get(language) if isinstance(survey.get(language), Mapping) else {}
        lines += [f"{name} = {toml_value(value)}" for name, value in sorted(own.items())
                  if isinstance(value, (str, list))]
        for question in questions:
            texts = (question.get("translations") or {}).get(language) if isinstance(
                question.get("translations"), Mapping) else None
            if isinstance(texts, Mapping) and texts:
                lines += ["", f"[{toml_string(language)}.questions.{toml_string(str(question.get('id')))}]"]
                lines += [f"{name} = {toml_value(value)}" for name, value in sorted(texts.items())
                          if isinstance(value, (str, list))]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + ("\n" if blocks else "")
