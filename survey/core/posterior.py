"""Posterior (credible) intervals under a stated prior: the other interval published for small samples.

Every estimand of an indicator mechanism is a share θ whose reports are 1 with probability
λ(θ) = q + (p − q)θ, (p, q) the mechanism's exact indicator probabilities. With k of n reports
equal to 1 the likelihood is λ^k (1 − λ)^(n − k) (Warner 1965), and under a Beta(a, b) prior the
posterior is ∝ θ^(a−1)(1 − θ)^(b−1) λ(θ)^k (1 − λ(θ))^(n−k) on [0, 1] (Winkler & Franklin 1979,
"Warner's randomized response model: a Bayesian approach", JASA 74(365); Migon & Tachibana 1997).
The interval is the equal-tailed one: its ends are the posterior's (1 − level)/2 and
(1 + level)/2 quantiles, so it lies in [0, 1] by construction.

Computed by numerical integration, stable for n up to 10^7 and beyond (``interval``):

- the log-likelihood is taken relative to its maximum on [0, 1], at θ̂ = (k/n − q)/(p − q) clipped
  to [0, 1], as k·log1p(δ/λ̂) + (n − k)·log1p(−δ/(1 − λ̂)) with δ = (p − q)(θ − θ̂): no cancellation of
  terms of size n;
- it is concave, so the region where it is within DROP = 80 of its maximum is an interval [L, U]
  (found by Brent's method); outside it the posterior density is below e^−80 of its peak's scale
  and is left out;
- [L, U] is cut at its middle into two pieces, each integrated by composite Gauss–Legendre
  quadrature (PANELS panels of NODES nodes). A piece that reaches 0 under a prior with a < 1
  (or 1 with b < 1), where the density is infinite, is integrated in s with θ = c·s^(1/a)
  (1 − θ = (1 − c)·s^(1/b)), which turns θ^(a−1)dθ into the constant c^a/a·ds;
- a quantile is found in the panel where the cumulative mass crosses it, by Brent's method on
  that panel's partial integral (again Gauss–Legendre).

A choice question's options share a symmetric Dirichlet(a, …, a) prior, whose marginal for one
option is Beta(a, (d − 1)a); each option's interval is the exact posterior of its share given its
own indicator's count (binomial with λ(θ_i) for every indicator mechanism), which does not use
what the other options' counts say: a marginal posterior, slightly wider than the joint one, with
exact coverage under the prior. A multiple choice's options are yes/no shares, Beta(a, b) each.
A number's mean is a share of its range x = (mean − min)/(max − min) with a Beta(a, b) prior: exact
for a bit report (Duchi et al. 2013: reports are 1 with probability q + (p − q)x), and for a level
report, whose likelihood has no closed form, approximate: the normal likelihood of its unbiased
estimate with its standard error (the Laplace/normal approximation on the debiased scale,
accurate as the central limit theorem is for the mean of the reports; ``normal_interval``).
Pure: numpy/scipy only, no I/O.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

# scipy is imported where a posterior is computed, not here: the readout, the exports and `--help`
# import this module for its names and need not load scipy.

PANELS = 96
NODES = 16
DROP = 80.0
_X, _W = np.polynomial.legendre.leggauss(NODES)
PRIORS = {"jeffreys": (0.5, 0.5), "uniform": (1.0, 1.0)}
DEFAULT_PRIOR_NAME = "jeffreys"


@dataclass(frozen=True)
class Prior:
    """A Beta(a, b) prior for a share (a symmetric Dirichlet(a, …, a) for a single choice's shares)."""

    a: float
    b: float

    @property
    def name(self) -> str:
        """The prior as a short name: "jeffreys", "uniform" or "beta(a,b)" (what ``parse_prior`` reads back)."""
        for name, pair in PRIORS.items():
            if (self.a, self.b) == pair:
                return name
        return f"beta({format(self.a, 'g')},{format(self.b, 'g')})"

    def words(self) -> str:
        """The prior in plain words: "a Jeffreys Beta(½, ½) prior", "a uniform prior", "a Beta(2, 3) prior"."""
        if self.name == "jeffreys":
            return "a Jeffreys Beta(1/2, 1/2) prior"
        if self.name == "uniform":
            return "a uniform prior"
        return f"a Beta({format(self.a, 'g')}, {format(self.b, 'g')}) prior"

    def for_option(self, options: int) -> Prior:
        """Return one option's marginal prior under the symmetric Dirichlet(a, …, a) of ``options`` options."""
        return Prior(self.a, (options - 1) * self.a)


DEFAULT_PRIOR = Prior(*PRIORS[DEFAULT_PRIOR_NAME])


# The prior as a web address gives it (checked before parse_prior, and documented in the API's schema): "jeffreys",
# "uniform", "A,B" or "beta(A,B)" in lower case, A and B positive decimals with a nonzero digit; parse_prior
# itself, for the command line, also takes spaces, capitals and other float spellings.
PRIOR_MAX_LENGTH = 40
_POSITIVE = r"(0*[1-9][0-9]{0,8}(\.[0-9]{1,8})?|0*\.[0-9]{0,7}[1-9][0-9]{0,7})"
PRIOR_PATTERN = rf"^(jeffreys|uniform|{_POSITIVE},{_POSITIVE}|beta\({_POSITIVE},{_POSITIVE}\))$"


def web_prior(text: str) -> Prior:
    """Return the prior of a web address's ``prior`` (PRIOR_PATTERN, at most PRIOR_MAX_LENGTH long); else ValueError."""
    if len(text) > PRIOR_MAX_LENGTH or not re.match(PRIOR_PATTERN, text):
        raise ValueError(f"prior must be jeffreys, uniform, or A,B with two positive numbers (a Beta(A, B) prior), "
                         f"got {text[:PRIOR_MAX_LENGTH + 1]!r}")
    return parse_prior(text)


def parse_prior(text) -> Prior:
    """Return the prior named by ``text``: "jeffreys", "uniform", "A,B" or "beta(A,B)" with A, B > 0; else ValueError."""
    if isinstance(text, Prior):
        return text
    cleaned = str(text).strip().lower().replace(" ", "")
    if cleaned in PRIORS:
        return Prior(*PRIORS[cleaned])
    if cleaned.startswith("beta(") and cleaned.endswith(")"):
        cleaned = cleaned[5:-1]
    parts = cleaned.split(",")
    try:
        a, b = (float(part) for part in parts)
    except ValueError:
        raise ValueError(f"prior must be jeffreys, uniform or two positive numbers A,B (a Beta(A, B) prior), "
                         f"got {text!r}") from None
    if not (0 < a < math.inf and 0 < b < math.inf):
        raise ValueError(f"a Beta(A, B) prior needs A > 0 and B > 0, got {text!r}")
    return Prior(a, b)


def prior_interval(prior: Prior, level: float) -> tuple[float, float]:
    """Return the prior's own equal-tailed interval (the posterior with no reports)."""
    from scipy.special import betaincinv

    alpha = 1 - level
    return float(betaincinv(prior.a, prior.b, alpha / 2)), float(betaincinv(prior.a, prior.b, 1 - alpha / 2))


def binomial_interval(k: int, n: int, p: float, q: float, prior: Prior, level: float) -> tuple[float, float]:
    """Return the equal-tailed posterior interval of θ given k of n reports 1, each 1 with chance q + (p − q)θ."""
    if n == 0:
        return prior_interval(prior, level)
    from scipy.special import xlog1py

    slope = p - q
    mode = min(max((k / n - q) / slope, 0.0), 1.0)
    top = q + slope * mode

    def loglik(theta):
        step = slope * (np.asarray(theta, dtype=float) - mode)
        # A count of 0 adds nothing: its chance λ̂ (or 1 − λ̂) may be 0 at the maximum (a design with q = 0 or p = 1).
        # Where λ reaches 0 or 1 (q = 0 or p = 1) the ratio is −1 up to rounding: log1p(−1) = −∞, never NaN.
        ones = xlog1py(k, np.maximum(step / top, -1.0)) if k else 0.0
        return ones + (xlog1py(n - k, np.maximum(-step / (1 - top), -1.0)) if n - k else 0.0)
    return interval(loglik, mode, prior, level)


def normal_interval(center: float, std_error: float, prior: Prior, level: float) -> tuple[float, float]:
    """Return the posterior interval of x in [0, 1] under a normal likelihood N(center; x, std_error²) (approximate)."""
    if std_error is None or not std_error > 0 or center is None or not math.isfinite(center):
        return prior_interval(prior, level)
    mode = min(max(center, 0.0), 1.0)

    def loglik(theta):
        theta = np.asarray(theta, dtype=float)
        return ((mode - center) ** 2 - (theta - center) ** 2) / (2 * std_error ** 2)
    return interval(loglik, mode, prior, level)


def interval(loglik: Callable, mode: float, prior: Prior, level: float) -> tuple[float, float]:
    """Return the equal-tailed ``level`` interval of the posterior ∝ Beta(a, b) density × exp(loglik) on [0, 1].

    ``loglik`` is concave, vectorised and 0 at its maximum ``mode`` in [0, 1].
    """
    from scipy.optimize import brentq

    low = 0.0 if loglik(0.0) > -DROP else brentq(lambda t: loglik(t) + DROP, 0.0, mode, xtol=1e-15)
    high = 1.0 if loglik(1.0) > -DROP else brentq(lambda t: loglik(t) + DROP, mode, 1.0, xtol=1e-15)
    middle = (low + high) / 2
    pieces = [_Piece(low, middle, prior, loglik, left=True), _Piece(middle, high, prior, loglik, left=False)]
    logs = [piece.panel_logs() for piece in pieces]
    shift = float(max(np.max(values) for values in logs))
    masses = np.concatenate([piece.panel_masses(values, shift) for piece, values in zip(pieces, logs)])
    cumulative = np.cumsum(masses)
    alpha = 1 - level
    return tuple(_quantile(pieces, masses, cumulative, share * cumulative[-1], shift)
                 for share in (alpha / 2, 1 - alpha / 2))


def _quantile(pieces: list, masses: np.ndarray, cumulative: np.ndarray, target: float, shift: float) -> float:
    """Return θ at which the cumulative (unnormalised, shifted) posterior mass reaches ``target``."""
    index = min(int(np.searchsorted(cumulative, target)), len(masses) - 1)
    piece = pieces[0] if index < PANELS else pieces[1]
    panel = index % PANELS
    remaining = target - (cumulative[index] - masses[index])
    return piece.solve(panel, remaining, shift)


class _Piece:
    """One of the two halves of [L, U], integrated in s ∈ [0, 1] with PANELS Gauss–Legendre panels, in θ order."""

    def __init__(self, start: float, end: float, prior: Prior, loglik: Callable, *, left: bool):
        self.start, self.end, self.prior, self.loglik = start, end, prior, loglik
        # The singular transform: the piece touches 0 (1) where the prior's density is infinite.
        self.power = (prior.a if left and start == 0.0 and prior.a < 1 else
                      prior.b if not left and end == 1.0 and prior.b < 1 else None)
        self.left = left
        from scipy.special import xlog1py, xlogy

        self._xlogy, self._xlog1py = xlogy, xlog1py

    def theta(self, s):
        """Return θ at s (s = 0 at the piece's start, except for the right singular piece: s = 0 at θ = 1)."""
        s = np.asarray(s, dtype=float)
        if self.power is None:
            return self.start + (self.end - self.start) * s
        if self.left:
            return self.end * s ** (1 / self.power)
        return 1 - (1 - self.start) * s ** (1 / self.power)

    def log_density(self, s):
        """Return log(prior density × likelihood × dθ/ds) at s."""
        theta = self.theta(s)
        a, b = self.prior.a - 1, self.prior.b - 1
        xlogy, xlog1py = self._xlogy, self._xlog1py
        if self.power is None:
            jacobian = math.log(self.end - self.start) if self.end > self.start else -math.inf
            return xlogy(a, theta) + xlog1py(b, -theta) + self.loglik(theta) + jacobian
        if self.left:
            constant = self.power * math.log(self.end) - math.log(self.power) if self.end > 0 else -math.inf
            return constant + xlog1py(b, -theta) + self.loglik(theta)
        constant = self.power * math.log(1 - self.start) - math.log(self.power) if self.start < 1 else -math.inf
        return constant + xlogy(a, theta) + self.loglik(theta)

    @property
    def reversed(self) -> bool:
        """Whether s runs against θ (the right singular piece)."""
        return self.power is not None and not self.left

    def _nodes(self, start: float, end: float):
        return start + (end - start) * (_X + 1) / 2, (end - start) / 2 * _W

    def panel_logs(self) -> np.ndarray:
        """Return the log density at every node of every panel (rows in θ order)."""
        nodes = (np.arange(PANELS)[:, None] + (_X[None, :] + 1) / 2) / PANELS
        logs = self.log_density(nodes)
        return logs[::-1] if self.reversed else logs

    def panel_masses(self, logs: np.ndarray, shift: float) -> np.ndarray:
        """Return each panel's mass, in θ order, relative to exp(shift), from its ``panel_logs``."""
        return np.exp(logs - shift) @ (_W / (2 * PANELS))

    def _partial(self, start: float, end: float, shift: float) -> float:
        nodes, weights = self._nodes(start, end)
        return float(np.exp(self.log_density(nodes) - shift) @ weights)

    def solve(self, panel: int, remaining: float, shift: float) -> float:
        """Return θ inside a panel (θ order) where the panel's mass from its θ-lower side reaches ``remaining``."""
        j = PANELS - 1 - panel if self.reversed else panel
        start, end = j / PANELS, (j + 1) / PANELS
        if self.reversed:
            def excess(s):
                return self._partial(s, end, shift) - remaining
        else:
            def excess(s):
                return self._partial(start, s, shift) - remaining
        from scipy.optimize import brentq

        low_value, high_value = excess(start), excess(end)
        if low_value * high_value > 0:
            s = start if abs(low_value) < abs(high_value) else end
        else:
            s = brentq(excess, start, end, xtol=1e-15, rtol=4 * np.finfo(float).eps)
        return float(np.clip(self.theta(s), 0.0, 1.0))


POSTERIOR = "posterior"


def posterior_kind(prior) -> str:
    """Return the interval kind of posterior intervals under ``prior``: "posterior-jeffreys", "posterior-beta(2,3)", …"""
    return f"{POSTERIOR}-{parse_prior(prior).name}"


def kind_prior(kind) -> Prior | None:
    """Return the prior of a posterior interval kind ("posterior" alone: the default), None for another kind.

    ValueError when the kind names a posterior with a prior that ``parse_prior`` does not read.
    """
    if not isinstance(kind, str) or not (kind == POSTERIOR or kind.startswith(POSTERIOR + "-")):
        return None
    return DEFAULT_PRIOR if kind == POSTERIOR else parse_prior(kind[len(POSTERIOR) + 1:])


def kind_words(kind: str, level: float) -> str:
    """Return a posterior kind's intervals in words: "95% credible interval under a Jeffreys Beta(1/2, 1/2) prior"."""
    return f"{format(level * 100, 'g')}% credible interval under {kind_prior(kind).words()}"


def scaled_interval(interval_01: tuple[float, float], low: float, high: float) -> tuple[float, float]:
    """Return an interval of x in [0, 1] on the scale [low, high], inside it."""
    return (min(max(low + (high - low) * interval_01[0], low), high),
            min(max(low + (high - low) * interval_01[1], low), high))
