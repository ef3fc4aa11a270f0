"""Optimized unary encoding for a choice question (Wang et al. 2017): one bit per option, the true one a coin."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Sequence

import numpy as np

from ..estimators import Estimate, check_count, check_counts, check_probability, debias_binary
from ..words import percent_down
from ..wording import tr
from .base import BitVectorMechanism, bits_meanings
from .common import (
    CTX,
    MAX_OPTIONS,
    TWO53,
    as_decimal,
    bern53,
    check_integer,
    default_rng,
    rr_epsilon,
    rr_flip_threshold,
    threshold_fraction,
)
from .grr import rare_option_variance


def oue_q_threshold(*, epsilon) -> int:
    """Return T with q = T/2^53 = ceil-rounded 1/(e^eps+1), the OUE probability of a false 1.

    The true bit is sent as 1 with probability 1/2 and every other bit as 1 with
    probability q, so e^eps' = (1-q)/q = (2^53-T)/T.
    """
    return rr_flip_threshold(epsilon=epsilon)


def oue_epsilon(q_threshold: int) -> Decimal:
    """Return the realised epsilon of an OUE q threshold."""
    return rr_epsilon(q_threshold)


def use_oue(*, epsilon, d: int) -> bool:
    """Return whether OUE has lower variance than GRR for a rare option: d >= 3e^eps + 2 (Wang et al. 2017)."""
    eps = as_decimal(epsilon)
    return Decimal(d) >= CTX.add(CTX.multiply(Decimal(3), CTX.exp(eps)), Decimal(2))


def randomize_oue(indices, *, d: int, q_threshold: int, rng=None) -> np.ndarray:
    """Encode each index one-hot; send its bit as 1 w.p. 1/2 and every other bit as 1 w.p. q."""
    rng = default_rng(rng)
    x = np.asarray(indices, dtype=np.int64)
    out = bern53(q_threshold, (x.shape[0], d), rng).astype(np.int64)
    out[np.arange(x.shape[0]), x] = rng.integers(0, 2, size=x.shape[0], dtype=np.int64)
    return out


@dataclass(frozen=True)
class OptimizedUnaryEncoding(BitVectorMechanism):
    """Send d bits: the true option's is 1 w.p. p = 1/2, every other 1 w.p. q = T/2^53: e^ε′ = (1 − q)/q."""

    q_threshold: int
    epsilon_nominal: float | None = None
    layered = True
    kind = "choice"
    name = "oue"
    title = "optimized unary encoding"

    @classmethod
    def build(cls, question, share: Decimal) -> tuple[dict, Decimal]:
        threshold = oue_q_threshold(epsilon=share)
        return {"mechanism": cls.name, "q_threshold": threshold}, oue_epsilon(threshold)


    def probabilities(self) -> tuple[Fraction, Fraction]:
        return Fraction(1, 2), Fraction(self.q_threshold, TWO53)


    @property
    def categories(self) -> int | None:
        return self.d

    def likelihood(self, reports: np.ndarray) -> np.ndarray:
        """Bits are independent: the true option's is 1 w.p. 1/2, every other's w.p. q."""
        p, q = self.response_probabilities()
        bits = np.asarray(reports, dtype=np.int64).reshape(-1, self.d)
        as_other = np.where(bits == 1, q, 1 - q)
        as_true = np.where(bits == 1, p, 1 - p)
        # For category c: the product over the other options' bits, times the true option's own.
        return np.prod(as_other, axis=1)[:, None] / as_other * as_true

    def ranking_variance(self) -> Decimal:
        eps = as_decimal(self.epsilon_nominal)
        return rare_option_variance(eps, CTX.multiply(Decimal(4), CTX.exp(eps)))

    def randomize(self, true_values, rng=None) -> np.ndarray:
        return randomize_oue(true_values, d=self.d, q_threshold=self.q_threshold, rng=rng)

    def replay(self, true_value, stream):
        """Return d bits in order 0..d-1: bit index = below(2), every other bit = bern53(q_threshold)."""
        d = check_integer("d", self.d, 2, MAX_OPTIONS)
        check_integer("index", true_value, 0, d - 1)
        check_integer("q_threshold", self.q_threshold, 0, TWO53)
        return [stream.below(2) if i == true_value else int(stream.bern53(self.q_threshold)) for i in range(d)]



    def estimates(self, ones, n, level) -> list[Estimate]:
        return debias_oue(ones, n, q=self.response_probabilities()[1], level=level)

    def meanings(self, p, q) -> list[str]:
        return bits_meanings(self.options, lambda label: (
            f"1 if the randomized report's bit for option {label!r} is set; it is 1 with probability "
            f"{format(float(p), '.6g')} when {label!r} is the true answer and {format(float(q), '.6g')} when it is not"))

    def protection_note(self, epsilon: str) -> str:
        return tr("Your device sends a mark or a blank for each of the %(d)s options. Your own answer gets a mark "
                  "half of the time. Each other option gets a mark with a chance of %(other)s "
                  "(ε′ = %(epsilon)s).", d=self.d, other=percent_down(threshold_fraction("q_threshold", self.q_threshold)),
                  epsilon=epsilon)

    def kept_sentence(self, keep: str) -> str:
        return f"The chosen option's bit is reported as 1 with probability {keep}."


def debias_oue(counts: Sequence[int], n, *, q, level) -> list[Estimate]:
    """Estimate each option's share from optimized unary encoding (Wang et al. 2017).

    ``counts[v]`` is how many of the n reports have bit v set; the true bit is 1 with
    probability 1/2, every other bit with probability q in (0, 1/2), so
    f̂_v = (C_v/n − q)/(1/2 − q). Intervals are simultaneous by Bonferroni (level 1 − α/d).
    """
    n = check_count(n, "n")
    counts = check_counts(counts, n, least=2)
    q = check_probability(q, "q")
    if not q < 0.5:
        raise ValueError(f"q must be a probability below 1/2 for OUE, got {q!r}")
    return [debias_binary(count, n, p_one_if_true=0.5, p_one_if_false=q, level=level,
                          alpha_divisor=len(counts))
            for count in counts]
