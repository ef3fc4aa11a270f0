"""One randomized-response bit per option for a multi-select question, each at ε/d (Warner 1965, per option)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

from ..words import format_epsilon, percent_up
from ..wording import tr
from .base import BitVectorMechanism, bits_meanings
from .common import (
    CTX,
    TWO53,
    check_bits,
    per_option_epsilon,
    randomize_rr,
    rr_epsilon,
    rr_flip_threshold,
    threshold_fraction,
    worst_case_variance,
)


def randomize_multi(bit_matrix, *, flip_threshold: int, rng=None) -> np.ndarray:
    """Send each option's 0/1 bit through Warner RR with the per-option flip threshold."""
    return randomize_rr(np.asarray(bit_matrix, dtype=np.int64), flip_threshold=flip_threshold, rng=rng)


def check_answer_bits(bits, d: int) -> list[int]:
    """Return a multi-select answer as a list of d 0/1 values, or raise ValueError."""
    if not isinstance(bits, list) or len(bits) != d:
        raise ValueError(f"the answer needs a list of {d} bits, got {bits!r}")
    return check_bits(bits)


@dataclass(frozen=True)
class PerOptionRR(BitVectorMechanism):
    """Every option's tick or blank kept w.p. 1 − f, else flipped, at ε/d each: a change of answer costs d·ε′_option."""

    flip_threshold: int
    epsilon_per_option: float | None = None
    layered = True
    kind = "multi"
    name = "rr"
    title = "randomized response"

    @classmethod
    def build(cls, question, share: Decimal) -> tuple[dict, Decimal]:
        d = len(question.options)
        threshold = rr_flip_threshold(epsilon=per_option_epsilon(share, d))
        option_realised = rr_epsilon(threshold)
        # A change of answer can change all d bits, so the question costs d * eps'_option.
        return ({"mechanism": cls.name, "flip_threshold": threshold, "epsilon_per_option": float(option_realised)},
                CTX.multiply(option_realised, Decimal(d)))


    @property
    def list_title(self) -> str:
        return f"{self.title}, per option"


    @property
    def flip(self) -> Fraction:
        return Fraction(self.flip_threshold, TWO53)


    def probabilities(self) -> tuple[Fraction, Fraction]:
        return 1 - self.flip, self.flip

    def selection_variance(self) -> float:
        return worst_case_variance(*self.probabilities())

    def randomize(self, true_values, rng=None) -> np.ndarray:
        return randomize_multi(true_values, flip_threshold=self.flip_threshold, rng=rng)

    def replay(self, true_value, stream):
        """Return every 0/1 option bit through randomized response, in order."""
        bits = check_answer_bits(true_value, self.d)
        threshold_fraction("flip_threshold", self.flip_threshold)
        return [bit ^ int(stream.bern53(self.flip_threshold)) for bit in bits]




    def meanings(self, p, q) -> list[str]:
        per_option = self.epsilon_per_option
        spent = "" if per_option is None else f" (epsilon {format(per_option, '.6g')} for this option's bit)"
        return bits_meanings(self.options, lambda label: (
            f"1 if the randomized report says option {label!r} was selected, else 0; the true yes/no of "
            f"this option is kept with probability {format(float(p), '.6g')} and flipped with probability "
            f"{format(float(q), '.6g')}{spent}"))

    def protection_note(self, epsilon: str) -> str:
        keep = 1 - threshold_fraction("flip_threshold", self.flip_threshold)
        per_option = self.epsilon_per_option
        values = {"keep": percent_up(keep), "epsilon": epsilon, "d": self.d}
        if self.d == 1:
            return tr("Your tick or blank is sent as it is with a chance of %(keep)s. Otherwise, the opposite is "
                      "sent (ε′ = %(epsilon)s).",
                      **values)
        if per_option is None:
            return tr("For each of the %(d)s options, your tick or blank is sent as it is with a chance of "
                      "%(keep)s. Otherwise, the opposite is sent (ε′ = %(epsilon)s).", **values)
        return tr("For each of the %(d)s options, your tick or blank is sent as it is with a chance of %(keep)s. "
                  "Otherwise, the opposite is sent (ε′ = %(each)s per option, %(epsilon)s in total).",
                  each=format_epsilon(per_option), **values)

    def kept_sentence(self, keep: str) -> str:
        return f"Each option's bit is reported as it is with probability {keep}."
