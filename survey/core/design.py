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
        try:
            entry, realised = _design_question(question, Decimal(_float_down(share)))
        except DefinitionError as exc:
            raise DefinitionError(exc.reason, source=defn.source, question=exc.question, field=exc.field) from exc
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
        if question.decline:
            entry["decline"] = True
        if mech.use_ss(epsilon=share, d=d):
            k, threshold, _ = mech.best_subset_size(epsilon=share, d=d)
            realised = mech.ss_epsilon(threshold, d, k)
            entry.update(mechanism="ss", subset_size=k, keep_threshold=threshold)
        elif mech.use_oue(epsilon=share, d=d):
            threshold = mech.oue_q_threshold(epsilon=share)
            realised = mech.oue_epsilon(threshold)
            entry.update(mechanism="oue", q_threshold=threshold)
        else:
            threshold = mech.grr_keep_threshold(epsilon=share, d=d)
            realised = mech.grr_epsilon(threshold, d)
            entry.update(mechanism="grr", keep_threshold=threshold)
    elif question.kind == "multi":
        d = len(question.options)
        entry["options"] = list(question.options)
        if question.decline:
            entry["decline"] = True
        if mech.use_multi_sampled(epsilon=share, d=d):
            # One option j drawn uniformly (independently of the answer), its bit through RR at
            # the full share: P(j, b | A)/P(j, b | A') = P(b | x_j)/P(b | x'_j) <= e^eps'.
            threshold = mech.rr_flip_threshold(epsilon=share)
            realised = mech.rr_epsilon(threshold)
            entry.update(mechanism="sampled", flip_threshold=threshold)
        else:
            per_option = mech.per_option_epsilon(share, d)
            threshold = mech.rr_flip_threshold(epsilon=per_option)
            option_realised = mech.rr_epsilon(threshold)
            # A change of answer can change all d bits, so the question costs d * eps'_option.
            realised = _CTX.multiply(option_realised, Decimal(d))
            entry.update(mechanism="rr", flip_threshold=threshold, epsilon_per_option=float(option_realised))
    elif question.kind == "number":
        entry.update(min=question.min, max=question.max)
        try:
            realised = _design_number(entry, share, question.mechanism)
        except ValueError as exc:
            raise DefinitionError(str(exc), question=question.id, field="mechanism") from exc
    else:
        raise DefinitionError(f"unknown kind {question.kind!r}", question=question.id, field="kind")
    if realised > share:
        raise AssertionError(f"realised epsilon {realised} above nominal {share} for {question.id}")
    entry["epsilon"] = float(realised)
    return entry, realised


def _design_number(entry: dict, share: Decimal, forced: str = "auto") -> Decimal:
    """Give a number question its mechanism at its realised epsilon (least worst-case variance unless forced); return it.

    Duchi et al. (2013), the discretised piecewise mechanism or the hybrid of the two (both
    Wang et al. 2019): Duchi and PM cross near eps = 1.29, and the hybrid is below both from
    about eps = 0.61 until PM's finer ratio a/b (more levels) wins at large eps. A definition
    may force one (``mechanism``); the entry then says ``"chosen_by": "definition"``, and a
    mechanism impossible at this share raises ValueError naming the smallest share that works.
    """
    threshold = mech.rr_flip_threshold(epsilon=share)
    candidates = [(mech.duchi_worst_variance(threshold), "duchi", None)]
    try:
        ratio_a, ratio_b = mech.piecewise_ratio(epsilon=share)
        candidates.append((mech.piecewise_worst_variance(ratio_a, ratio_b), "piecewise", (ratio_a, ratio_b)))
    except ValueError:
        pass
    try:
        hybrid_a, hybrid_b = mech.hybrid_ratio(epsilon=share)
        candidates.append((mech.hybrid_worst_variance(hybrid_a, hybrid_b), "hybrid", (hybrid_a, hybrid_b)))
    except ValueError:
        pass
    if forced == "auto":
        _, mechanism, ratio = min(candidates, key=lambda candidate: candidate[0])
    else:
        possible = [candidate for candidate in candidates if candidate[1] == forced]
        if not possible:
            raise ValueError(
                f"the {forced} mechanism needs a share of the budget of at least "
                f"{smallest_epsilon(forced):.3g}, but this question's share is {float(share):.3g}; raise epsilon "
                f"or the question's weight, or use mechanism \"auto\" or \"duchi\"")
        _, mechanism, ratio = possible[0]
        entry["chosen_by"] = "definition"
    if mechanism == "piecewise":
        entry.update(mechanism="piecewise", ratio_a=ratio[0], ratio_b=ratio[1], bins=ratio[0] + ratio[1])
        return mech.piecewise_epsilon(*ratio)
    if mechanism == "hybrid":
        bins = ratio[0] + ratio[1]
        entry.update(mechanism="hybrid", ratio_a=ratio[0], ratio_b=ratio[1], bins=bins, levels=bins + 2)
        return mech.hybrid_epsilon(*ratio)
    entry.update(mechanism="duchi", flip_threshold=threshold)
    return mech.rr_epsilon(threshold)


def smallest_epsilon(mechanism: str) -> float:
    """Return a share of the budget (rounded up to 3 digits) from which a number question can use ``mechanism``.

    Piecewise and hybrid need e^(eps/2) >= a/b > 1 with a + b within their bins, so the
    closest ratio (b + 1)/b with the largest such b sets the least eps; Duchi works at any.
    """
    max_bins = {"piecewise": mech.MAX_PIECEWISE_BINS, "hybrid": mech.MAX_HYBRID_BINS}.get(mechanism)
    if max_bins is None:
        return 0.0
    b = (max_bins - 1) // 2
    least = float(mech.piecewise_epsilon(b + 1, b))
    scale = 10 ** (2 - math.floor(math.log10(least)))
    return math.ceil(least * scale) / scale


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
    oue: p = 1/2, q = T/2^53. ss (a subset of size k): p = T/2^53, q = (p(k−1) + (1−p)k)/(d−1).
    sampled (multi, one drawn option's bit at full ε): p = (1 − f)/d, q = f/d.
    piecewise: p = a/(a+b), q = b/(a+b), for the report's level (k + 1/2)/(a+b) in [0, 1] rather than a bit.
    hybrid: the same p and q, for the level's value R(L) (mechanisms.hybrid_level_values).
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
    if mechanism == "ss":
        p, q = mech.ss_probabilities(question["keep_threshold"], len(question["options"]), question["subset_size"])
        return float(p), float(q)
    if mechanism == "sampled":
        p, q = mech.multi_sampled_probabilities(question["flip_threshold"], len(question["options"]))
        return float(p), float(q)
    if mechanism in ("piecewise", "hybrid"):
        p, q = mech.piecewise_probabilities(question["ratio_a"], question["ratio_b"])
        return float(p), float(q)
    raise ValueError(f"unknown mechanism {mechanism!r}")
