"""Precision in plain words where a survey is designed: which questions are too imprecise, and a crosstab's precision.

The rule — a question's expected worst-case 95% margin at the planned respondents
(planning.plan_question: simultaneous over a choice or multi question's options, a share of
the range for a number) above ``warn_margin`` — and its sentence live here alone, for
`ldp-survey create`, `ldp-survey plan` and the survey builder. The crosstab preview of a pair
says what planning can honestly say about it: for two yes/no questions the respondents an odds
ratio needs (crosstab_planning.respondents_for_odds_ratio, as `plan --odds-ratio`), for other pairs of
options the margin of a conditional share (crosstab_planning.worst_conditional_share_variance), and for a
number's mean within an option that it is not planned. Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .crosstab import CrosstabError, check_allocation, check_pair
from .defaults import DEFAULT_SHARES, DEFAULT_WARN_MARGIN  # noqa: F401 (re-exported)
from .definition import MAX_EPSILON, SurveyDefinition
from .design import design_question
from .crosstab_planning import pair_share, respondents_for_odds_ratio, worst_conditional_share_variance
from .planning import DEFAULT_LEVEL, allocation_budgets, plan_question, z_value

DEFAULT_ODDS_RATIO = 2.0
DEFAULT_POWER = 0.8


@dataclass(frozen=True)
class Imprecision:
    """A question whose expected margin at ``respondents`` is wider than ``warn_margin``, and what it needs."""

    id: str
    kind: str
    respondents: int
    half_width: float
    warn_margin: float
    needed: int


def about(count: int) -> str:
    """Return a count of respondents rounded up to two significant figures, e.g. 30,140 -> "31,000"."""
    if count < 100:
        return f"{count:,}"
    step = 10 ** (len(str(count)) - 2)
    return f"{math.ceil(count / step) * step:,}"


def design_entries(defn: SurveyDefinition, design: dict | None = None) -> list[dict]:
    """Return each question's design entry under the definition's own allocation (the design's, when given)."""
    if design is not None:
        return design["questions"]
    budgets, _ = allocation_budgets(defn, defn.sample if defn.allocation == "sample" else None)
    return [design_question(question, budget) for question, budget in zip(defn.questions, budgets)]


def imprecise_questions(defn: SurveyDefinition, *, respondents: int, warn_margin: float = DEFAULT_WARN_MARGIN,
                        level: float = DEFAULT_LEVEL, design: dict | None = None) -> list[Imprecision]:
    """Return the questions whose expected worst-case margin at ``respondents`` exceeds ``warn_margin``, in order."""
    _, share = allocation_budgets(defn, defn.sample if defn.allocation == "sample" else None)
    found = []
    for question, entry in zip(defn.questions, design_entries(defn, design)):
        planned = plan_question(entry, respondents=respondents, margin=warn_margin, share=share, level=level)
        if planned.half_width > warn_margin:
            found.append(Imprecision(id=question.id, kind=question.kind, respondents=respondents,
                                     half_width=planned.half_width, warn_margin=warn_margin,
                                     needed=planned.respondents))
    return found


def remedies(defn: SurveyDefinition, recommended: dict | None = None) -> list[str]:
    """Return what else would make a survey's questions more precise: a larger ε, fewer questions, another allocation.

    ``recommended`` is the planner's allocation ({"allocation", "sample"}); it is named when it differs from the chosen one.
    """
    found = ["a larger ε"] if defn.epsilon < MAX_EPSILON else []
    if len(defn.questions) > 1:
        found.append("fewer questions")
    chosen = (defn.allocation, defn.sample if defn.allocation == "sample" else None)
    if recommended is not None and (recommended["allocation"], recommended["sample"]) != chosen:
        found.append("the split allocation" if recommended["sample"] is None
                     else f"the sample allocation with {recommended['sample']} question"
                          f"{'' if recommended['sample'] == 1 else 's'} per respondent")
    return found


def _either(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def too_imprecise(what: str, *, respondents: int, half_width: float, warn_margin: float, needed: int,
                  unit: str = "points", whole: str = "the whole range from 0% to 100%",
                  alternatives: list[str] = ()) -> str:
    """Return the sentence that ``what`` is too imprecise at ``respondents`` and what it would need.

    ``unit`` names a margin's points ("points", or "% of the range" for a number's mean);
    a margin whose interval is wider than ``whole`` says so instead of reading like a usable number.
    """
    width = f"±{half_width * 100:.1f}{' ' if unit == 'points' else ''}{unit}"
    if 2 * half_width >= 1:
        verdict = f"{what} will be within {width}: the interval is wider than {whole}, so it tells nothing"
    else:
        verdict = f"{what} will be within {width} — too imprecise to be useful"
    target = f"±{warn_margin * 100:g}{' ' if unit == 'points' else ''}{unit}"
    sentence = f"With {respondents:,} respondents {verdict}; it needs about {about(needed)} respondents for {target}"
    return sentence + (f", or {_either(list(alternatives))}" if alternatives else "")


def imprecision_sentence(item: Imprecision, subject: str, alternatives: list[str] = (), scale=None) -> str:
    """Return the warning for one imprecise question; ``subject`` names it ("this question", "question 'age'").

    ``scale`` is a number question's (min, max), named as its range.
    """
    if item.kind == "number":
        whole = "the whole range" if scale is None else f"the whole range from {scale[0]:g} to {scale[1]:g}"
        return too_imprecise(f"the mean of {subject}", respondents=item.respondents, half_width=item.half_width,
                             warn_margin=item.warn_margin, needed=item.needed, unit="% of the range", whole=whole,
                             alternatives=alternatives)
    what = f"the estimate of {subject}" if item.kind == "yes_no" else f"the estimates of {subject}"
    return too_imprecise(what, respondents=item.respondents, half_width=item.half_width,
                         warn_margin=item.warn_margin, needed=item.needed, alternatives=alternatives)


def precision_warnings(defn: SurveyDefinition, *, respondents: int, warn_margin: float = DEFAULT_WARN_MARGIN,
                       level: float = DEFAULT_LEVEL, design: dict | None = None, recommended: dict | None = None,
                       subject=lambda question_id: f"question {question_id!r}") -> dict[str, str]:
    """Return the warning of every too imprecise question, by question id (``subject`` names a question by its id)."""
    alternatives = remedies(defn, recommended)
    ranges = {question.id: (question.min, question.max) for question in defn.questions if question.kind == "number"}
    return {item.id: imprecision_sentence(item, subject(item.id), alternatives, ranges.get(item.id))
            for item in imprecise_questions(defn, respondents=respondents, warn_margin=warn_margin, level=level,
                                            design=design)}


def _chosen_phrase(entry: dict) -> tuple[str, float]:
    """Return how one indicator of the first question of a crosstab reads, and the share the plan assumes has it."""
    if entry["kind"] == "yes_no":
        return f"answer yes to {entry['id']}", 0.5
    count = len(entry["options"])
    verb = "choose" if entry["kind"] == "choice" else "tick"
    return f"{verb} a given option of {entry['id']}", 1 / count


def crosstab_precision(defn: SurveyDefinition, a: str, b: str, *, respondents: int,
                       odds_ratio: float = DEFAULT_ODDS_RATIO, shares: tuple[float, float] = DEFAULT_SHARES,
                       warn_margin: float = DEFAULT_WARN_MARGIN, level: float = DEFAULT_LEVEL,
                       design: dict | None = None) -> dict:
    """Return the crosstab precision of questions ``a`` and ``b`` in words: {"lines": [...], "warning": str | None}.

    Under the definition's own allocation (under sample only the share of respondents who
    answer both, crosstab_planning.pair_share, counts). A pair the crosstab refuses gets its reason.
    """
    entries = {entry["id"]: entry for entry in design_entries(defn, design)}
    question_a, question_b = entries[a], entries[b]
    allocation = {"allocation": defn.allocation, "sample": defn.sample, "questions": list(entries.values())}
    try:
        check_pair(question_a, question_b)
        check_allocation(allocation)
    except CrosstabError as exc:
        return {"lines": [f"{str(exc)[:1].upper()}{str(exc)[1:]}."], "warning": None}
    both = pair_share(allocation)
    lines = []
    if both < 1:
        lines.append(f"Under the sample allocation about {both:.0%} of respondents answer both, "
                     f"about {math.floor(respondents * both):,} of your {respondents:,}.")
    if question_a["kind"] == "yes_no" and question_b["kind"] == "yes_no":
        needed = math.ceil(respondents_for_odds_ratio(question_a, question_b, share_a=shares[0],
                                                      share_b_without_a=shares[1], odds_ratio=odds_ratio,
                                                      level=level, power=DEFAULT_POWER) / both)
        verdict = (f"your {respondents:,} are enough" if needed <= respondents
                   else f"more than the {respondents:,} you expect")
        lines.append(f"To detect an odds ratio of {odds_ratio:g} between {a} and {b} (its {level:.0%} interval "
                     f"excluding 1 with {DEFAULT_POWER:.0%} power), if {shares[0]:.0%} answer yes to {a} and "
                     f"{shares[1]:.0%} of the others yes to {b}: {needed:,} respondents ({verdict}).")
    if question_b["kind"] == "number":
        lines.append(f"The mean of {b} among those with each answer of {a} is not planned here: its precision "
                     "depends on how the numbers spread within each group. Cross them in a pilot, or simulate "
                     "answers with ldp-survey simulate and cross them with ldp-survey crosstab.")
        return {"lines": lines, "warning": None}
    phrase, share_a = _chosen_phrase(question_a)
    variance = worst_conditional_share_variance(question_a, question_b, share_a)
    z = z_value(level)
    half = z * math.sqrt(variance / (respondents * both))
    what = f"the share with each answer of {b} among those who {phrase} ({share_a:.0%} of respondents)"
    lines.append(f"With {respondents:,} respondents {what} will be within ±{half * 100:.1f} points "
                 f"({level:.0%} interval, worst case over the answers to {b}).")
    warning = None
    if half > warn_margin:
        needed = math.ceil(math.ceil(z * z * variance / warn_margin ** 2) / both)
        warning = too_imprecise(f"the share with each answer of {b} among those who {phrase}",
                                respondents=respondents, half_width=half, warn_margin=warn_margin, needed=needed,
                                alternatives=remedies(defn))
    return {"lines": lines, "warning": warning}


def power_sentence(result: dict) -> str:
    """Return a prevalence test's power (``planning.power_plan``) in words."""
    first, second = result["shares"]
    sided = "one-sided" if result["sided"] == 1 else "two-sided"
    if result["test"] == "one_sample":
        test = f"that {result['question']}'s share is {first:g} when it is {second:g}"
        people, needed = f"{result['respondents']:,} respondents", f"{result['respondents_needed']:,} respondents"
    else:
        test = f"that two groups share {result['question']}'s share when they hold {first:g} and {second:g}"
        people = f"{result['respondents']:,} respondents per group"
        needed = f"{result['respondents_needed']:,} respondents per group"
    asked = "" if result["answering"] == 1 else f" ({result['answering']:.0%} of them asked it)"
    return (f"Power of the {sided} test at level {result['alpha']:g} {test}, at {people}{asked}: "
            f"{result['power']:.1%}; for {result['target_power']:.0%} power: {needed}.")
