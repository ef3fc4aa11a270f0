"""Write a survey definition as TOML that parse_definition_toml (and `ldp-survey create`) reads back equal; re-slug one.

Strings are TOML basic strings with every control character escaped; floats use
Python's shortest round-trip repr, which is valid TOML (e.g. 0.1, 1e-05, 1e+20).
``definition_with_slug`` replaces the slug line of a definition's text (duplicating a survey).
Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from dataclasses import fields

from .branching import NOT_APPLICABLE_LABEL
from .definition import DECLINE_LABEL, DefinitionError, Question, SurveyDefinition, parse_definition_toml
from .design import build_design

# Not definition fields: the questions (and the panel) are written as tables, the source is where it was read.
_NOT_WRITTEN = {"questions", "source", "panel"}
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(value: str) -> str:
    """Return ``value`` as a TOML basic string ("..."), escaping quotes, backslashes and control characters."""
    out = []
    for char in value:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def toml_float(value: float) -> str:
    """Return a finite float as a TOML float that reads back as the same float."""
    if not math.isfinite(value):
        raise ValueError(f"a definition holds only finite numbers, got {value!r}")
    text = repr(float(value))
    return text if any(c in text for c in ".en") else text + ".0"


def toml_value(value) -> str:
    """Return a string, bool, int, float or list/tuple of them as a TOML value."""
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return toml_float(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, _InlineTable):
        return str(value)
    raise TypeError(f"no TOML form for {type(value).__name__} {value!r}")


def dump_definition(defn: SurveyDefinition) -> str:
    """Return the TOML text of a definition; parse_definition_toml of it equals ``defn``.

    Every dataclass field that is set (not None) is written, in declaration order, so a
    field added to SurveyDefinition or Question is carried over without changing this.
    The exceptions are ``decline``, written only when true (a yes/no or number question
    may not have it), and then the "Prefer not to say" option it added is left out of
    ``options``, since parsing adds it again; and ``mechanism``, written only when not
    "auto" (only a number question may have it, and "auto" is what its absence means).
    """
    lines = [f"{f.name} = {toml_value(getattr(defn, f.name))}" for f in fields(defn)
             if f.name not in _NOT_WRITTEN and getattr(defn, f.name) is not None]
    if defn.panel is not None:
        lines += ["", "[panel]"]
        lines += [f"{name} = {toml_value(value)}" for name, value in defn.panel.design_entry().items()]
    for question in defn.questions:
        lines += ["", "[[questions]]"]
        lines += [f"{name} = {toml_value(value)}" for name, value in _question_fields(question)]
    return "\n".join(lines) + "\n"


def _question_fields(question: Question):
    for f in fields(question):
        value = getattr(question, f.name)
        if value is None or (f.name == "decline" and not value) or (f.name == "mechanism" and value == "auto"):
            continue
        if f.name == "options" and question.show_if and value and value[-1] == NOT_APPLICABLE_LABEL:
            value = value[:-1]  # show_if adds it again
        if f.name == "options" and question.decline and value and value[-1] == DECLINE_LABEL:
            value = value[:-1]
        if f.name == "show_if":
            yield f.name, _InlineTable(question=value[0], equals=list(value[1]))
            continue
        yield f.name, value


class _InlineTable(dict):
    """A TOML inline table of simple values ({ question = "smoker", equals = ["yes"] })."""

    def __str__(self):
        return "{ " + ", ".join(f"{key} = {toml_value(value)}" for key, value in self.items()) + " }"


# The top-level `slug = "..."` line of a definition (before any [[questions]] table).
_SLUG_LINE = re.compile(r"""^([ \t]*slug[ \t]*=[ \t]*)("(?:[^"\\\n]|\\.)*"|'[^'\n]*')""", re.MULTILINE)


def definition_with_slug(text: str, new_slug: str) -> tuple[str, dict]:
    """Return a definition's text with its slug replaced, and the design built from it (its hash covers the slug).

    Raises DefinitionError if the text has no top-level slug line or the new slug is invalid.
    """
    first_table = re.search(r"^[ \t]*\[", text, re.MULTILINE)
    head_end = first_table.start() if first_table else len(text)
    match = _SLUG_LINE.search(text, 0, head_end)
    if match is None:
        raise DefinitionError("the definition has no top-level `slug = \"...\"` line to replace")
    quoted = '"' + new_slug.replace("\\", "\\\\").replace('"', '\\"') + '"'
    new_text = text[:match.start(2)] + quoted + text[match.end(2):]
    design = build_design(parse_definition_toml(new_text, source="the duplicated definition"))
    if design["slug"] != new_slug:
        raise DefinitionError(f"the duplicated definition's slug is {design['slug']!r}, not {new_slug!r}")
    return new_text, design
