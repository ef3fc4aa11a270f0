"""Duchi, Jordan & Wainwright's (2013) mechanism for a number: round to an end of the range at random, then RR."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..estimators import Estimate, check_real, clip
from ..words import percent_up
from ..wording import tr
from .common import (
    TWO53,
    check_integer,
    check_range,
    default_rng,
    randomize_rr,
    replay_rr,
    round_at_random,
    threshold_fraction,
)
from .base import Mechanism
from .warner import WarnerRR, debias_rr


def duchi_worst_variance(flip_threshold: int) -> float:
    """Return the largest variance of one Duchi report's estimate of x on [0, 1]: 1/(4(1-2f)^2), at x = 1/2."""
    spread = 1 - 2 * Fraction(flip_threshold, TWO53)
    return float(1 / (4 * spread ** 2))


def randomize_duchi(values, *, lo: int, hi: int, flip_threshold: int, rng=None) -> np.ndarray:
    """Round each integer in lo..hi to 1 w.p. (x-lo)/(hi-lo), then apply Warner RR (Duchi et al. 2013)."""
    rng = default_rng(rng)
    return randomize_rr(round_at_random(values, lo, hi, rng), flip_threshold=flip_threshold, rng=rng)


@dataclass(frozen=True)
class Duchi(WarnerRR):
    """The answer x in lo..hi becomes 1 w.p. (x − lo)/(hi − lo), else 0; that bit goes through Warner's RR."""

    lo: int
    hi: int
    kind = "number"
    name = "duchi"
    title = "Duchi rounding + randomized response"
    label = "Duchi"
    menu = 3

    def selection_variance(self) -> float:
        return duchi_worst_variance(self.flip_threshold)

    def randomize(self, true_values, rng=None) -> np.ndarray:
        return randomize_duchi(true_values, lo=self.lo, hi=self.hi, flip_threshold=self.flip_threshold, rng=rng)

    def replay(self, true_value, stream):
        """Return RR(b) with b = bern(value - lo, hi - lo)."""
        check_range(self.lo, self.hi)
        check_integer("value", true_value, self.lo, self.hi)
        rounded = int(stream.bern(true_value - self.lo, self.hi - self.lo))
        return replay_rr(rounded, flip_threshold=self.flip_threshold, stream=stream)

    def estimates(self, ones, n, level) -> list[Estimate]:
        return [debias_duchi_mean(ones[0], n, flip=self.flip_threshold / TWO53, lo=self.lo, hi=self.hi, level=level)]

    @property
    def categories(self) -> int | None:
        return None

    def likelihood(self, reports: np.ndarray) -> np.ndarray:
        return Mechanism.likelihood(self, reports)

    def value_labels(self) -> dict[int, str]:
        return {0: f"reported the low end, {self.lo}", 1: f"reported the high end, {self.hi}"}

    def meanings(self, p, q) -> list[str]:
        lo, hi = self.lo, self.hi
        return [f"0 or 1: the answer x in {lo}..{hi} was rounded to 1 with probability (x - {lo})/{hi - lo}, "
                f"else to 0, and that bit kept with probability {format(float(p), '.6g')} and flipped with "
                f"probability {format(float(q), '.6g')}; the share of 1s estimates (mean - {lo})/{hi - lo}"]

    def protection_note(self, epsilon: str) -> str:
        keep = 1 - threshold_fraction("flip_threshold", self.flip_threshold)
        return tr("Your number is first moved at random to the low end or the high end of %(low)s–%(high)s. The "
                  "closer end is more likely. Then this end is sent with a chance of %(keep)s. Otherwise, "
                  "the other end is sent (ε′ = %(epsilon)s).", low=self.lo, high=self.hi, keep=percent_up(keep),
                  epsilon=epsilon)

    def kept_sentence(self, keep: str) -> str:
        return ("The answer is rounded at random to the smallest or the largest value, which is reported as "
                f"itself with probability {keep}.")


def debias_duchi_mean(ones, n, *, flip, lo, hi, level) -> Estimate:
    """Estimate the mean of numbers in [lo, hi] from Duchi et al. (2013) reports.

    Each number x was rounded to a bit b ~ Bernoulli((x − lo)/(hi − lo)) and b sent through
    Warner RR, so the binary estimator gives the mean θ on [0, 1]; the result is
    lo + θ̂(hi − lo), with std_error times (hi − lo) and the interval mapped alike and
    clipped to [lo, hi] (the whole range when n = 0).
    """
    lo = check_real(lo, "lo")
    hi = check_real(hi, "hi")
    if not lo < hi:
        raise ValueError(f"hi must be greater than lo = {lo!r}, got {hi!r}")
    unit = debias_rr(ones, n, flip=flip, level=level)
    width = hi - lo
    return Estimate(
        estimate=None if unit.estimate is None else lo + unit.estimate * width,
        std_error=None if unit.std_error is None else unit.std_error * width,
        ci_low=clip(lo + unit.ci_low * width, lo, hi),
        ci_high=clip(lo + unit.ci_high * width, lo, hi),
        n=unit.n,
        noisy_share=unit.noisy_share,
    )
