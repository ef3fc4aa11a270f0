"""Warner's (1965) randomized response for a yes/no question: the answer kept, or flipped with probability f."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

from ..estimators import Estimate, check_flip, debias_binary
from ..words import percent_up
from ..wording import tr
from .base import BIT, Mechanism
from .common import TWO53, randomize_rr, replay_rr, rr_epsilon, rr_flip_threshold


@dataclass(frozen=True)
class WarnerRR(Mechanism):
    """Keep the answer w.p. 1 − f = (2^53 − T)/2^53, else flip it: e^ε′ = (2^53 − T)/T."""

    flip_threshold: int
    layered = True
    kind = "yes_no"
    name = "rr"
    title = "randomized response"
    report = BIT

    @classmethod
    def build(cls, question, share: Decimal) -> tuple[dict, Decimal]:
        threshold = rr_flip_threshold(epsilon=share)
        return {"mechanism": cls.name, "flip_threshold": threshold}, rr_epsilon(threshold)


    @property
    def flip(self) -> Fraction:
        return Fraction(self.flip_threshold, TWO53)

    @property
    def estimands(self) -> int:
        return 1

    def probabilities(self) -> tuple[Fraction, Fraction]:
        return 1 - self.flip, self.flip

    def randomize(self, true_values, rng=None) -> np.ndarray:
        return randomize_rr(true_values, flip_threshold=self.flip_threshold, rng=rng)

    def replay(self, true_value, stream):
        return replay_rr(true_value, flip_threshold=self.flip_threshold, stream=stream)

    @property
    def highest(self) -> int:
        return 1

    def domain(self) -> str:
        return "0 or 1"

    def value_labels(self) -> dict[int, str]:
        return {0: "reported no", 1: "reported yes"}

    @property
    def categories(self) -> int | None:
        return 2

    def likelihood(self, reports: np.ndarray) -> np.ndarray:
        """Columns: the true answer no (0) and yes (1); a report keeps it w.p. 1 − f and flips it w.p. f."""
        flip = self.flip_threshold / TWO53
        said_yes = np.asarray(reports, dtype=np.int64).reshape(-1) == 1
        return np.column_stack([np.where(said_yes, flip, 1 - flip), np.where(said_yes, 1 - flip, flip)])

    def estimates(self, ones, n, level) -> list[Estimate]:
        return [debias_rr(ones[0], n, flip=self.flip_threshold / TWO53, level=level)]

    def meanings(self, p, q) -> list[str]:
        return [f"1 if the randomized report says yes, 0 if it says no; the true answer is kept with "
                f"probability {format(float(p), '.6g')} and flipped with probability {format(float(q), '.6g')}"]

    def protection_note(self, epsilon: str) -> str:
        return tr("Your real answer is sent with a chance of %(keep)s. Otherwise, the opposite answer is sent "
                  "(ε′ = %(epsilon)s).",
                  keep=percent_up(1 - self.flip), epsilon=epsilon)

    def kept_sentence(self, keep: str) -> str:
        return f"A true answer is reported as itself with probability {keep}."


def debias_rr(ones, n, *, flip, level) -> Estimate:
    """Estimate the share of yes from Warner (1965) randomized response: (ā − f)/(1 − 2f).

    ``flip`` is the probability f in [0, 1/2) that a report is flipped.
    """
    flip = check_flip(flip)
    return debias_binary(ones, n, p_one_if_true=1.0 - flip, p_one_if_false=flip, level=level)
