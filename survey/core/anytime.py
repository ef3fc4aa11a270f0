"""Anytime-valid intervals (confidence sequences): intervals that may be checked after every response.

A fixed-n 95% interval covers the truth 95% of the time at one n chosen in advance; watched
after every response and read when it looks precise, it misses far more often. A confidence
sequence (Darling & Robbins 1967; Howard, Ramdas, McAuliffe & Sekhon 2021) holds at every n
at once: P(∃ n ≥ 1: truth ∉ CS_n) ≤ α, so any stopping rule keeps its coverage.

Derivation (the Hoeffding-type CS of Waudby-Smith, Wu & Ramdas 2023, "Nonparametric extensions
of randomized response for private confidence sets", ICML, section 3, built on the two-sided
normal-mixture boundary of Howard et al. 2021, "Time-uniform, nonparametric, nonasymptotic
confidence sequences", Ann. Statist. 49(2), eq. (14) and Proposition 3):

- Every report's debiased value X_i (an indicator's (Y_i − q)/(p − q), a number's
  lo + (R_i − q)/(p − q)(hi − lo)) lies in a known range [a, b] and has mean μ, the estimand;
  the reports of a random sample of respondents are i.i.d.
- Hoeffding's lemma: E exp(λ(X_i − μ)) ≤ exp(λ²σ²/2) with σ = (b − a)/2, so with
  S_n = Σ (X_i − μ) and v = σ²n, exp(λS_n − λ²v/2) is a nonnegative supermartingale for every λ.
- Mixing λ over N(0, 1/ρ) gives the supermartingale √(ρ/(v + ρ))·exp(S_n²/(2(v + ρ))), and
  Ville's inequality bounds the chance it ever reaches 1/α by α. Hence, with probability at
  least 1 − α, for every n at once, |S_n| < √((v + ρ)·log((v + ρ)/(ρα²))), i.e.
  |X̄_n − μ| < √((σ²n + ρ)·log((σ²n + ρ)/(ρα²)))/n.
- ρ > 0 is free (validity holds for any ρ fixed before the data); it is tuned so that the
  boundary is narrowest at the planned n, v* = σ²·planned: minimising (v* + ρ)(log((v* + ρ)/ρ)
  + 2 log(1/α)) gives r = (v* + ρ)/ρ with r − log r = 1 + 2 log(1/α), i.e.
  r = −W₋₁(−α²/e) (Lambert W, lower branch), ρ = v*/(r − 1).
- A report whose range is wide next to its spread (a piecewise or hybrid level, a sampled
  option's bit) gets a narrower bound from its variance, which the mechanism also knows: the
  worst Var(X_i) ≤ σ_w² over every population. Bennett's inequality gives
  E exp(λ(X_i − μ)) ≤ exp(σ_w²ψ(λ)) for λ ≥ 0 with ψ(λ) = (e^{λc} − 1 − λc)/c² and c = b − a
  ≥ X_i − μ (the same for −X_i), so exp(λS_n − σ_w²nψ(λ)) is a nonnegative supermartingale.
  A discrete mixture over λ_j = λ*·2^{j/2}, j = −8..8, with weights ∝ 1/((|j| + 1)(|j| + 2))
  summing to 1, λ* = √(2 log(2/α)/(σ_w²·planned)), stays one (Howard et al. 2021, section 3);
  Ville at 2/α on each side gives the boundary s_n solving Σ w_j exp(λ_j s − σ_w²nψ(λ_j)) = 2/α.
  Which of the two boundaries a question uses is chosen from the design and the planned n
  alone, never from the data, so either keeps its guarantee: Bennett's where it is at least 5%
  narrower at the planned n (it widens faster away from it: about 20% at ten times or a tenth
  of the planned n, against 7% and 26% for the normal mixture), else Hoeffding's.
- The interval is clipped to the feasible range, as the fixed ones are (one wholly beyond an end is
  moved inside keeping its width, never a point); a choice or multi
  question's d intervals use α/d each (Bonferroni), so all hold together at every n.

The bound uses only the running mean and n, so the tallies the store keeps suffice. It is
wider than the fixed-n interval at the planned n (about 1.4 to 1.6 times at 95%): the price of
being allowed to look at every n. Pure: numpy/scipy only, no I/O.
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from .defaults import ANYTIME, DEFAULT_PLANNED, FIXED  # noqa: F401 (re-exported)
from .estimators import Estimate, inside

KINDS = (FIXED, ANYTIME)
BENNETT_GAIN = 0.95
_STEPS = np.arange(-8, 9)
_WEIGHTS = 1 / ((np.abs(_STEPS) + 1) * (np.abs(_STEPS) + 2))
_LOG_WEIGHTS = np.log(_WEIGHTS / _WEIGHTS.sum())
MAX_NEWTON = 100
ROUNDING_ULPS = 16


def check_kind(kind) -> str:
    """Return ``kind`` if it is "fixed" or "anytime", else raise ValueError."""
    if kind not in KINDS:
        raise ValueError(f"intervals must be fixed or anytime, got {kind!r}")
    return kind


def check_planned(planned) -> int:
    """Return the planned number of reports, or raise ValueError unless it is an integer from 1 to 10^9."""
    if isinstance(planned, bool) or not isinstance(planned, numbers.Integral) or not 1 <= planned <= 10**9:
        raise ValueError(f"planned must be a whole number of respondents from 1 to 1,000,000,000, got {planned!r}")
    return int(planned)


@functools.lru_cache(maxsize=256)
def mixture_ratio(alpha: float) -> float:
    """Return r = (v* + ρ)/ρ of the normal mixture tuned at v*: the root r > 1 of r − log r = 1 + 2 log(1/α)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    from scipy.special import lambertw  # here, not at the top: a store or an export needs no scipy (start-up)

    return float(-lambertw(-alpha * alpha / math.e, -1).real)


def radius(n, *, alpha: float, planned: int):
    """Return the CS's half-width for the mean of n observations of range 1 (σ² = 1/4), tuned for ``planned``.

    √((n/4 + ρ)·log((n/4 + ρ)/(ρα²)))/n with ρ = (planned/4)/(r − 1); infinite for n = 0. ``n`` may
    be a numpy array of counts (every look of a survey at once), giving an array.
    """
    rho = (planned / 4) / (mixture_ratio(alpha) - 1)
    counts = np.asarray(n, dtype=float)
    time = counts / 4 + rho
    with np.errstate(divide="ignore"):
        out = np.where(counts > 0, np.sqrt(time * np.log(time / (rho * alpha * alpha))) / counts, np.inf)
    return float(out) if out.ndim == 0 else out


def bernstein_radius(n, *, alpha: float, planned: float, variance: float, spread: float):
    """Return the discrete-mixture Bennett boundary's half-width at n for values of range ``spread`` and variance ≤ ``variance``.

    s_n/n with s_n the root of Σ w_j exp(λ_j s − variance·n·ψ(λ_j)) = 2/α; infinite for n = 0.
    ``n`` may be a numpy array, giving an array. The root is approached from above by Newton's
    method (``_mixture_root``), so the half-width is never below the exact root's: the guarantee holds.
    """
    counts = np.asarray(n, dtype=float)
    lambdas, psi = _bennett_terms(float(alpha), float(planned), float(variance), float(spread))
    flat = counts.reshape(-1)
    positive = flat > 0
    out = np.full(flat.shape, np.inf)
    out[positive] = _mixture_root(lambdas, variance * flat[positive, None] * psi[None, :],
                                  math.log(2 / alpha)) / flat[positive]
    out = out.reshape(counts.shape)
    return float(out) if out.ndim == 0 else out


@functools.lru_cache(maxsize=256)
def _bennett_terms(alpha: float, planned: float, variance: float, spread: float) -> tuple[np.ndarray, np.ndarray]:
    """Return the mixture's λ_j (centred at λ* for ``planned``) and ψ(λ_j) = (e^{λc} − 1 − λc)/c², c = ``spread``."""
    center = math.sqrt(2 * math.log(2 / alpha) / (variance * planned))
    lambdas = center * 2.0 ** (_STEPS / 2)
    with np.errstate(over="ignore"):
        psi = (np.expm1(lambdas * spread) - lambdas * spread) / spread ** 2
    lambdas.flags.writeable = psi.flags.writeable = False
    return lambdas, psi


def _mixture_root(lambdas: np.ndarray, costs: np.ndarray, target: float) -> np.ndarray:
    """Return, per row of ``costs``, the root s of F(s) = log Σ_j w_j exp(λ_j s − cost_j) = ``target``, never below it.

    F is convex and increasing in s (a log-sum-exp of increasing affine functions), so Newton's
    method from above falls onto the root without crossing it; the bracket [low, high] with
    F(low) < target ≤ F(high), as computed, is kept all along, so a step that rounding carries
    below the root only raises ``low`` and the next step halves the bracket. ``high`` is returned,
    raised by F's rounding error (ROUNDING_ULPS ulps of its largest exponent) over its slope, so
    that rounding cannot leave it below the exact root: about 6 Newton steps instead of 100
    halvings, all rows at once.
    """
    base = _LOG_WEIGHTS[None, :] - costs
    # Each term alone reaches the target at (target − base_j)/λ_j, so F does at the least of these; and F is at
    # most the largest exponent plus log(17) (17 terms), so it is below the target before each term reaches
    # target − log 17: a bracket a few units of 1/λ wide, whatever the scale.
    high = np.min((target - base) / lambdas[None, :], axis=1)
    low = np.maximum(np.min((target - math.log(len(_STEPS)) - base) / lambdas[None, :], axis=1), 0.0)
    for _ in range(64):  # rounding in the start: F(high) must not be below the target
        value, slope = _mixture(base, lambdas, high)
        short = value < target
        if not np.any(short):
            break
        high = np.where(short, high * (1 + 1e-12) + 1e-300, high)
    halve = np.zeros(high.shape, dtype=bool)
    for _ in range(MAX_NEWTON):
        newton = high - (value - target) / slope
        open_ = (high - low > 4 * np.spacing(high)) & (halve | ~(newton >= high))
        if not np.any(open_):
            break
        trial = np.where(halve | ~(newton > low), 0.5 * (low + high), newton)
        trial_value, trial_slope = _mixture(base, lambdas, trial)
        above = (trial_value >= target) & open_
        below = (trial_value < target) & open_
        high = np.where(above, trial, high)
        value = np.where(above, trial_value, value)
        slope = np.where(above, trial_slope, slope)
        low = np.where(below, trial, low)
        halve = below
    # Each term's exponent is computed with an error of an ulp or so of |base_j| + λ_j s, which moves F by
    # its share of the sum; step up past ROUNDING_ULPS times that, over F's slope.
    with np.errstate(invalid="ignore", over="ignore"):
        exponents = base + lambdas[None, :] * high[:, None]
        shares = np.exp(exponents - value[:, None])
        sizes = np.where(shares > 0, np.abs(base) + lambdas[None, :] * high[:, None], 0.0)
    error = ROUNDING_ULPS * np.finfo(float).eps * ((shares * sizes).sum(axis=1) + abs(target))
    return high + error / slope


def _mixture(base: np.ndarray, lambdas: np.ndarray, root: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return F(s) = log Σ exp(base_j + λ_j s) and F′(s) per row, computed stably (largest term factored out)."""
    exponents = base + lambdas[None, :] * root[:, None]
    top = exponents.max(axis=1)
    terms = np.exp(exponents - top[:, None])
    total = terms.sum(axis=1)
    return top + np.log(total), (terms * lambdas[None, :]).sum(axis=1) / total


def half_width(n, *, spread: float, level: float, planned: float, simultaneous_over: int = 1,
               variance: float | None = None):
    """Return the anytime half-width at n of a mean of debiased values of range ``spread`` (and variance ≤ ``variance``).

    With a variance bound, Bennett's boundary is used where it is at least 5% narrower than
    Hoeffding's at the planned n (BENNETT_GAIN), a choice that depends on the design and the planned n only.
    """
    alpha = (1 - level) / simultaneous_over
    if _bennett_is_narrower(alpha, planned, variance, spread):
        return bernstein_radius(n, alpha=alpha, planned=planned, variance=variance, spread=spread)
    return spread * radius(n, alpha=alpha, planned=planned)


@functools.lru_cache(maxsize=256)
def _bennett_is_narrower(alpha: float, planned: float, variance: float | None, spread: float) -> bool:
    """Return whether Bennett's boundary is at least 5% narrower than Hoeffding's at the planned n (BENNETT_GAIN)."""
    if variance is None or not variance > 0:
        return False
    hoeffding = spread * radius(planned, alpha=alpha, planned=planned)
    return bernstein_radius(planned, alpha=alpha, planned=planned, variance=variance,
                            spread=spread) < BENNETT_GAIN * hoeffding


@functools.lru_cache(maxsize=1024)
def _half_width_at(n: int, spread: float, level: float, planned: float, simultaneous_over: int,
                   variance: float | None) -> float:
    """Return ``half_width`` at one n, remembered: a choice question's options all share it, and so do repeated views."""
    return half_width(n, spread=spread, level=level, planned=planned, simultaneous_over=simultaneous_over,
                      variance=variance)


def anytime_estimate(estimate: Estimate, *, debiased: tuple[float, float], feasible: tuple[float, float],
                     level: float, planned: float, simultaneous_over: int = 1,
                     variance: float | None = None) -> Estimate:
    """Return ``estimate`` with its interval replaced by the confidence sequence at its n.

    ``debiased`` is the range of one report's debiased value and ``variance`` a bound on its
    variance, ``feasible`` the estimand's range (the interval is clipped to it and spans it when n = 0).
    """
    low, high = feasible
    if estimate.estimate is None or estimate.n == 0:
        return Estimate(estimate=estimate.estimate, std_error=estimate.std_error, ci_low=low, ci_high=high,
                        n=estimate.n, noisy_share=estimate.noisy_share)
    half = _half_width_at(int(estimate.n), float(debiased[1] - debiased[0]), float(level), float(planned),
                          int(simultaneous_over), None if variance is None else float(variance))
    ci_low, ci_high = inside(estimate.estimate - half, estimate.estimate + half, low, high)
    return Estimate(estimate=estimate.estimate, std_error=estimate.std_error, ci_low=ci_low, ci_high=ci_high,
                    n=estimate.n, noisy_share=estimate.noisy_share)


