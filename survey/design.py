"""Turn a validated survey definition into its frozen, hashed randomization design.

The design is what the browser reads (``design.json``): per question its mechanism, the
integer thresholds it compares uniform integers against, and the realised epsilon.
"""

from __future__ import annotations

import hashlib
import json
import math
from decimal import Context, Decimal
from fractions import Fraction

from . import mechanisms as mech
from .definition import DefinitionError, SurveyDefinition

MIN_QUESTION_EPSILON = Fraction(1, 1000)
_CTX = Context(prec=80)


def allocate_split(defn: SurveyDefinition) -> list[Fraction]:
    """Return each question's exact budget eps_i = eps * w_i / sum(w) (sequential composition)."""
    weights = [Fraction(q.weight) for q in defn.questions]
    total = sum(weights)
    return [Fraction(defn.epsilon) * w / total for w in weights]


def _float_down(value: Fraction) -> float:
    """Return the largest float not above ``value``.

    Each question's nominal epsilon is this float, so its thresholds, its realised eps'
    and the eps' the design records (rounded to the nearest float) all stay at or below
    the exact share, and the recorded values add up to at most the budget.
    """
    result = float(value)
    return math.nextafter(result, -math.inf) if Fraction(result) > value else result


def allocate_sample(defn: SurveyDefinition) -> list[Fraction]:
    """Return each question's exact budget eps/m under ``sample`` allocation (Arcolezi et al. 2021).

    A respondent answers m of the k questions, so each is randomized at eps/m and the m
    reports together cost at most eps. Weights have no meaning here: they must all be
    equal (or absent), else a DefinitionError names the first question whose weight differs.
    """
    first = defn.questions[0].weight
    for question in defn.questions:
        if question.weight != first:
            raise DefinitionError(
                "weights share the budget only under allocation = \"split\"; under \"sample\" every "
                f"question is randomized at epsilon/sample = {defn.epsilon:g}/{defn.sample}, so remove the "
                "weights or make them all equal",
                source=defn.source, question=question.id, field="weight")
    return [Fraction(defn.epsilon) / defn.sample] * len(defn.questions)


def build_design(defn: SurveyDefinition) -> dict:
    """Return the design of a definition: mechanisms, thresholds, realised epsilons and hash.

    Under ``split`` every respondent answers every question at its weighted share; under
    ``sample`` every respondent answers ``sample`` = m of them, each at eps/m, and the
    design carries ``"sample": m``. Raises DefinitionError when a question's share of the
    budget is too small to estimate anything (or, under sample, when weights differ).
    """
    sampled = defn.allocation == "sample"
    shares = allocate_sample(defn) if sampled else allocate_split(defn)
    questions = []
    realised_epsilons = []
    for question, share in zip(defn.questions, shares):
        if share < MIN_QUESTION_EPSILON:
            raise DefinitionError(
                f"this question's share of the budget is {float(share):.6g}, below the minimum "
                f"{float(MIN_QUESTION_EPSILON):g}; raise epsilon or the question's weight",
                source=defn.source, question=question.id, field="sample" if sampled else "weight")
        entry, realised = _design_question(question, Decimal(_float_down(share)))
        realised_epsilons.append(realised)
        questions.append(entry)
    # Sequential composition: a respondent's reports together cost the sum of the realised
    # epsilons of the questions they answer (all of them under split, the m costliest at
    # worst under sample), which must not exceed the budget (DESIGN.md §1, invariant 3).
    answered = sorted(realised_epsilons, reverse=True)[:defn.sample] if sampled else realised_epsilons
    spent = Decimal(0)
    for realised in answered:
        spent = _CTX.add(spent, realised)
    if spent > Decimal(defn.epsilon):
        raise AssertionError(f"realised epsilon {spent} exceeds the budget {defn.epsilon}")
    design = {
        "slug": defn.slug,
        "title": defn.title,
        "description": defn.description,
        "epsilon": defn.epsilon,
        "epsilon_spent": float(spent),
        "allocation": defn.allocation,
        "threshold_bits": mech.THRESHOLD_BITS,
        "questions": questions,
    }
    if sampled:
        design["sample"] = defn.sample
    # Only when set, so that the designs (and hashes) of surveys without them are unchanged.
    if defn.access != "open":
        design["access"] = defn.access
    if defn.series is not None:
        design["series"] = defn.series
    design["hash"] = design_hash(design)
    return design


def answered_per_respondent(design: dict) -> int:
    """Return how many questions one respondent answers: ``sample`` under sample allocation, else all."""
    if design.get("allocation") == "sample":
        return int(design["sample"])
    return len(design["questions"])


def design_question(question, budget: Fraction) -> dict:
    """Return the design entry of one definition question given its exact budget (mechanism, thresholds, ε′).

    The same entry build_design makes for that budget; the planner uses it to try budgets.
    """
    return _design_question(question, Decimal(_float_down(budget)))[0]


def _design_question(question, share: Decimal) -> tuple[dict, Decimal]:
    entry = {"id": question.id, "kind": question.kind, "text": question.text,
             "weight": question.weight, "epsilon_nominal": float(share)}
    if question.kind == "yes_no":
        threshold = mech.rr_flip_threshold(epsilon=share)
        realised = mech.rr_epsilon(threshold)
        entry.update(mechanism="rr", flip_threshold=threshold)
    elif question.kind == "choice":
        d = len(question.options)
        entry["options"] = list(question.options)
        if mech.use_oue(epsilon=share, d=d):
            threshold = mech.oue_q_threshold(epsilon=share)
            realised = mech.oue_epsilon(threshold)
            entry.update(mechanism="oue", q_threshold=threshold)
        else:
            threshold = mech.grr_keep_threshold(epsilon=share, d=d)
            realised = mech.grr_epsilon(threshold, d)
            entry.update(mechanism="grr", keep_threshold=threshold)
    elif question.kind == "multi":
        d = len(question.options)
        per_option = mech.per_option_epsilon(share, d)
        threshold = mech.rr_flip_threshold(epsilon=per_option)
        option_realised = mech.rr_epsilon(threshold)
        # A change of answer can change all d bits, so the question costs d * eps'_option.
        realised = _CTX.multiply(option_realised, Decimal(d))
        entry.update(mechanism="rr", options=list(question.options), flip_threshold=threshold,
                     epsilon_per_option=float(option_realised))
    elif question.kind == "number":
        entry.update(min=question.min, max=question.max)
        realised = _design_number(entry, share)
    else:
        raise DefinitionError(f"unknown kind {question.kind!r}", question=question.id, field="kind")
    if realised > share:
        raise AssertionError(f"realised epsilon {realised} above nominal {share} for {question.id}")
    entry["epsilon"] = float(realised)
    return entry, realised


def _design_number(entry: dict, share: Decimal) -> Decimal:
    """Give a number question the mechanism of lower worst-case variance at its realised epsilon; return it.

    Duchi et al. (2013) or the discretised piecewise mechanism (Wang et al. 2019), whose
    worst-case variances cross near eps = 1.29.
    """
    threshold = mech.rr_flip_threshold(epsilon=share)
    duchi = mech.duchi_worst_variance(threshold)
    try:
        ratio_a, ratio_b = mech.piecewise_ratio(epsilon=share)
    except ValueError:
        ratio_a = ratio_b = None
    if ratio_a is not None and mech.piecewise_worst_variance(ratio_a, ratio_b) < duchi:
        entry.update(mechanism="piecewise", ratio_a=ratio_a, ratio_b=ratio_b, bins=ratio_a + ratio_b)
        return mech.piecewise_epsilon(ratio_a, ratio_b)
    entry.update(mechanism="duchi", flip_threshold=threshold)
    return mech.rr_epsilon(threshold)


def design_hash(design: dict) -> str:
    """Return the SHA-256 of the design's canonical JSON (sorted keys, no whitespace), without its hash."""
    body = {k: v for k, v in design.items() if k != "hash"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def flip_probability(question: dict) -> float:
    """Return the probability that one randomized bit is flipped, T/2^53."""
    return question["flip_threshold"] / mech.TWO53


def response_probabilities(question: dict) -> tuple[float, float]:
    """Return (p, q): the chance a report says 1/keeps an option when true, and when false.

    rr/duchi/multi: p = 1 - T/2^53, q = T/2^53. grr: p = T/2^53, q = (1-p)/(d-1).
    oue: p = 1/2, q = T/2^53. piecewise: p = a/(a+b), q = b/(a+b), for the report's level
    (k + 1/2)/(a+b) in [0, 1] rather than a bit.
    """
    mechanism = question["mechanism"]
    if mechanism in ("rr", "duchi"):
        flip = Fraction(question["flip_threshold"], mech.TWO53)
        return float(1 - flip), float(flip)
    if mechanism == "grr":
        p = Fraction(question["keep_threshold"], mech.TWO53)
        return float(p), float((1 - p) / (len(question["options"]) - 1))
    if mechanism == "oue":
        return 0.5, float(Fraction(question["q_threshold"], mech.TWO53))
    if mechanism == "piecewise":
        p, q = mech.piecewise_probabilities(question["ratio_a"], question["ratio_b"])
        return float(p), float(q)
    raise ValueError(f"unknown mechanism {mechanism!r}")
