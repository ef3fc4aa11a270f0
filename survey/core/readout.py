"""Estimates in plain words: one sentence per aggregate row, and where it sits on its question's axis.

"Between 21% and 29% of respondents answered yes to “Do you smoke?” (95% confidence); the best
single estimate is 25%." A share reads in whole percents unless its interval is narrower than
five points; a mean to two significant digits of its interval's width (34.1 to 37.9). The positions (0 to
100 along the axis: [0, 100%] for a share, the question's min..max for a number) are what a
chart of the row needs; an unbiased estimate past its axis sits at the edge, marked ``outside``.
Pure: the web page, the command line and the API can all say the same thing.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .aggregate import shown_option
from .conditional_shares import SUFFIX, is_conditional
from .mechanisms import mechanism_for
from .posterior import kind_prior, kind_words
from .words import format_epsilon

VERBS = {"yes_no": "answered yes to", "choice": "chose", "multi": "ticked"}


@dataclass(frozen=True)
class Line:
    """One estimate in words: its label, its sentence, its figures as text and its place on the axis."""

    option: str
    label: str
    sentence: str
    estimate_text: str
    interval_text: str
    estimate_at: float | None
    low_at: float | None
    high_at: float | None
    outside: str = ""


@dataclass(frozen=True)
class Readout:
    """One question in words: how its answers were protected and a Line per estimate."""

    question: str
    text: str
    kind: str
    method: str
    epsilon: str
    n: int
    axis: tuple[str, str]
    lines: tuple[Line, ...]
    # A question with display logic: its estimates among those it applies to (survey/core/conditional_shares.py).
    applied: tuple[Line, ...] = ()


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def axis_range(question: dict) -> tuple[float, float]:
    """Return the axis (low, high) of a question: its min..max for a number, else (0, 1)."""
    if question.get("kind") == "number":
        return float(question["min"]), float(question["max"])
    return 0.0, 1.0


def _decimals(question: dict, low: float, high: float) -> int:
    """Return the decimals that show an interval honestly: more when its ends would otherwise read the same."""
    if question.get("kind") == "number":
        width = high - low
        digits = min(4, max(0, 1 - math.floor(math.log10(width)))) if width > 0 else 1
        scale = 1.0
    else:
        digits = 0 if high - low >= 0.05 else 1
        scale = 100.0
    while digits < 4 and f"{low * scale:.{digits}f}" == f"{high * scale:.{digits}f}" and low != high:
        digits += 1
    return digits


def share_decimals(low, high) -> int:
    """Return the decimals of a share's percentages in every table: the dashboard's rule for its interval (1 without one)."""
    if not (_finite(low) and _finite(high)):
        return 1
    return _decimals({"kind": "share"}, float(low), float(high))


def share_text(value, digits: int) -> str:
    """Return a share as a percentage to ``digits`` decimals, as the dashboard shows it ("–" when there is none)."""
    return _figure({"kind": "share"}, float(value), digits) if _finite(value) else "–"


def _figure(question: dict, value: float, digits: int) -> str:
    """Return a share as a percentage, or a mean as a number, to ``digits`` decimals (never "-0")."""
    if question.get("kind") == "number":
        text = f"{value:,.{digits}f}"
    else:
        text = f"{value * 100:.{digits}f}%"
    return text[1:] if text.startswith("-") and not any(c in "123456789" for c in text) else text


def _edge(question: dict, value: float) -> str:
    """Return an end of a question's axis as text: 0% or 100% for a share, the bound itself for a number."""
    return f"{value:,g}" if question.get("kind") == "number" else f"{value * 100:g}%"


def _at(value: float, low: float, high: float) -> float:
    """Return where value sits along [low, high], from 0 to 100, clipped to the axis."""
    return min(100.0, max(0.0, (value - low) / (high - low) * 100)) if high > low else 0.0


def _subject(question: dict, row) -> str:
    text = question.get("text") or question["id"]
    if question.get("kind") in ("choice", "multi"):
        return f"“{row.option}”"
    return f"“{text}”"


def _sentence(question: dict, row, estimate: str, low: str, high: str, confidence: str) -> str:
    kind = question.get("kind")
    if kind == "number":
        return (f"The mean answer to {_subject(question, row)} is between {low} and {high} ({confidence}); "
                f"the best single estimate is {estimate}.")
    together = ", holding for all options at once" if kind in ("choice", "multi") and "credible" not in confidence else ""
    return (f"Between {low} and {high} of respondents {VERBS.get(kind, 'answered yes to')} "
            f"{_subject(question, row)} ({confidence}{together}); the best single estimate is {estimate}.")


def _beyond(question: dict, where: str) -> str:
    edge = _edge(question, axis_range(question)[0 if where == "below" else 1])
    return (f" That estimate is {where} {edge}, which no true answer can be: the noise that protects "
            f"respondents can push an unbiased estimate past the possible range. The interval, cut to the "
            f"possible range, is the better guide.")


def line(question: dict, row) -> Line:
    """Return one aggregate row of ``question`` (an ``AggregateRow``) in words."""
    label = shown_option(row)
    if not _finite(row.estimate) or not (_finite(row.ci_low) and _finite(row.ci_high)):
        nobody = "nobody has answered this question yet" if row.n == 0 else f"{row.n} answers are not enough"
        return Line(row.option, label, f"No estimate: {nobody}.", "–", "–", None, None, None)
    axis_low, axis_high = axis_range(question)
    digits = _decimals(question, row.ci_low, row.ci_high)
    estimate, low, high = (_figure(question, value, digits) for value in (row.estimate, row.ci_low, row.ci_high))
    confidence = f"{format(row.ci_level * 100, 'g')}% confidence"
    if row.ci_kind == "anytime":
        confidence += ", valid at every look"
    elif kind_prior(row.ci_kind) is not None:
        confidence = kind_words(row.ci_kind, row.ci_level)
    sentence = _sentence(question, row, estimate, low, high, confidence)
    outside = "below" if row.estimate < axis_low else "above" if row.estimate > axis_high else ""
    if outside:
        sentence += _beyond(question, outside)
    return Line(row.option, label, sentence, estimate, f"{low} to {high}",
                _at(row.estimate, axis_low, axis_high), _at(row.ci_low, axis_low, axis_high),
                _at(row.ci_high, axis_low, axis_high), outside)


def readout(question: dict, rows) -> Readout:
    """Return a question of the design in words, from its own aggregate rows (in option order)."""
    own = [row for row in rows if row.question == question["id"] and not is_conditional(row.option)]
    axis_low, axis_high = axis_range(question)
    ends = (_edge(question, axis_low), _edge(question, axis_high))
    return Readout(question["id"], question.get("text") or question["id"], question.get("kind", ""),
                   mechanism_for(question).list_title, format_epsilon(question["epsilon"]),
                   max((row.n for row in own), default=0), ends, tuple(line(question, row) for row in own),
                   tuple(applied_line(question, row) for row in rows
                         if row.question == question["id"] and is_conditional(row.option)))


def applied_line(question: dict, row) -> Line:
    """Return a row among those a question applies to in words ("Among those it applies to, between …")."""
    plain = line(question, dataclasses.replace(row, option=row.option.removesuffix(SUFFIX).strip()))
    sentence = plain.sentence[:1].lower() + plain.sentence[1:] if not plain.sentence.startswith("No ") else plain.sentence
    return dataclasses.replace(plain, option=row.option, label=shown_option(row),
                               sentence=f"Among those it applies to, {sentence}")


def readouts(design: dict, rows) -> list[Readout]:
    """Return every question of the design in words, in question order."""
    rows = list(rows)
    return [readout(question, rows) for question in design.get("questions", [])]
