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
from scipy.special import lambertw, logsumexp

from .defaults import ANYTIME, DEFAULT_PLANNED, FIXED  # noqa: F401 (re-exported)
from .estimators import Estimate, inside

KINDS = (FIXED, ANYTIME)
BENNETT_GAIN = 0.95
_STEPS = np.arange(-8, 9)
_WEIGHTS = 1 / ((np.abs(_STEPS) + 1) * (np.abs(_STEPS) + 2))
_LOG_WEIGHTS = np.log(_WEIGHTS / _WEIGHTS.sum())


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
    ``n`` may be a numpy array, giving an array.
    """
    counts = np.asarray(n, dtype=float)
    center = math.sqrt(2 * math.log(2 / alpha) / (variance * planned))
    lambdas = center * 2.0 ** (_STEPS / 2)
    with np.errstate(over="ignore"):
        psi = np.expm1(lambdas * spread) - lambdas * spread
    psi = psi / spread ** 2
    target = math.log(2 / alpha)
    flat = counts.reshape(-1)
    positive = flat > 0
    exponents = _LOG_WEIGHTS[None, :] - variance * flat[positive, None] * psi[None, :]
    # Bisection on s for every n at once: the mixture grows with s, is below 2/α at 0 and reaches
    # it by the central λ's own boundary ``high``; 100 halvings leave the float's last bit.
    low = np.zeros(exponents.shape[0])
    high = (target - _LOG_WEIGHTS[8] + variance * flat[positive] * psi[8]) / lambdas[8]
    for _ in range(100):
        middle = (low + high) / 2
        above = logsumexp(exponents + lambdas[None, :] * middle[:, None], axis=1) >= target
        high = np.where(above, middle, high)
        low = np.where(above, low, middle)
    out = np.full(flat.shape, np.inf)
    out[positive] = high / flat[positive]
    out = out.reshape(counts.shape)
    return float(out) if out.ndim == 0 else out


def half_width(n, *, spread: float, level: float, planned: float, simultaneous_over: int = 1,
               variance: float | None = None):
    """Return the anytime half-width at n of a mean of debiased values of range ``spread`` (and variance ≤ ``variance``).

    With a variance bound, Bennett's boundary is used where it is at least 5% narrower than
    Hoeffding's at the planned n (BENNETT_GAIN), a choice that depends on the design and the planned n only.
    """
    alpha = (1 - level) / simultaneous_over
    hoeffding = spread * radius(planned, alpha=alpha, planned=planned)
    if variance is not None and variance > 0 and bernstein_radius(
            planned, alpha=alpha, planned=planned, variance=variance, spread=spread) < BENNETT_GAIN * hoeffding:
        return bernstein_radius(n, alpha=alpha, planned=planned, variance=variance, spread=spread)
    return spread * radius(n, alpha=alpha, planned=planned)


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
    half = half_width(estimate.n, spread=debiased[1] - debiased[0], level=level, planned=planned,
                      simultaneous_over=simultaneous_over, variance=variance)
    ci_low, ci_high = inside(estimate.estimate - half, estimate.estimate + half, low, high)
    return Estimate(estimate=estimate.estimate, std_error=estimate.std_error, ci_low=ci_low, ci_high=ci_high,
                    n=estimate.n, noisy_share=estimate.noisy_share)


