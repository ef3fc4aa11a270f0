"""Two-layer randomizer of a series' waves: RAPPOR's permanent layer with an instantaneous layer on its report.

Erlingsson, Pihur & Korolova (CCS 2014): the device keeps one report of the question's own
mechanism per possible answer (the permanent layer, ε∞ per answer value, memoized in
client_js/series.js), and every wave sends that kept report randomized afresh by an
instantaneous layer at ε₁. The instantaneous layer is one of the product's own mechanisms run
on the kept report as its answer, on the report's own domain: randomized response on a bit,
generalized randomized response on an option index, randomized response per bit on a bit list,
and the piecewise mechanism on an output level (whose input range is the levels 0..G−1). Its ε₁
is that mechanism's own ε over the whole report domain, so any two kept reports, and thus any two
answers, give a wave's report likelihoods within e^ε₁ of each other: a linked observer's test of
"did the answer change between two waves" has advantage at most (e^ε₁ − 1)/(e^ε₁ + 1) per wave.

The composition is again a randomizer with known indicators: an indicator (or a level's value R,
scaled to y = (R − Rmin)/(Rmax − Rmin) as the layer's input) that is 1 with probability
q + (p − q)·truth is reported through a layer with (p₁, q₁) as an indicator with
p′ − q′ = (p₁ − q₁)(p − q)/(Rmax − Rmin) and q′ = q₁ + (p₁ − q₁)(q − Rmin)/(Rmax − Rmin),
which is what the estimators debias. Only mechanisms whose class sets ``layered`` (a report
domain the layer keeps, level values affine in the level) can be composed. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from decimal import Decimal
from fractions import Fraction
from types import SimpleNamespace

import numpy as np

from ..estimators import Estimate, debias_indicators, level_mean
from ..words import format_epsilon
from .base import BIT, BITS, INDEX, LEVEL, Mechanism
from .common import default_rng

# The layer of each report shape: (the layer question's kind, its mechanism's name). Each one's ε is its own
# over every pair of inputs, here every pair of kept reports: ln((1 − f)/f) for randomized response (Warner
# 1965), ln(p/q) for GRR (Wang et al. 2017), d·ln((1 − f)/f) for randomized response on each of d bits,
# and 2 ln(a/b) for the piecewise mechanism on the levels 0..G−1 as a number's range (Wang et al. 2019).
LAYER_OF_SHAPE = {BIT: ("yes_no", "rr"), INDEX: ("choice", "grr"), BITS: ("multi", "rr"), LEVEL: ("number", "piecewise")}


def layer_question(inner: Mechanism, qid: str = "") -> SimpleNamespace:
    """Return the stand-in definition question of an inner mechanism's report domain (what the layer randomizes)."""
    kind, _ = LAYER_OF_SHAPE[inner.report]
    options = [str(index) for index in range(inner.d)] if inner.report in (INDEX, BITS) else None
    lo, hi = (0, inner.levels - 1) if inner.report == LEVEL else (None, None)
    return SimpleNamespace(id=qid, kind=kind, options=options, min=lo, max=hi, mechanism="auto")


def build_layer(inner: Mechanism, layer_class: type[Mechanism], share: Decimal, qid: str = "") -> tuple[dict, Decimal]:
    """Return the design entry of the instantaneous layer on ``inner``'s reports at ε₁ ≤ share, and its realised ε₁.

    ``layer_class`` is the registry's mechanism for the report's shape (``LAYER_OF_SHAPE``).
    ValueError when the inner mechanism cannot carry a layer or the share is too small for it.
    """
    if not getattr(type(inner), "layered", False):
        raise ValueError(f"the {inner.title} cannot carry a per-wave layer; choose another mechanism")
    question = layer_question(inner, qid)
    if float(share) < layer_class.smallest_epsilon():
        raise ValueError(f"this question's share of the per-wave budget, {float(share):.3g}, is below the "
                         f"{layer_class.smallest_epsilon():.3g} its per-wave layer ({layer_class.title}) needs; "
                         "raise wave_epsilon or the question's weight")
    fields, realised = layer_class.build(question, share)
    entry = {"id": qid, "kind": question.kind, **fields}
    if question.options is not None:
        entry["options"] = question.options
    if question.min is not None:
        entry.update(min=question.min, max=question.max)
    entry["epsilon"] = float(realised)
    return entry, realised


def composed_probabilities(inner: Mechanism, layer: Mechanism) -> tuple[Fraction, Fraction]:
    """Return the exact (p′, q′) of the two layers (see the module's docstring)."""
    p, q = inner.probabilities()
    p1, q1 = layer.probabilities()
    low, high = inner.report_range()
    span = high - low
    return q1 + (p1 - q1) * (p - low) / span, q1 + (p1 - q1) * (q - low) / span


class TwoLayer:
    """The mixin of a composed mechanism: the carrier's class for what the report is, the two layers for its law."""

    inner: Mechanism
    layer: Mechanism

    def probabilities(self) -> tuple[Fraction, Fraction]:
        return composed_probabilities(self.inner, self.layer)

    def randomize(self, true_values, rng=None) -> np.ndarray:
        """Draw the permanent layer's report of each answer, then the instantaneous layer on it (a fresh memo per row)."""
        rng = default_rng(rng)
        return self.layer.randomize(self.inner.randomize(true_values, rng), rng)

    def replay(self, true_value, stream):
        """Return the browser's two-layer report from a replay stream: the inner draw, then the layer's."""
        return self.layer.replay(self.inner.replay(true_value, stream), stream)

    def wave(self, kept_reports, rng=None) -> np.ndarray:
        """Return one wave's reports of already kept (memoized) permanent reports: the instantaneous layer alone."""
        return self.layer.randomize(kept_reports, default_rng(rng))

    def exact_denominators(self) -> tuple[int, ...]:
        """Return the one denominator the composed p′ and q′ share (their least common one)."""
        p, q = self.probabilities()
        return (math.lcm(p.denominator, q.denominator),)

    def report_error(self, qid: str, ones: int) -> str | None:
        return self.layer.report_error(qid, ones)

    def batch_error(self, qid: str, ones: np.ndarray) -> str | None:
        return self.layer.batch_error(qid, ones)

    def domain(self) -> str:
        return self.layer.domain()

    @property
    def highest(self) -> int:
        return self.layer.highest

    def likelihood(self, reports: np.ndarray) -> np.ndarray:
        """P(report | category) = Σ_b P(report | kept b)·P(kept b | category): the layer's matrix times the inner's."""
        if self.inner.categories is None:
            return super().likelihood(reports)
        kept = self.inner.likelihood(np.arange(self.inner.categories))
        return self.layer.likelihood(reports) @ kept

    def meanings(self, p, q) -> list[str]:
        return [f"{meaning}; under the series' two layers this is the kept report randomized again this wave "
                f"({self.layer.title}, per-wave ε₁ = {format_epsilon(self.layer_epsilon(), 4)}), so the indicator is 1 with "
                f"probability {format(float(p), '.6g')} when true and {format(float(q), '.6g')} when not"
                for meaning in self.inner.meanings(*self.inner.probabilities())]

    def layer_epsilon(self) -> float:
        """Return the instantaneous layer's realised ε₁, as its design entry records it."""
        return float(self.wave_epsilon)

    def codebook_fields(self) -> dict:
        fields = dict(super().codebook_fields())
        fields["wave_layer"] = {"mechanism": f"{self.layer.kind}/{self.layer.name}", "epsilon": self.layer_epsilon()}
        return fields

    def protection_note(self, epsilon: str) -> str:
        return self.inner.protection_note(epsilon)

    def kept_sentence(self, keep: str) -> str:
        return (f"{self.inner.kept_sentence(keep)} Every wave then randomizes the kept report again "
                f"({self.layer.title}), so that two waves' reports differ.")


class TwoLayerIndicators(TwoLayer):
    """A composition whose reports are indicators (a bit, an option index, a bit list): debiased with (p′, q′)."""

    def estimates(self, ones, n, level) -> list[Estimate]:
        """Each estimand's count of set indicators debiased with the composed (p′, q′), simultaneous intervals.

        A number's bit (Duchi's rounding) estimates x in [0, 1], mapped to the question's range.
        """
        p, q = self.response_probabilities()
        estimates = debias_indicators(ones, n, p=p, q=q, level=level)
        if self.kind != "number":
            return estimates
        lo, hi = self.estimand_range()
        return [dataclasses.replace(
            estimate, estimate=None if estimate.estimate is None else lo + estimate.estimate * (hi - lo),
            std_error=None if estimate.std_error is None else estimate.std_error * (hi - lo),
            ci_low=lo + estimate.ci_low * (hi - lo), ci_high=lo + estimate.ci_high * (hi - lo))
            for estimate in estimates]


class TwoLayerLevels(TwoLayer):
    """A composition whose report is the layer's level: the carrier holds the layer's levels and the question's range."""

    def estimates(self, ones, n, level) -> list[Estimate]:
        """The mean of R = (k + 1/2)/G₁ debiased with the composed (p′, q′) (p′ + q′ = 1: given as integer weights)."""
        p, q = self.probabilities()
        denominator = math.lcm(p.denominator, q.denominator)
        weight_p, weight_q = int(p * denominator), int(q * denominator)
        if weight_p + weight_q != denominator:
            raise AssertionError("a level composition's p′ + q′ must be 1")
        levels = self.layer.levels
        return [level_mean(ones[0], ones[1], n, offset=0.5, divisor=levels, scores=(0, levels - 1),
                           ratio_a=weight_p, ratio_b=weight_q, lo=self.lo, hi=self.hi, level=level, name="level",
                           variance=self.report_variance_range())]

    def _scale(self) -> float:
        """Return ((p₁ − q₁)/(p′ − q′))², turning the layer's n·Var of y into the composition's n·Var of x."""
        p1, q1 = self.layer.probabilities()
        p, q = self.probabilities()
        return float((p1 - q1) / (p - q)) ** 2

    def worst_variance(self) -> float:
        """The layer's worst n·Var over every population of its inputs y, in x's units (an upper bound)."""
        return self.layer.worst_variance() * self._scale()

    def answer_worst_variance(self) -> float:
        return self.layer.worst_variance() * self._scale()

    def variance_at(self, truth) -> float:
        """An upper bound: the kept level's spread around a fixed answer is one population of the layer's inputs."""
        return self.worst_variance()

    def least_report_variance(self) -> float:
        return self.layer.least_report_variance()


@functools.cache
def _composed_class(carrier_class: type, levels: bool) -> type:
    """Return the composed class of a carrier class (made once)."""
    mixin = TwoLayerLevels if levels else TwoLayerIndicators
    return type(f"TwoLayer{carrier_class.__name__}", (mixin, carrier_class), {"__doc__": mixin.__doc__})


def compose(inner: Mechanism, layer: Mechanism, epsilon: float) -> Mechanism:
    """Return the two-layer mechanism of a permanent ``inner`` and an instantaneous ``layer`` on its reports."""
    if inner.report == LEVEL:
        # The carrier: the question's range with the layer's levels (what is sent, counted and tallied).
        carrier = {"lo": inner.lo, "hi": inner.hi, "ratio_a": layer.ratio_a, "ratio_b": layer.ratio_b}
    else:
        carrier = {field.name: getattr(inner, field.name) for field in dataclasses.fields(inner)}
    mechanism = _composed_class(type(inner), inner.report == LEVEL)(**carrier)
    object.__setattr__(mechanism, "inner", inner)
    object.__setattr__(mechanism, "layer", layer)
    object.__setattr__(mechanism, "wave_epsilon", epsilon)
    return mechanism
