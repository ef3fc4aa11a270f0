"""Utility benchmark (issue 7, item 7): our estimates' MSE beside theory and the public LDP libraries.

For every task (a yes/no question, a choice question with d = 8, 32, 128 options, a number,
and a survey of 5 yes/no questions under ``split`` and ``sample`` allocation) and every
epsilon, it builds the survey through the product's public core API
(``parse_definition`` → ``build_design``), so the design chooses the mechanism exactly as it
does for a real survey. It then randomizes seeded synthetic answers with the product's
integer-threshold randomizers (``survey.core.mechanisms.randomize_question``, checked by
``survey.core.reports.check_report_array``, tallied by ``survey.core.codec.tally``) and debiases them
with ``survey.core.aggregate.aggregate_counts``, the aggregator's own code; a survey with another
allocation than ``split`` goes through ``survey.core.simulate.simulate_answers`` and
``survey.core.aggregate.aggregate`` (reports carry only the questions a respondent was shown).

Beside our empirical MSE it prints the theoretical variance λ(1−λ)/(n(p−q)²) of the design's
mechanism (``survey.core.design.response_probabilities``), the mean of the aggregator's own
variance estimate (std_error²), and the MSE of the best protocol of pure-ldp and of
multi-freq-ldpy for the same task on the same true answers (bench/utility/others.py):
every candidate protocol of a library is first screened on a few repetitions, then the
library's best is measured on fresh repetitions as many as ours. A point the product
refuses (``DefinitionError``, e.g. more options than it allows, or an allocation it does not
support yet) is reported as not supported by this version.

Below the measured table, a deterministic comparison that needs no runs (so ``--render``
computes it too): for every frequency task and survey, the theoretical MSE (Wang et al. 2017)
of the design's exact (p, q) and of every library protocol with the (p, q) its code sets
(``others.frequency_pq``, ``others.survey_pq``), at the task's truth, and the ratio ours / best
library protocol: 20 repetitions cannot resolve a 5% ratio, the theory can.

The precision run (``--precision``) measures n·MSE, which for an unbiased oracle is λ(1−λ)/(p−q)²
whatever n, at a small n (2,000) with enough repetitions that each side rests on ``--target``
squared errors (20,000), ours and each library's candidates on the same repetitions (paired
answers where our design is ``split``), and reports ours / best other with its delta-method se
and the one-sided verdict on ≤ 1.05, beside a check of each n·MSE against the n = 100,000 run.
RS+FD is listed apart: as shipped it clips, and its whole-answer privacy loss is ε′ > ε.

Run it in the bench's own environment (``bash bench/utility/setup.sh``), e.g.
``/tmp/bench-venv/bin/python bench/utility/run.py --quick``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from fractions import Fraction
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import others  # noqa: E402
from survey.core import codec  # noqa: E402
from survey.core.aggregate import QuestionCounts, aggregate, aggregate_counts  # noqa: E402
from survey.core.definition import DefinitionError, parse_definition  # noqa: E402
from survey.core.design import build_design, response_probabilities  # noqa: E402
from survey.core.mechanisms import for_kind, randomize_question  # noqa: E402
from survey.core.planning import plan  # noqa: E402
from survey.core.reports import check_report_array  # noqa: E402
from survey.core.simulate import draw_true_values, simulate_answers  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0, 4.0)
SURVEY_SHARES = (0.2, 0.35, 0.5, 0.65, 0.8)
README = REPO / "bench" / "README.md"
BEGIN, END = "<!-- utility:begin -->", "<!-- utility:end -->"
RSFD, RSFD_SHIPPED = "RS+FD[GRR]", "RS+FD[GRR] (as shipped)"
# RS+FD is listed apart, never as best other: as shipped it clips (biased); and at nominal ε its guarantee holds
# between answers that differ in one question only; two whole answers are told apart up to
# ε′ = ln(k(e^ε − 1) + 1) (others.rsfd_privacy_loss), while ours is ε-LDP on the whole answer.
APART = (RSFD, RSFD_SHIPPED)
PRECISION_REP0 = 1_000_000  # the precision run's repetitions: seeds disjoint from the n = 100,000 run's


@dataclass(frozen=True)
class Task:
    """One benchmark task: the questions of its definition, their truth, and the allocation."""

    key: str
    label: str
    questions: tuple
    truth: dict
    allocation: str = "split"
    sample: int | None = None


def zipf(d: int) -> tuple[float, ...]:
    """Return Zipf shares 1/(v+1), normalised: a few common options and a long tail."""
    weights = 1.0 / np.arange(1, d + 1)
    return tuple(float(w) for w in weights / weights.sum())


def tasks() -> list[Task]:
    """Return the tasks of issue 7 item 7, all on fixed synthetic truths."""
    result = [Task("yes_no", "yes/no", ({"id": "q", "kind": "yes_no", "text": "Q?"},), {"q": 0.3})]
    for d in (8, 32, 128):
        options = [f"o{v}" for v in range(d)]
        result.append(Task(f"choice{d}", f"choice d={d}",
                           ({"id": "q", "kind": "choice", "text": "Q?", "options": options},), {"q": zipf(d)}))
    number = {"id": "q", "kind": "number", "text": "Q?", "min": 0, "max": 100}
    result.append(Task("number", "number 0..100", (number,), {"q": 37.0}))
    # The same answers with the definition's choice for answers inside the range (mechanism = "piecewise").
    result.append(Task("number_piecewise", "number 0..100, piecewise chosen", ({**number, "mechanism": "piecewise"},),
                       {"q": 37.0}))
    result.append(Task("number_opm", "number 0..100, optimal piecewise chosen", ({**number, "mechanism": "opm"},),
                       {"q": 37.0}))
    survey = tuple({"id": f"q{j}", "kind": "yes_no", "text": f"Q{j}?"} for j in range(len(SURVEY_SHARES)))
    truth = {f"q{j}": share for j, share in enumerate(SURVEY_SHARES)}
    result.append(Task("survey5_split", "5 yes/no, split", survey, truth))
    result.append(Task("survey5_sample", "5 yes/no, sample m=1", survey, truth, allocation="sample", sample=1))
    result.append(Task("survey5_planned", "5 yes/no, the planner's choice", survey, truth, allocation="planned"))
    return result


def build(task: Task, epsilon: float):
    """Return the task's design at epsilon, or the reason the product refuses it."""
    data = {"slug": f"bench-{task.key.replace('_', '-')}", "title": task.label, "epsilon": epsilon,
            "questions": [dict(q) for q in task.questions]}
    try:
        if task.allocation == "planned":
            recommended = plan(parse_definition(data, source=task.key))["recommended"]
            if recommended["allocation"] != "split":
                data.update(allocation=recommended["allocation"], sample=recommended["sample"])
        elif task.allocation != "split":
            data.update(allocation=task.allocation, sample=task.sample)
        return build_design(parse_definition(data, source=task.key)), None
    except DefinitionError as exc:
        reason = exc.reason
        return None, reason.split(", got ")[0] if len(reason) > 120 else reason


def targets(design: dict, truth: dict) -> list[float]:
    """Return the true value of every estimate the aggregator reports, in its row order."""
    values = []
    for question in design["questions"]:
        value = truth[question["id"]]
        values.extend(value if isinstance(value, tuple) else [value])
    return values


def rep_seed(seed: int, task_index: int, rep: int, stream: int, epsilon: float = 0.0) -> np.random.SeedSequence:
    """Return the seed of one stream of one repetition.

    Stream 0 (the true answers) ignores epsilon, so ours and every library randomize the same
    answers at every ε; the randomizers' streams also depend on ε, so that the luck of one
    repetition is not repeated at every ε.
    """
    return np.random.SeedSequence([seed, task_index, rep, stream, round(epsilon * 1000)])


def true_answers(design: dict, truth: dict, n: int, seed_seq) -> dict:
    """Draw n true answers per question with the product's own sampler (survey.core.simulate.draw_true_values)."""
    rng = np.random.default_rng(seed_seq)
    return {q["id"]: draw_true_values(q, truth[q["id"]], n, rng) for q in design["questions"]}


def ours_once(design: dict, truth: dict, answers: dict, n: int, rng) -> list:
    """Randomize and aggregate one repetition exactly as browser, store and aggregator do; return the rows."""
    if design["allocation"] != "split":
        return aggregate(design, simulate_answers(design, truth, n, rng))
    counts = {}
    for question in design["questions"]:
        reports = check_report_array(question, randomize_question(question, answers[question["id"]], rng))
        ones = codec.tally(question, codec.encode_column(question, reports))
        counts[question["id"]] = QuestionCounts(n=n, ones=np.asarray(ones, dtype=np.int64))
    return aggregate_counts(design, counts)


def theory_variance(design: dict, truth: dict, n: int, sample: int | None) -> float | None:
    """Return the mean over estimates of λ(1−λ)/(n_q(p−q)²) (× range² for a number), n_q = n·m/k under sample.

    None when a mechanism has no (p, q) in this version of ``response_probabilities``, or when a
    number's report is a level rather than a bit (any number mechanism but Duchi's): then λ(1−λ)
    is not the report's variance, and the mean SE² column stands in.
    """
    k = len(design["questions"])
    reports = n if sample is None else n * sample / k
    variances = []
    for question in design["questions"]:
        if question["kind"] == "number" and question["mechanism"] != "duchi":
            return None
        try:
            p, q = response_probabilities(question)
        except (KeyError, ValueError):
            return None
        value = truth[question["id"]]
        scale = 1.0
        if question["kind"] == "number":
            scale = float(question["max"] - question["min"])
            value = [(value - question["min"]) / scale]
        elif not isinstance(value, tuple):
            value = [value]
        for theta in value:
            lam = q + theta * (p - q)
            variances.append(scale * scale * lam * (1 - lam) / (reports * (p - q) ** 2))
    return float(np.mean(variances))


def number_references(question: dict, mean: float, epsilon: float, n: int) -> dict:
    """Return the theoretical MSE of Duchi's, the piecewise (PM) and the hybrid (HM) mechanism for the number task.

    Neither library has a mechanism for numbers, so the reference is the published theory of
    the continuous mechanisms (Duchi et al. 2013; Wang N. et al. 2019), on t = 2(x−lo)/(hi−lo) − 1
    with the task's answers x = lo + Binomial(hi − lo, θ): per report Var_Duchi(t) =
    ((e^ε+1)/(e^ε−1))² − t², Var_PM(t) = t²/(e^{ε/2}−1) + (e^{ε/2}+3)/(3(e^{ε/2}−1)²), and HM
    uses PM with probability 1 − e^{−ε/2} when ε > 0.61, else Duchi. The mean of n reports has
    MSE (E Var(t) + Var t)/n against the population mean, times ((hi−lo)/2)² on the answers' scale.
    """
    lo, hi = question["min"], question["max"]
    theta = (mean - lo) / (hi - lo)
    mean_t = 2 * theta - 1
    var_t = 4 * theta * (1 - theta) / (hi - lo)  # t = 2·Binomial(hi−lo, θ)/(hi−lo) − 1
    second_t = var_t + mean_t ** 2
    half = math.exp(epsilon / 2)
    duchi = ((math.exp(epsilon) + 1) / (math.exp(epsilon) - 1)) ** 2 - second_t
    pm = second_t / (half - 1) + (half + 3) / (3 * (half - 1) ** 2)
    alpha = 1 - math.exp(-epsilon / 2) if epsilon > 0.61 else 0.0
    hm = alpha * pm + (1 - alpha) * duchi
    scale = ((hi - lo) / 2) ** 2 / n
    references = {name: scale * (value + var_t) for name, value in (("Duchi", duchi), ("PM", pm), ("HM", hm))}
    references["OPM"] = exact_number_variances(question, mean, epsilon)["opm"][1] * (hi - lo) ** 2 / n
    return references


NUMBER_NAMES = {"duchi": "Duchi", "piecewise": "PM", "hybrid": "HM", "opm": "OPM"}


def exact_number_variances(question: dict, mean: float, epsilon: float) -> dict[str, tuple[float, float]]:
    """Return (worst case, at the task's answers) n·Var on [0, 1] of every number mechanism the design builds at ε.

    Exact, as the design computes them for its discretised mechanisms: the worst case is the largest
    variance over single answers (``selection_variance``, what ``mechanism = "auto"`` compares); at the
    task's answers x = (Binomial(hi − lo, θ))/(hi − lo) it is E[V(x)] + Var(x) with V the mechanism's
    exact variance at x (``variance_at``), the n·Var of the mean against the population mean.
    """
    lo, hi = question["min"], question["max"]
    span = hi - lo
    theta = (mean - lo) / span
    weights = [math.comb(span, k) * theta ** k * (1 - theta) ** (span - k) for k in range(span + 1)]
    spread = theta * (1 - theta) / span
    stand_in = SimpleNamespace(kind="number", options=None, min=lo, max=hi)
    out = {}
    for cls in for_kind("number"):
        fields, _ = cls.build(stand_in, Decimal(repr(epsilon)))
        mechanism = cls.from_entry({"kind": "number", "min": lo, "max": hi, **fields})
        inside = sum(weight * mechanism.variance_at(Fraction(k, span)) for k, weight in enumerate(weights)) + spread
        out[cls.name] = (float(mechanism.selection_variance()), float(inside))
    return out


def exact_number_table(points: list) -> str:
    """Return the deterministic table of the number mechanisms' exact worst case and variance at the task's answers."""
    seen, lines = set(), []
    for point in points:
        task = point_task(point)
        if task.key != "number" or point.epsilon in seen:
            continue
        seen.add(point.epsilon)
        design = build(task, point.epsilon)[0]
        chosen = design["questions"][0]["mechanism"]
        exact = exact_number_variances(task.questions[0], task.truth["q"], point.epsilon)
        worst = {name: values[0] for name, values in exact.items()}
        inside = {name: values[1] for name, values in exact.items()}
        best_inside = min(inside, key=inside.get)
        lines.append(f"| {point.epsilon:g} | {chosen} | " + " | ".join(fmt(worst[name], 4) for name in NUMBER_NAMES)
                     + f" | **{worst[chosen] / min(worst.values()):.3f}** | "
                     + " | ".join(fmt(inside[name], 4) for name in NUMBER_NAMES)
                     + f" | **{inside[chosen] / inside[best_inside]:.3f}** ({NUMBER_NAMES[best_inside]}) |")
    if not lines:
        return ""
    worst_names = " | ".join(f"worst case: {name}" for name in NUMBER_NAMES.values())
    inside_names = " | ".join(f"at the answers: {name}" for name in NUMBER_NAMES.values())
    intro = ("Numbers, exact (deterministic, no runs): n·Var of the mean on [0, 1] (× (max − min)² on the "
             "answers' scale) of each discretised mechanism as the design builds it at ε: the worst case over "
             "single answers, which `mechanism = \"auto\"` minimises, and at the number task's answers "
             "(mean 37 of 0..100, inside the range), with what auto costs against the best there:")
    header = (f"| ε | auto chooses | {worst_names} | **auto / best worst case** | {inside_names} "
              "| **auto / best at the answers** |")
    rule = "| --- | --- | " + " | ".join(["---"] * 4) + " | --- | " + " | ".join(["---"] * 4) + " | --- |"
    return "\n".join(["", intro, "", header, rule, *lines])


def pure_variance(p: float, q: float, f: float, reports: float) -> float:
    """Return Var[f̂_v] of a pure protocol given the true answers (Wang et al. 2017).

    Var = q(1−q)/(n(p−q)²) + f(1−p−q)/(n(p−q)), n = ``reports``, f = the option's true share.
    """
    delta = p - q
    return q * (1 - q) / (reports * delta ** 2) + f * (1 - p - q) / (reports * delta)


@dataclass
class TheoryMSE:
    """A protocol's theoretical MSE, the mean over its estimates, against two truths.

    ``total``: against the population shares, as the empirical MSE is measured: Wang's variance
    plus f(1−f)/n_q for drawing the n_q answers (together λ(1−λ)/(n_q(p−q)²), the theory var column).
    ``noise``: against the n respondents' own shares, i.e. ``total`` − f(1−f)/n: Wang's variance
    alone when every respondent answers (n_q = n), plus f(1−f)(1/n_q − 1/n) for which respondents
    answer a question when questions are sampled (n_q < n).
    """

    noise: float
    total: float

    @classmethod
    def of(cls, pqs: list[tuple[float, float, float, float]], n: int) -> "TheoryMSE":
        """Average over estimates given as (p, q, f, n_q), n_q of the n respondents answering the question."""
        totals = [pure_variance(p, q, f, reports) + f * (1 - f) / reports for p, q, f, reports in pqs]
        noises = [total - f * (1 - f) / n for total, (_, _, f, _) in zip(totals, pqs)]
        return cls(noise=float(np.mean(noises)), total=float(np.mean(totals)))


def ours_theory(design: dict, truth: dict, n: int) -> TheoryMSE | None:
    """Return the theory of the design's own (p, q) (``response_probabilities``) at the task's truth.

    Each question is answered by n·m/k respondents under ``sample`` allocation. None for a number
    (its report is not a pure protocol's bit) or a mechanism without (p, q).
    """
    k = len(design["questions"])
    reports = n * design["sample"] / k if design["allocation"] != "split" else n
    pqs = []
    for question in design["questions"]:
        if question["kind"] not in ("yes_no", "choice"):
            return None
        try:
            p, q = response_probabilities(question)
        except (KeyError, ValueError):
            return None
        value = truth[question["id"]]
        pqs.extend((p, q, f, reports) for f in (value if isinstance(value, tuple) else (value,)))
    return TheoryMSE.of(pqs, n)


def survey_theory(task: Task, epsilon: float, n: int) -> dict:
    """Return {(library, protocol): TheoryMSE or None} of the survey solutions screened for a k-question task."""
    allocations = ("split", "sample") if task.allocation == "planned" else (task.allocation,)
    shares = list(task.truth.values())
    result = {}
    for protocol in (p for allocation in allocations for p in others.survey_protocols(allocation)):
        pqs = others.survey_pq(protocol.name, len(shares), epsilon)
        result[(protocol.library, protocol.name)] = None if pqs is None else TheoryMSE.of(
            [(pqs[0], pqs[1], f, n * pqs[2]) for f in shares], n)
    if "sample" in allocations:  # RS+FD's own formula without its clipping: unbiased, its variance derived
        totals = [others.rsfd_variance(f, len(shares), epsilon) / n for f in shares]
        result[("multi-freq-ldpy", RSFD)] = TheoryMSE(
            noise=float(np.mean([t - f * (1 - f) / n for t, f in zip(totals, shares)])), total=float(np.mean(totals)))
    return result


def frequency_theory(task: Task, epsilon: float, n: int) -> dict:
    """Return {(library, protocol): TheoryMSE or None} of the frequency oracles screened for a one-question task.

    A yes/no question is scored on the share answering yes (d = 2), as ours reports it.
    """
    question = task.questions[0]
    truth = task.truth[question["id"]]
    d, shares = (2, [truth]) if question["kind"] == "yes_no" else (len(truth), list(truth))
    result = {}
    for protocol in others.frequency_protocols():
        pq = others.frequency_pq(protocol.library, protocol.name, d, epsilon)
        result[(protocol.library, protocol.name)] = None if pq is None else TheoryMSE.of(
            [(pq[0], pq[1], f, n) for f in shares], n)
    return result


def library_theory(task: Task, epsilon: float, n: int) -> dict:
    """Return {(library, protocol): TheoryMSE or None} for every protocol the bench screens for the task.

    The (p, q) are the libraries' own (``others.frequency_pq``, ``others.survey_pq``); None marks a
    protocol whose variance is not derived (pure-ldp's HR and HM, RS+FD as shipped). Empty for a number.
    """
    if task.questions[0]["kind"] not in ("yes_no", "choice"):
        return {}
    return survey_theory(task, epsilon, n) if len(task.questions) > 1 else frequency_theory(task, epsilon, n)


def best_theory(theories: dict, library: str | None = None):
    """Return ((library, protocol), TheoryMSE) with the least noise, of one library or all; None if none derived."""
    derived = [(key, t) for key, t in theories.items()
               if t is not None and library in (None, key[0]) and key[1] not in APART]
    return min(derived, key=lambda item: item[1].noise) if derived else None


def point_task(point) -> Task:
    """Return the Task of a table row."""
    return next(task for task in tasks() if task.key == point.task)


def theory_rows(points: list[Point], n: int) -> list[dict]:
    """Return, per supported frequency or survey point, ours and the libraries' theory and the ratios."""
    by_key = {task.key: task for task in tasks()}
    rows = []
    for point in points:
        task = by_key[point.task]
        design = build(task, point.epsilon)[0] if point.supported else None
        ours = ours_theory(design, task.truth, n) if design else None
        theories = library_theory(task, point.epsilon, n)
        best = best_theory(theories)
        if ours is None or best is None:
            continue
        rows.append({"point": point, "ours": ours, "theories": theories, "best": best,
                     "ratio": ours.noise / best[1].noise, "ratio_total": ours.total / best[1].total})
    return rows


def theory_table(points: list[Point], n: int) -> str:
    """Return the deterministic comparison: theory of our design beside each library's best protocol by theory."""
    rows = theory_rows(points, n)
    if not rows:
        return ""
    lines = ["", f"Theory (deterministic, no runs; n = {n:,}): each protocol's MSE at the task's true shares, "
             "averaged over the estimates, against the n respondents' own answers: Var = q(1−q)/(n_q(p−q)²) + "
             "f(1−p−q)/(n_q(p−q)) (Wang et al. 2017), plus f(1−f)(1/n_q − 1/n) where only n_q < n respondents "
             "answer a question (n/k under SMP, n·m/k under ours sampled). Ours from the design's exact (p, q) "
             "(`survey.core.design.response_probabilities`), the libraries' from (p, q) as their code sets them "
             "(bench/utility/others.py: OLH g = round(e^ε) + 1, SS subset size max(1, rint(d/(e^ε+1))), THE's "
             "threshold by each library's own optimiser; SPL at ε/k, SMP at ε). *Against the population* adds "
             "f(1−f)/n, the same for every protocol, as the empirical MSE and the theory var column above do. "
             "Not derived (and not counted as best): pure-ldp's HR and HM (Hadamard), RS+FD as shipped (clipped). "
             "RS+FD unclipped is derived (Arcolezi et al. 2021: Var = k²σ(1−σ)/(n(p−q)²), σ = (q + f(p−q) + (k−1)/2)/k, "
             "GRR at ε′ = ln(k(e^ε−1)+1)) but not counted either: at nominal ε its guarantee holds between answers "
             "one question apart, and two whole answers are told apart up to ε′ (computed exactly from its client, "
             "`others.rsfd_privacy_loss`), while ours is ε-LDP on the whole answer.",
             "",
             "| task | ε | our mechanism | ours: theory MSE | pure-ldp best by theory | multi-freq-ldpy best by theory "
             "| not counted as best | **theory: ours / best library protocol** | same, against the population |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        point, cells = row["point"], []
        for library in ("pure-ldp", "multi-freq-ldpy"):
            best = best_theory(row["theories"], library)
            cells.append(f"{best[0][1]}: {fmt(best[1].noise)}" if best else "—")
        missing = ", ".join(name if t is None else
                            f"{name}: {fmt(t.noise)} (whole-answer ε′ = {others.rsfd_privacy_loss(len(point_task(point).questions), point.epsilon)[0]:.2f})"
                            for (library, name), t in row["theories"].items() if t is None or name in APART) or "—"
        lines.append(f"| {point.label} | {point.epsilon:g} | {point.mechanism} | {fmt(row['ours'].noise)} | "
                     f"{cells[0]} | {cells[1]} | {missing} | **{row['ratio']:.3f}** | {row['ratio_total']:.3f} |")
    worst = max(rows, key=lambda row: row["ratio"])
    lines += ["", f"Largest theory ratio: **{worst['ratio']:.3f}** ({worst['point'].label}, ε = "
              f"{worst['point'].epsilon:g}, against {worst['best'][0][0]} {worst['best'][0][1]}); "
              f"{sum(row['ratio'] > 1.0005 for row in rows)} of {len(rows)} points above 1.000."]
    return "\n".join(lines)


@dataclass
class Measure:
    """An empirical MSE over repetitions: its mean and standard error (spread of the per-repetition MSEs)."""

    mse: float
    se: float
    reps: int

    @classmethod
    def of(cls, per_rep: list[float]) -> "Measure":
        values = np.asarray(per_rep, dtype=float)
        se = float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else math.nan
        return cls(mse=float(values.mean()), se=se, reps=int(values.size))


@dataclass
class Other:
    """A library's best protocol at one point: its name, the screening MSEs, and its full measurement."""

    library: str
    protocol: str | None = None
    measure: Measure | None = None
    screened: dict = field(default_factory=dict)
    failed: dict = field(default_factory=dict)
    note: str = ""


@dataclass
class Point:
    """One row of the table."""

    task: str
    label: str
    epsilon: float
    supported: bool
    reps: int = 0
    other_reps: int = 0
    reason: str = ""
    mechanism: str = ""
    epsilon_spent: float | None = None
    ours: Measure | None = None
    consistent: Measure | None = None
    theory: float | None = None
    mean_se2: float | None = None
    others: list = field(default_factory=list)
    references: dict = field(default_factory=dict)
    seconds: float = 0.0


def estimand_count(task: Task) -> int:
    """Return how many estimates one repetition of the task gives: d for a choice question, k for a survey, else 1."""
    question = task.questions[0]
    if len(task.questions) > 1:
        return len(task.questions)
    return len(question["options"]) if question["kind"] == "choice" else 1


def point_reps(task: Task, reps: int) -> int:
    """Return the repetitions of a point: at least ``reps``, and enough for 4·reps squared errors in all."""
    return max(reps, math.ceil(4 * reps / estimand_count(task)))


def measure_ours(task: Task, task_index: int, design: dict, n: int, reps: int, seed: int):
    """Return our MSE, the consistent view's MSE for a choice question (Norm-Sub until issue 16), and the mean std_error²."""
    goal = np.asarray(targets(design, task.truth))
    errors, consistent_errors, se2 = [], [], []
    for rep in range(reps):
        answers = true_answers(design, task.truth, n, rep_seed(seed, task_index, rep, 0))
        mechanism_seed = rep_seed(seed, task_index, rep, 1, design["epsilon"])
        rows = ours_once(design, task.truth, answers, n, np.random.default_rng(mechanism_seed))
        estimates = np.array([row.estimate for row in rows], dtype=float)
        errors.append(float(np.mean((estimates - goal) ** 2)))
        se2.append(float(np.mean([row.std_error ** 2 for row in rows])))
        if all(row.consistent is not None for row in rows):
            consistent = np.array([row.consistent for row in rows], dtype=float)
            consistent_errors.append(float(np.mean((consistent - goal) ** 2)))
    return (Measure.of(errors), Measure.of(consistent_errors) if consistent_errors else None,
            float(np.mean(se2)))


def library_inputs(task: Task, task_index: int, design_questions: list[dict], n: int, rep: int, seed: int):
    """Return the true answers the libraries see (the same draws ours randomize) and the targets."""
    answers = true_answers({"questions": design_questions}, task.truth, n, rep_seed(seed, task_index, rep, 0))
    if len(design_questions) > 1:
        return np.column_stack([answers[q["id"]] for q in design_questions]), list(task.truth.values())
    question = design_questions[0]
    values = answers[question["id"]]
    truth = task.truth[question["id"]]
    if question["kind"] == "yes_no":
        return values, [1 - truth, truth]
    return values, list(truth)


def library_error(protocol, task: Task, values, goal, d: int, epsilon: float, seed_seq) -> float:
    """Run one protocol once on the given answers and return its MSE against the targets."""
    others.seed_all(int(seed_seq.generate_state(1, dtype=np.uint32)[0]))
    estimates = np.asarray(protocol.run(values, d, epsilon), dtype=float)
    goal = np.asarray(goal, dtype=float)
    if task.questions[0]["kind"] == "yes_no" and len(task.questions) == 1:
        estimates, goal = estimates[1:], goal[1:]  # the share answering yes, as ours reports it
    return float(np.mean((estimates - goal) ** 2))


def screen(task: Task, task_index: int, epsilon: float, screen_reps: int, screen_n: int, seed: int, log):
    """Screen every candidate protocol of each library for the task on ``screen_n`` respondents.

    Return (results, candidates, d): ``results`` holds one ``Other`` per library with its
    screening MSEs (``screened``) or a note why the library has no protocol for the task.
    """
    kind = task.questions[0]["kind"]
    if kind == "number":
        note = "no protocol for numbers (frequency oracles only)"
        return [Other("pure-ldp", note=note), Other("multi-freq-ldpy", note=note)], [], 1
    if len(task.questions) > 1:
        allocations = ("split", "sample") if task.allocation == "planned" else (task.allocation,)
        candidates = [p for allocation in allocations for p in others.survey_protocols(allocation)]
        results = [Other("pure-ldp", note="no multi-question protocol (single-question oracles only)")]
        d = 2
    else:
        candidates = others.frequency_protocols()
        results = []
        d = 2 if kind == "yes_no" else len(task.questions[0]["options"])
    questions = [dict(q) for q in task.questions]
    for library in sorted({p.library for p in candidates}, key=["pure-ldp", "multi-freq-ldpy"].index):
        other = Other(library)
        # Enough screening repetitions for about 16 squared errors per protocol.
        screening = max(screen_reps, math.ceil(16 / estimand_count(task)))
        for protocol in (p for p in candidates if p.library == library):
            per_rep = []
            try:
                for rep in range(screening):
                    values, goal = library_inputs(task, task_index, questions, screen_n, 10_000 + rep, seed)
                    per_rep.append(library_error(protocol, task, values, goal, d, epsilon,
                                                 rep_seed(seed, task_index, 10_000 + rep, 2, epsilon)))
            except Exception as exc:  # a library protocol that fails here is reported, not fatal
                other.failed[protocol.name] = f"{type(exc).__name__}: {exc}"
                log(f"    {library} {protocol.name} failed: {other.failed[protocol.name]}")
                continue
            other.screened[protocol.name] = float(np.mean(per_rep))
        if not other.screened:
            other.note = "every protocol failed"
        results.append(other)
    return results, candidates, d


def measure_others(task: Task, task_index: int, epsilon: float, n: int, reps: int, screen_reps: int,
                   screen_n: int, seed: int, log) -> list[Other]:
    """Screen each library's protocols for the task, then measure each library's best on ``reps`` fresh repetitions.

    Screening runs on ``screen_n`` respondents: every protocol's error scales as 1/n, so the
    ranking does not depend on n, and the screening costs less.
    """
    results, candidates, d = screen(task, task_index, epsilon, screen_reps, screen_n, seed, log)
    questions = [dict(q) for q in task.questions]
    for other in results:
        if not other.screened:
            continue
        library = other.library
        best = min(other.screened, key=other.screened.get)
        protocol = next(p for p in candidates if p.library == library and p.name == best)
        per_rep = []
        for rep in range(reps):
            values, goal = library_inputs(task, task_index, questions, n, rep, seed)
            per_rep.append(library_error(protocol, task, values, goal, d, epsilon,
                                         rep_seed(seed, task_index, rep, 3, epsilon)))
        other.protocol, other.measure = best, Measure.of(per_rep)
        log(f"    {library}: screened {', '.join(f'{k} {v:.3g}' for k, v in other.screened.items())}; "
            f"best {best}: MSE {other.measure.mse:.4g}")
    return results


# --- The precision run: n·MSE at a small n, with enough repetitions to settle each ratio ------------------------


@dataclass
class Side:
    """One estimator's n·MSE in the precision run, over ``reps`` repetitions of n respondents.

    ``cov`` is the covariance of its mean per-repetition n·MSE with ours (0 unless ``paired``:
    the same true answers as ours, repetition by repetition). ``calls_per_s``: the library's
    client calls (one per respondent) per second of the whole measurement, aggregation included.
    """

    library: str
    name: str
    nmse: float
    se: float
    reps: int
    paired: bool = False
    cov: float = 0.0
    seconds: float = 0.0
    calls_per_s: float | None = None


@dataclass
class PrecisionPoint:
    """One row of the precision table."""

    task: str
    label: str
    epsilon: float
    supported: bool
    n: int
    reps: int
    reason: str = ""
    mechanism: str = ""
    ours: Side | None = None
    view: Side | None = None
    others: list = field(default_factory=list)
    shipped: Side | None = None
    screened: dict = field(default_factory=dict)
    chosen: dict = field(default_factory=dict)
    theory: dict = field(default_factory=dict)
    references: dict = field(default_factory=dict)
    seconds: float = 0.0


def side_of(library: str, name: str, per_rep, n: int, ours_per_rep=None, seconds: float = 0.0,
            calls: int | None = None) -> Side:
    """Return the n·MSE of per-repetition MSEs; with ``ours_per_rep`` (same answers) also the covariance of the means."""
    values = n * np.asarray(per_rep, dtype=float)
    reps = values.size
    cov = 0.0
    if ours_per_rep is not None:
        cov = float(np.cov(n * np.asarray(ours_per_rep, dtype=float), values, ddof=1)[0, 1] / reps)
    return Side(library=library, name=name, nmse=float(values.mean()), se=float(values.std(ddof=1) / math.sqrt(reps)),
                reps=int(reps), paired=ours_per_rep is not None, cov=cov, seconds=seconds,
                calls_per_s=None if calls is None else calls / max(seconds, 1e-9))


def precision_choice(task: Task, epsilon: float, n: int, screened: list[Other]) -> tuple[dict, dict]:
    """Return ({library: [protocol names to measure]}, {(library, protocol): n·theory MSE against the population}).

    Each library's candidates: its best protocol by theory (``library_theory``, the (p, q) its code
    sets), and the protocol today's screening picks (``screen``, as the n = 100,000 run does) unless
    the theory puts that one more than 5% behind the library's best (then only noise made it win
    the screening, or it has exactly the best's (p, q), e.g. SS with subset size 1, which is GRR). A protocol without derived theory (pure-ldp's HR, HM) picked by the screening
    is always measured. RS+FD as shipped (clipped) is replaced by the same estimator unclipped
    (``others.rsfd_unbiased``), which is derived and measured wherever the task samples questions;
    as shipped it comes from the same client calls and is reported beside, not as a candidate.
    """
    theories = library_theory(task, epsilon, n)
    theory = {key: n * t.total for key, t in theories.items() if t is not None}
    chosen = {}
    for other in screened:
        if not other.screened:
            continue
        library = other.library
        names = []
        best = best_theory(theories, library)
        if best:
            names.append(best[0][1])
        pick = min(other.screened, key=other.screened.get)
        pick = RSFD if pick == RSFD_SHIPPED else pick
        pick_theory = theory.get((library, pick))
        same = best and pick_theory is not None and abs(pick_theory / (n * best[1].total) - 1) < 1e-9
        if same:  # the same (p, q) as the best by theory (SS with subset size 1 is GRR): the same protocol
            pass
        elif pick not in names and (pick_theory is None or not best or pick_theory <= 1.05 * n * best[1].total):
            names.append(pick)
        if (library, RSFD) in theory and RSFD not in names:  # one client run gives RS+FD unclipped and as shipped
            names.append(RSFD)
        chosen[library] = names
    return chosen, theory


def measure_precision(task: Task, task_index: int, epsilon: float, n: int, target: int, screen_reps: int,
                      screen_n: int, seed: int, log) -> PrecisionPoint:
    """Measure one point of the precision run: ours and each library's candidates on the same repetitions.

    Every side runs ``ceil(target / estimates per repetition)`` repetitions of n respondents, the
    repetitions PRECISION_REP0, PRECISION_REP0 + 1, … (seeds disjoint from the n = 100,000 run's).
    Where our design is ``split`` ours and the libraries randomize the same true answers in each
    repetition (paired: the covariance enters the ratio's standard error); a sampled survey of
    ours draws its own answers and which questions each respondent answers (unpaired).
    """
    clock = time.perf_counter()
    design, reason = build(task, epsilon)
    reps = math.ceil(target / estimand_count(task))
    point = PrecisionPoint(task=task.key, label=task.label, epsilon=epsilon, supported=design is not None, n=n,
                           reps=reps, reason=reason or "")
    log(f"{task.label}, ε = {epsilon:g}: " + (mechanism_name(design) if design else f"unsupported ({reason})")
        + f"; {reps} repetitions of n = {n:,}")
    ours = None
    if design is not None:
        point.mechanism = mechanism_name(design)
        goal = np.asarray(targets(design, task.truth))
        ours, view = [], []
        started = time.perf_counter()
        for r in range(reps):
            rep = PRECISION_REP0 + r
            answers = true_answers(design, task.truth, n, rep_seed(seed, task_index, rep, 0))
            rows = ours_once(design, task.truth, answers, n,
                             np.random.default_rng(rep_seed(seed, task_index, rep, 1, design["epsilon"])))
            estimates = np.array([row.estimate for row in rows], dtype=float)
            ours.append(float(np.mean((estimates - goal) ** 2)))
            if all(row.consistent is not None for row in rows):  # a choice question: the consistent view
                view.append(float(np.mean((np.array([row.consistent for row in rows], dtype=float) - goal) ** 2)))
            elif len(design["questions"]) > 1:  # yes/no questions: the simplex projection of two shares is a clip
                view.append(float(np.mean((np.clip(estimates, 0, 1) - goal) ** 2)))
        point.ours = side_of("ours", point.mechanism, ours, n, seconds=time.perf_counter() - started)
        point.view = side_of("ours", "Norm-Sub" if task.questions[0]["kind"] == "choice" else "clipped to [0, 1]",
                             view, n) if view else None
        log(f"    ours: n·MSE {point.ours.nmse:.4g} ± {point.ours.se:.2g} ({point.ours.seconds:.0f} s)")
        if task.questions[0]["kind"] == "number":
            point.references = {k: n * v for k, v in number_references(task.questions[0], task.truth["q"],
                                                                       epsilon, n).items()}
    paired = design is not None and design["allocation"] == "split"
    screened, candidates, d = screen(task, task_index, epsilon, screen_reps, screen_n, seed, log)
    point.screened = {o.library: o.screened for o in screened if o.screened}
    point.chosen, point.theory = precision_choice(task, epsilon, n, screened)
    point.theory = {f"{library}: {name}": value for (library, name), value in point.theory.items()}
    questions = [dict(q) for q in task.questions]
    for library, names in point.chosen.items():
        for name in names:
            started = time.perf_counter()
            per_rep, shipped = [], []
            protocol = next((p for p in candidates if p.library == library and p.name == name), None)
            for r in range(reps):
                rep = PRECISION_REP0 + r
                values, goal = library_inputs(task, task_index, questions, n, rep, seed)
                seed_seq = rep_seed(seed, task_index, rep, 3, epsilon)
                if name == RSFD:
                    others.seed_all(int(seed_seq.generate_state(1, dtype=np.uint32)[0]))
                    unbiased, clipped = others.rsfd_both(values, epsilon)
                    per_rep.append(float(np.mean((unbiased - np.asarray(goal)) ** 2)))
                    shipped.append(float(np.mean((clipped - np.asarray(goal)) ** 2)))
                else:
                    per_rep.append(library_error(protocol, task, values, goal, d, epsilon, seed_seq))
            seconds = time.perf_counter() - started
            side = side_of(library, name, per_rep, n, ours if paired and ours else None, seconds, reps * n)
            point.others.append(side)
            if shipped:
                point.shipped = side_of(library, RSFD_SHIPPED, shipped, n, None, seconds, reps * n)
            log(f"    {library} {name}: n·MSE {side.nmse:.4g} ± {side.se:.2g} ({seconds:.0f} s, "
                f"{side.calls_per_s:,.0f} calls/s)")
    point.seconds = time.perf_counter() - clock
    return point


def precision_ratio(point: PrecisionPoint):
    """Return (best other Side or None, ratio, se, reference text) of ours against the best unbiased other.

    For a number (no library protocol) the reference is the best theory of the continuous mechanisms.
    The ratio's se is the delta method's, with the covariance of paired sides.
    """
    if point.ours is None:
        return None, None, None, ""
    a, sa = point.ours.nmse, point.ours.se
    if point.references:
        name, value = min(point.references.items(), key=lambda item: item[1])
        return None, a / value, sa / value, f"theory {name}"
    if not point.others:
        return None, None, None, ""
    counted = [side for side in point.others if side.name not in APART]
    if not counted:
        return None, None, None, ""
    best = min(counted, key=lambda side: side.nmse)
    b, sb = best.nmse, best.se
    ratio = a / b
    relative2 = (sa / a) ** 2 + (sb / b) ** 2 - 2 * best.cov / (a * b)
    return best, ratio, ratio * math.sqrt(max(relative2, 0.0)), f"{best.library} {best.name}"


def theory_ratio(point: PrecisionPoint) -> float | None:
    """Return the theory ratio ours / the best library protocol against the population, or None."""
    design = build(next(t for t in tasks() if t.key == point.task), point.epsilon)[0]
    task = next(t for t in tasks() if t.key == point.task)
    ours = ours_theory(design, task.truth, point.n) if design else None
    values = [v for key, v in point.theory.items() if key.split(": ", 1)[1] not in APART]
    if ours is None or not values:
        return None
    return ours.total * point.n / min(values)


def verdict(ratio: float | None, se: float | None, theory: float | None) -> str:
    """Return the one-sided verdict on ours / best other ≤ 1.05, and why when it is not shown."""
    if ratio is None:
        return "—"
    upper = ratio + 2 * se
    if upper <= 1.05:
        return f"**shown** (≤ {upper:.3f})"
    if ratio - 2 * se > 1.05:
        return f"**not shown: above 1.05** (≥ {ratio - 2 * se:.3f})"
    if theory is not None and theory > 1.05:
        why = f"theory ratio {theory:.3f} > 1.05"
    elif theory is not None and theory > 1.0005:
        why = f"se too large: the theory ratio {theory:.3f} needs se ≤ {(1.05 - theory) / 2:.3f}"
    else:
        why = "se too large"
    return f"not shown: upper {upper:.3f} ({why})"


def hundred_k_index(points: list[Point]) -> dict:
    """Return {(task, ε): Point} of the n = 100,000 run."""
    return {(p.task, p.epsilon): p for p in points}


def agreement(point: PrecisionPoint, big: Point | None, n_big: int) -> list[tuple[str, float]]:
    """Return [(side, z)] comparing the precision run's n·MSE with the n = 100,000 run's, side by side.

    z = (n·MSE here − n·MSE there) / √(se² + se²); the same estimator on both sides (ours; a
    library protocol both runs measured; RS+FD as shipped).
    """
    if big is None:
        return []
    pairs = []
    if point.ours and big.ours:
        pairs.append(("ours", point.ours, big.ours))
    for other in big.others:
        if other.measure is None:
            continue
        side = (point.shipped if other.protocol == RSFD_SHIPPED
                else next((s for s in point.others if (s.library, s.name) == (other.library, other.protocol)), None))
        if side is not None:
            pairs.append((f"{other.library} {other.protocol}", side, other.measure))
    return [(name, (side.nmse - n_big * m.mse) / math.hypot(side.se, n_big * m.se),
             f"{fmt(side.nmse, 4)} ± {fmt(side.se, 2)} here, {fmt(n_big * m.mse, 4)} ± {fmt(n_big * m.se, 2)} at "
             f"n = {n_big:,}") for name, side, m in pairs]


def precision_table(points: list[PrecisionPoint], big: list[Point], n_big: int) -> tuple[str, list[str]]:
    """Return the precision tables as markdown, and the list of disagreements with the n = 100,000 run (|z| > 2)."""
    index = hundred_k_index(big)
    lines = ["| task | ε | reps × n | our mechanism | ours: n·MSE ± se | theory n·MSE | best other (unbiased): n·MSE ± se "
             "| other candidates measured | **ours / best other** | ≤ 1.05? (ratio + 2 se) | theory ratio "
             "| n = 100,000 run agrees (z) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    flags, theory_z, compared = [], [], 0
    for point in points:
        if not point.supported:
            lines.append(f"| {point.label} | {point.epsilon:g} | — | not supported by this version: {point.reason} "
                         "| — | — | — | — | — | — | — | — |")
            continue
        task = next(t for t in tasks() if t.key == point.task)
        design = build(task, point.epsilon)[0]
        theory = ours_theory(design, task.truth, point.n)
        theory_text = fmt(theory.total * point.n, 4) if theory else "—"
        if theory:
            theory_z.append(((point.ours.nmse - theory.total * point.n) / point.ours.se, point))
        best, ratio, se, reference = precision_ratio(point)
        if point.references:
            name, value = min(point.references.items(), key=lambda item: item[1])
            best_text = f"no library protocol; best theory {name}: {fmt(value, 4)}"
            rest = "—"
            ratio_theory = None
        else:
            best_text = (f"{best.library} {best.name}: {fmt(best.nmse, 4)} ± {fmt(best.se, 2)}"
                         + (" (paired)" if best.paired else "")) if best else "—"
            rest = "; ".join(f"{s.library} {s.name}: {fmt(s.nmse, 4)} ± {fmt(s.se, 2)}"
                             for s in point.others if s is not best and s.name not in APART) or "—"
            ratio_theory = theory_ratio(point)
        zs = agreement(point, index.get((point.task, point.epsilon)), n_big)
        compared += len(zs)
        for name, z, figures in zs:
            if abs(z) > 2:
                library_theory_value = point.theory.get(name.replace(" ", ": ", 1)) if name != "ours" else (
                    theory.total * point.n if theory else None)
                flags.append(f"{point.label}, ε = {point.epsilon:g}, {name}: z = {z:+.1f} ({figures}"
                             + (f"; theory {fmt(library_theory_value, 4)}" if library_theory_value else "") + ")")
        z_text = ", ".join(f"{name} {z:+.1f}" + (" **(!)**" if abs(z) > 2 else "") for name, z, _ in zs) or "—"
        lines.append(f"| {point.label} | {point.epsilon:g} | {point.reps:,} × {point.n:,} | {point.mechanism} | "
                     f"{fmt(point.ours.nmse, 4)} ± {fmt(point.ours.se, 2)} | {theory_text} | {best_text} | {rest} | "
                     f"**{ratio:.3f}** ± {se:.3f} | {verdict(ratio, se, ratio_theory)} | "
                     f"{'—' if ratio_theory is None else f'{ratio_theory:.3f}'} | {z_text} |")
    biased = [p for p in points if p.shipped is not None]
    if biased:
        lines += ["", "RS+FD, apart (not counted as best other): as shipped it clips its estimates at 0 and "
                  "renormalises (biased), and at nominal ε its whole-answer privacy loss is ε′ (two answers differing "
                  "in every question; `others.rsfd_privacy_loss`), where ours is ε-LDP on the whole answer. Beside it: "
                  "its own formula without the clipping (unbiased, same client calls), ours, and ours clipped to "
                  "[0, 1] (the projection onto the simplex for two shares, computed here: biased against biased).", "",
                  "| task | ε | RS+FD whole-answer ε′ | reps × n | RS+FD as shipped (clipped): n·MSE ± se "
                  "| RS+FD unclipped: n·MSE ± se | ours: n·MSE ± se | ours clipped to [0, 1]: n·MSE ± se "
                  "| ours clipped / RS+FD as shipped | ours / RS+FD unclipped |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for point in biased:
            unclipped = next((s for s in point.others if s.name == RSFD), None)
            sh, view = point.shipped, point.view
            def quotient(a, b):
                r = a.nmse / b.nmse
                return f"**{r:.3f}** ± {r * math.hypot(a.se / a.nmse, b.se / b.nmse):.3f}"
            ratio = quotient(view, sh) if view else "—"
            versus = quotient(point.ours, unclipped) if unclipped else "—"
            loss = others.rsfd_privacy_loss(len(point_task(point).questions), point.epsilon)[0]
            lines.append(f"| {point.label} | {point.epsilon:g} | {loss:.2f} | {point.reps:,} × {point.n:,} | "
                         f"{fmt(sh.nmse, 4)} ± {fmt(sh.se, 2)} | "
                         + (f"{fmt(unclipped.nmse, 4)} ± {fmt(unclipped.se, 2)}" if unclipped else "—") + " | "
                         f"{fmt(point.ours.nmse, 4)} ± {fmt(point.ours.se, 2)} | "
                         + (f"{fmt(view.nmse, 4)} ± {fmt(view.se, 2)}" if view else "—") + f" | {ratio} | {versus} |")
    if theory_z:
        z, worst = max(theory_z, key=lambda item: abs(item[0]))
        lines += ["", f"Ours against the theory n·MSE (the column theory n·MSE, exact (p, q) of the design): "
                  f"{sum(abs(z) <= 2 for z, _ in theory_z)} of {len(theory_z)} points within 2 se; the largest "
                  f"deviation z = {z:+.1f} ({worst.label}, ε = {worst.epsilon:g})."]
    rates = {}
    for point in points:
        for side in point.others + ([point.shipped] if point.shipped else []):
            if side.calls_per_s and side.name != RSFD_SHIPPED:
                rates.setdefault(f"{side.library} {side.name}", []).append(side.calls_per_s)
    if rates:
        lines += ["", "Library clients, measured throughput in this run (respondents per second, client call and "
                  "aggregation, min–max over points): " + "; ".join(
                      f"{name} {min(v):,.0f}–{max(v):,.0f}" for name, v in sorted(rates.items())) + "."]
    return "\n".join(lines), (flags, compared)


def load_precision(paths: list[Path]) -> tuple[str, list[PrecisionPoint], list[str]]:
    """Return the header, the points and each file's run time (with its tasks and target) of precision --json files.

    Rows of the same point from several files (a point rerun at a larger --target) are all kept, in file order.
    """
    datas = [json.loads(path.read_text(encoding="utf-8")) for path in paths]
    labels = {task.key: task.label for task in tasks()}
    times = []
    for data in datas:
        found = re.search(r"give ([\d,]+) squared errors", data["header"])
        keys = dict.fromkeys(raw["task"] for raw in data["points"])
        times.append(f"{data['elapsed']:.0f} s ({', '.join(labels[k] for k in keys)}; "
                     f"{found.group(1) if found else '?'} squared errors)")
    order = [task.key for task in tasks()]
    raws = sorted((raw for data in datas for raw in data["points"]),
                  key=lambda raw: (order.index(raw["task"]), raw["epsilon"]))
    points = []
    for raw in raws:
        for name in ("ours", "view", "shipped"):
            raw[name] = Side(**raw[name]) if raw[name] else None
        raw["others"] = [Side(**o) for o in raw["others"]]
        points.append(PrecisionPoint(**raw))
    return datas[0]["header"], points, times


def mechanism_name(design: dict) -> str:
    """Return the design's mechanism(s), with the sample size m for a sampled survey."""
    names = sorted({q["mechanism"] for q in design["questions"]})
    text = "+".join(names)
    if design["allocation"] != "split":
        text += f", {design['allocation']} m={design.get('sample')}"
    return text


def best_other(point: Point):
    """Return the library result with the lowest MSE, or None."""
    measured = [o for o in point.others if o.measure is not None]
    return min(measured, key=lambda o: o.measure.mse) if measured else None


def fmt(value, digits=3) -> str:
    """Return a number with ``digits`` significant digits, "—" when missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}g}"


def ratio_text(ours: Measure, other: Measure) -> str:
    """Return ours / other with its standard error by the delta method."""
    ratio = ours.mse / other.mse
    relative = math.hypot(ours.se / ours.mse, other.se / other.mse)
    return f"**{ratio:.2f}** ± {ratio * relative:.2f}"


def markdown_table(points: list[Point], n: int) -> str:
    """Return the results as markdown: the measured table, the numbers' theory, the frequency theory (n respondents)."""
    lines = ["| task | ε | reps | our mechanism (ε′ spent) | ours: MSE ± se | theory var | mean SE² | ours, Norm-Sub view "
             "| pure-ldp best: MSE | multi-freq-ldpy best: MSE | ours / best other |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for point in points:
        measured = any(other.measure for other in point.others)
        reps = (str(point.reps) if not measured or point.other_reps in (0, point.reps)
                else f"{point.reps} / {point.other_reps}")
        cells = [point.label, f"{point.epsilon:g}", reps]
        if point.supported:
            cells += [f"{point.mechanism} ({point.epsilon_spent:.4g})",
                      f"{fmt(point.ours.mse)} ± {fmt(point.ours.se, 2)}", fmt(point.theory), fmt(point.mean_se2),
                      fmt(point.consistent.mse) if point.consistent else "—"]
        else:
            reason = point.reason if point.reason.startswith("failed") else f"not supported by this version: {point.reason}"
            cells += [reason, "—", "—", "—", "—"]
        for library in ("pure-ldp", "multi-freq-ldpy"):
            other = next((o for o in point.others if o.library == library), None)
            if other is None or other.measure is None:
                cells.append(f"none: {other.note}" if other and other.note else "—")
            else:
                cells.append(f"{other.protocol}: {fmt(other.measure.mse)} ± {fmt(other.measure.se, 2)}")
        best = best_other(point)
        cells.append(ratio_text(point.ours, best.measure) if point.ours and best else "—")
        lines.append("| " + " | ".join(cells) + " |")
    numbers = [point for point in points if point.references]
    if numbers:
        lines += ["", "Numbers: neither library has a mechanism, so the reference is the theory of the continuous "
                  "mechanisms (MSE of the mean on the answers' scale, at the task's answers; HM is the best of those "
                  "three in the worst case, PM can be better at a given mean), and for the optimal piecewise "
                  "mechanism (OPM, Zheng, Mishra & Hu 2025) the exact theory of its discretised design:", "",
                  ("| task | ε | our mechanism | ours: MSE ± se | Duchi theory | PM theory | HM theory "
                   "| OPM theory (exact) | ours / best theory |"),
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for point in numbers:
            refs = point.references
            ours = f"{fmt(point.ours.mse)} ± {fmt(point.ours.se, 2)}" if point.ours else "—"
            ratio = "—"
            if point.ours:
                best = min(refs.values())
                ratio = f"**{point.ours.mse / best:.2f}** ± {point.ours.se / best:.2f}"
            lines.append(f"| {point.label} | {point.epsilon:g} | {point.mechanism or '—'} | {ours} | "
                         f"{fmt(refs['Duchi'])} | {fmt(refs['PM'])} | {fmt(refs['HM'])} | {fmt(refs.get('OPM'))} | "
                         f"{ratio} |")
        lines.append(exact_number_table(numbers))
    theory = theory_table(points, n)
    return "\n".join(lines) + ("\n" + theory if theory else "")


def machine() -> str:
    """Return a one-line description of the machine and the software versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            model = re.search(r"model name\s*:\s*(.+)", handle.read())
        cpu = model.group(1).strip() if model else cpu
    except OSError:
        pass
    versions = ", ".join(f"{name} {metadata.version(name)}" for name in ("numpy", "pure-ldp", "multi-freq-ldpy"))
    return (f"{cpu}, os.cpu_count() = {os.cpu_count()}, {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}, {versions}")


def load_points(paths: list[Path]) -> tuple[str, list[Point]]:
    """Return the header and the points of --json files, to print or write the table again without rerunning.

    Several files (e.g. tasks run as parallel processes) are merged in task order; the header
    is the first file's, with each file's run time.
    """
    datas = [json.loads(path.read_text(encoding="utf-8")) for path in paths]
    header = datas[0]["header"]
    if len(datas) > 1:
        times = ", ".join(f"{data['elapsed']:.0f} s" for data in datas)
        header = re.sub(r"Full run: \d+ s\.", f"Run as {len(datas)} processes at once, taking {times}.", header)
    order = [task.key for task in tasks()]
    raws = sorted((raw for data in datas for raw in data["points"]), key=lambda raw: order.index(raw["task"]))
    points = []
    for raw in raws:
        for name in ("ours", "consistent"):
            raw[name] = Measure(**raw[name]) if raw[name] else None
        raw.setdefault("references", {})
        raw["others"] = [Other(**{**o, "measure": Measure(**o["measure"]) if o["measure"] else None})
                         for o in raw["others"]]
        points.append(Point(**raw))
    return header, points


def header_n(header: str) -> int:
    """Return the respondents per repetition that a --json file's header states ("n = 100,000 respondents")."""
    found = re.search(r"n = ([\d,]+) respondents", header)
    if not found:
        raise SystemExit("the --json header does not state n; rerun the benchmark to write a new file")
    return int(found.group(1).replace(",", ""))


def write_readme(section: str) -> None:
    """Replace the utility section of bench/README.md (between its markers) with ``section``."""
    text = README.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{README} has no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{BEGIN}\n{section}\n{END}{tail}", encoding="utf-8")


def agreement_text(checked: tuple[list[str], int], points: list[Point]) -> str:
    """Return the sentence on the check against the n = 100,000 run."""
    flags, compared = checked
    if not points:
        return "No n = 100,000 run given to check the precision run's n·MSE against."
    if not flags:
        return (f"Check against the n = 100,000 run: all {compared} n·MSE measured by both runs (ours, and each "
                "library protocol both measured) agree within 2 standard errors.")
    return (f"Check against the n = 100,000 run: of {compared} n·MSE measured by both runs (ours, each library "
            f"protocol both measured), {len(flags)} differ by more than 2 standard errors (about 1 in 20 would by "
            "chance; the n = 100,000 run's se rest on 20 repetitions, themselves uncertain by about 16%): "
            + "; ".join(flags) + ".")


def run_precision(args, chosen: list[Task], all_tasks: list[Task], epsilons: list[float], log) -> int:
    """Run the precision run over the chosen tasks and epsilons; print and keep (--json) its figures."""
    started = time.perf_counter()
    points = []
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()

    def save(elapsed):
        header = (f"**Precision run**, measured {today} on {machine()}. n = {args.n:,} respondents per repetition, "
                  f"as many repetitions as give {args.target:,} squared errors per side and point (yes/no and the "
                  f"number: {args.target:,} repetitions; choice d: {args.target:,}/d; 5 questions: "
                  f"{args.target:,}/5), ours and every library candidate on the same repetitions (seeded, base seed "
                  f"{args.seed}, repetitions {PRECISION_REP0:,} on, disjoint from the n = 100,000 run's). Each "
                  f"library's candidates: its best protocol by theory and the protocol the screening picks (as the "
                  f"n = 100,000 run does, unless the theory puts it more than 5% behind). Run time: {{times}}.")
        if args.json:
            args.json.write_text(json.dumps({"kind": "precision", "header": header, "elapsed": elapsed,
                                             "points": [asdict(p) for p in points]}, indent=2), encoding="utf-8")

    for task in chosen:
        for epsilon in epsilons:
            points.append(measure_precision(task, all_tasks.index(task), epsilon, args.n, args.target,
                                            args.screen_reps, args.screen_n, args.seed, log))
            save(time.perf_counter() - started)
    elapsed = time.perf_counter() - started
    save(elapsed)
    table, _ = precision_table(points, [], 0)
    print(table)
    log(f"precision run: {elapsed:.0f} s")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  bash bench/utility/setup.sh                                   # once: /tmp/bench-venv\n"
               "  /tmp/bench-venv/bin/python bench/utility/run.py --quick        # ~1 minute, n = 10,000\n"
               "  /tmp/bench-venv/bin/python bench/utility/run.py --write-readme # the full run, table into bench/README.md\n"
               "  /tmp/bench-venv/bin/python bench/utility/run.py --tasks choice8,yes_no --epsilons 1,4\n"
               "  # the precision run as two processes (about half an hour each), then both tables into the README:\n"
               "  /tmp/bench-venv/bin/python bench/utility/run.py --precision --json p-a.json "
               "--tasks yes_no,choice8,choice32,choice128,number,survey5_split\n"
               "  /tmp/bench-venv/bin/python bench/utility/run.py --precision --json p-b.json "
               "--tasks survey5_sample,survey5_planned\n"
               "  # (the kept run split B: survey5_sample, then survey5_planned as a third process when A ended)\n"
               "  /tmp/bench-venv/bin/python bench/utility/run.py --render bench/utility/results/n100000-*.json "
               "p-a.json p-b.json --write-readme\n"
               "  /tmp/bench-venv/bin/python bench/utility/run.py --precision --quick --tasks yes_no --epsilons 1  # seconds")
    parser.add_argument("--n", type=int, default=None,
                        help="respondents per repetition (default 100,000; with --precision 2,000)")
    parser.add_argument("--reps", type=int, default=20, help="repetitions per point, ours and each library's best "
                        "(default 20)")
    parser.add_argument("--other-reps", type=int, default=None,
                        help="at most this many repetitions for each library's best (default: as many as ours); "
                             "their clients run one Python call per respondent, so they take most of the time")
    parser.add_argument("--screen-reps", type=int, default=2,
                        help="repetitions per library protocol to pick each library's best (default 2)")
    parser.add_argument("--epsilons", default=",".join(f"{e:g}" for e in EPSILONS), help="comma-separated (default 0.5,1,2,4)")
    parser.add_argument("--tasks", default=None, help="comma-separated task keys (default all: "
                        + ",".join(t.key for t in tasks()) + ")")
    parser.add_argument("--seed", type=int, default=20261122, help="base seed (default 20261122)")
    parser.add_argument("--screen-n", type=int, default=2_000,
                        help="respondents per screening repetition (default 2,000)")
    parser.add_argument("--quick", action="store_true",
                        help="n = 10,000, 5 repetitions, screening on 1,000 respondents")
    parser.add_argument("--precision", action="store_true",
                        help="the precision run instead: n·MSE at a small n (default 2,000) with enough repetitions that "
                             "each side's MSE rests on --target squared errors; every library candidate on the same "
                             "repetitions as ours; the ratio ours / best other with its se and the verdict on <= 1.05")
    parser.add_argument("--target", type=int, default=20_000,
                        help="with --precision: squared errors per side and point (default 20,000; repetitions = "
                             "target / estimates per repetition)")
    parser.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    parser.add_argument("--render", type=Path, nargs="+", metavar="JSON",
                        help="print (and with --write-readme write) the tables of earlier --json files, with the theory "
                             "computed from the tasks, n and ε; run nothing. Files of the n = 100,000 run and of the "
                             "precision run may be mixed: the precision table then goes below the other and is "
                             "checked against it")
    parser.add_argument("--write-readme", action="store_true",
                        help="write the table into bench/README.md between its utility markers")
    args = parser.parse_args(argv)
    if args.render:
        kinds = {path: json.loads(path.read_text(encoding="utf-8")).get("kind", "n") for path in args.render}
        plain = [path for path in args.render if kinds[path] != "precision"]
        precise = [path for path in args.render if kinds[path] == "precision"]
        section, points, n_big = "", [], 0
        if plain:
            header, points = load_points(plain)
            n_big = header_n(header)
            section = header + "\n\n" + markdown_table(points, n_big)
        if precise:
            header, precision_points, times = load_precision(precise)
            header = header.replace("{times}", "; ".join(times))
            table, checked = precision_table(precision_points, points, n_big)
            section += ("\n\n" if section else "") + header + "\n\n" + table + "\n\n" + agreement_text(checked, points)
            for flag in checked[0]:
                print(f"disagreement with the n = {n_big:,} run: {flag}", file=sys.stderr)
        print(section)
        if args.write_readme:
            write_readme(section)
        return 0
    if args.n is None:
        args.n = 2_000 if args.precision else 100_000
    if args.quick:
        args.n, args.reps, args.screen_reps, args.screen_n = 10_000, 5, 1, 1_000
        if args.precision:
            args.n, args.target = 1_000, 200
    if others.IMPORT_ERROR is not None:
        raise SystemExit(f"the libraries are missing ({others.IMPORT_ERROR}); run bash bench/utility/setup.sh "
                         "and use /tmp/bench-venv/bin/python")
    if (args.other_reps is not None and args.other_reps < 2) or args.reps < 2 or args.screen_reps < 1 or args.n < 100 or args.screen_n < 100:
        raise SystemExit("need --reps >= 2, --other-reps >= 2, --screen-reps >= 1, --n >= 100 and --screen-n >= 100")
    try:
        epsilons = [float(e) for e in args.epsilons.split(",")]
    except ValueError:
        raise SystemExit(f"--epsilons must be comma-separated numbers, got {args.epsilons!r}") from None
    all_tasks = tasks()
    chosen = all_tasks if args.tasks is None else [t for t in all_tasks if t.key in args.tasks.split(",")]
    if not chosen:
        raise SystemExit(f"--tasks names none of {', '.join(t.key for t in all_tasks)}")

    def log(message):
        print(message, file=sys.stderr, flush=True)

    if args.precision:
        return run_precision(args, chosen, all_tasks, epsilons, log)
    started = time.perf_counter()
    points = []
    for task in chosen:
        task_index = all_tasks.index(task)
        for epsilon in epsilons:
            clock = time.perf_counter()
            design, reason = build(task, epsilon)
            log(f"{task.label}, ε = {epsilon:g}: " + (mechanism_name(design) if design else f"unsupported ({reason})"))
            reps = point_reps(task, args.reps)
            other_reps = reps if args.other_reps is None else min(reps, args.other_reps)
            point = Point(task=task.key, label=task.label, epsilon=epsilon, supported=design is not None,
                          reps=reps, other_reps=other_reps, reason=reason or "")
            if design is not None:
                point.mechanism, point.epsilon_spent = mechanism_name(design), design["epsilon_spent"]
                try:
                    point.ours, point.consistent, point.mean_se2 = measure_ours(task, task_index, design, args.n,
                                                                                reps, args.seed)
                except Exception as exc:  # a product path that fails here is reported in the table, not fatal
                    point.supported, point.reason = False, f"failed: {type(exc).__name__}: {exc}"
                    log(f"    ours: {point.reason}")
                sampled = design["allocation"] != "split"
                point.theory = (None if sampled and not design.get("sample")
                                else theory_variance(design, task.truth, args.n, design.get("sample") if sampled else None))
                if point.ours:
                    log(f"    ours: MSE {point.ours.mse:.4g} ± {point.ours.se:.2g}, theory {fmt(point.theory, 4)}")
            point.others = measure_others(task, task_index, epsilon, args.n, other_reps, args.screen_reps,
                                          args.screen_n, args.seed, log)
            if task.questions[0]["kind"] == "number":
                point.references = number_references(task.questions[0], task.truth["q"], epsilon, args.n)
            point.seconds = time.perf_counter() - clock
            points.append(point)
            if args.json:  # after every point, so that an interrupted run keeps what it measured
                args.json.write_text(json.dumps({"header": "", "elapsed": time.perf_counter() - started,
                                                 "points": [asdict(p) for p in points]}, indent=2), encoding="utf-8")
    elapsed = time.perf_counter() - started

    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    header = (f"Measured {today} on {machine()}.\n"
              f"n = {args.n:,} respondents per repetition; {args.reps} repetitions per point for ours, more where "
              f"a repetition gives fewer than 4 estimates, so that every MSE of ours rests on at least "
              f"{4 * args.reps} squared errors"
              + ("" if args.other_reps is None else f", and at most {args.other_reps} for each library's best")
              + f" (the column reps: ours / each library's best where they differ; seeded, base seed {args.seed}). Each library's best protocol was picked by screening all its protocols on "
              f"{args.screen_n:,} respondents, at least {args.screen_reps} repetitions and 16 squared errors "
              f"each. Full run: {elapsed:.0f} s.")
    table = markdown_table(points, args.n)
    print(header + "\n\n" + table)
    if args.json:
        args.json.write_text(json.dumps({"header": header, "elapsed": elapsed, "points": [asdict(p) for p in points]},
                                        indent=2),
                             encoding="utf-8")
    if args.write_readme:
        write_readme(header + "\n\n" + table)
        log(f"wrote the table into {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
