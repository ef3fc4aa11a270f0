"""Turn a validated survey definition into its frozen, hashed randomization design.

The design is what the browser reads (``design.json``): per question its mechanism, the
integer thresholds it compares uniform integers against, and the realised epsilon.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from decimal import Context, Decimal
from fractions import Fraction

from . import branching
from .mechanisms import choose, for_kind, mechanism_class, mechanism_for
from .mechanisms.registry import build_wave_layer
from .mechanisms.common import THRESHOLD_BITS
from .definition import DefinitionError, SurveyDefinition
from .shuffling import default_release_every

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
    wave_epsilons = []
    for question, share in zip(defn.questions, shares):
        if share < MIN_QUESTION_EPSILON:
            raise DefinitionError(
                f"this question's share of the budget is {float(share):.6g}, below the minimum "
                f"{float(MIN_QUESTION_EPSILON):g}; raise epsilon or the question's weight",
                source=defn.source, question=question.id, field="sample" if sampled else "weight")
        try:
            entry, realised = _design_question(question, Decimal(_float_down(share)), defn.questions,
                                               wave_share=wave_share(defn, share))
        except DefinitionError as exc:
            raise DefinitionError(exc.reason, source=defn.source, question=exc.question, field=exc.field) from exc
        realised_epsilons.append(realised)
        if "wave" in entry:
            wave_epsilons.append(Decimal(entry["wave"]["epsilon"]))
        questions.append(entry)
    # Sequential composition: a respondent's reports together cost the sum of the realised
    # epsilons of the questions they answer (all of them under split, the m costliest at
    # worst under sample), which must not exceed the budget (docs/explanation/privacy.md).
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
        "threshold_bits": THRESHOLD_BITS,
        "questions": questions,
    }
    if sampled:
        design["sample"] = defn.sample
    # Only when set, so that the designs (and hashes) of surveys without them are unchanged.
    if defn.access != "open":
        design["access"] = defn.access
    if defn.series is not None:
        design["series"] = defn.series
    if defn.wave_epsilon is not None:
        # Two layers (mechanisms/waves.py): ε∞ per answer value above, ε₁ per wave here, composed like ε.
        worst = sorted(wave_epsilons, reverse=True)[:defn.sample] if sampled else wave_epsilons
        design["wave_epsilon"] = defn.wave_epsilon
        design["wave_epsilon_spent"] = float(sum(worst, Decimal(0)))
    if defn.thank_you is not None:
        design["thank_you"] = defn.thank_you
    if defn.panel is not None:
        design["panel"] = defn.panel.design_entry()
    design["release_every"] = (defn.release_every if defn.release_every is not None
                               else default_release_every(defn.epsilon))
    if defn.languages is not None:
        # Texts only: every language shares this one design, its hash and its reports (survey.core.languages).
        design["languages"] = list(defn.languages)
        if defn.translations:
            design["translations"] = _plain_texts(defn.translations)
    design["hash"] = design_hash(design)
    return design


def wave_share(defn: SurveyDefinition, share: Fraction) -> Fraction | None:
    """Return a question's exact share of the per-wave ε₁ (its share of ε, scaled by wave_epsilon/epsilon), or None."""
    if defn.wave_epsilon is None:
        return None
    return share * Fraction(defn.wave_epsilon) / Fraction(defn.epsilon)


def design_question(question, budget: Fraction, wave_budget: Fraction | None = None) -> dict:
    """Return the design entry of one definition question given its exact budget (mechanism, thresholds, ε′).

    The same entry build_design makes for that budget (and per-wave budget, under two layers);
    the planner uses it to try budgets.
    """
    return _design_question(question, Decimal(_float_down(budget)), wave_share=wave_budget)[0]


def _design_question(question, share: Decimal, questions=(), wave_share=None) -> tuple[dict, Decimal]:
    # The planner designs a question alone: its kind and options, without the rule naming another question.
    branched = branching.design_fields(question, {q.id: q for q in questions}) if questions else {}
    if question.show_if and question.kind == "yes_no":
        question = dataclasses.replace(question, kind="choice", options=branching.branched_options("yes_no", None, None))
    entry = {"id": question.id, "kind": question.kind, "text": question.text,
             "weight": question.weight, "epsilon_nominal": float(share)}
    if not for_kind(question.kind):
        raise DefinitionError(f"unknown kind {question.kind!r}", question=question.id, field="kind")
    if question.options is not None:
        entry["options"] = list(question.options)
        if question.decline:
            entry["decline"] = True
    if question.min is not None:
        entry.update(min=question.min, max=question.max)
    if question.translations:
        entry["translations"] = _plain_texts(question.translations)
    forced = None if question.mechanism == "auto" else question.mechanism
    try:
        _, fields, realised = choose(question, share, forced=forced, layered=wave_share is not None)
    except ValueError as exc:
        raise DefinitionError(str(exc), question=question.id, field="mechanism") from exc
    if forced is not None:
        entry["chosen_by"] = "definition"
    entry.update(fields)
    entry.update(branched)  # only for a question with show_if, so other designs (and hashes) are unchanged
    if realised > share:
        raise AssertionError(f"realised epsilon {realised} above nominal {share} for {question.id}")
    entry["epsilon"] = float(realised)
    if wave_share is not None:
        inner = mechanism_class(entry["kind"], entry["mechanism"]).from_entry(entry)
        try:
            entry["wave"], _ = build_wave_layer(inner, Decimal(_float_down(wave_share)), question.id)
        except ValueError as exc:
            raise DefinitionError(str(exc), question=question.id, field="wave_epsilon") from exc
    return entry, realised


def _plain_texts(translations: dict) -> dict:
    """Return translations as JSON values: {language: {field: text or list of option labels}}."""
    return {language: {name: list(text) if isinstance(text, tuple) else text for name, text in texts.items()}
            for language, texts in translations.items()}


def design_hash(design: dict) -> str:
    """Return the SHA-256 of the design's canonical JSON (sorted keys, no whitespace), without its hash."""
    body = {k: v for k, v in design.items() if k != "hash"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def release_every(design: dict) -> int:
    """Return how many responses each release of a design's results adds (1 for designs made before releases)."""
    return int(design.get("release_every", 1))


def response_probabilities(question: dict) -> tuple[float, float]:
    """Return (p, q) of a design entry's indicators: the chance a report holds 1 when the answer has it, and when not.

    For a level mechanism, p and q are those of the level's value R, whose mean is q + (p − q)x.
    """
    return mechanism_for(question).response_probabilities()
