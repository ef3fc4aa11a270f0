"""Describe in plain language how a design protects each answer, from its integer thresholds.

Probabilities come from the exact fractions T/2^53 the browser uses; a percentage is
rounded to as few decimals as keep it honest (never 0% or 100% unless exact); ε and how
sure someone can be are rounded up (``words``).
"""

from __future__ import annotations

import re

from .mechanisms import mechanism_for
from .planning import posterior_bound
from .wording import tr
from .words import format_epsilon, percent, percent_up

__all__ = ["format_epsilon", "percent", "posterior_note", "protection_note", "sample_note"]


def protection_note(question: dict) -> str:
    """Return one or two plain sentences on how this question's answer is randomized on the device."""
    return mechanism_for(question).protection_note(format_epsilon(question["epsilon"]))


# Where a note's privacy figure begins: " (ε′ …", in any language (a non-breaking space, or the Arabic
# page's left-to-right isolate, may stand around ε′).
_FIGURE_RE = re.compile(r"\s*\((?=\u2066?ε′)")


def split_figure(note: str) -> tuple[str, str | None]:
    """Return a protection note as (its plain sentences, its privacy figure ``ε′ = …`` or None).

    The page shows the sentences first and the figure in a fold; a note without a figure
    comes back whole.
    """
    match = None
    for match in _FIGURE_RE.finditer(note):
        pass
    if match is None:
        return note, None
    figure = note[match.end():].rstrip()
    figure = figure[:-1].rstrip() if figure.endswith(".") else figure
    figure = figure[:-1] if figure.endswith(")") else figure
    return note[:match.start()].rstrip() + ".", figure


def sample_note(design: dict) -> str | None:
    """Return why a respondent sees only some questions (sample allocation, m < k), or None.

    Each respondent answers m of the k questions at ε/m each, rather than all k at ε/k
    (Arcolezi et al. 2021).
    """
    if design.get("allocation") != "sample":
        return None
    k, m = len(design["questions"]), int(design["sample"])
    if m >= k:
        return None
    each = format_epsilon(max(question["epsilon"] for question in design["questions"]))
    budget = format_epsilon(design["epsilon"])
    values = {"m": m, "k": k, "budget": budget, "each": each}
    if m == 1:
        return tr("Each person answers 1 of the %(k)s questions, chosen at random on your device, so you see only "
                  "1 question below. Nothing at all is sent about the questions you are not shown. Your privacy loss "
                  "stays at most ε = %(budget)s in total, shared by fewer answers (ε′ = %(each)s each), so each "
                  "answer tells the researchers more on average and the survey needs fewer people for the same "
                  "accuracy. Which questions you were given says nothing about your answers.", **values)
    return tr("Each person answers %(m)s of the %(k)s questions, chosen at random on your device, so you see only "
              "%(m)s questions below. Nothing at all is sent about the questions you are not shown. Your privacy "
              "loss stays at most ε = %(budget)s in total, shared by fewer answers (ε′ = %(each)s each), so each "
              "answer tells the researchers more on average and the survey needs fewer people for the same "
              "accuracy. Which questions you were given says nothing about your answers.", **values)


def posterior_note(design: dict) -> str:
    """Return the respondent's plain sentence on what everything they send can reveal (``planning.posterior_bound``)."""
    spent = design["epsilon_spent"]
    sure = percent_up(posterior_bound(spent))
    return tr("The protection, in plain words: suppose someone thought it was 50/50 whether an answer of yours "
              "is one thing or another. After seeing all that this page sends, they can be at most %(sure)s sure "
              "(privacy loss ε′ = %(epsilon)s; smaller is safer). Sending the survey twice would weaken this, so "
              "this device sends it once.", sure=sure, epsilon=format_epsilon(spent))
