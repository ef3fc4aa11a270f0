"""One option drawn at random for a multi-select question, its bit through randomized response at the full ε.

The option j is drawn uniformly, independently of the answer, and only its bit is sent:
P(j, b | A)/P(j, b | A′) = P(b | x_j)/P(b | x′_j) ≤ e^ε′ (Warner 1965 on one sampled
attribute; Wang et al. 2019 and Arcolezi et al. 2021 sample attributes the same way).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

from ..words import percent_up
from ..wording import tr
from .base import BitVectorMechanism, bits_meanings
from .common import (
    MIN_VARIANCE_GAIN,
    TWO53,
    bern53,
    default_rng,
    rr_epsilon,
    rr_flip_threshold,
    threshold_fraction,
    worst_case_variance,
)
from .multi_bits import check_answer_bits


def multi_sampled_probabilities(flip_threshold: int, d: int) -> tuple[Fraction, Fraction]:
    """Return the exact (p, q) of option v's indicator: the report's bit v is 1 when j = v and its RR bit is 1.

    p = (1 − f)/d, q = f/d with f = T/2^53.
    """
    flip = Fraction(flip_threshold, TWO53)
    return (1 - flip) / d, flip / d


def randomize_multi_sampled(bit_matrix, *, flip_threshold: int, rng=None) -> np.ndarray:
    """Return n rows of d bits: one option j drawn uniformly, RR of its bit kept at j, every other bit 0."""
    rng = default_rng(rng)
    bits = np.asarray(bit_matrix, dtype=np.int64)
    n, d = bits.shape
    j = rng.integers(0, d, size=n, dtype=np.int64)
    sent = bits[np.arange(n), j] ^ bern53(flip_threshold, n, rng).astype(np.int64)
    out = np.zeros((n, d), dtype=np.int64)
    out[np.arange(n), j] = sent
    return out


@dataclass(frozen=True)
class SampledOption(BitVectorMechanism):
    """Send d bits, all 0 but a uniformly drawn option j's, which carries its tick through RR at the full ε′."""

    flip_threshold: int
    kind = "multi"
    name = "sampled"
    title = "one option drawn at random, its bit at full ε′"
    gain_needed = MIN_VARIANCE_GAIN

    @classmethod
    def build(cls, question, share: Decimal) -> tuple[dict, Decimal]:
        threshold = rr_flip_threshold(epsilon=share)
        return {"mechanism": cls.name, "flip_threshold": threshold}, rr_epsilon(threshold)


    def probabilities(self) -> tuple[Fraction, Fraction]:
        return multi_sampled_probabilities(self.flip_threshold, self.d)

    def selection_variance(self) -> float:
        return worst_case_variance(*self.probabilities())

    def randomize(self, true_values, rng=None) -> np.ndarray:
        return randomize_multi_sampled(true_values, flip_threshold=self.flip_threshold, rng=rng)

    def replay(self, true_value, stream):
        """Return d bits, all 0 but j = below(d), which carries bit j XOR bern53(flip_threshold)."""
        bits = check_answer_bits(true_value, self.d)
        threshold_fraction("flip_threshold", self.flip_threshold)
        drawn = stream.below(len(bits))
        report = [0] * len(bits)
        report[drawn] = bits[drawn] ^ int(stream.bern53(self.flip_threshold))
        return report



    def report_error(self, qid: str, ones: int) -> str | None:
        if ones <= 1:
            return None
        return f"the report for {qid!r} must have at most one value equal to 1, got {ones}"

    def batch_error(self, qid: str, ones: np.ndarray) -> str | None:
        return f"every report for {qid!r} must have at most one 1" if np.any(ones > 1) else None


    def exact_denominators(self) -> tuple[int, ...]:
        return (TWO53, self.d * TWO53)

    def meanings(self, p, q) -> list[str]:
        return bits_meanings(self.options, lambda label: (
            f"1 if the report drew option {label!r} (each with probability 1/{self.d}) and its "
            f"randomized selected bit is 1; it is 1 with probability {format(float(p), '.6g')} when {label!r} was "
            f"selected and {format(float(q), '.6g')} when it was not"))

    def protection_note(self, epsilon: str) -> str:
        keep = 1 - threshold_fraction("flip_threshold", self.flip_threshold)
        return tr("Your device picks one of the %(d)s options at random, whatever you ticked. Only that option's "
                  "tick or blank is sent. It is sent as it is with a chance of %(keep)s. Otherwise, the "
                  "opposite is sent (ε′ = %(epsilon)s).", d=self.d,
                  keep=percent_up(keep), epsilon=epsilon)

    def kept_sentence(self, keep: str) -> str:
        return (f"One option is drawn at random and only its bit is sent, reported as it is with probability "
                f"{1 - self.flip_threshold / TWO53:.1%}.")
