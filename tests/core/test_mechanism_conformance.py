"""Conformance of every registered randomizer: one suite, run on each mechanism of the registry.

Every mechanism of ``survey.core.mechanisms.MECHANISMS`` (and any added later) gets every check,
on a design entry made by the real design path: a one-question definition at a (d, ε) where
``choose`` picks that mechanism (a number question names it in its ``mechanism`` field). Each
check is a plain function ``check_*(case)`` that raises AssertionError; the parametrized tests
call them, and two planted broken mechanisms (defined here, never registered) are fed to the
same functions to show that the checks catch what they are meant to catch.

1. ``check_exact_epsilon``: the realised ε′ of the entry's integer parameters, recomputed here by
   enumerating the exact output distribution (Fractions, written from each mechanism's published
   definition, not from the product's code: Warner 1965; Wang et al. 2016, 2017; Duchi et al. 2013;
   Wang et al. 2019), is ≤ the nominal share and equals the entry's ``epsilon`` to 1e-12.
2. ``check_vectors`` / ``check_randomize_matches_replay``: every case of tests/vectors.json for the
   mechanism replays to its expected report (the browser's draw, word for word), and the vectorised
   ``randomize`` has the distribution of the scalar ``replay`` fed with random words (chi-square
   homogeneity, and ``replay`` against the exact distribution).
3. ``check_goodness_of_fit`` / ``check_empirical_epsilon``: seeded ``randomize`` draws fit the exact
   distribution (chi-square), and an empirical lower bound on ε, the audit of Ding et al. (2018),
   Bichsel et al. (2018) and Jagielski et al. (2020): the largest log ratio over output events of a
   one-sided Clopper & Pearson (1934) lower bound of P(E | a) and upper bound of P(E | a′),
   Bonferroni over the events, stays ≤ ε′.
4. ``check_unbiased_and_covers``: 400 seeded surveys through codec.encode_column, codec.tally and
   aggregate_counts: the mean estimate within 4.5 known standard errors of the truth, and the
   (simultaneous) intervals cover ≥ 93%.
5. ``check_codebook_rederives``: estimate, std_error, noisy_share and the interval recomputed from
   the codebook's p, q (or levels, level_values, estimator) and the column of reports match
   ``aggregate`` to 1e-9.
6. ``check_domain``: validate_report and check_report_array accept every draw and refuse highest+1,
   −1, bools, floats, wrong lengths, and every bit vector the mechanism can never send (its own rule).
7. ``check_planner_half_width``: at the planner's worst-case truth the planned half-width is within
   5% of the mean half-width of the product's intervals over 400 simulated surveys (and within 10%
   of z·SD of the estimates), as tests/core/test_planning.py and tests/core/test_planning_preview.py do.
8. ``check_debiased_range``: one report's own debiased value (the estimate from that report alone) lies in
   ``debiased_range`` for every report drawn (every level of a level mechanism), and reports reach both of its ends:
   the range on which the anytime-valid intervals' Hoeffding bound rests (survey.core.anytime).
9. ``check_interface``: from_entry round-trips (through JSON too), build and choose agree with the
   entry, the words are non-empty with no leftover braces, (p, q) are those of the enumeration, and
   a level mechanism's values lie on the line q + (p − q)x with scores and score pieces consistent.

Sizes are modest: the whole file runs in well under a minute. One strict xfail records a finding about the
planner's worst case for level mechanisms (see test_the_planner_worst_case_bounds_every_population).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from dataclasses import dataclass, field
from decimal import Context, Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np

from survey.core.bounded_mean import mean_interval
import pytest
from scipy.stats import beta as beta_dist
from scipy.stats import chi2

from survey.core import codec
from survey.core.aggregate import aggregate, aggregate_counts
from survey.exports.codebook import codebook, response_columns
from survey.core.definition import DefinitionError, parse_definition
from survey.core.design import build_design
from survey.core.estimators import clopper_pearson
from survey.core.mechanisms import (BIT, BITS, INDEX, LEVEL, MECHANISMS, GeneralizedRR, LevelMechanism, choose,
                                    mechanism_class, mechanism_for)
from survey.core.mechanisms.common import default_rng, randomize_rr
from survey.core.mechanisms.warner import WarnerRR
from survey.core.planning import plan_question, z_value
from survey.core.replay import U32Stream, randomize_question_stream
from survey.core.reports import ReportError, check_report_array, validate_report
from survey.core.simulate import draw_true_values
from survey.core.words import format_epsilon, percent

TWO53 = 2**53
VECTORS = json.loads((Path(__file__).resolve().parents[1] / "vectors.json").read_text(encoding="utf-8"))
DIGITS = Context(prec=60)

TOLERANCE_SE = 4.5
MIN_COVERAGE = 0.93
REPETITIONS = 400
MIN_P_VALUE = 1e-4  # chi-square tests: seeded, so a real mechanism passes or fails deterministically
AUDIT_ALPHA = 0.01  # the empirical ε bound holds with probability ≥ 99% over all its events together
NUMBER_RANGE = (0, 10)
MAX_LEVELS = 512  # keeps the enumeration and the chi-square cells of a level mechanism small
MAX_ENUMERATED_BITS = 12

# Where to look for a (d, ε) at which the registry picks a mechanism, in order of preference.
EPSILONS = (1.0, 0.5, 2.0, 0.25, 0.2, 0.1)
# A mechanism whose case at the first of EPSILONS would be degenerate looks first here: the optimal piecewise
# mechanism has two levels (Duchi's) at ε = 1, twelve at ε = 4.
FIRST_EPSILONS = {("number", "opm"): (4.0,)}
DS = {"yes_no": (None,), "number": (None,), "choice": (*range(3, 13), 16, 24, 32, 40, 48, 64),
      "multi": tuple(range(3, 9))}


# The case: one mechanism's design entry made by the real design path


@dataclass(eq=False)
class MechanismCase:
    """A mechanism class under test (a registered one, or a planted broken subclass) and its design entry."""

    cls: type
    design: dict
    question: object  # the definition's Question
    answers: tuple  # the true answers whose output distributions are enumerated
    view_columns: tuple | None = None  # a bit-vector view: the option of each coordinate, None for "ones elsewhere"
    cache: dict = field(default_factory=dict)

    @property
    def entry(self) -> dict:
        return self.design["questions"][0]

    @property
    def mechanism(self):
        return self.cls.from_entry(self.entry)

    @property
    def key(self) -> tuple[str, str]:
        return self.cls.kind, self.cls.name

    @property
    def d(self) -> int:
        return len(self.entry.get("options") or ()) or 1

    @property
    def share(self) -> Decimal:
        return Decimal(self.entry["epsilon_nominal"])

    @property
    def lo_hi(self) -> tuple[int, int]:
        return self.entry.get("min", 0), self.entry.get("max", 1)

    def exact(self, answer) -> dict[tuple, Fraction]:
        """Return the exact distribution of the report's view for one true answer."""
        cached = self.cache.setdefault("exact", {})
        if answer not in cached:
            try:
                enumerate_ = EXACT[self.key]
            except KeyError:
                raise AssertionError(f"no exact distribution for {self.key}: add one to EXACT in this file") from None
            cached[answer] = enumerate_(self, answer)
        return cached[answer]

    def view(self, reports) -> np.ndarray:
        """Return an (n, m) integer array: each report as the key of the exact distribution."""
        values = np.asarray(reports, dtype=np.int64)
        if self.mechanism.report != BITS:
            return values.reshape(-1, 1)
        values = values.reshape(-1, self.d)
        if self.view_columns is None:
            return values
        watched = [column for column in self.view_columns if column is not None]
        rest = values.sum(axis=1) - values[:, watched].sum(axis=1)
        return np.column_stack([values[:, watched], rest])

    def draw(self, answer, n: int, rng) -> np.ndarray:
        """Return n reports of ``self.cls``'s vectorised randomizer for one true answer."""
        if isinstance(answer, tuple):
            true = np.tile(np.array(answer, dtype=np.int64), (n, 1))
        else:
            true = np.full(n, answer, dtype=np.int64)
        return self.mechanism.randomize(true, rng)


def _definition(kind: str, d, epsilon: float, mechanism: str | None) -> dict:
    question = {"id": "q", "kind": kind, "text": "Q"}
    if d is not None:
        question["options"] = [f"o{i}" for i in range(d)]
    if kind == "number":
        question.update(min=NUMBER_RANGE[0], max=NUMBER_RANGE[1], mechanism=mechanism)
    return {"slug": "conformance", "title": "Conformance", "epsilon": epsilon, "questions": [question]}


def registered(cls) -> type:
    """Return the registered mechanism a class is (or, for a planted broken one, subclasses most closely)."""
    return next(mechanism for mechanism in cls.__mro__ if mechanism in MECHANISMS)


def find_design(cls) -> tuple[dict, object]:
    """Return (design, definition question) of the first (d, ε) of the grid at which the registry picks ``cls``."""
    for d, epsilon in itertools.product(DS[cls.kind], (*FIRST_EPSILONS.get((cls.kind, cls.name), ()), *EPSILONS)):
        defn = parse_definition(_definition(cls.kind, d, epsilon, cls.name if cls.kind == "number" else None))
        try:
            design = build_design(defn)
        except DefinitionError:
            continue
        entry = design["questions"][0]
        if mechanism_for(entry).__class__ is cls and getattr(mechanism_for(entry), "levels", 0) <= MAX_LEVELS:
            return design, defn.questions[0]
    raise AssertionError(f"the registry picks {cls.kind}/{cls.name} nowhere on the grid {DS[cls.kind]} x {EPSILONS}")


@functools.cache
def make_case(cls) -> MechanismCase:
    design, question = find_design(registered(cls))
    entry = design["questions"][0]
    kind, d = cls.kind, len(entry.get("options") or ())
    view_columns = None
    if kind == "yes_no":
        answers = (0, 1)
    elif kind == "number":
        answers = tuple(range(entry["min"], entry["max"] + 1))
    elif kind == "multi":
        answers = tuple(itertools.product((0, 1), repeat=d))
    elif d <= 8:
        answers = tuple(range(d))
    else:
        # d too large to enumerate {0,1}^d: watch three options; the others' bits are alike under all three answers.
        answers = (0, 1, 2)
        if cls.report == BITS:
            view_columns = (*answers, None)
    return MechanismCase(cls=cls, design=design, question=question, answers=answers, view_columns=view_columns)


# Exact output distributions, enumerated from each mechanism's definition and the entry's integers


def exact_warner(case, answer):
    flip = Fraction(case.entry["flip_threshold"], TWO53)
    return {(answer,): 1 - flip, (1 - answer,): flip}


def exact_grr(case, answer):
    keep = Fraction(case.entry["keep_threshold"], TWO53)
    return {(y,): keep if y == answer else (1 - keep) / (case.d - 1) for y in range(case.d)}


def exact_oue(case, answer):
    """The true option's bit is 1 w.p. 1/2, every other w.p. q, independently (Wang et al. 2017)."""
    q = Fraction(case.entry["q_threshold"], TWO53)

    def bit(option, value):
        return Fraction(1, 2) if option == answer else (q if value else 1 - q)

    if case.view_columns is None:
        return {bits: math.prod(bit(o, b) for o, b in enumerate(bits))
                for bits in itertools.product((0, 1), repeat=case.d)}
    watched = [column for column in case.view_columns if column is not None]
    rest = case.d - len(watched)
    assert answer in watched
    out = {}
    for bits in itertools.product((0, 1), repeat=len(watched)):
        head = math.prod(bit(o, b) for o, b in zip(watched, bits))
        for ones in range(rest + 1):
            out[bits + (ones,)] = head * math.comb(rest, ones) * q**ones * (1 - q) ** (rest - ones)
    return out


def exact_subset(case, answer):
    """A k-subset holding the answer w.p. p, the rest uniform among the others (Wang et al. 2016)."""
    d, k = case.d, case.entry["subset_size"]
    p = Fraction(case.entry["keep_threshold"], TWO53)
    inside, outside = p / math.comb(d - 1, k - 1), (1 - p) / math.comb(d - 1, k)
    return {tuple(int(i in s) for i in range(d)): inside if answer in s else outside
            for s in map(set, itertools.combinations(range(d), k))}


def exact_multi_rr(case, answer):
    flip = Fraction(case.entry["flip_threshold"], TWO53)
    return {bits: math.prod(1 - flip if b == a else flip for b, a in zip(bits, answer))
            for bits in itertools.product((0, 1), repeat=case.d)}


def exact_sampled(case, answer):
    """One option j drawn uniformly; its bit through Warner RR; all other bits 0."""
    d = case.d
    flip = Fraction(case.entry["flip_threshold"], TWO53)
    out: dict[tuple, Fraction] = {}
    for j in range(d):
        one = 1 - flip if answer[j] else flip
        for key, probability in ((tuple(int(i == j) for i in range(d)), one), ((0,) * d, 1 - one)):
            out[key] = out.get(key, 0) + probability / d
    return out


def _unit(case, x) -> Fraction:
    lo, hi = case.lo_hi
    return Fraction(x - lo, hi - lo)


def exact_duchi(case, x):
    """Round x to 1 w.p. (x − lo)/(hi − lo), then Warner RR (Duchi et al. 2013)."""
    flip = Fraction(case.entry["flip_threshold"], TWO53)
    one = _unit(case, x) * (1 - flip) + (1 - _unit(case, x)) * flip
    return {(1,): one, (0,): 1 - one}


def _piecewise_levels(x: Fraction, a: int, b: int) -> list[Fraction]:
    """P(k) of the discretised piecewise mechanism: x rounded at random onto the grid 0..a, then k uniform on
    the b levels from there w.p. a/(a + b), else uniform on the other a levels (Wang et al. 2019)."""
    g = a + b
    grid, up = divmod(x * a, 1)
    probabilities = [Fraction(0)] * g
    for point, weight in ((int(grid), 1 - up), (int(grid) + 1, up)):
        if weight:
            for k in range(g):
                probabilities[k] += weight * (Fraction(a, g * b) if point <= k < point + b else Fraction(b, g * a))
    return probabilities


def exact_piecewise(case, x):
    a, b = case.entry["ratio_a"], case.entry["ratio_b"]
    return {(k,): probability for k, probability in enumerate(_piecewise_levels(_unit(case, x), a, b))}


def exact_opm(case, x):
    """x rounded at random onto the grid 0..m, then each of the w band levels from there has probability A/D and
    every other level B/D, D = wA + mB (Zheng, Mishra & Hu 2025; the piecewise family with a free band)."""
    a, b, m, w = (case.entry[key] for key in ("ratio_a", "ratio_b", "steps", "band"))
    grid, up = divmod(_unit(case, x) * m, 1)
    out = {(k,): Fraction(0) for k in range(m + w)}
    for point, weight in ((int(grid), 1 - up), (int(grid) + 1, up)):
        if weight:
            for k in range(m + w):
                out[(k,)] += weight * Fraction(a if point <= k < point + w else b, w * a + m * b)
    return out


def exact_hybrid(case, x):
    """The piecewise level w.p. (a − b)/a, else Duchi's bit flipped w.p. b²/(a² + b²), as level G + bit."""
    a, b = case.entry["ratio_a"], case.entry["ratio_b"]
    g, unit = a + b, _unit(case, x)
    branch, keep = Fraction(a - b, a), Fraction(a * a, a * a + b * b)
    out = {(k,): branch * probability for k, probability in enumerate(_piecewise_levels(unit, a, b))}
    out[(g,)] = (1 - branch) * ((1 - unit) * keep + unit * (1 - keep))
    out[(g + 1,)] = (1 - branch) * (unit * keep + (1 - unit) * (1 - keep))
    return out


EXACT = {
    ("yes_no", "rr"): exact_warner,
    ("choice", "grr"): exact_grr, ("choice", "oue"): exact_oue, ("choice", "ss"): exact_subset,
    ("multi", "rr"): exact_multi_rr, ("multi", "sampled"): exact_sampled,
    ("number", "duchi"): exact_duchi, ("number", "piecewise"): exact_piecewise, ("number", "hybrid"): exact_hybrid,
    ("number", "opm"): exact_opm,
}


def log_ratio(ratio: Fraction) -> Decimal:
    return DIGITS.ln(DIGITS.divide(Decimal(ratio.numerator), Decimal(ratio.denominator)))


def exact_epsilon(case) -> tuple[Fraction, tuple]:
    """Return the largest P(y | a)/P(y | a′) over the enumerated answers and outputs, and a pair attaining it."""
    if "epsilon" not in case.cache:
        worst, pair = Fraction(1), (case.answers[0], case.answers[1])
        for first, second in itertools.permutations(case.answers, 2):
            other = case.exact(second)
            for key, probability in case.exact(first).items():
                if probability and not other.get(key):
                    raise AssertionError(f"output {key} is possible for answer {first} and impossible for {second}: "
                                         "ε is infinite")
                if probability and probability / other[key] > worst:
                    worst, pair = probability / other[key], (first, second)
        case.cache["epsilon"] = worst, pair
    return case.cache["epsilon"]


def audit_answers(case) -> tuple:
    """The answers whose draws the statistical checks compare: all when few, else a pair attaining ε′."""
    return case.answers if len(case.answers) <= 4 else exact_epsilon(case)[1]


def support(case) -> set[tuple]:
    return {key for answer in case.answers for key, probability in case.exact(answer).items() if probability}


# Statistics


def counts_of(case, reports) -> dict[tuple, int]:
    keys, counts = np.unique(case.view(reports), axis=0, return_counts=True)
    return {tuple(int(v) for v in key): int(count) for key, count in zip(keys, counts)}


def goodness_of_fit(counts: dict, probabilities: dict) -> float:
    """Return the chi-square p-value of observed counts against exact probabilities (cells with expected < 5 pooled).

    A count outside the support gives 0.
    """
    if any(count and not probabilities.get(key) for key, count in counts.items()):
        return 0.0
    n = sum(counts.values())
    cells = sorted(((float(p) * n, counts.get(key, 0)) for key, p in probabilities.items() if p), reverse=True)
    kept = [cell for cell in cells if cell[0] >= 5]
    pooled = [cell for cell in cells if cell[0] < 5]
    if pooled:
        kept.append((sum(e for e, _ in pooled), sum(o for _, o in pooled)))
    if len(kept) > 1 and kept[-1][0] < 5:
        last = kept.pop()
        kept[-1] = (kept[-1][0] + last[0], kept[-1][1] + last[1])
    if len(kept) < 2:
        return 1.0
    statistic = sum((o - e) ** 2 / e for e, o in kept)
    return float(chi2.sf(statistic, len(kept) - 1))


def homogeneity(first: dict, second: dict) -> float:
    """Return the chi-square p-value that two samples of counts have one distribution (columns with expected < 5 pooled)."""
    keys = sorted(set(first) | set(second))
    table = np.array([[first.get(key, 0) for key in keys], [second.get(key, 0) for key in keys]], dtype=float)
    rows, total = table.sum(axis=1), table.sum()
    small = (np.outer(rows, table.sum(axis=0)) / total).min(axis=0) < 5
    if small.any():
        table = np.column_stack([table[:, ~small], table[:, small].sum(axis=1)])
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return 1.0
    expected = np.outer(rows, table.sum(axis=0)) / total
    statistic = float(((table - expected) ** 2 / expected).sum())
    return float(chi2.sf(statistic, table.shape[1] - 1))


def audit_events(case, counts: dict) -> dict:
    """Return {event: count} over the events the audit compares: every output of the view, every output of its
    projection on each subset of coordinates, and for a scalar report every prefix {y < t} and suffix {y ≥ t}."""
    width = len(next(iter(counts)))
    events: dict = {}
    for size in range(1, width + 1):
        for coordinates in itertools.combinations(range(width), size):
            for key, count in counts.items():
                event = (coordinates, tuple(key[c] for c in coordinates))
                events[event] = events.get(event, 0) + count
    if width == 1:
        for threshold in range(1, case.mechanism.highest + 1):
            below = sum(count for key, count in counts.items() if key[0] < threshold)
            events[("<", threshold)] = below
            events[(">=", threshold)] = sum(counts.values()) - below
    return events


def empirical_epsilon(case, samples: dict) -> float:
    """Return a lower bound on ε that holds with probability ≥ 1 − AUDIT_ALPHA: max over answer pairs and events of
    ln(CP lower bound of P(E | a) / CP upper bound of P(E | a′)), one-sided bounds Bonferroni-corrected over all tests."""
    events = {answer: audit_events(case, counts) for answer, counts in samples.items()}
    every = set().union(*events.values())
    pairs = list(itertools.permutations(samples, 2))
    tests = len(every) * len(pairs)
    alpha = AUDIT_ALPHA / (2 * tests)
    best = -math.inf
    for first, second in pairs:
        n1, n2 = sum(samples[first].values()), sum(samples[second].values())
        for event in every:
            c1, c2 = events[first].get(event, 0), events[second].get(event, 0)
            if c1 == 0:
                continue
            low = float(beta_dist.ppf(alpha, c1, n1 - c1 + 1))
            high = 1.0 if c2 == n2 else float(beta_dist.ppf(1 - alpha, c2 + 1, n2 - c2))
            best = max(best, math.log(low / high))
    return best


class RandomWords:
    """An endless iterator of uniform 32-bit words (Python ints), as crypto.getRandomValues gives the browser."""

    def __init__(self, rng):
        self.rng, self.buffer = rng, []

    def __iter__(self):
        return self

    def __next__(self) -> int:
        if not self.buffer:
            self.buffer = self.rng.integers(0, 2**32, size=8192, dtype=np.uint64).tolist()
        return self.buffer.pop()


def replay_draws(case, answer, n: int, rng) -> np.ndarray:
    stream = U32Stream(RandomWords(rng))
    mechanism = case.mechanism
    true = list(answer) if isinstance(answer, tuple) else answer
    return np.array([mechanism.replay(true, stream) for _ in range(n)], dtype=np.int64)


def true_values_for(case, truth, n: int, rng) -> np.ndarray:
    return draw_true_values(case.entry, truth, n, rng)


def estimand_truth(case, truth) -> np.ndarray:
    kind = case.cls.kind
    if kind in ("choice", "multi"):
        return np.asarray(truth, dtype=float)
    return np.array([float(truth)])


def exact_answer_weights(case, truth) -> dict:
    """Return P(answer) of the answers ``draw_true_values`` draws for a number's truth (a binomial on lo..hi)."""
    lo, hi = case.lo_hi
    share = (truth - lo) / (hi - lo)
    return {x: math.comb(hi - lo, x - lo) * share ** (x - lo) * (1 - share) ** (hi - x) for x in range(lo, hi + 1)}


def level_variance(case, weights: dict) -> float:
    """Return Var(R) of one report of a level mechanism when the answer is drawn with ``weights``."""
    values = [float(v) for v in case.mechanism.level_values()]
    mean = second = 0.0
    for answer, weight in weights.items():
        for (level,), probability in case.exact(answer).items():
            mean += weight * float(probability) * values[level]
            second += weight * float(probability) * values[level] ** 2
    return second - mean * mean


def known_standard_errors(case, truth, n: int) -> np.ndarray:
    """Return the exact standard error of each estimate from n reports when answers are drawn from ``truth``."""
    mechanism = case.mechanism
    p, q = (float(v) for v in mechanism.probabilities())
    lo, hi = case.lo_hi
    scale = hi - lo if case.cls.kind == "number" else 1
    if mechanism.report == LEVEL:
        variance = level_variance(case, exact_answer_weights(case, truth))
        return np.array([math.sqrt(variance / n) / (p - q) * scale])
    shares = estimand_truth(case, truth)
    if case.cls.kind == "number":
        shares = (shares - lo) / (hi - lo)
    lam = q + shares * (p - q)
    return np.sqrt(lam * (1 - lam) / n) / (p - q) * scale


def truth_for_coverage(case):
    kind, d = case.cls.kind, case.d
    if kind == "yes_no":
        return 0.3
    if kind == "choice":
        weights = np.arange(d, 0, -1, dtype=float)
        return tuple(weights / weights.sum())
    if kind == "multi":
        return tuple(np.linspace(0.1, 0.8, d))
    lo, hi = case.lo_hi
    return lo + 0.3 * (hi - lo)


def simulate_rows(case, true_draw, n: int, repetitions: int, rng, chunk: int = 50) -> list[list]:
    """Return the aggregate rows of ``repetitions`` surveys of n reports, counted by codec and debiased by aggregate_counts."""
    entry, mechanism, rows = case.entry, case.mechanism, []
    for start in range(0, repetitions, chunk):
        size = min(chunk, repetitions - start)
        reports = mechanism.randomize(true_draw(size * n), rng)
        reports = reports.reshape(size, n, *reports.shape[1:])
        for one in reports:
            ones = codec.tally(entry, codec.encode_column(entry, one))
            rows.append(aggregate_counts(case.design, {entry["id"]: (n, ones)}))
    return rows


def wire(reports) -> list:
    """Return numpy reports as wire-format values (ints, or lists of ints)."""
    return np.asarray(reports).tolist()


# The checks: each raises AssertionError when the mechanism does not conform


def check_exact_epsilon(case):
    for answer in case.answers:
        assert sum(case.exact(answer).values()) == 1, f"the distribution of answer {answer} does not sum to 1"
    ratio, pair = exact_epsilon(case)
    realised = log_ratio(ratio)
    assert realised <= case.share, f"ε′ = {realised} of the enumeration exceeds the nominal share {case.share}"
    assert abs(float(realised) - case.entry["epsilon"]) <= 1e-12, (float(realised), case.entry["epsilon"], pair)
    return float(realised)


def check_vectors(case):
    # A series' two-layer draws (a "wave" entry) add the per-wave layer: tests/core/test_vectors.py replays them whole.
    cases = [c for c in VECTORS["streams"] if c["call"] == "question" and "wave" not in c["question"]
             and (c["question"]["kind"], c["question"]["mechanism"]) == case.key]
    assert cases, f"tests/vectors.json has no stream for {case.key}: add some to tests/make_vectors.py"
    for vector in cases:
        stream = U32Stream(vector["words"])
        assert randomize_question_stream(vector["question"], vector["true"], stream) == vector["expected"], vector["name"]
        assert stream.used == len(vector["words"]), vector["name"]
        stream = U32Stream(vector["words"])
        assert case.cls.from_entry(vector["question"]).replay(vector["true"], stream) == vector["expected"], \
            vector["name"]
        assert stream.used == len(vector["words"]), vector["name"]
    return len(cases)


def check_randomize_matches_replay(case, *, n_replay: int = 3000, n_randomize: int = 30000):
    rng = np.random.default_rng([31, *map(ord, case.cls.name)])
    for answer in exact_epsilon(case)[1]:
        replayed = counts_of(case, replay_draws(case, answer, n_replay, rng))
        drawn = counts_of(case, case.draw(answer, n_randomize, rng))
        fit = goodness_of_fit(replayed, case.exact(answer))
        assert fit > MIN_P_VALUE, f"replay of answer {answer} does not fit the exact distribution (p = {fit:.2g})"
        same = homogeneity(replayed, drawn)
        assert same > MIN_P_VALUE, f"randomize and replay of answer {answer} differ (p = {same:.2g})"


def check_goodness_of_fit(case, *, n: int = 50000):
    rng = np.random.default_rng([37, *map(ord, case.cls.name)])
    for answer in audit_answers(case):
        fit = goodness_of_fit(counts_of(case, case.draw(answer, n, rng)), case.exact(answer))
        assert fit > MIN_P_VALUE, f"randomize of answer {answer} does not fit the exact distribution (p = {fit:.2g})"


def check_empirical_epsilon(case, *, n: int = 100000):
    rng = np.random.default_rng([41, *map(ord, case.cls.name)])
    samples = {answer: counts_of(case, case.draw(answer, n, rng)) for answer in audit_answers(case)}
    bound = empirical_epsilon(case, samples)
    realised = case.entry["epsilon"]
    assert bound <= realised, f"the draws show ε ≥ {bound:.4f} (99% confidence), above ε′ = {realised:.4f}"
    return bound


def check_unbiased_and_covers(case, *, n: int = 1000, repetitions: int = REPETITIONS):
    rng = np.random.default_rng([43, *map(ord, case.cls.name)])
    truth = truth_for_coverage(case)
    rows = simulate_rows(case, lambda size: true_values_for(case, truth, size, rng), n, repetitions, rng)
    target = estimand_truth(case, truth)
    estimates = np.array([[row.estimate for row in survey] for survey in rows])
    standard_errors = known_standard_errors(case, truth, n) / math.sqrt(repetitions)
    distance = np.abs(estimates.mean(axis=0) - target) / standard_errors
    assert distance.max() <= TOLERANCE_SE, f"estimate {int(distance.argmax())} is {distance.max():.2f} SE off"
    covered = np.mean([all(r.ci_low <= s <= r.ci_high for r, s in zip(survey, target)) for survey in rows])
    assert len(rows) >= 400 and covered >= MIN_COVERAGE, f"(joint) coverage {covered:.3f}"
    # The same reports through the wire format and aggregate() give the same rows as the counts.
    reports = case.mechanism.randomize(true_values_for(case, truth, n, rng), rng)
    answers = [{case.entry["id"]: report} for report in wire(reports)]
    ones = codec.tally(case.entry, codec.encode_column(case.entry, reports))
    assert aggregate(case.design, answers) == aggregate_counts(case.design, {case.entry["id"]: (n, ones)})
    return float(distance.max()), float(covered)


def moved_inside(low: float, high: float) -> tuple[float, float]:
    """Clip [low, high] to [0, 1]; one wholly beyond an end moves inside keeping its width (the codebook's rule)."""
    width = min(high - low, 1.0)
    low, high = (1.0 - width if low >= 1 else low), (width if high <= 0 else high)
    return min(max(low, 0.0), 1.0), min(max(high, 0.0), 1.0)


def check_codebook_rederives(case, *, n: int = 3000):
    rng = np.random.default_rng([47, *map(ord, case.cls.name)])
    entry, mechanism = case.entry, case.mechanism
    reports = np.asarray(mechanism.randomize(true_values_for(case, truth_for_coverage(case), n, rng), rng))
    rows = aggregate(case.design, [{entry["id"]: report} for report in wire(reports)], level=0.95)
    book = codebook(case.design)
    names = [column["name"] for column in response_columns(case.design)]
    matrix = reports.reshape(n, -1)
    columns = {name: matrix[:, index] for index, name in enumerate(names)}
    assert len(book["estimands"]) == len(rows) == mechanism.estimands
    p_exact, q_exact = mechanism.probabilities()
    for estimand, row in zip(book["estimands"], rows, strict=True):
        assert (Fraction(estimand["p_exact"]), Fraction(estimand["q_exact"])) == (p_exact, q_exact)
        cells = columns[estimand["column"]]
        p, q = estimand["p"], estimand["q"]
        lo, hi = estimand["scale"] or (0, 1)
        width, spread = hi - lo, p - q
        if estimand["value"] is None:
            assert estimand["interval"] == "bounded-mean" and estimand["levels"] == mechanism.levels
            if "level_values" in estimand:
                assert "R = level_values[L]" in estimand["estimator"]
                values = np.array([float(Fraction(value)) for value in estimand["level_values"]])[cells]
            else:
                assert f"R = (k + 1/2)/{estimand['levels']}" in estimand["estimator"]
                values = (cells + 0.5) / estimand["levels"]
            share = values.mean()
            unit = (share - q) / spread
            least, most = estimand["report_variance"]
            se = math.sqrt(max(values.var(ddof=1), least) / n) / spread
            range_low, range_high = (float(Fraction(value)) for value in estimand["report_range"])
            r_low, r_high = mean_interval(values.sum(), (values * values).sum(), n, low=range_low, high=range_high,
                                          level=row.ci_level, variance=(least, most))
            low, high = moved_inside((r_low - q) / spread, (r_high - q) / spread)
        else:
            assert estimand["interval"] == "clopper-pearson"
            ones = int(np.count_nonzero(cells == estimand["value"]))
            share = ones / n
            unit = (share - q) / spread
            feasible = min(max(share, min(p, q)), max(p, q))
            se = math.sqrt(feasible * (1 - feasible) / (n - 1)) / abs(spread)
            alpha = (1 - row.ci_level) / estimand["simultaneous_over"]
            share_low = 0.0 if ones == 0 else float(beta_dist.ppf(alpha / 2, ones, n - ones + 1))
            share_high = 1.0 if ones == n else float(beta_dist.ppf(1 - alpha / 2, ones + 1, n - ones))
            low, high = moved_inside(*sorted(((share_low - q) / spread, (share_high - q) / spread)))
        for name, value in (("n", n), ("noisy_share", share), ("estimate", lo + width * unit),
                            ("std_error", width * se), ("ci_low", lo + width * low), ("ci_high", lo + width * high)):
            assert getattr(row, name) == pytest.approx(value, rel=1e-9, abs=1e-9), (estimand["option"], name)


def _refused(entry, report) -> bool:
    try:
        validate_report(entry, report)
    except ReportError:
        return True
    return False


def _array_refused(entry, reports) -> bool:
    try:
        check_report_array(entry, reports)
    except ReportError:
        return True
    return False


def check_domain(case, *, n: int = 2000):
    rng = np.random.default_rng([53, *map(ord, case.cls.name)])
    entry, mechanism = case.entry, case.mechanism
    highest = mechanism.highest
    drawn = np.concatenate([case.draw(answer, n, rng) for answer in audit_answers(case)])
    assert np.array_equal(check_report_array(entry, drawn), drawn)
    for report in {json.dumps(value) for value in wire(drawn)}:
        assert not _refused(entry, json.loads(report)), f"a drawn report {report} is refused"
    reachable = support(case)
    if mechanism.report != BITS:
        assert {(value,) for value in range(highest + 1)} == reachable, "the domain is not what the mechanism sends"
        for bad in (highest + 1, -1, True, False, 0.0, float(highest), "0", None, [0], [highest]):
            assert _refused(entry, bad), f"validate_report accepts {bad!r}"
        for bad in (np.array([0, highest + 1]), np.array([-1, 0]), np.array([True, False]),
                    np.array([0.0, 1.0]), np.zeros((2, 1), dtype=np.int64)):
            assert _array_refused(entry, bad), f"check_report_array accepts {bad!r}"
        return
    d = case.d
    assert highest == 1
    row = [0] * d
    for bad in ([2] + row[1:], [-1] + row[1:], [True] + row[1:], [0.0] + row[1:], row[:-1], row + [0], 0, None,
                tuple(row), [[0]] * d):
        assert _refused(entry, bad), f"validate_report accepts {bad!r}"
    zeros = np.zeros((2, d), dtype=np.int64)
    for bad in (zeros + np.eye(2, d, dtype=np.int64) * 2, zeros - np.eye(2, d, dtype=np.int64),
                zeros.astype(bool), zeros.astype(float), np.zeros((2, d - 1), dtype=np.int64),
                np.zeros((2, d + 1), dtype=np.int64), np.zeros(2, dtype=np.int64)):
        assert _array_refused(entry, bad), f"check_report_array accepts {bad!r}"
    # The mechanism's own rule: every bit vector it can send is accepted, every one it never sends refused.
    if case.view_columns is None and d <= MAX_ENUMERATED_BITS:
        vectors = list(itertools.product((0, 1), repeat=d))
        possible = reachable
    else:
        # Every bit of such a report is an independent coin strictly between 0 and 1: all vectors are possible.
        assert case.key == ("choice", "oue"), f"say which bit vectors {case.key} can send"
        vectors = [tuple(v) for v in rng.integers(0, 2, size=(200, d)).tolist()] + [(0,) * d, (1,) * d]
        possible = set(vectors)
    for vector in vectors:
        expected_refused = vector not in possible
        assert _refused(entry, list(vector)) is expected_refused, f"validate_report on {vector}"
        assert _array_refused(entry, np.array([vector])) is expected_refused, f"check_report_array on {vector}"


def worst_truth(case):
    """Return (truth for draw_true_values or a fixed answer, the estimand compared) at the planner's worst case.

    An indicator's worst case is the true share whose reported share λ is nearest 1/2 (option 0 of a choice,
    the others sharing the rest); a level mechanism's is the population of answers its planner names.
    """
    mechanism = case.mechanism
    if mechanism.report == LEVEL:
        lo, hi = case.lo_hi
        population = {lo + round(x * (hi - lo)): weight for x, weight in mechanism.worst_population().items()}
        assert all(float(answer - lo) / (hi - lo) in mechanism.worst_population() for answer in population)
        return ("population", population), 0
    p, q = (float(v) for v in mechanism.probabilities())
    target = min(max(0.5, min(p, q)), max(p, q))
    share = (target - q) / (p - q)
    kind, d = case.cls.kind, case.d
    if kind == "yes_no":
        return share, 0
    if kind == "choice":
        return (share, *[(1 - share) / (d - 1)] * (d - 1)), 0
    if kind == "multi":
        return (share,) * d, 0
    lo, hi = case.lo_hi
    return ("fixed", lo + round(share * (hi - lo))), 0


def check_planner_half_width(case, *, n: int = 2000, repetitions: int = REPETITIONS):
    rng = np.random.default_rng([59, *map(ord, case.cls.name)])
    entry, mechanism = case.entry, case.mechanism
    truth, option = worst_truth(case)
    if isinstance(truth, tuple) and truth[0] == "fixed":
        def true_draw(size):
            return np.full(size, truth[1], dtype=np.int64)
    elif isinstance(truth, tuple) and truth[0] == "population":
        answers, weights = zip(*truth[1].items())

        def true_draw(size):
            return rng.choice(np.array(answers, dtype=np.int64), size=size, p=np.array(weights) / sum(weights))
    else:
        def true_draw(size):
            return true_values_for(case, truth, size, rng)
    planned = plan_question(entry, respondents=n, margin=0.05)
    rows = simulate_rows(case, true_draw, n, repetitions, rng)
    lo, hi = case.lo_hi
    scale = hi - lo if case.cls.kind == "number" else 1
    p, q = (float(v) for v in mechanism.probabilities())
    estimates = np.array([survey[option].estimate for survey in rows]) / scale
    if mechanism.report == LEVEL:
        widths = [(survey[option].ci_high - survey[option].ci_low) / (2 * scale) for survey in rows]
    else:
        # The interval's half-width before it is clipped to [0, 1] (the worst case may sit at a bound).
        widths = []
        for survey in rows:
            ones = round(survey[option].noisy_share * n)
            low, high = clopper_pearson(ones, n, level=1 - 0.05 / planned.simultaneous_over)
            widths.append((high - low) / (2 * (p - q)))
    simulated = float(np.mean(widths))
    assert simulated == pytest.approx(planned.half_width, rel=0.05), (simulated, planned.half_width)
    spread = z_value(0.95, planned.simultaneous_over) * estimates.std(ddof=1)
    if mechanism.report == LEVEL:
        # The interval valid at every n is wider than the normal one the estimates' spread gives, by under 2.
        assert spread * 0.9 < planned.half_width < 2 * spread, (spread, planned.half_width)
    else:
        assert spread == pytest.approx(planned.half_width, rel=0.10), (spread, planned.half_width)
    return simulated / planned.half_width


def _words(*texts):
    for text in texts:
        assert isinstance(text, str) and text.strip(), f"empty text {text!r}"
        assert "{" not in text and "}" not in text, f"a placeholder is left in {text!r}"


def check_interface(case):
    entry, cls, mechanism = case.entry, case.cls, case.mechanism
    assert isinstance(mechanism, cls) and isinstance(mechanism, mechanism_class(entry["kind"], entry["mechanism"]))
    assert (cls.kind, cls.name) == (entry["kind"], entry["mechanism"])
    assert cls.from_entry(json.loads(json.dumps(entry))) == mechanism == cls.from_entry(dict(entry))
    # build and choose make this entry again, at its share.
    fields, realised = cls.build(case.question, case.share)
    assert list(fields)[0] == "mechanism" and all(entry[key] == value for key, value in fields.items())
    assert float(realised) == entry["epsilon"] and realised <= case.share
    forced = None if case.question.mechanism == "auto" else case.question.mechanism
    chosen, chosen_fields, _ = choose(case.question, case.share, forced=forced)
    assert chosen is registered(cls) and chosen_fields == fields
    assert 0 <= cls.smallest_epsilon() <= float(case.share)
    # Shape, estimands, domain and words.
    assert mechanism.report in (BIT, INDEX, BITS, LEVEL)
    assert mechanism.estimands == (case.d if cls.kind in ("choice", "multi") else 1)
    assert mechanism.highest == (max(key[0] for key in support(case)) if mechanism.report != BITS else 1)
    p, q = mechanism.probabilities()
    assert isinstance(p, Fraction) and isinstance(q, Fraction) and 0 <= q < p <= 1
    assert mechanism.response_probabilities() == (float(p), float(q))
    columns = [column for column in response_columns(case.design) if column["question"] == entry["id"]]
    meanings = mechanism.meanings(p, q)
    assert len(meanings) == len(columns)
    _words(mechanism.domain(), mechanism.title, mechanism.list_title, *meanings,
           mechanism.protection_note(format_epsilon(entry["epsilon"])), mechanism.kept_sentence(percent(p)))
    assert isinstance(mechanism.codebook_fields(), dict)
    # A categorical answer's likelihood per category is its exact report distribution; no other kind has one.
    if mechanism.categories is None:
        with pytest.raises(ValueError, match="no categorical answer"):
            mechanism.likelihood(np.zeros(1, dtype=np.int64))
    else:
        assert mechanism.categories == (case.d if cls.kind == "choice" else 2)
        if case.view_columns is None:
            keys = sorted(set().union(*(case.exact(answer) for answer in case.answers)))
            table = mechanism.likelihood(np.array(keys if mechanism.report == BITS else [key[0] for key in keys]))
            assert table.shape == (len(keys), mechanism.categories)
            for row, key in zip(table, keys):
                expected = [float(case.exact(answer).get(key, 0)) for answer in case.answers]
                assert row.tolist() == pytest.approx(expected, rel=1e-12, abs=1e-300), key
    # Value labels name every value a non-level report column holds, distinctly, and nothing else.
    labels = mechanism.value_labels()
    if mechanism.report == LEVEL:
        assert labels == {}
    else:
        assert set(labels) == set(range(mechanism.highest + 1)) and len(set(labels.values())) == len(labels)
        _words(*labels.values())
    assert any(denominator % (p.denominator) == 0 for denominator in mechanism.exact_denominators())
    assert any(denominator % (q.denominator) == 0 for denominator in mechanism.exact_denominators())
    if isinstance(mechanism, LevelMechanism):
        check_level_interface(case, p, q)
    else:
        check_indicator_interface(case, p, q)


def _indicator(case, key: tuple, option: int):
    """Return the estimand ``option``'s indicator in a report's view key, or None if the view does not show it."""
    report = case.mechanism.report
    if report == BIT:
        return key[0]
    if report == INDEX:
        return int(key[0] == option)
    columns = case.view_columns or tuple(range(case.d))
    return key[columns.index(option)] if option in columns else None


def _holds(case, answer, option: int):
    """Return whether estimand ``option`` is true of an answer (None for a number strictly inside the range)."""
    kind = case.cls.kind
    if kind == "yes_no":
        return answer == 1
    if kind == "choice":
        return answer == option
    if kind == "multi":
        return answer[option] == 1
    lo, hi = case.lo_hi
    return {lo: False, hi: True}.get(answer)


def check_indicator_interface(case, p, q):
    """Every estimand is an indicator that is 1 w.p. p when true and q when not (by enumeration), and the planner's
    worst-case variance is max λ(1 − λ)/(p − q)² over λ between q and p."""
    checked = 0
    for answer in case.answers:
        table = case.exact(answer)
        for option in range(case.mechanism.estimands):
            holds = _holds(case, answer, option)
            if holds is None or _indicator(case, next(iter(table)), option) is None:
                continue
            share = sum((prob for key, prob in table.items() if _indicator(case, key, option)), Fraction(0))
            assert share == (p if holds else q), (answer, option, share)
            checked += 1
    assert checked, "no indicator was checked"
    nearest = min(max(Fraction(1, 2), q), p)
    assert case.mechanism.worst_variance() == pytest.approx(float(nearest * (1 - nearest) / (p - q) ** 2), rel=1e-12)


def check_level_interface(case, p, q):
    mechanism = case.mechanism
    levels = mechanism.levels
    values, scores = mechanism.level_values(), mechanism.level_scores()
    assert len(values) == len(scores) == levels == mechanism.highest + 1
    assert all(isinstance(v, Fraction) and 0 < v < 1 for v in values)
    assert all(isinstance(s, int) and not isinstance(s, bool) for s in scores)
    assert [mechanism.level_score(level) for level in range(levels)] == scores
    assert mechanism.level_value_array(np.arange(levels)).tolist() == [float(v) for v in values]
    # The score pieces cover every level once and reproduce the scores (the store's tally trigger uses them).
    pieced = {}
    for first, last, slope, offset in mechanism.score_pieces():
        for level in range(first, last + 1):
            assert level not in pieced, f"level {level} is in two score pieces"
            pieced[level] = slope * level + offset
    assert [pieced.get(level) for level in range(levels)] == scores
    # R is affine in the score (the estimator reads R from Σs and Σs²).
    slope = (values[-1] - values[0]) / (scores[-1] - scores[0])
    assert all(values[0] + slope * (s - scores[0]) == v for s, v in zip(scores, values))
    assert mechanism.levels_of_band() in mechanism.exact_denominators()
    # The mean line: E[R | x] = q + (p − q)·(x − lo)/(hi − lo) exactly, for every answer.
    for answer in case.answers:
        mean = sum(prob * values[key[0]] for key, prob in case.exact(answer).items())
        assert mean == q + (p - q) * _unit(case, answer), answer
    # The design's worst single answer bounds every answer's exact variance and is nearly attained; the
    # planner's worst population adds the spread of the answers to it.
    variances = [level_variance(case, {x: 1.0}) / float(p - q) ** 2 for x in case.answers]
    assert max(variances) <= mechanism.answer_worst_variance() * (1 + 1e-9)
    assert max(variances) >= 0.95 * mechanism.answer_worst_variance()
    assert mechanism.answer_worst_variance() < mechanism.worst_variance()
    fields = mechanism.codebook_fields()
    assert fields["levels"] == levels and fields["value"] is None


# The parametrized conformance tests: one case per (check, mechanism)


def _ids(cls) -> str:
    """Name a mechanism in test ids: warner, grr, …; a name two kinds share gets its kind (multi_rr)."""
    if (cls.kind, cls.name) == ("yes_no", "rr"):
        return "warner"
    shared = sum(mechanism.name == cls.name for mechanism in MECHANISMS) > 1
    return f"{cls.kind}_{cls.name}" if shared else cls.name


by_mechanism = pytest.mark.parametrize("cls", MECHANISMS, ids=_ids)


def test_the_registry_lists_each_mechanism_once_and_every_one_has_an_exact_distribution():
    keys = [(cls.kind, cls.name) for cls in MECHANISMS]
    assert len(set(keys)) == len(keys)
    assert set(keys) <= set(EXACT), f"add exact distributions for {sorted(set(keys) - set(EXACT))}"


@by_mechanism
def test_exact_epsilon_is_the_recorded_one_and_within_the_share(cls):
    check_exact_epsilon(make_case(cls))


@by_mechanism
def test_browser_vectors_replay(cls):
    check_vectors(make_case(cls))


@by_mechanism
def test_randomize_has_the_distribution_of_the_browser_replay(cls):
    check_randomize_matches_replay(make_case(cls))


@by_mechanism
def test_randomize_fits_the_exact_distribution(cls):
    check_goodness_of_fit(make_case(cls))


@by_mechanism
def test_empirical_epsilon_lower_bound_stays_within_epsilon(cls):
    case = make_case(cls)
    bound = check_empirical_epsilon(case)
    # The audit has power: it sees a good part of ε′ (it is no vacuous bound below 0).
    assert bound > 0.2 * case.entry["epsilon"], bound


@pytest.mark.slow
@by_mechanism
def test_estimates_are_unbiased_and_intervals_cover_through_aggregate(cls):
    check_unbiased_and_covers(make_case(cls))


@by_mechanism
def test_codebook_rederives_the_estimates(cls):
    check_codebook_rederives(make_case(cls))


@by_mechanism
def test_domain_accepts_every_draw_and_refuses_the_rest(cls):
    check_domain(make_case(cls))


@pytest.mark.slow
@by_mechanism
def test_planner_half_width_matches_simulation_at_the_worst_case(cls):
    check_planner_half_width(make_case(cls))


def check_debiased_range(case, *, draws: int = 400):
    mechanism = case.mechanism
    low, high = mechanism.debiased_range()
    assert mechanism.estimand_range() == (case.lo_hi if case.cls.kind == "number" else (0.0, 1.0))
    if mechanism.report == LEVEL:
        singles = [[mechanism.level_score(level), mechanism.level_score(level) ** 2] for level in range(mechanism.levels)]
    else:
        rng = np.random.default_rng([53, *map(ord, case.cls.name)])
        reports = np.asarray(mechanism.randomize(true_values_for(case, truth_for_coverage(case), draws, rng), rng))
        singles = [codec.tally(case.entry, codec.encode_column(case.entry, reports[index:index + 1]))
                   for index in range(draws)]
    values = np.array([[estimate.estimate for estimate in mechanism.estimates([int(x) for x in ones], 1, 0.95)]
                       for ones in singles])
    assert values.min() >= low - 1e-9 and values.max() <= high + 1e-9, (values.min(), values.max(), low, high)
    assert values.min() == pytest.approx(low, abs=1e-9) and values.max() == pytest.approx(high, abs=1e-9)


@by_mechanism
def test_debiased_range_holds_every_report_and_is_tight(cls):
    check_debiased_range(make_case(cls))


@by_mechanism
def test_interface_is_complete_and_consistent(cls):
    check_interface(make_case(cls))


# Planted broken mechanisms: the same checks must fail on them


class HalfFlipWarner(WarnerRR):
    """Warner RR whose numpy draw flips with half the probability (threshold >> 1): ε really ln((2^53 − T/2)/(T/2))."""

    def randomize(self, true_values, rng=None):
        return randomize_rr(true_values, flip_threshold=self.flip_threshold >> 1, rng=rng)


class SkewedGRR(GeneralizedRR):
    """GRR whose numpy draw moves half of its replaced reports to option 0."""

    def randomize(self, true_values, rng=None):
        rng = default_rng(rng)
        x = np.asarray(true_values, dtype=np.int64)
        reports = super().randomize(x, rng)
        moved = (reports != x) & (rng.random(x.shape) < 0.5)
        return np.where(moved, 0, reports)


CHECKS = {
    "exact_epsilon": check_exact_epsilon,
    "vectors": check_vectors,
    "randomize_matches_replay": check_randomize_matches_replay,
    "goodness_of_fit": check_goodness_of_fit,
    "empirical_epsilon": check_empirical_epsilon,
    "unbiased_and_covers": check_unbiased_and_covers,
    "codebook_rederives": check_codebook_rederives,
    "domain": check_domain,
    "planner_half_width": check_planner_half_width,
    "debiased_range": check_debiased_range,
    "interface": check_interface,
}

# Which checks see each planted bug. The others look at what the bug leaves alone (the entry's parameters, the
# scalar replay, the codebook's arithmetic on whatever reports it gets, the domain, the words).
CATCHES = {
    # At the planner's worst case (θ = 1/2) Warner's reported share is 1/2 whatever the flip: no check can see it there.
    HalfFlipWarner: {"randomize_matches_replay", "goodness_of_fit", "empirical_epsilon", "unbiased_and_covers"},
    SkewedGRR: {"randomize_matches_replay", "goodness_of_fit", "empirical_epsilon", "unbiased_and_covers",
                "planner_half_width"},
}


@pytest.mark.parametrize("broken, check", [(broken, check) for broken in CATCHES for check in CHECKS],
                         ids=[f"{broken.__name__}-{check}" for broken in CATCHES for check in CHECKS])
def test_a_planted_broken_mechanism_fails_exactly_the_checks_that_see_its_bug(broken, check):
    case = make_case(broken)
    assert case.cls is broken and type(case.mechanism) is broken
    if check in CATCHES[broken]:
        with pytest.raises(AssertionError):
            CHECKS[check](case)
    else:
        CHECKS[check](case)


def test_the_broken_mechanisms_are_not_registered():
    assert HalfFlipWarner not in MECHANISMS and SkewedGRR not in MECHANISMS
    assert all(type(mechanism_for(make_case(broken).entry)) is registered(broken) for broken in CATCHES)


# A finding: the planner's worst case of a level mechanism is over one answer, not over populations


LEVEL_CLASSES = [cls for cls in MECHANISMS if issubclass(cls, LevelMechanism)]


@pytest.mark.parametrize("cls", LEVEL_CLASSES, ids=_ids)
def test_the_planner_worst_case_bounds_every_population(cls):
    """The planner's worst case of a level mechanism is over populations, not single answers: E[V(x)] + Var(x)."""
    case = make_case(cls)
    lo, hi = case.lo_hi
    p, q = case.mechanism.probabilities()
    worst = case.mechanism.worst_variance()
    rng = np.random.default_rng(61)
    populations = [{lo: 0.5, hi: 0.5}, {lo: 1.0}, {(lo + hi) // 2: 1.0}]
    populations += [dict(zip(rng.choice(case.answers, size=3, replace=False).tolist(), rng.dirichlet(np.ones(3))))
                    for _ in range(40)]
    for population in populations:
        variance = level_variance(case, population) / float(p - q) ** 2
        assert variance <= worst * (1 + 1e-9), (population, variance, worst)
    assert level_variance(case, {lo: 0.5, hi: 0.5}) / float(p - q) ** 2 == pytest.approx(worst, rel=1e-9)

