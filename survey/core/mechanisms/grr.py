"""Generalized randomized response for a choice question (Wang et al. 2017): keep the option, else name another."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from fractions import Fraction
from typing import Sequence

import numpy as np

from ..estimators import Estimate, check_count, check_counts, check_probability, debias_binary
from ..words import percent_up
from ..wording import tr
from .base import INDEX, OptionMechanism
from .common import (
    CTX,
    MAX_OPTIONS,
    TWO53,
    as_decimal,
    bern53,
    check_d,
    check_integer,
    default_rng,
)


def grr_keep_threshold(*, epsilon, d: int) -> int:
    """Return T with P(keep) = T/2^53, T = floor(2^53 e^eps/(e^eps+d-1)).

    Keep the true option, else report one of the d-1 others uniformly, so
    e^eps' = T(d-1)/(2^53-T) <= e^eps.
    """
    eps = as_decimal(epsilon)
    check_d(d)
    e = CTX.exp(eps)
    ratio = CTX.divide(CTX.multiply(Decimal(TWO53), e), CTX.add(e, Decimal(d - 1)))
    threshold = int(ratio.to_integral_value(rounding=ROUND_FLOOR))
    while grr_epsilon(threshold, d) > eps:
        threshold -= 1
    return threshold


def grr_epsilon(keep_threshold: int, d: int) -> Decimal:
    """Return the realised epsilon ln(T(d-1)/(2^53-T)) of a GRR keep threshold."""
    t = keep_threshold
    return CTX.ln(CTX.divide(Decimal(t * (d - 1)), Decimal(TWO53 - t)))


def grr_probabilities(keep_threshold: int, d: int) -> tuple[Fraction, Fraction]:
    """Return the exact (p, q) of GRR: p = T/2^53, q = (1 − p)/(d − 1)."""
    p = Fraction(keep_threshold, TWO53)
    return p, (1 - p) / (d - 1)


def rare_option_variance(epsilon: Decimal, numerator: Decimal) -> Decimal:
    """Return numerator/(e^ε − 1)²: n·Var of an option near share 0 as Wang et al. (2017) compare GRR and OUE.

    GRR's is (d − 2 + e^ε)/(e^ε − 1)², OUE's 4e^ε/(e^ε − 1)², so OUE wins from d = 3e^ε + 2.
    """
    return CTX.divide(numerator, CTX.power(CTX.subtract(CTX.exp(epsilon), Decimal(1)), 2))


def randomize_grr(indices, *, d: int, keep_threshold: int, rng=None) -> np.ndarray:
    """Keep each option index w.p. T/2^53, else report one of the other d-1 uniformly."""
    rng = default_rng(rng)
    x = np.asarray(indices, dtype=np.int64)
    keep = bern53(keep_threshold, x.shape, rng)
    other = rng.integers(0, d - 1, size=x.shape, dtype=np.int64)
    other = other + (other >= x)
    return np.where(keep, x, other)


@dataclass(frozen=True)
class GeneralizedRR(OptionMechanism):
    """Report the true option w.p. p = T/2^53, each other w.p. q = (1 − p)/(d − 1): e^ε′ = p/q."""

    keep_threshold: int
    epsilon_nominal: float | None = None
    layered = True
    kind = "choice"
    name = "grr"
    title = "generalized randomized response"
    report = INDEX

    @classmethod
    def build(cls, question, share: Decimal) -> tuple[dict, Decimal]:
        d = len(question.options)
        threshold = grr_keep_threshold(epsilon=share, d=d)
        return {"mechanism": cls.name, "keep_threshold": threshold}, grr_epsilon(threshold, d)


    def probabilities(self) -> tuple[Fraction, Fraction]:
        return grr_probabilities(self.keep_threshold, self.d)

    def value_labels(self) -> dict[int, str]:
        return {index: f"reported {option}" for index, option in enumerate(self.options)}

    @property
    def categories(self) -> int | None:
        return self.d

    def likelihood(self, reports: np.ndarray) -> np.ndarray:
        """The reported option is the true one w.p. p, any given other w.p. q."""
        p, q = self.response_probabilities()
        reported = np.asarray(reports, dtype=np.int64).reshape(-1)
        return np.where(reported[:, None] == np.arange(self.d)[None, :], p, q)


    def ranking_variance(self) -> Decimal:
        eps = as_decimal(self.epsilon_nominal)
        return rare_option_variance(eps, CTX.add(Decimal(self.d - 2), CTX.exp(eps)))

    def randomize(self, true_values, rng=None) -> np.ndarray:
        return randomize_grr(true_values, d=self.d, keep_threshold=self.keep_threshold, rng=rng)

    def replay(self, true_value, stream):
        """Keep index if bern53(keep_threshold), else j = below(d-1) skipping index."""
        d = check_integer("d", self.d, 2, MAX_OPTIONS)
        check_integer("index", true_value, 0, d - 1)
        check_integer("keep_threshold", self.keep_threshold, 0, TWO53)
        if stream.bern53(self.keep_threshold):
            return true_value
        other = stream.below(d - 1)
        return other + (1 if other >= true_value else 0)

    @property
    def highest(self) -> int:
        return self.d - 1

    def domain(self) -> str:
        return f"an option index from 0 to {self.d - 1}"

    def estimates(self, ones, n, level) -> list[Estimate]:
        p, q = self.response_probabilities()
        return debias_grr(ones, n, p=p, q=q, level=level)

    def exact_denominators(self) -> tuple[int, ...]:
        return (TWO53, (self.d - 1) * TWO53)

    def meanings(self, p, q) -> list[str]:
        listing = ", ".join(f"{index} = {label!r}" for index, label in enumerate(self.options))
        return [f"the index of the option the randomized report names ({listing}); the true option is "
                f"reported with probability {format(float(p), '.6g')}, each other option with probability "
                f"{format(float(q), '.6g')}"]

    def protection_note(self, epsilon: str) -> str:
        keep = percent_up(Fraction(self.keep_threshold, TWO53))
        if self.d == 2:
            return tr("Your real answer is sent with a chance of %(keep)s. Otherwise, the other option is sent "
                      "(ε′ = %(epsilon)s).", keep=keep, epsilon=epsilon)
        return tr("Your real answer is sent with a chance of %(keep)s. Otherwise, one of the other "
                  "%(others)s options is sent, picked at random (ε′ = %(epsilon)s).", keep=keep, others=self.d - 1,
                  epsilon=epsilon)

    def kept_sentence(self, keep: str) -> str:
        return f"A true answer is reported as itself with probability {keep}."


def debias_grr(counts: Sequence[int], n, *, p, q, level) -> list[Estimate]:
    """Estimate each option's share from generalized randomized response (Wang et al. 2017).

    ``counts[v]`` is how many of the n reports name option v (they sum to n); p is the
    probability of keeping the true option and q = (1 − p)/(d − 1) that of reporting one
    given other option. f̂_v = (C_v/n − q)/(p − q). Intervals are simultaneous by
    Bonferroni: each option's Clopper-Pearson interval is at level 1 − α/d.
    """
    n = check_count(n, "n")
    counts = check_counts(counts, n, least=2)
    if sum(counts) != n:
        raise ValueError(f"GRR counts must sum to the number of reports n = {n}, got {sum(counts)}")
    p = check_probability(p, "p")
    q = check_probability(q, "q")
    d = len(counts)
    if not (p > q and math.isclose(p + (d - 1) * q, 1.0, rel_tol=0.0, abs_tol=1e-9)):
        raise ValueError(f"GRR probabilities must satisfy p > q and p + (d-1)q = 1 for d = {d}, "
                         f"got p={p!r}, q={q!r}")
    return [debias_binary(count, n, p_one_if_true=p, p_one_if_false=q, level=level, alpha_divisor=d)
            for count in counts]
