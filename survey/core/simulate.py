"""Simulate respondents: draw true answers from a stated truth and randomize them as a browser would.

A truth gives, per question: yes_no the share answering yes; choice the probability of each
option; multi each option's inclusion probability; number the population mean, with answers
drawn as min + Binomial(max - min, (mean - min)/(max - min)). The reports go through the
Python mirror of the browser's randomizers (survey.core.mechanisms) and the same validation as a
web submission, so simulated data is indistinguishable in form from real data.

Under ``sample`` allocation each simulated respondent is asked a uniform m-subset of the
questions, drawn with numpy's seeded generator, and reports only those.

A question with display logic (``show_if``, survey/core/branching.py) is answered from its truth
by those it applies to; the others' true answer is its declared "does not apply" value, which is
randomized like any answer. Its truth is the one among those it applies to (a choice or multi
truth may leave out the "does not apply" option).

Questions are drawn independently unless a *given* links them: ``B|A=V:P`` means that among
respondents whose true answer to A is V (a yes_no question: ``1``/``yes`` or ``0``/``no``; a
choice question: an option label), B's truth is P, written as ``--truth`` writes it. Respondents
with a value of A that no given names draw B from B's own truth. So ``lung_disease|smoker=1:0.18``
and ``lung_disease|smoker=0:0.06`` make lung disease three times as common among smokers.
"""

from __future__ import annotations

import math
from typing import Iterable, Iterator

import numpy as np

from . import branching, codec
from .mechanisms import randomize_question
from .reports import check_report_array, validate_submission

SUM_TOLERANCE = 1e-9


class TruthError(ValueError):
    """A --truth specification or simulation request is invalid."""


def parse_truth(design: dict, specs: Iterable[str]) -> dict:
    """Return ``{QID: truth}`` from ``Q=V`` strings, checked against the design's questions."""
    questions = {q["id"]: q for q in design["questions"]}
    truth = {}
    for spec in specs:
        qid, sep, value = spec.partition("=")
        qid, value = qid.strip(), value.strip()
        if not sep or not qid:
            raise TruthError(f"a truth must look like QUESTION=VALUE, got {spec!r}")
        if qid not in questions:
            raise TruthError(f"{qid!r} is not a question of {design['slug']!r}; "
                             f"its questions are {', '.join(questions)}")
        if qid in truth:
            raise TruthError(f"the truth for {qid!r} is given twice")
        truth[qid] = _parse_value(questions[qid], value)
    return truth


def _parse_value(question: dict, value: str):
    qid, kind = question["id"], question["kind"]
    if kind == "yes_no":
        share = _number(qid, value, "the share answering yes")
        _check_range(qid, "the share answering yes", share, 0.0, 1.0, value)
        return share
    if kind == "number":
        lo, hi = question["min"], question["max"]
        mean = _number(qid, value, f"the mean, a number in [{lo}, {hi}]")
        _check_range(qid, "the mean", mean, lo, hi, value)
        return mean
    options = question["options"]
    if kind == "choice" and value in options:
        return tuple(1.0 if option == value else 0.0 for option in options)
    what = ("one probability per option summing to 1, or an option label" if kind == "choice"
            else "one inclusion probability per option")
    parts = value.split(",")
    if branching.is_branched(question) and len(parts) == len(options) - 1:
        parts.append("0")  # a branched question's truth among those it applies to: none of them "does not apply"
    if len(parts) != len(options):
        raise TruthError(f"the truth for {qid!r} must be {what} ({len(options)} comma-separated values: "
                         f"{', '.join(options)}), got {value!r}")
    probabilities = tuple(_number(qid, part, what) for part in parts)
    for probability in probabilities:
        _check_range(qid, "every probability", probability, 0.0, 1.0, value)
    if kind == "choice" and abs(math.fsum(probabilities) - 1.0) > SUM_TOLERANCE:
        raise TruthError(f"the option probabilities for {qid!r} must sum to 1, "
                         f"got {value!r} (sum {math.fsum(probabilities):.12g})")
    return probabilities


def _number(qid, text, what) -> float:
    try:
        number = float(text)
    except ValueError:
        raise TruthError(f"the truth for {qid!r} must be {what}, got {text!r}") from None
    if not math.isfinite(number):
        raise TruthError(f"the truth for {qid!r} must be {what}, got {text!r}")
    return number


def _check_range(qid, what, number, lo, hi, text):
    if not lo <= number <= hi:
        raise TruthError(f"for {qid!r}, {what} must lie in [{lo}, {hi}], got {text!r}")


def parse_given(design: dict, specs: Iterable[str]) -> dict:
    """Return ``{B: (A, {value of A: truth of B})}`` from ``B|A=V:P`` strings.

    A must be a yes_no question (V is 1/yes or 0/no) or a choice question (V an option
    label), must differ from B, and must not itself be given; all givens of one B name the
    same A, each value of A at most once.
    """
    questions = {q["id"]: q for q in design["questions"]}
    given: dict = {}
    for spec in specs:
        target, bar, rest = spec.partition("|")
        condition, colon, value = rest.partition(":")
        on, equals, level = condition.partition("=")
        target, on, level, value = target.strip(), on.strip(), level.strip(), value.strip()
        if not (bar and colon and equals and target and on and level and value):
            raise TruthError(f"a given must look like B|A=V:P (e.g. lung_disease|smoker=1:0.18), got {spec!r}")
        for qid in (target, on):
            if qid not in questions:
                raise TruthError(f"{qid!r} is not a question of {design['slug']!r}; "
                                 f"its questions are {', '.join(questions)}")
        if target == on:
            raise TruthError(f"a given must link two different questions, got {spec!r}")
        condition_question = questions[on]
        if condition_question["kind"] == "yes_no":
            index = {"1": 1, "yes": 1, "0": 0, "no": 0}.get(level.lower())
            what = "1 (yes) or 0 (no)"
        elif condition_question["kind"] == "choice":
            options = condition_question["options"]
            index = options.index(level) if level in options else None
            what = f"one of its options ({', '.join(options)})"
        else:
            raise TruthError(f"a given can only depend on a yes_no or choice question; {on!r} is a "
                             f"{condition_question['kind']} question")
        if index is None:
            raise TruthError(f"in {spec!r}, the value of {on!r} must be {what}, got {level!r}")
        previous_on, cases = given.setdefault(target, (on, {}))
        if previous_on != on:
            raise TruthError(f"the givens of {target!r} must all depend on one question, got {previous_on!r} "
                             f"and {on!r}")
        if index in cases:
            raise TruthError(f"the truth of {target!r} given {on}={level} is given twice")
        cases[index] = _parse_value(questions[target], value)
    for target, (on, _) in given.items():
        if on in given:
            raise TruthError(f"{on!r} has givens of its own, so {target!r} cannot depend on it")
    return given


def format_given(design: dict, given: dict) -> str:
    """Return the givens as ``B|A=V:P`` lines that --given accepts back."""
    questions = {q["id"]: q for q in design["questions"]}
    lines = []
    for target, (on, cases) in given.items():
        for index, value in sorted(cases.items()):
            level = (str(index) if questions[on]["kind"] == "yes_no" else questions[on]["options"][index])
            text = ",".join(f"{p:g}" for p in value) if isinstance(value, tuple) else f"{value:g}"
            lines.append(f"{target}|{on}={level}:{text}")
    return "\n".join(lines)


def default_truth(question: dict, rng: np.random.Generator):
    """Draw a plausible truth for one question, rounded to two decimals so it reads well when printed."""
    kind = question["kind"]
    if kind == "yes_no":
        return round(float(rng.uniform(0.1, 0.9)), 2)
    if kind == "number":
        lo, hi = question["min"], question["max"]
        return round(float(rng.uniform(lo + 0.2 * (hi - lo), hi - 0.2 * (hi - lo))), 2)
    d = len(question["options"]) - (1 if branching.is_branched(question) else 0)
    if kind == "multi":
        return branching.applicable_truth(question, tuple(round(float(p), 2) for p in rng.uniform(0.05, 0.6, size=d)))
    cents = np.floor(rng.dirichlet(np.ones(d)) * 100).astype(int)
    cents[int(np.argmax(cents))] += 100 - int(cents.sum())
    return branching.applicable_truth(question, tuple(int(c) / 100 for c in cents))


def complete_truth(design: dict, truth: dict, rng: np.random.Generator) -> dict:
    """Return the truth of every question in design order, drawing the ones ``truth`` leaves out."""
    return {q["id"]: truth[q["id"]] if q["id"] in truth else default_truth(q, rng)
            for q in design["questions"]}


def format_truth(design: dict, truth: dict) -> str:
    """Return the truth as ``Q=V`` lines that --truth accepts back."""
    lines = []
    for question in design["questions"]:
        value = truth[question["id"]]
        text = ",".join(f"{p:g}" for p in value) if isinstance(value, tuple) else f"{value:g}"
        lines.append(f"{question['id']}={text}")
    return "\n".join(lines)


def draw_true_values(question: dict, truth, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw n true answers of one question in the shape randomize_question takes."""
    kind = question["kind"]
    if kind == "yes_no":
        return (rng.random(n) < truth).astype(np.int64)
    if kind == "choice":
        probabilities = np.asarray(truth, dtype=float)
        return rng.choice(len(probabilities), size=n, p=probabilities / probabilities.sum())
    if kind == "multi":
        return (rng.random((n, len(truth))) < np.asarray(truth)).astype(np.int64)
    if kind == "number":
        lo, hi = question["min"], question["max"]
        return lo + rng.binomial(hi - lo, (truth - lo) / (hi - lo), size=n)
    raise TruthError(f"question {question['id']!r} has an unknown kind {question['kind']!r}")


def _true_answers(design: dict, truth: dict, n: int, rng: np.random.Generator, given):
    """Yield (question, its n true answers) in design order, applying ``given`` (see parse_given).

    Without givens every question is drawn right before it is randomized, as always; a
    question another depends on is drawn when first needed, and kept.
    """
    questions = {q["id"]: q for q in design["questions"]}
    drawn: dict = {}

    def values(qid):
        if qid not in drawn:
            question = questions[qid]
            result = draw_true_values(question, truth[qid], n, rng)
            if given and qid in given:
                on, cases = given[qid]
                condition = values(on)
                for level, case_truth in sorted(cases.items()):
                    chosen = np.flatnonzero(condition == level)
                    result[chosen] = draw_true_values(question, case_truth, chosen.size, rng)
            if branching.is_branched(question):
                result = branching.hide_not_applicable(question, result, values(question["show_if"]["question"]))
            drawn[qid] = result
        return drawn[qid]

    for question in design["questions"]:
        yield question, values(question["id"])


def draw_asked(design: dict, n: int, rng: np.random.Generator) -> np.ndarray | None:
    """Return the (n, k) boolean matrix of the questions each respondent is asked, or None under split.

    Under ``sample`` allocation every respondent is asked m of the k questions, a uniform
    m-subset (the first m of a uniform random permutation, as the browser's partial
    Fisher-Yates draws them), independent of the answers.
    """
    if design.get("allocation") != "sample":
        return None
    k, m = len(design["questions"]), int(design["sample"])
    order = np.argsort(rng.random((n, k)), axis=1)
    asked = np.zeros((n, k), dtype=bool)
    np.put_along_axis(asked, order[:, :m], True, axis=1)
    return asked


def simulate_answers(design: dict, truth: dict, n: int, rng: np.random.Generator, *,
                     given: dict | None = None) -> list[dict]:
    """Return n validated noisy answers ``{QID: REPORT}`` of respondents drawn from ``truth`` and ``given``.

    Under ``sample`` allocation each answer holds only the questions its respondent was asked.
    """
    columns = {}
    for question, true_values in _true_answers(design, truth, n, rng, given):
        columns[question["id"]] = randomize_question(question, true_values, rng).tolist()
    answers = [dict(zip(columns, reports)) for reports in zip(*columns.values())]
    asked = draw_asked(design, n, rng)
    if asked is not None:
        qids = [question["id"] for question in design["questions"]]
        answers = [{qid: answer[qid] for qid, keep in zip(qids, row) if keep} for answer, row in zip(answers, asked)]
    for answer in answers:
        validate_submission(design, {"design": design["hash"], "answers": answer})
    return answers


def simulate_columns(design: dict, truth: dict, n: int, rng: np.random.Generator, *,
                     given: dict | None = None) -> list[np.ndarray]:
    """Return n simulated respondents' reports per question as (n, words) arrays (``survey.core.codec``).

    The vectorised twin of simulate_answers: the same draws, checked against each
    mechanism's output domain as a whole array (``reports.check_report_array``). Every
    question is answered, so a ``sample`` design needs simulate_reports instead.
    """
    if design.get("allocation") == "sample":
        raise TruthError(f"survey {design['slug']!r} samples questions; simulate it with simulate_reports")
    columns = []
    for question, true_values in _true_answers(design, truth, n, rng, given):
        reports = check_report_array(question, randomize_question(question, true_values, rng))
        columns.append(codec.encode_column(question, reports))
    return columns


def simulate_reports(design: dict, truth: dict, n: int, rng: np.random.Generator, *,
                     given: dict | None = None) -> tuple[list[np.ndarray], np.ndarray | None]:
    """Return simulate_columns' (n, words) arrays and the (n, k) matrix of asked questions (None under split).

    Under ``sample`` allocation only the asked reports are randomized (the others' rows
    hold 0 and are stored as NULL: ``Store.add_report_columns(..., asked=...)``).
    """
    asked = draw_asked(design, n, rng)
    if asked is None:
        return simulate_columns(design, truth, n, rng, given=given), None
    columns = []
    for index, (question, true_values) in enumerate(_true_answers(design, truth, n, rng, given)):
        rows = np.flatnonzero(asked[:, index])
        reports = check_report_array(question, randomize_question(question, true_values[rows], rng))
        words = np.zeros((n, codec.word_count(question)), dtype=np.int64)
        words[rows] = codec.encode_column(question, reports)
        columns.append(words)
    return columns, asked


def _check_sizes(n, batch):
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise TruthError(f"the number of respondents must be an integer >= 1, got {n!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise TruthError(f"the batch size must be an integer >= 1, got {batch!r}")


def simulate_report_batches(design: dict, truth: dict, *, n: int, batch: int, rng: np.random.Generator,
                            given: dict | None = None) -> Iterator[tuple[list[np.ndarray], np.ndarray | None]]:
    """Yield the (columns, asked) of n simulated respondents as simulate_reports batches of at most ``batch``."""
    _check_sizes(n, batch)
    for start in range(0, n, batch):
        yield simulate_reports(design, truth, min(batch, n - start), rng, given=given)


def batch_count(n: int, batch: int) -> int:
    """Return how many batches simulate_report_batches yields."""
    return -(-n // batch)
