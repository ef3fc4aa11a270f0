"""The one interface every randomizer implements: what the design, aggregation, codebook, planner and pages ask of it.

A mechanism is a class named by its role, with the design entry's ``kind`` and ``name``
(the entry's ``mechanism``) as class attributes; an instance is a frozen dataclass holding
exactly the integer parameters of one design entry (``from_entry``), so it can be rebuilt
from ``design.json`` alone. The class builds those parameters from a question and its
budget (``build``); the instance answers everything else: the exact (p, q) of its indicators
(every estimand is an indicator whose report is 1 with probability q + (p − q)·[true]), or
for a level mechanism the values of its output levels; its variances; the Python mirrors of
the browser's draw (vectorised for simulation, scalar for the draw-for-draw replay); its
report's domain; its estimates; its codebook entry; and its sentences in plain words.
Pure: no Flask, no SQL, no I/O.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from dataclasses import MISSING, dataclass, fields, replace
from decimal import Decimal
from fractions import Fraction
from typing import Any, ClassVar, Mapping

import numpy as np

from ..anytime import anytime_estimate
from ..consistent import consistent_view
from ..estimators import ConsistentView, Estimate, debias_indicators
from ..posterior import Prior, binomial_interval, normal_interval, scaled_interval
from .common import TWO53, check_threshold, uniform_variance, worst_case_spread
from .mixture import mixture_population_worst

# The four shapes a report takes on the wire and in the store.
BIT, INDEX, BITS, LEVEL = "bit", "index", "bits", "level"


# Design entry keys whose field has another name.
_ENTRY_KEYS = {"lo": "min", "hi": "max"}


@dataclass(frozen=True)
class Mechanism(ABC):
    """A local randomizer of one question kind; an instance holds one design entry's integer parameters.

    ``report`` is the shape of its report: BIT (0/1), INDEX (an option index), BITS (a list
    of d bits) or LEVEL (an output level tallied by its integer score). ``gain_needed`` is the
    share of variance a newer mechanism must save over every classic one of its kind before
    the design prefers it (0 for a classic). ``title`` names it in words; ``label`` is the
    short name a menu offers where a definition may choose it, at place ``menu`` (None: only
    the design chooses it).
    """

    kind: ClassVar[str]
    name: ClassVar[str]
    title: ClassVar[str]
    report: ClassVar[str]
    gain_needed: ClassVar[float] = 0.0
    label: ClassVar[str] = ""
    menu: ClassVar[int | None] = None
    # Whether a series' per-wave layer can randomize its report again (mechanisms/waves.py): a report
    # domain the layer keeps (a bit, an option index, an unconstrained bit list, levels affine in R).
    layered: ClassVar[bool] = False

    @property
    def list_title(self) -> str:
        """The mechanism in words where a table lists questions of every kind (``title`` unless it needs more)."""
        return self.title

    @classmethod
    @abstractmethod
    def build(cls, question, share: Decimal) -> tuple[dict, Decimal]:
        """Return the design entry's fields (``mechanism`` first) and the realised ε′ ≤ share; ValueError if impossible."""

    @classmethod
    def from_entry(cls, entry: Mapping) -> Mechanism:
        """Return the mechanism of a design entry: each dataclass field read from the entry, thresholds checked.

        A field reads the entry key of its name (``lo``/``hi`` read ``min``/``max``); one with
        a default may be absent. ValueError names the question and what is missing or wrong.
        """
        values = {}
        for name, key, required in cls.entry_keys():
            if key not in entry:
                if not required:
                    continue
                raise ValueError(f"question {entry.get('id')!r} ({cls.kind}/{cls.name}) needs {key!r} in its entry")
            value = entry[key]
            if name == "options":
                value = options_of(entry)
            elif name.endswith("_threshold"):
                check_threshold(name, value)
            values[name] = value
        return cls(**values)

    @classmethod
    @functools.cache
    def entry_key_names(cls) -> tuple[str, ...]:
        """Return the entry keys the class's fields are read from, in order."""
        return tuple(key for _, key, _ in cls.entry_keys())

    @classmethod
    @functools.cache
    def entry_keys(cls) -> tuple[tuple[str, str, bool], ...]:
        """Return (field, entry key, required) for each of the class's fields, in order."""
        return tuple((field.name, _ENTRY_KEYS.get(field.name, field.name), field.default is MISSING)
                     for field in fields(cls))

    @classmethod
    def smallest_epsilon(cls) -> float:
        """Return a share of the budget from which ``build`` always succeeds (0 when any share works)."""
        return 0.0

    @property
    @abstractmethod
    def estimands(self) -> int:
        """The number of estimands (aggregate rows): d options, or 1."""

    @abstractmethod
    def probabilities(self) -> tuple[Fraction, Fraction]:
        """Return the exact (p, q): the chance an indicator's report is 1 when it is true, and when not."""

    def response_probabilities(self) -> tuple[float, float]:
        """Return (p, q) as floats."""
        p, q = self.probabilities()
        return float(p), float(q)

    def variance_at(self, truth) -> float:
        """Return n·Var of one estimate when its true share (or a number's scaled mean x in [0, 1]) is ``truth``.

        λ(1 − λ)/(p − q)² with λ = q + (p − q)·truth, the variance of the reported share
        (Warner 1965; Wang et al. 2017).
        """
        p, q = self.probabilities()
        lam = q + (p - q) * Fraction(truth)
        return float(lam * (1 - lam) / (p - q) ** 2)

    def worst_variance(self) -> float:
        """Return the largest n·Var of one estimate over the unknown truth (the planner's worst case)."""
        p, q = self.response_probabilities()
        return worst_case_spread(p, q) / (p - q) ** 2

    def selection_variance(self):
        """Return the variance by which the design compares the mechanisms of this kind (default: the worst case)."""
        return self.worst_variance()

    def ranking_variance(self):
        """Return the variance by which the design ranks the classic mechanisms of this kind among themselves."""
        return self.selection_variance()

    @abstractmethod
    def randomize(self, true_values, rng=None) -> np.ndarray:
        """Return reports of n true answers drawn as the browser draws them (numpy; ``rng`` seedable, OS entropy by default)."""

    @abstractmethod
    def replay(self, true_value, stream):
        """Return the browser's report of one true answer from a replay stream of 32-bit words, draw for draw."""

    @property
    @abstractmethod
    def highest(self) -> int:
        """The largest integer a report (or one of its bits) can hold."""

    @abstractmethod
    def domain(self) -> str:
        """Return the report's domain in words, after "must be" ("0 or 1", "an option index from 0 to 4", …)."""

    def report_error(self, qid: str, ones: int) -> str | None:
        """Return why a list of bits with ``ones`` ones is not a report of this mechanism, or None."""
        return None

    def batch_error(self, qid: str, ones: np.ndarray) -> str | None:
        """Return why an array of bit rows with these row sums are not all reports of this mechanism, or None."""
        return None

    @abstractmethod
    def estimates(self, ones: list[int], n: int, level) -> list[Estimate]:
        """Return one unbiased estimate per estimand from n reports and their tallies (``codec.tally``)."""

    def report_range(self) -> tuple[Fraction, Fraction]:
        """Return the least and greatest value of one report's R, whose mean is q + (p − q)·truth: (0, 1) for an indicator."""
        return Fraction(0), Fraction(1)

    def estimand_range(self) -> tuple[float, float]:
        """Return the feasible range of an estimate: [0, 1] for a share, the question's [min, max] for a number's mean."""
        if self.kind == "number":
            return float(self.lo), float(self.hi)
        return 0.0, 1.0

    def debiased_range(self) -> tuple[float, float]:
        """Return the least and greatest debiased value of one report, lo + (R − q)/(p − q)·(hi − lo): its mean is the estimand."""
        p, q = self.probabilities()
        lo, hi = self.estimand_range()
        low, high = ((value - q) / (p - q) for value in self.report_range())
        return lo + float(low) * (hi - lo), lo + float(high) * (hi - lo)

    def debiased_variance(self) -> float:
        """Return the largest variance of one report's debiased value over every population (``worst_variance`` in its units)."""
        lo, hi = self.estimand_range()
        return self.worst_variance() * (hi - lo) ** 2

    def anytime_estimates(self, ones: list[int], n: int, level, planned: float) -> list[Estimate]:
        """Return ``estimates`` with confidence sequences tuned for ``planned`` reports, simultaneous over the estimands."""
        debiased, feasible = self.debiased_range(), self.estimand_range()
        variance = self.debiased_variance()
        return [anytime_estimate(estimate, debiased=debiased, feasible=feasible, level=level, planned=planned,
                                 simultaneous_over=self.estimands, variance=variance)
                for estimate in self.estimates(ones, n, level)]

    def posterior_estimates(self, ones: list[int], n: int, level, prior: Prior) -> list[Estimate]:
        """Return ``estimates`` with equal-tailed posterior intervals under ``prior`` (``survey.core.posterior``).

        Exact: each estimand's count is binomial with chance q + (p − q)θ; a single choice's options
        take the marginals of the symmetric Dirichlet(a, …, a), Beta(a, (d − 1)a).
        """
        p, q = self.response_probabilities()
        share_prior = prior.for_option(self.estimands) if self.kind == "choice" else prior
        low, high = self.estimand_range()
        return [replace(estimate, ci_low=ends[0], ci_high=ends[1])
                for estimate, count in zip(self.estimates(ones, n, level), ones)
                for ends in [scaled_interval(binomial_interval(int(count), n, p, q, share_prior, level), low, high)]]

    def exact_denominators(self) -> tuple[int, ...]:
        """Return the denominators the codebook writes p and q over, the first that fits (the browser's 2^53)."""
        return (TWO53,)

    @abstractmethod
    def meanings(self, p: Fraction, q: Fraction) -> list[str]:
        """Return what each of its columns in responses.csv holds, in words (one per bit, or one)."""

    @property
    def categories(self) -> int | None:
        """The number of true answers a categorical question can have (2 for yes/no, d for a choice), else None.

        Only a categorical answer has a likelihood per category (``likelihood``): a multiple choice's
        answer is a subset and a number's is a value, so they have none.
        """
        return None

    def likelihood(self, reports: np.ndarray) -> np.ndarray:
        """Return P(report | true category c) for each report (row) and category c (column), from the exact (p, q).

        ``reports`` are wire-format reports as an integer array: one per row for a scalar report,
        a row of d bits for a bit list. This is the known misclassification matrix that regression
        with randomized variables rests on (van den Hout & van der Heijden 2002).
        """
        raise ValueError(f"a {self.kind} question ({self.title}) has no categorical answer: its reports have no "
                         "likelihood per category; only yes/no and single-choice questions do")

    def value_labels(self) -> dict[int, str]:
        """Return the words of each value its responses column holds, for SPSS and Stata value labels ({} for none).

        A bit-list report's columns share them; a level report has too many values to name.
        """
        return {}

    def codebook_fields(self) -> dict[str, Any]:
        """Return the fields an estimand of this mechanism adds to, or changes in, the codebook."""
        return {}

    @abstractmethod
    def protection_note(self, epsilon: str) -> str:
        """Return the respondent's sentence on how the answer is randomized on the device (ε′ as ``epsilon``)."""

    @abstractmethod
    def kept_sentence(self, keep: str) -> str:
        """Return the survey builder's sentence on what is kept of a true answer (p as the percentage ``keep``)."""


@dataclass(frozen=True)
class OptionMechanism(Mechanism):
    """A mechanism of a choice or multi-select question: one estimand per option."""

    options: tuple[str, ...]

    @property
    def d(self) -> int:
        """The number of options."""
        return len(self.options)

    @property
    def estimands(self) -> int:
        return self.d

    def selection_variance(self) -> float:
        """n·Var of one option's estimate when the answers are uniform (f = 1/d): how choice encodings compete."""
        return uniform_variance(*self.probabilities(), self.d)

    def consistent(self, ones: list[int], n: int, estimates: list[Estimate]) -> ConsistentView:
        """Return the consistent view of a single choice: shares ≥ 0 summing to 1 inside the tightened simultaneous intervals.

        Counts of a report naming one option (INDEX) are one multinomial draw; a bit list's are indicators.
        """
        p, q = self.response_probabilities()
        return consistent_view(ones, n, p=p, q=q, multinomial=self.report == INDEX,
                               lows=[estimate.ci_low for estimate in estimates],
                               highs=[estimate.ci_high for estimate in estimates])


@dataclass(frozen=True)
class BitVectorMechanism(OptionMechanism):
    """A mechanism whose report is a list of d bits, bit i the indicator of option i."""

    report: ClassVar[str] = BITS

    @property
    def highest(self) -> int:
        return 1

    def domain(self) -> str:
        return f"a list of {self.d} values, each 0 or 1"

    def value_labels(self) -> dict[int, str]:
        return {0: "option not reported", 1: "option reported"}

    def estimates(self, ones, n, level) -> list[Estimate]:
        """Debias each option's count with its (p, q), intervals simultaneous over the options (Bonferroni)."""
        p, q = self.response_probabilities()
        return debias_indicators(ones, n, p=p, q=q, level=level)


class LevelMechanism(Mechanism):
    """A number mechanism whose report is an output level L, tallied as Σs(L) and Σs(L)² of its integer score.

    The level's value R(L) in (0, 1) has mean q + (p − q)x for the answer x scaled to [0, 1]
    (Wang et al. 2019), so its mean is estimated from Σs and Σs² with an interval for a bounded mean
    (survey.core.bounded_mean) that holds at every n.
    """

    report: ClassVar[str] = LEVEL

    @property
    def estimands(self) -> int:
        return 1

    @property
    @abstractmethod
    def levels(self) -> int:
        """The number of output levels."""

    @property
    def highest(self) -> int:
        return self.levels - 1

    def domain(self) -> str:
        return f"an output level from 0 to {self.levels - 1}"

    @abstractmethod
    def level_scores(self) -> list[int]:
        """Return the integer score s(L) of every level; |s| stays small enough for int64 tallies."""

    def level_score(self, level: int) -> int:
        """Return the score of one level, as ``level_scores()[level]`` without the list."""
        return self.level_scores()[level]

    @abstractmethod
    def level_values(self) -> list[Fraction]:
        """Return the exact value R(L) in (0, 1) of every level, whose mean is q + (p − q)x."""

    @property
    @abstractmethod
    def branch_weight(self) -> Fraction:
        """The chance β that a report comes from the piecewise branch (1 for the piecewise mechanism alone)."""

    def worst_population(self) -> dict[float, float]:
        """Return the population of answers (x in [0, 1] → share) whose mean has the largest variance."""
        return mixture_population_worst(self.ratio_a, self.ratio_b, self.branch_weight)[1]

    def worst_variance(self) -> float:
        """Return the largest n·Var of the mean's estimate over every population: E[V(x)] + Var(x) at its worst.

        Not the worst single answer: a population split between the two ends adds the spread of
        the answers themselves, as an indicator's worst case λ(1 − λ) does.
        """
        return mixture_population_worst(self.ratio_a, self.ratio_b, self.branch_weight)[0]

    @abstractmethod
    def answer_worst_variance(self) -> float:
        """Return the largest n·Var of one report's estimate over single answers x (how the design compares)."""

    @abstractmethod
    def least_report_variance(self) -> float:
        """Return the least variance of one report's level value R over answers x (positive: every level can occur)."""

    def report_variance_range(self) -> tuple[float, float]:
        """Return (least, most) variance of R for one report: least over answers, most over populations of answers."""
        p, q = self.probabilities()
        return self.least_report_variance(), self.worst_variance() * float(p - q) ** 2

    def selection_variance(self) -> float:
        return self.answer_worst_variance()

    def posterior_estimates(self, ones: list[int], n: int, level, prior: Prior) -> list[Estimate]:
        """Return ``estimates`` with posterior intervals of the scaled mean under ``prior``: approximate.

        A level report has no closed-form likelihood of the mean, so the likelihood is the normal one
        of the unbiased estimate with its standard error (``posterior.normal_interval``).
        """
        low, high = self.estimand_range()
        rows = []
        for estimate in self.estimates(ones, n, level):
            center = None if estimate.estimate is None else (estimate.estimate - low) / (high - low)
            spread = None if estimate.std_error is None else estimate.std_error / (high - low)
            ends = scaled_interval(normal_interval(center, spread, prior, level), low, high)
            rows.append(replace(estimate, ci_low=ends[0], ci_high=ends[1]))
        return rows

    def report_range(self) -> tuple[Fraction, Fraction]:
        """Return the least and greatest R(L) over the output levels."""
        values = self.level_values()
        return min(values), max(values)

    def level_value_array(self, levels: np.ndarray) -> np.ndarray:
        """Return R(L) as floats for an array of levels."""
        return np.array([float(value) for value in self.level_values()])[levels]

    @abstractmethod
    def score_pieces(self) -> list[tuple[int, int, int, int]]:
        """Return the score as pieces (first level, last level, slope, offset): s(L) = slope·L + offset on each.

        The store's tally trigger computes the score from them without naming the mechanism.
        """

    def exact_denominators(self) -> tuple[int, ...]:
        return (self.levels_of_band(),)

    @abstractmethod
    def levels_of_band(self) -> int:
        """Return G = a + b, the denominator of p = a/G and q = b/G."""

    @abstractmethod
    def estimator_sentence(self) -> str:
        """Return how the codebook's reader finds R from the column of levels (the start of the estimator)."""

    def codebook_fields(self) -> dict[str, Any]:
        least, most = self.report_variance_range()
        low, high = self.report_range()
        return {"value": None, "interval": "bounded-mean", "levels": self.levels,
                "report_range": [f"{low.numerator}/{low.denominator}", f"{high.numerator}/{high.denominator}"],
                "report_variance": [least, most],
                "estimator": (f"not one indicator: {self.estimator_sentence()}, "
                              "r = mean(R) and s² = the sample variance of R (divisor n - 1), raised to "
                              "report_variance[0]: noisy_share = r; estimate = (r - q)/(p - q); "
                              "std_error = s/(sqrt(n)(p - q)); the interval is "
                              "survey.core.bounded_mean.mean_interval(sum R, sum R², n, low, high = report_range, "
                              "level = ci_level, variance = report_variance) on the mean of R, a test by betting "
                              "valid at every n (Waudby-Smith & Ramdas 2024): with u = (R - low)/(high - low), "
                              "S1 = Σu, S2 = Σu², T = ln(2/(1 - ci_level)), most = min(max(report_variance[1]/"
                              "(high - low)², 1e-12), 1/4) and least = min(report_variance[0]/(high - low)², most), "
                              "the bets are K points in geometric progression from λ1 = sqrt(2T/(n·most)) to "
                              "λK = max(min(sqrt(2T/(n·least)), 64), λ1) (64 when least = 0), "
                              "K = ceil(log2(λK/λ1) - 1e-9) + 1; a mean m is rejected when the sum over the bets "
                              "with λm < 1 of exp(n[w ln(1 + λ(u0 - m)) + (1 - w) ln(1 - λm)]), divided by K, "
                              "reaches exp(T), with w = S1²/(n·S2) and u0 = S2/S1 (both 0 when S2 = 0; the "
                              "two-point law with the data's n, S1, S2, whose wealth bounds every such data's "
                              "from below); the lower end is 0 when m = 0 is not rejected, else, from r = 0 and "
                              "a = S1/n, 44 times m = (r + a)/2 replaces r if rejected and a if not, and the "
                              "end is r; the upper end is 1 minus the same on 1 - u (S1 → n - S1, "
                              "S2 → n - 2·S1 + S2); both ends are mapped back by low + (high - low)·end, then "
                              "through (R - q)/(p - q) to x1 <= x2 and clipped to [0, 1], except that one wholly "
                              "beyond an end (x1 >= 1 or x2 <= 0) is moved inside keeping its width "
                              "c = min(x2 - x1, 1): [1 - c, 1] or [0, c]; then "
                              "mapped by min + (max - min)x and std_error multiplied by max - min (Wang et al. 2019)")}


def options_of(entry: Mapping) -> tuple[str, ...]:
    """Return a choice or multi entry's option labels, or raise ValueError unless it has some."""
    options = entry.get("options")
    if not isinstance(options, (list, tuple)) or not options:
        raise ValueError(f"question {entry.get('id')!r} needs a non-empty options list, got {options!r}")
    return tuple(options)


def bits_meanings(options, sentence) -> list[str]:
    """Return one column meaning per option of a bit-vector report, from ``sentence(label)``."""
    return [sentence(label) for label in options]
