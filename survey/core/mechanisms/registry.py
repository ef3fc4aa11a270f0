"""The registry: every mechanism listed once, found by a design entry's (kind, mechanism), chosen by variance.

Adding a mechanism is its module and one line here. Order matters twice: it is the order in
which the design tries a kind's mechanisms (a tie in variance goes to the earlier one), and
the order the conformance suite and the docs list them in.
"""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace
from typing import Mapping

from .base import Mechanism
from .common import as_decimal
from .duchi import Duchi
from .grr import GeneralizedRR
from .hybrid import Hybrid
from .multi_bits import PerOptionRR
from .multi_sampled import SampledOption
from .opm import OptimalPiecewise
from .oue import OptimizedUnaryEncoding
from .piecewise import Piecewise
from .subset import SubsetSelection
from .warner import WarnerRR
from .waves import LAYER_OF_SHAPE, build_layer, compose

MECHANISMS: tuple[type[Mechanism], ...] = (
    WarnerRR,
    GeneralizedRR, OptimizedUnaryEncoding, SubsetSelection,
    PerOptionRR, SampledOption,
    Duchi, Piecewise, Hybrid, OptimalPiecewise,
)

_BY_KEY = {(mechanism.kind, mechanism.name): mechanism for mechanism in MECHANISMS}


def for_kind(kind: str) -> tuple[type[Mechanism], ...]:
    """Return the mechanisms of one question kind, in registry order."""
    return tuple(mechanism for mechanism in MECHANISMS if mechanism.kind == kind)


def offered(kind: str) -> tuple[str, ...]:
    """Return the names of the mechanisms of a kind a definition may ask for, in the order its menu lists them."""
    return tuple(mechanism.name for mechanism in sorted((mechanism for mechanism in for_kind(kind)
                                                         if mechanism.menu is not None), key=lambda m: m.menu))


def mechanism_class(kind, name) -> type[Mechanism]:
    """Return the mechanism a (kind, mechanism) pair names, or raise ValueError listing the known pairs."""
    try:
        return _BY_KEY[(kind, name)]
    except (KeyError, TypeError):
        known = ", ".join(f"{k}/{n}" for k, n in _BY_KEY)
        raise ValueError(f"unsupported kind/mechanism {kind!r}/{name!r}; expected one of {known}") from None


# Mechanisms already read from design entries, by the entry's identity: the entry itself (kept, so
# that its id cannot be reused), the keys read and their values (an options list by identity: a
# list changed in place is not seen), and the mechanism. Reports are checked, encoded and counted
# per question many times a second.
_READ: dict[int, tuple[Mapping, tuple, tuple, Mechanism]] = {}
_READ_LIMIT = 4096


def mechanism_for(entry: Mapping) -> Mechanism:
    """Return the mechanism of a design entry, with its parameters (ValueError naming the question if unknown or bad).

    The same entry read again, unchanged, gives the same (immutable) mechanism without reading it again.
    """
    known = _READ.get(id(entry))
    if known is not None and known[0] is entry and known[2] == tuple(map(entry.get, known[1])):
        return known[3]
    try:
        cls = mechanism_class(entry.get("kind"), entry.get("mechanism"))
    except ValueError as exc:
        raise ValueError(f"question {entry.get('id')!r} has an {exc}") from None
    mechanism = cls.from_entry(entry)
    wave = entry.get("wave")
    if wave is not None:
        # A series wave under two layers: the kept report randomized again (mechanisms/waves.py).
        mechanism = compose(mechanism, mechanism_for({**wave, "id": entry.get("id")}), wave.get("epsilon"))
    keys = ("kind", "mechanism", "wave", *cls.entry_key_names())
    if len(_READ) >= _READ_LIMIT:
        _READ.clear()
    _READ[id(entry)] = (entry, keys, tuple(map(entry.get, keys)), mechanism)
    return mechanism


def build_wave_layer(inner: Mechanism, share: Decimal, qid: str = "") -> tuple[dict, Decimal]:
    """Return the design entry of a series' per-wave layer on ``inner``'s reports at ε₁ ≤ share (mechanisms/waves.py)."""
    layer_class = mechanism_class(*LAYER_OF_SHAPE[inner.report]) if inner.report in LAYER_OF_SHAPE else None
    return build_layer(inner, layer_class, share, qid)


def choose(question, share: Decimal, *, forced: str | None = None,
           layered: bool = False) -> tuple[type[Mechanism], dict, Decimal]:
    """Return the mechanism of least variance for a definition question at its share, its entry fields and its ε′.

    The classic mechanisms of the kind are ranked by their ``ranking_variance``; one with a
    ``gain_needed`` replaces the best of them only when its ``selection_variance`` is at least
    that share below every classic's. ``forced`` names the one mechanism a definition asks for
    (ValueError when it is impossible at this share). ``layered`` keeps only the mechanisms a
    series' per-wave layer can randomize again (``Mechanism.layered``).
    """
    candidates = []
    for mechanism in for_kind(question.kind):
        if (forced is not None and mechanism.name != forced) or (layered and not mechanism.layered):
            continue
        try:
            fields, realised = mechanism.build(question, share)
        except ValueError:
            continue
        entry = {"kind": question.kind, "options": question.options, "min": question.min, "max": question.max,
                 "epsilon_nominal": float(share), **fields}
        candidates.append((mechanism, mechanism.from_entry(entry), fields, realised))
    if not candidates:
        if layered:
            names = ", ".join(m.name for m in for_kind(question.kind) if m.layered)
            raise ValueError(f"under wave_epsilon a {question.kind} question needs a mechanism whose report each wave "
                             f"can randomize again ({names}), possible at a share of {float(share):.3g}")
        if forced is None:
            raise ValueError(f"no {question.kind} mechanism works at a share of {float(share):.3g}")
        always = " or ".join(f'"{name}"' for name in ["auto", *(mechanism.name for mechanism in for_kind(question.kind)
                                                               if not mechanism.smallest_epsilon())])
        raise ValueError(
            f"the {forced} mechanism needs a share of the budget of at least "
            f"{mechanism_class(question.kind, forced).smallest_epsilon():.3g}, but this question's share is "
            f"{float(share):.3g}; raise epsilon or the question's weight, or use mechanism {always}")
    classics = [candidate for candidate in candidates if not candidate[0].gain_needed]
    best = min(classics or candidates, key=lambda candidate: candidate[1].ranking_variance())
    if classics:
        floor = min(candidate[1].selection_variance() for candidate in classics)
        newer = [candidate for candidate in candidates if candidate[0].gain_needed
                 and candidate[1].selection_variance() <= floor * (1 - candidate[0].gain_needed)]
        if newer:
            best = min(newer, key=lambda candidate: candidate[1].selection_variance())
    mechanism, _, fields, realised = best
    return mechanism, fields, realised


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
