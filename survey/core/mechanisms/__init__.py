"""The randomizers: one module per mechanism, one interface (``base.Mechanism``), one registry.

Every mechanism is the Python side of a module of ``client_js/mechanisms/``: it builds the
exact integer thresholds the browser compares uniform integers against, and mirrors the
browser's draw (vectorised for simulation, scalar for the draw-for-draw replay), and its
module holds its exact arithmetic and its debias function. The rest of the product asks the
mechanism of a design entry (``mechanism_for``) and never names one. This package gives the
report shapes, the interface, the classes and the registry; a mechanism's functions are
imported from its module (``from survey.core.mechanisms.grr import grr_epsilon``).
"""

from .base import BIT, BITS, INDEX, LEVEL, LevelMechanism, Mechanism
from .duchi import Duchi
from .grr import GeneralizedRR
from .hybrid import Hybrid
from .multi_bits import PerOptionRR
from .multi_sampled import SampledOption
from .opm import OptimalPiecewise
from .oue import OptimizedUnaryEncoding
from .piecewise import Piecewise
from .registry import (MECHANISMS, choice_variances, choose, for_kind, mechanism_class, mechanism_for,
                       multi_worst_variances, randomize_question, use_multi_sampled, use_ss)
from .subset import SubsetSelection
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
    "MECHANISMS",
    "Mechanism",
    "OptimalPiecewise",
    "OptimizedUnaryEncoding",
    "PerOptionRR",
    "Piecewise",
    "SampledOption",
    "SubsetSelection",
    "WarnerRR",
    "choice_variances",
    "choose",
    "for_kind",
    "mechanism_class",
    "mechanism_for",
    "multi_worst_variances",
    "randomize_question",
    "use_multi_sampled",
    "use_ss",
]
