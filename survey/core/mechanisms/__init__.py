"""The randomizers: one module per mechanism, one interface (``base.Mechanism``), one registry.

Every mechanism is the Python side of a module of ``client_js/mechanisms/``: it builds the
exact integer thresholds the browser compares uniform integers against, and mirrors the
browser's draw (vectorised for simulation, scalar for the draw-for-draw replay). The rest
of the product asks the mechanism of a design entry (``mechanism_for``) and never names one.
The functions re-exported here are each mechanism's exact arithmetic, for tests, the
planner's documentation and the benchmarks.
"""

from types import SimpleNamespace

from .base import BIT, BITS, INDEX, LEVEL, LevelMechanism, Mechanism
from .common import (
    MIN_VARIANCE_GAIN,
    THRESHOLD_BITS,
    TWO53,
    as_decimal,
    per_option_epsilon,
    randomize_rr,
    rr_epsilon,
    rr_flip_threshold,
    uniform_variance,
    worst_case_spread,
    worst_case_variance,
)
from .duchi import Duchi, duchi_worst_variance, randomize_duchi
from .grr import GeneralizedRR, grr_epsilon, grr_keep_threshold, grr_probabilities, randomize_grr
from .hybrid import (
    MAX_HYBRID_BINS,
    Hybrid,
    hybrid_branch,
    hybrid_epsilon,
    hybrid_level_values,
    hybrid_ratio,
    hybrid_scores,
    hybrid_variance,
    hybrid_worst,
    hybrid_worst_variance,
    randomize_hybrid,
)
from .multi_bits import PerOptionRR, randomize_multi
from .multi_sampled import SampledOption, multi_sampled_probabilities, randomize_multi_sampled
from .opm import (
    OptimalPiecewise,
    opm_epsilon,
    opm_probabilities,
    opm_ratio,
    opm_shape,
    opm_variance,
    opm_worst_variance,
    randomize_opm,
)
from .oue import OptimizedUnaryEncoding, oue_epsilon, oue_q_threshold, randomize_oue, use_oue
from .piecewise import (
    MAX_PIECEWISE_BINS,
    Piecewise,
    piecewise_epsilon,
    piecewise_probabilities,
    piecewise_ratio,
    piecewise_worst_variance,
    randomize_piecewise,
)
from .registry import MECHANISMS, choose, for_kind, mechanism_class, mechanism_for
from .subset import SubsetSelection, best_subset_size, randomize_ss, ss_epsilon, ss_keep_threshold, ss_probabilities
from .warner import WarnerRR

__all__ = [
    "BIT",
    "BITS",
    "Duchi",
    "GeneralizedRR",
    "Hybrid",
    "INDEX",
    "LEVEL",
    "LevelMechanism",
    "MAX_HYBRID_BINS",
    "MAX_PIECEWISE_BINS",
    "MECHANISMS",
    "MIN_VARIANCE_GAIN",
    "Mechanism",
    "OptimalPiecewise",
    "OptimizedUnaryEncoding",
    "PerOptionRR",
    "Piecewise",
    "WarnerRR",
    "SampledOption",
    "SubsetSelection",
    "THRESHOLD_BITS",
    "TWO53",
    "as_decimal",
    "best_subset_size",
    "choice_variances",
    "choose",
    "duchi_worst_variance",
    "for_kind",
    "grr_epsilon",
    "grr_keep_threshold",
    "grr_probabilities",
    "hybrid_branch",
    "hybrid_epsilon",
    "hybrid_level_values",
    "hybrid_ratio",
    "hybrid_scores",
    "hybrid_variance",
    "hybrid_worst",
    "hybrid_worst_variance",
    "mechanism_class",
    "mechanism_for",
    "multi_sampled_probabilities",
    "multi_worst_variances",
    "opm_epsilon",
    "opm_probabilities",
    "opm_ratio",
    "opm_shape",
    "opm_variance",
    "opm_worst_variance",
    "oue_epsilon",
    "oue_q_threshold",
    "per_option_epsilon",
    "piecewise_epsilon",
    "piecewise_probabilities",
    "piecewise_ratio",
    "piecewise_worst_variance",
    "randomize_duchi",
    "randomize_grr",
    "randomize_hybrid",
    "randomize_multi",
    "randomize_multi_sampled",
    "randomize_opm",
    "randomize_oue",
    "randomize_piecewise",
    "randomize_question",
    "randomize_rr",
    "randomize_ss",
    "rr_epsilon",
    "rr_flip_threshold",
    "ss_epsilon",
    "ss_keep_threshold",
    "ss_probabilities",
    "uniform_variance",
    "use_multi_sampled",
    "use_oue",
    "use_ss",
    "worst_case_spread",
    "worst_case_variance",
]


def randomize_question(question: dict, true_values, rng=None):
    """Randomize true answers of one design question as the browser does; return reports in the wire format's shape.

    ``true_values`` holds 0/1 for yes_no, option indices for choice, 0/1 rows of d bits
    for multi, and integers in min..max for number.
    """
    return mechanism_for(question).randomize(true_values, rng)


def choice_variances(*, epsilon, d: int) -> dict[str, float]:
    """Return n·Var of one option's estimate at f = 1/d of every choice mechanism possible at epsilon, by name."""
    return _variances("choice", epsilon, d, "selection_variance")


def multi_worst_variances(*, epsilon, d: int) -> dict[str, float]:
    """Return the worst-case n·Var of one option's estimate of every multi-select mechanism at epsilon, by name."""
    return _variances("multi", epsilon, d, "selection_variance")


def _question(kind: str, d: int) -> SimpleNamespace:
    """Return a stand-in definition question of ``kind`` with d options, for the variance comparisons."""
    return SimpleNamespace(kind=kind, options=[str(i) for i in range(d)], min=None, max=None)


def _variances(kind: str, epsilon, d: int, measure: str) -> dict[str, float]:
    share = as_decimal(epsilon)
    question = _question(kind, d)
    out = {}
    for mechanism in for_kind(kind):
        try:
            fields, _ = mechanism.build(question, share)
        except ValueError:
            continue
        entry = {"kind": kind, "options": question.options, "epsilon_nominal": float(share), **fields}
        out[mechanism.name] = getattr(mechanism.from_entry(entry), measure)()
    return out


def use_ss(*, epsilon, d: int) -> bool:
    """Return whether subset selection's variance at f = 1/d is at least 5% below both GRR's and OUE's."""
    return _chosen("choice", epsilon, d) is SubsetSelection


def use_multi_sampled(*, epsilon, d: int) -> bool:
    """Return whether one sampled option at full eps has at least 5% less worst-case variance than every bit at eps/d."""
    return _chosen("multi", epsilon, d) is SampledOption


def _chosen(kind: str, epsilon, d: int):
    return choose(_question(kind, d), as_decimal(epsilon))[0]
