"""Find every error of a survey definition at once, each tied to its field, for forms.

parse_definition stops at the first error. Here each field is checked on its own by
putting it into an otherwise valid probe definition and asking parse_definition, so
the rules stay in one place (survey/core/definition.py) and a rule added there is found
here too. Fields checked together (a number's min and max; options and decline;
allocation and sample against the number of questions; distinct question ids) are
probed together.
Pure: no I/O.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .definition import KINDS, SURVEY_TEXT_FIELDS, DefinitionError, SurveyDefinition, parse_definition, parse_definition_toml
from .design import build_design


@dataclass(frozen=True)
class FieldError:
    """One error: the question's position (0-based, None for the survey's own fields), the field, the reason."""

    question: int | None
    field: str | None
    message: str


_BASE = {"slug": "probe", "title": "Probe", "epsilon": 1.0}
_PROBE_QUESTIONS = {
    "yes_no": {"id": "probe", "kind": "yes_no", "text": "Probe?"},
    "choice": {"id": "probe", "kind": "choice", "text": "Probe?", "options": ["a", "b"]},
    "multi": {"id": "probe", "kind": "multi", "text": "Probe?", "options": ["a"]},
    "number": {"id": "probe", "kind": "number", "text": "Probe?", "min": 0, "max": 1},
}
_REQUIRED_SURVEY = ("slug", "title", "epsilon")
_REQUIRED_QUESTION = {"yes_no": ("id", "text"), "choice": ("id", "text", "options"),
                      "multi": ("id", "text", "options"), "number": ("id", "text", "min", "max")}
_TOGETHER = {"allocation", "sample", "questions"}


def _probe(data: Mapping[str, Any]) -> DefinitionError | None:
    try:
        parse_definition(data)
    except DefinitionError as exc:
        return exc
    return None


def _question_probe(question: Mapping[str, Any]) -> DefinitionError | None:
    return _probe({**_BASE, "questions": [question]})


def _probes(count: int) -> list[dict]:
    return [{**_PROBE_QUESTIONS["yes_no"], "id": f"probe{i}"} for i in range(count)]


def definition_errors(data: Any) -> list[FieldError]:
    """Return every error of a definition mapping, in the order of the form (empty when it is valid)."""
    first = _probe(data)
    if first is None:
        return []
    if not isinstance(data, Mapping):
        return [FieldError(None, None, first.reason)]
    errors: list[FieldError] = []

    def record(question, name, exc):
        if exc is not None:
            errors.append(FieldError(question, exc.field or name, exc.reason))

    one_question = [_PROBE_QUESTIONS["yes_no"]]
    for name in _REQUIRED_SURVEY:
        if name not in data:
            record(None, name, _probe({**{k: v for k, v in _BASE.items() if k != name}, "questions": one_question}))
    for name, value in data.items():
        if name == "translations":
            record(None, name, _own_error(_probe({**_BASE, **_texts(data), "languages": data.get("languages"),
                                                  name: value, "questions": one_question}), name))
        elif name not in _TOGETHER:
            record(None, name, _probe({**_BASE, name: value, "questions": one_question}))

    questions = data.get("questions")
    count = len(questions) if isinstance(questions, list) and questions else 0
    shape = _probe({**_BASE, "questions": _probes(count) if count else questions})
    if shape is not None:
        record(None, "questions", shape)
    else:
        errors.extend(_question_errors(questions, data.get("languages")))

    allocation = {name: data[name] for name in ("allocation", "sample") if name in data}
    if allocation:
        record(None, "allocation", _probe({**_BASE, **allocation, "questions": _probes(count if shape is None else 1)}))
    return errors or [FieldError(None, first.field, first.reason)]


def _show_if_error(question: Mapping, base: Mapping, valid_earlier: list) -> DefinitionError | None:
    """Probe a question's show_if (with its options, which it extends) after the earlier questions that are valid."""
    probe = {**base, **{k: question[k] for k in ("options", "decline") if k in question},
             "id": "_probe_branch", "show_if": question["show_if"]}
    return _probe({**_BASE, "questions": [*valid_earlier, probe]})


def _texts(data: Mapping) -> dict:
    """Return the survey texts a translation may give (those that are text), for probing its translations."""
    return {name: data[name] for name in SURVEY_TEXT_FIELDS if isinstance(data.get(name), str)}


def _own_error(exc: DefinitionError | None, name: str) -> DefinitionError | None:
    """Return a probe's error if it is the probed field's own (a translation probed with the languages it needs)."""
    return exc if exc is not None and exc.field == name else None


def _question_errors(questions: list, languages=None) -> list[FieldError]:
    errors: list[FieldError] = []
    ids: dict[str, int] = {}
    valid_earlier: list = []
    for index, question in enumerate(questions):
        before = len(errors)
        if not isinstance(question, Mapping):
            errors.append(FieldError(index, None, _question_probe(question).reason))
            continue
        kind = question.get("kind")
        if kind not in KINDS:
            exc = _question_probe({**_PROBE_QUESTIONS["yes_no"], "kind": kind})
            errors.append(FieldError(index, "kind", exc.reason))
            kind = "yes_no"
            checked = {name: value for name, value in question.items() if name in ("id", "text", "weight")}
        else:
            checked = {name: value for name, value in question.items() if name != "kind"}
        base = _PROBE_QUESTIONS[kind]
        for name in _REQUIRED_QUESTION[kind]:
            if name not in question:
                exc = _question_probe({k: v for k, v in base.items() if k != name})
                errors.append(FieldError(index, exc.field or name, exc.reason))
        if "min" in checked or "max" in checked:
            exc = _question_probe({**base, **{k: checked[k] for k in ("min", "max") if k in checked}})
            if exc is not None:
                errors.append(FieldError(index, exc.field, exc.reason))
        for name, value in checked.items():
            if name == "show_if":
                exc = _show_if_error(question, base, valid_earlier)
                # Its options' own errors are found on their own; here only those show_if causes.
                if exc is not None and (exc.field == "show_if" or "added by show_if" in exc.reason):
                    errors.append(FieldError(index, exc.field or name, exc.reason))
                continue
            if name in ("min", "max"):
                continue
            probe = {**base, name: value}
            if name == "options" and isinstance(checked.get("decline"), bool):
                probe["decline"] = checked["decline"]  # decline adds an option: checked with the options
            if name == "translations":  # checked with the survey's languages and the options it translates
                probe.update({k: question[k] for k in ("options", "decline") if k in question})
                exc = _own_error(_probe({**_BASE, "languages": languages, "questions": [probe]}), name)
            else:
                exc = _question_probe(probe)
            if exc is not None:
                errors.append(FieldError(index, exc.field or name, exc.reason))
        qid = question.get("id")
        if isinstance(qid, str) and qid in ids and _question_probe({**base, "id": qid}) is None:
            errors.append(FieldError(index, "id", f"duplicate question id: question {ids[qid] + 1} has it too"))
        elif isinstance(qid, str):
            ids.setdefault(qid, index)
        if len(errors) == before:
            valid_earlier.append(question)
    return errors


def design_errors(defn: SurveyDefinition) -> tuple[dict | None, list[FieldError]]:
    """Return (design, []) when build_design accepts the definition, else (None, [its error tied to a field])."""
    try:
        return build_design(defn), []
    except DefinitionError as exc:
        positions = {question.id: index for index, question in enumerate(defn.questions)}
        return None, [FieldError(positions.get(exc.question), exc.field, exc.reason)]


def every_mistake(text: str, *, source: str = "<definition>") -> list[str]:
    """Return every mistake of a TOML definition, one line each, in the order of the file (empty when it is valid).

    A file that is not TOML has one mistake; otherwise each field is checked (definition_errors),
    then the design (build_design), so a researcher sees all at once.
    """
    try:
        defn = parse_definition_toml(text, source=source)
    except DefinitionError as first:
        try:
            data = tomllib.loads(text.replace("\r\n", "\n"))
        except (tomllib.TOMLDecodeError, ValueError, RecursionError):
            return [str(first)]
        return [_line(error, data, source) for error in definition_errors(data)] or [str(first)]
    _, errors = design_errors(defn)
    return [_line(error, {"questions": [{"id": q.id} for q in defn.questions]}, source) for error in errors]


def _line(error: FieldError, data: Mapping, source: str) -> str:
    """Return one FieldError as DefinitionError words: source, question id (or number), field, reason."""
    question = None
    if error.question is not None:
        questions = data.get("questions")
        entry = questions[error.question] if isinstance(questions, list) and error.question < len(questions) else None
        qid = entry.get("id") if isinstance(entry, Mapping) else None
        question = qid if isinstance(qid, str) and qid else f"#{error.question + 1}"
    return str(DefinitionError(error.message, source=source, question=question, field=error.field))
