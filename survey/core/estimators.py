"""Debias noisy reports into estimates with Clopper-Pearson confidence intervals.

Every mechanism reduces to binary reports: a report (or one bit of it) is 1 with
probability p when the true answer has the property and q when it does not, so the
share ā of 1s has mean λ = q + θ(p − q) and θ̂ = (ā − q)/(p − q) is unbiased. The
interval is Clopper & Pearson's (1934) exact binomial interval on the count of 1s,
mapped through the monotone map λ ↦ (λ − q)/(p − q) and clipped to the feasible range;
coverage carries over for every n, θ and epsilon, unlike Wald's (Brown, Cai & DasGupta
2001). Estimates themselves stay unclipped so that they remain unbiased and poolable. A
number mechanism that reports a level (piecewise, hybrid, optimal piecewise) has no count
of 1s: its interval is survey.core.bounded_mean's on the mean of the bounded level value R,
which holds at every n for every population, mapped and clipped alike. This module is that
shared machinery (``debias_binary``, ``debias_indicators``, ``level_mean`` and their checks);
each mechanism's own debias function (``debias_rr``, ``debias_grr``, ``debias_piecewise_mean``, …)
lives beside it, in its module of survey.core.mechanisms.

Conventions: ``None`` marks a value that cannot be computed (no reports; a standard error
from fewer than two reports); nothing here returns nan. This module uses numpy and scipy
only; it imports neither Flask nor the database.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .bounded_mean import mean_interval


@dataclass(frozen=True)
class Estimate:
    """One debiased estimate with its standard error and confidence interval.

    ``estimate`` is unbiased and unclipped (it can leave the feasible range), None when
    n = 0. ``std_error`` is the square root of the unbiased variance estimate, None when
    n < 2; it is never a false 0.0 (``debias_binary`` evaluates it at the share clipped to the
    feasible range, a level mechanism floors it at one report's least variance). ``ci_low``/``ci_high`` lie in the feasible
    range ([0, 1], or [lo, hi] for a mean) and span all of it when n = 0. ``noisy_share``
    is the share of reports equal to 1, None when n = 0.
    """

    estimate: float | None
    std_error: float | None
    ci_low: float
    ci_high: float
    n: int
    noisy_share: float | None


def clopper_pearson(successes, n, *, level) -> tuple[float, float]:
    """Return the Clopper & Pearson (1934) exact interval for a binomial proportion.

    [Beta⁻¹(α/2; X, n−X+1), Beta⁻¹(1−α/2; X+1, n−X)] with α = 1 − level; the lower end
    is 0 when X = 0 and the upper end 1 when X = n (so n = 0 gives (0, 1)).
    """
    alpha = 1.0 - _check_level(level)
    n = check_count(n, "n")
    successes = check_count(successes, "successes", upper=n)
    return _clopper_pearson(successes, n, alpha)


def debias_binary(ones, n, *, p_one_if_true, p_one_if_false, level, alpha_divisor=1) -> Estimate:
    """Estimate the share θ of true 1s from n reports of which ``ones`` are 1.

    θ̂ = (ā − q)/(p − q) with p = P(report 1 | true 1), q = P(report 1 | true 0), any p ≠ q
    (Warner 1965 for p = 1 − f, q = f; a crosswise design coded "same/different" has p < q).
    std_error = sqrt(λ̃(1−λ̃)/(n−1))/|p−q| with λ̃ = ā clipped to [min(p, q), max(p, q)], the
    range of every possible λ = E ā: where ā is feasible its square is unbiased for
    Var θ̂ = λ(1−λ)/(n(p−q)²), and it is never a false 0 when every report is equal (it is
    positive whenever 0 < p, q < 1). The interval is Clopper-Pearson on ``ones`` at level
    1 − α/alpha_divisor (α = 1 − level; a divisor d gives Bonferroni-simultaneous intervals
    over d estimates), mapped through the estimator (decreasing when p < q, so its ends swap)
    and clipped to [0, 1]; an interval wholly beyond an end (it then misses every feasible θ, so
    coverage is unaffected) is moved inside keeping its width, so it is never a single point.
    """
    alpha = 1.0 - _check_level(level)
    n = check_count(n, "n")
    ones = check_count(ones, "ones", upper=n)
    p = check_probability(p_one_if_true, "p_one_if_true")
    q = check_probability(p_one_if_false, "p_one_if_false")
    if p == q:
        raise ValueError("p_one_if_true and p_one_if_false must differ for the reports to carry information, "
                         f"got p_one_if_true={p_one_if_true!r}, p_one_if_false={p_one_if_false!r}")
    if isinstance(alpha_divisor, bool) or not isinstance(alpha_divisor, numbers.Integral) or alpha_divisor < 1:
        raise ValueError(f"alpha_divisor must be an integer >= 1, got {alpha_divisor!r}")
    if n == 0:
        return Estimate(estimate=None, std_error=None, ci_low=0.0, ci_high=1.0, n=0, noisy_share=None)
    spread = p - q
    share = ones / n
    feasible = clip(share, min(p, q), max(p, q))
    std_error = math.sqrt(feasible * (1.0 - feasible) / ((n - 1) * spread * spread)) if n > 1 else None
    share_low, share_high = _clopper_pearson(ones, n, alpha / int(alpha_divisor))
    low, high = inside(*sorted(((share_low - q) / spread, (share_high - q) / spread)))
    return Estimate(
        estimate=(share - q) / spread,
        std_error=std_error,
        ci_low=low,
        ci_high=high,
        n=n,
        noisy_share=share,
    )


def debias_indicators(counts: Sequence[int], n, *, p, q, level) -> list[Estimate]:
    """Estimate each option's share from counts of its indicator, with intervals simultaneous over the options.

    ``counts[v]`` is how many of the n reports have option v's indicator set, which is 1 with
    probability p when v is (among) the true answer(s) and q otherwise: subset selection
    (Wang et al. 2016; Ye & Barg 2018) or a multi-select encoding. Bonferroni: each option's
    Clopper-Pearson interval is at level 1 − α/d, so all d hold together with probability
    at least ``level``.
    """
    n = check_count(n, "n")
    counts = check_counts(counts, n, least=1)
    return [debias_binary(count, n, p_one_if_true=p, p_one_if_false=q, level=level, alpha_divisor=len(counts))
            for count in counts]


def level_mean(total, squares, n, *, offset, divisor, scores, ratio_a, ratio_b, lo, hi, level, name,
               variance) -> Estimate:
    """Return the estimate of a level mechanism's mean from Σs and Σs², R = (s + offset)/divisor, s within ``scores``."""
    _check_level(level)
    lo = check_real(lo, "lo")
    hi = check_real(hi, "hi")
    if not lo < hi:
        raise ValueError(f"hi must be greater than lo = {lo!r}, got {hi!r}")
    if total ** 2 > n * squares:
        raise ValueError(f"{name}_squares = {squares} is too small for {name}_sum = {total} "
                         f"over n = {n} reports (Σs² ≥ (Σs)²/n)")
    least, most = _report_variance(variance)
    if n == 0:
        return Estimate(estimate=None, std_error=None, ci_low=lo, ci_high=hi, n=0, noisy_share=None)
    levels = int(ratio_a) + int(ratio_b)
    q = ratio_b / levels
    spread = (ratio_a - ratio_b) / levels
    mean_level = (total / n + offset) / divisor
    unit = (mean_level - q) / spread
    width = hi - lo
    score_variance = None if variance is None else (least * divisor ** 2, most * divisor ** 2)
    score_low, score_high = mean_interval(total, squares, n, low=scores[0], high=scores[1], level=level,
                                          variance=score_variance)
    std_error = None
    if n >= 2:
        # Exact integer arithmetic for n Σs² − (Σs)², then the sample variance of R, floored at one report's least.
        sample = (n * squares - total ** 2) / (n * (n - 1) * divisor * divisor)
        std_error = math.sqrt(max(sample, least) / n) / spread * width
    unit_low, unit_high = inside(((score_low + offset) / divisor - q) / spread,
                                  ((score_high + offset) / divisor - q) / spread)
    return Estimate(
        estimate=lo + unit * width,
        std_error=std_error,
        ci_low=lo + unit_low * width,
        ci_high=lo + unit_high * width,
        n=n,
        noisy_share=mean_level,
    )


def inside(low: float, high: float, lo: float = 0.0, hi: float = 1.0) -> tuple[float, float]:
    """Return [low, high] clipped to [lo, hi]; one wholly beyond an end is moved inside, keeping its width (never a point).

    Such an interval already misses every feasible value (an event of probability at most α), so
    moving it changes no coverage guarantee; it only keeps the report honest about its precision.
    Fixed-n and anytime intervals share it.
    """
    width = min(high - low, hi - lo)
    if low >= hi:
        return float(hi - width), float(hi)
    if high <= lo:
        return float(lo), float(lo + width)
    return float(clip(low, lo, hi)), float(clip(high, lo, hi))


def _report_variance(variance) -> tuple[float, float]:
    """Return the (least, most) variance of one report's R, checked; (0, 1/4) when none is known."""
    if variance is None:
        return 0.0, 0.25
    try:
        least, most = (float(value) for value in variance)
    except (TypeError, ValueError):
        raise ValueError(f"variance must be a (least, most) pair of numbers, got {variance!r}") from None
    if not (math.isfinite(least) and math.isfinite(most) and 0 <= least <= most):
        raise ValueError(f"variance must be a (least, most) pair with 0 <= least <= most, got {variance!r}")
    return least, most


def project_simplex(estimates) -> np.ndarray:
    """Return the Euclidean projection of estimates onto the probability simplex (Norm-Sub).

    Wang et al. (2020): sort f̂ descending as u; ρ = max{j : u_j > (Σ_{i≤j} u_i − 1)/j};
    τ = (Σ_{i≤ρ} u_i − 1)/ρ; f̃ = max(f̂ − τ, 0). The result is non-negative and sums to 1
    with lower total error, but it is biased: show it as a consistent view and keep the
    confidence intervals of the unbiased estimates (never plug-in intervals around f̃).
    """
    values = _finite_vector(estimates, "estimates")
    descending = np.sort(values)[::-1]
    excess = np.cumsum(descending) - 1.0
    rank = np.arange(1, values.size + 1)
    rho = int(np.nonzero(descending > excess / rank)[0][-1]) + 1
    tau = excess[rho - 1] / rho
    return np.maximum(values - tau, 0.0)


@dataclass(frozen=True)
class ConsistentView:
    """A choice question's shares adjusted to be ≥ 0 and sum to 1, with intervals that hold for all options together.

    ``method`` names the estimator the rule chose ("norm-sub" or "ibu"); ``tightened`` is False when
    the simultaneous box missed the simplex and its intervals are shown untightened (see
    ``simplex_intervals``).
    """

    shares: tuple[float, ...]
    lows: tuple[float, ...]
    highs: tuple[float, ...]
    method: str
    tightened: bool


def relative_noise(n, *, p, q, d) -> float:
    """Return d·sd of one option's estimate at uniform shares 1/d: sqrt(λ(1 − λ)/n)/(p − q), λ = q + (p − q)/d, times d."""
    rate = q + (p - q) / d
    return d * math.sqrt(rate * (1.0 - rate) / n) / (p - q)


def simplex_intervals(lows, highs) -> tuple[np.ndarray, np.ndarray, bool]:
    """Return simultaneous intervals of shares summing to 1, tightened by that sum, and whether they could be.

    The shares lie in the box [loᵢ, hiᵢ] (clipped to [0, 1]) for all i together with probability
    ≥ 1 − α, and always on the simplex, so they lie in the box ∩ simplex, whose exact range in each
    coordinate is lo′ᵢ = max(loᵢ, 1 − Σ_{j≠i} hiⱼ), hi′ᵢ = min(hiᵢ, 1 − Σ_{j≠i} loⱼ): the same coverage,
    never wider. When the box misses the simplex (Σ lo > 1 or Σ hi < 1, possible only outside the
    1 − α event) no shares summing to 1 fit every interval: the box is returned unchanged and False.
    """
    lows, highs = _box(lows, highs)
    total_low, total_high = float(lows.sum()), float(highs.sum())
    if total_low > 1.0 or total_high < 1.0:
        return lows, highs, False
    tight_lows = np.minimum(np.maximum(lows, 1.0 - (total_high - highs)), highs)
    tight_highs = np.maximum(np.minimum(highs, 1.0 - (total_low - lows)), lows)
    # Ends that rounding in the sums crossed over (a single feasible value) meet within the box.
    crossed = tight_lows > tight_highs
    middle = np.clip(0.5 * (tight_lows + tight_highs), lows, highs)
    tight_lows[crossed] = tight_highs[crossed] = middle[crossed]
    return tight_lows, tight_highs, True


def project_box_simplex(values, lows, highs) -> np.ndarray:
    """Return the closest point to ``values`` of the shares summing to 1 within [lowsᵢ, highsᵢ].

    xᵢ = clip(vᵢ − τ, loᵢ, hiᵢ) with τ found by bisection so that Σ x = 1 (the Euclidean
    projection onto a box ∩ hyperplane); it needs Σ lo ≤ 1 ≤ Σ hi, with 0 ≤ lo ≤ hi ≤ 1. A point
    already inside is returned as it is; projecting onto a convex set that holds the true shares
    never moves a point away from them.
    """
    values = _finite_vector(values, "values")
    lows, highs = _box(lows, highs)
    if values.size != lows.size or not float(lows.sum()) <= 1.0 + 1e-12 <= float(highs.sum()) + 2e-12:
        raise ValueError(f"need as many values as bounds and sum(lows) <= 1 <= sum(highs), got {values!r}, "
                         f"{lows!r}, {highs!r}")
    if np.all(values >= lows) and np.all(values <= highs) and abs(float(values.sum()) - 1.0) <= 1e-12:
        return values.copy()
    low, high = float(np.min(values - highs)), float(np.max(values - lows))
    for _ in range(200):
        middle = 0.5 * (low + high)
        if np.clip(values - middle, lows, highs).sum() > 1.0:
            low = middle
        else:
            high = middle
        if high - low <= 1e-15:
            break
    return np.clip(values - 0.5 * (low + high), lows, highs)


def _box(lows, highs) -> tuple[np.ndarray, np.ndarray]:
    lows, highs = _finite_vector(lows, "lows"), _finite_vector(highs, "highs")
    if lows.size != highs.size or np.any(lows > highs):
        raise ValueError(f"lows and highs must be as many and lows <= highs, got {lows!r} and {highs!r}")
    return np.clip(lows, 0.0, 1.0), np.clip(highs, 0.0, 1.0)


def _finite_vector(values, name: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a non-empty sequence of finite numbers, got {values!r}") from None
    if array.ndim != 1 or array.size == 0 or not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be a non-empty sequence of finite numbers, got {values!r}")
    return array


def _clopper_pearson(successes: int, n: int, alpha: float) -> tuple[float, float]:
    from scipy.special import betaincinv  # here, not at the top: a store or an export needs no scipy (start-up)

    low = 0.0 if successes == 0 else float(betaincinv(successes, n - successes + 1, alpha / 2))
    high = 1.0 if successes == n else float(betaincinv(successes + 1, n - successes, 1 - alpha / 2))
    return low, high


def clip(value: float, low: float, high: float) -> float:
    """Return value clipped to [low, high], as a float."""
    return float(min(max(value, low), high))


def _check_level(level) -> float:
    if not _is_real(level) or not 0.0 < level < 1.0:
        raise ValueError(f"level must be a number in (0, 1), e.g. 0.95, got {level!r}")
    return float(level)


def check_count(value, name: str, *, upper: int | None = None) -> int:
    """Return value as an int if it is an integer in 0..upper (no bool), else raise ValueError naming it."""
    domain = "an integer >= 0" if upper is None else f"an integer from 0 to {upper}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be {domain}, got {value!r}")
    value = int(value)
    if value < 0 or (upper is not None and value > upper):
        raise ValueError(f"{name} must be {domain}, got {value!r}")
    return value


def check_counts(counts, n: int, *, least: int) -> list[int]:
    """Return counts as a list of ints, at least ``least`` of them, each in 0..n; else raise ValueError."""
    if isinstance(counts, (str, bytes)) or not hasattr(counts, "__len__") or len(counts) < least:
        raise ValueError(f"counts must be a sequence of at least {least} integers from 0 to n = {n}, "
                         f"got {counts!r}")
    return [check_count(count, f"counts[{index}]", upper=n) for index, count in enumerate(counts)]


def check_probability(value, name: str) -> float:
    """Return value as a float if it is a finite number in [0, 1], else raise ValueError naming it."""
    if not _is_real(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


def check_flip(flip) -> float:
    """Return a flip probability as a float if it is in [0, 1/2), else raise ValueError."""
    if not _is_real(flip) or not 0.0 <= flip < 0.5:
        raise ValueError(f"flip must be a probability in [0, 1/2), got {flip!r}")
    return float(flip)


def check_real(value, name: str) -> float:
    """Return value as a float if it is a finite real number (no bool), else raise ValueError naming it."""
    if not _is_real(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _is_real(value) -> bool:
    return (isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
            and math.isfinite(value))
