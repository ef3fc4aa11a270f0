"""Subset selection for a choice question (Wang et al. 2016; Ye & Barg 2018): report a random k-subset."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from fractions import Fraction

import numpy as np

from ..words import percent_up
from ..wording import tr
from .base import BitVectorMechanism, bits_meanings
from .common import (
    CTX,
    MAX_OPTIONS,
    MIN_VARIANCE_GAIN,
    TWO53,
    as_decimal,
    bern53,
    check_d,
    check_integer,
    default_rng,
    threshold_fraction,
    uniform_variance,
)


def _check_k(k, d):
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= d - 1:
        raise ValueError(f"k must be an integer from 1 to d - 1 = {d - 1}, got {k!r}")


def ss_keep_threshold(*, epsilon, d: int, k: int) -> int:
    """Return T with P(true option in the subset) = T/2^53, T = floor(2^53·k·e^eps/(k·e^eps + d − k)).

    A k-subset S has P(S | x ∈ S)/P(S | x ∉ S) = p/(1 − p)·(d − k)/k, so
    e^eps' = T(d − k)/((2^53 − T)k) <= e^eps (Wang et al. 2016; Ye & Barg 2018).
    """
    eps = as_decimal(epsilon)
    check_d(d)
    _check_k(k, d)
    e = CTX.exp(eps)
    ke = CTX.multiply(Decimal(k), e)
    ratio = CTX.divide(CTX.multiply(Decimal(TWO53), ke), CTX.add(ke, Decimal(d - k)))
    threshold = int(ratio.to_integral_value(rounding=ROUND_FLOOR))
    while ss_epsilon(threshold, d, k) > eps:
        threshold -= 1
    return threshold


def ss_epsilon(keep_threshold: int, d: int, k: int) -> Decimal:
    """Return the realised epsilon ln(T(d − k)/((2^53 − T)k)) of a subset-selection threshold."""
    t = keep_threshold
    return CTX.ln(CTX.divide(Decimal(t * (d - k)), Decimal((TWO53 - t) * k)))


def ss_probabilities(keep_threshold: int, d: int, k: int) -> tuple[Fraction, Fraction]:
    """Return the exact (p, q) of an option's indicator [v ∈ S]: p = T/2^53, q = (p(k − 1) + (1 − p)k)/(d − 1)."""
    p = Fraction(keep_threshold, TWO53)
    return p, (p * (k - 1) + (1 - p) * k) / (d - 1)


@functools.lru_cache(maxsize=1024)
def best_subset_size(*, epsilon, d: int) -> tuple[int, int, float]:
    """Return (k, keep threshold, n·Var at f = 1/d) of the subset size k in 2..d−1 of least variance.

    k = 1 is GRR itself, so it is left out; d = 2 has no proper subset size and raises.
    """
    check_d(d)
    if d < 3:
        raise ValueError(f"subset selection needs d >= 3 options, got {d}")
    best = None
    for k in range(2, d):
        threshold = ss_keep_threshold(epsilon=epsilon, d=d, k=k)
        variance = uniform_variance(*ss_probabilities(threshold, d, k), d)
        if best is None or variance < best[2]:
            best = (k, threshold, variance)
    return best


def randomize_ss(indices, *, d: int, k: int, keep_threshold: int, rng=None) -> np.ndarray:
    """Return n rows of d bits, each the indicator of a random k-subset holding the true index w.p. T/2^53.

    The other members are a uniform subset of the d − 1 other options (Wang et al. 2016).
    """
    rng = default_rng(rng)
    x = np.asarray(indices, dtype=np.int64)
    n = x.shape[0]
    keep = bern53(keep_threshold, n, rng)
    out = np.zeros((n, d), dtype=np.int64)
    out[np.arange(n)[keep], x[keep]] = 1
    step = max(1, 2**22 // d)
    for start in range(0, n, step):
        rows = slice(start, min(n, start + step))
        # A uniform ordering of the d - 1 others per row; the first k - [x in S] of them join S.
        order = np.argsort(rng.random((rows.stop - start, d - 1)), axis=1)
        others = order + (order >= x[rows, None])
        take = np.arange(d - 1)[None, :] < (k - keep[rows].astype(np.int64))[:, None]
        chunk = out[rows]
        chunk[np.nonzero(take)[0], others[take]] = 1
    return out


def floyd_subset(n: int, m: int, stream) -> set[int]:
    """Return a uniform m-subset of {0..n-1}: for j = n-m..n-1, t = below(j+1), add t or j if t is taken (Floyd)."""
    chosen: set[int] = set()
    for j in range(n - m, n):
        t = stream.below(j + 1)
        chosen.add(j if t in chosen else t)
    return chosen


@dataclass(frozen=True)
class SubsetSelection(BitVectorMechanism):
    """Report a k-subset holding the true option w.p. p = T/2^53, the rest uniform among the others."""

    subset_size: int
    keep_threshold: int
    kind = "choice"
    name = "ss"
    title = "subset selection"
    gain_needed = MIN_VARIANCE_GAIN

    def __post_init__(self):
        _check_k(self.subset_size, self.d)

    @classmethod
    def build(cls, question, share: Decimal) -> tuple[dict, Decimal]:
        d = len(question.options)
        if d < 3:
            raise ValueError(f"subset selection needs d >= 3 options, got {d}")
        k, threshold, _ = best_subset_size(epsilon=share, d=d)
        return ({"mechanism": cls.name, "subset_size": k, "keep_threshold": threshold},
                ss_epsilon(threshold, d, k))


    def probabilities(self) -> tuple[Fraction, Fraction]:
        return ss_probabilities(self.keep_threshold, self.d, self.subset_size)


    @property
    def categories(self) -> int | None:
        return self.d

    def likelihood(self, reports: np.ndarray) -> np.ndarray:
        """A k-subset holds the true option w.p. p, uniformly among those that do (or do not)."""
        p, _ = self.probabilities()
        d, k = self.d, self.subset_size
        inside = float(p / math.comb(d - 1, k - 1))
        outside = float((1 - p) / math.comb(d - 1, k))
        bits = np.asarray(reports, dtype=np.int64).reshape(-1, d)
        return np.where(bits == 1, inside, outside)

    def randomize(self, true_values, rng=None) -> np.ndarray:
        return randomize_ss(true_values, d=self.d, k=self.subset_size, keep_threshold=self.keep_threshold, rng=rng)

    def replay(self, true_value, stream):
        """Return d bits of a k-subset: index kept if bern53(keep_threshold), the rest by Floyd over the d-1 others."""
        d = check_integer("d", self.d, 3, MAX_OPTIONS)
        k = check_integer("k", self.subset_size, 1, d - 1)
        check_integer("index", true_value, 0, d - 1)
        check_integer("keep_threshold", self.keep_threshold, 0, TWO53)
        kept = stream.bern53(self.keep_threshold)
        bits = [0] * d
        if kept:
            bits[true_value] = 1
        for other in floyd_subset(d - 1, k - 1 if kept else k, stream):
            bits[other + (1 if other >= true_value else 0)] = 1
        return bits



    def report_error(self, qid: str, ones: int) -> str | None:
        if ones == self.subset_size:
            return None
        return (f"the report for {qid!r} must have exactly {self.subset_size} values equal to 1 "
                f"(a subset of that size), got {ones}")

    def batch_error(self, qid: str, ones: np.ndarray) -> str | None:
        if np.any(ones != self.subset_size):
            return f"every report for {qid!r} must have exactly {self.subset_size} ones"
        return None


    def exact_denominators(self) -> tuple[int, ...]:
        return (TWO53, (self.d - 1) * TWO53)

    def meanings(self, p, q) -> list[str]:
        return bits_meanings(self.options, lambda label: (
            f"1 if option {label!r} is in the randomized report's subset of {self.subset_size} "
            f"options; it is 1 with probability {format(float(p), '.6g')} when {label!r} is the true answer and "
            f"{format(float(q), '.6g')} when it is not"))

    def protection_note(self, epsilon: str) -> str:
        keep = threshold_fraction("keep_threshold", self.keep_threshold)
        return tr("Your device sends a group of %(k)s of the %(d)s options. Your answer is in the group with a "
                  "chance of %(keep)s. The rest of the group is picked at random from the other options "
                  "(ε′ = %(epsilon)s).", k=self.subset_size, d=self.d, keep=percent_up(keep), epsilon=epsilon)

    def kept_sentence(self, keep: str) -> str:
        return (f"The report is a set of {self.subset_size} of the {self.d} options; "
                f"it holds the true answer with probability {keep}.")
