"""Estimators: exact values, input errors, and seeded simulations through the Python mirror.

The statistical tests draw all repetitions at once through ``survey.core.mechanisms.randomize_*``
with thresholds from ``survey.core.mechanisms``. The mean of R estimates must lie within 4
standard errors of the truth, with the standard error sqrt(Var/R) from the exact variance
λ(1−λ)/(n(p−q)²) of i.i.d. reports (Warner 1965; Wang et al. 2017), never from the sample.
Coverage must be at least 93% over at least 400 repetitions (Clopper-Pearson guarantees
95%; with R = 1000 the binomial standard deviation of the coverage is 0.7 points).
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from scipy.stats import binomtest

from survey.core.mechanisms.common import TWO53, per_option_epsilon, randomize_rr, rr_flip_threshold
from survey.core.mechanisms.duchi import debias_duchi_mean, randomize_duchi
from survey.core.mechanisms.grr import debias_grr, grr_keep_threshold, randomize_grr
from survey.core.mechanisms.multi_bits import randomize_multi
from survey.core.mechanisms.oue import debias_oue, oue_q_threshold, randomize_oue, use_oue
from survey.core.mechanisms.piecewise import (debias_piecewise_mean, piecewise_epsilon, piecewise_probabilities,
                                              piecewise_ratio, piecewise_worst_variance, randomize_piecewise)
from survey.core.estimators import Estimate, clopper_pearson, debias_binary, debias_indicators, project_simplex
from survey.core.mechanisms.warner import debias_rr

REPETITIONS = 1000
MIN_COVERAGE = 0.93
TOLERANCE_SE = 4.0


def rr_flip(epsilon) -> tuple[int, float]:
    threshold = rr_flip_threshold(epsilon=epsilon)
    return threshold, threshold / TWO53


def assert_mean_unbiased(estimates, truth, variance, label=""):
    """Check that the mean of R independent estimates is within 4 exact standard errors of the truth."""
    estimates = np.asarray(estimates, dtype=float)
    standard_error = math.sqrt(variance / estimates.size)
    deviation = abs(estimates.mean() - truth)
    assert deviation <= TOLERANCE_SE * standard_error, (
        f"{label}: mean {estimates.mean():.6f} vs truth {truth:.6f}, {deviation / standard_error:.2f} SE")


def assert_coverage(covered, label=""):
    covered = np.asarray(covered, dtype=bool)
    assert covered.size >= 400
    assert covered.mean() >= MIN_COVERAGE, f"{label}: coverage {covered.mean():.3f} over {covered.size}"


def covers(estimate: Estimate, truth: float) -> bool:
    return estimate.ci_low <= truth <= estimate.ci_high


# Clopper-Pearson


@pytest.mark.parametrize("successes, n", [(0, 1), (1, 1), (0, 10), (10, 10), (3, 4), (7, 30), (1, 30),
                                          (29, 30), (500, 1000), (12, 10_000)])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_clopper_pearson_matches_scipy_exact_interval(successes, n, level):
    expected = binomtest(successes, n).proportion_ci(confidence_level=level, method="exact")
    low, high = clopper_pearson(successes, n, level=level)
    assert low == pytest.approx(expected.low, rel=1e-9, abs=1e-14)
    assert high == pytest.approx(expected.high, rel=1e-9, abs=1e-14)


def test_clopper_pearson_known_values_and_ends():
    assert clopper_pearson(3, 4, level=0.95) == pytest.approx((0.194120449683243, 0.993690536790290))
    assert clopper_pearson(0, 10, level=0.95) == (0.0, pytest.approx(1 - 0.025 ** (1 / 10)))
    assert clopper_pearson(10, 10, level=0.95) == (pytest.approx(0.025 ** (1 / 10)), 1.0)
    assert clopper_pearson(0, 0, level=0.95) == (0.0, 1.0)
    assert clopper_pearson(np.int64(3), np.int64(4), level=0.95) == clopper_pearson(3, 4, level=0.95)


@pytest.mark.parametrize("args, kwargs, message", [
    ((5, 4), {"level": 0.95}, r"successes must be an integer from 0 to 4, got 5"),
    ((-1, 4), {"level": 0.95}, r"successes must be an integer from 0 to 4, got -1"),
    ((1.5, 4), {"level": 0.95}, r"successes must be an integer from 0 to 4, got 1\.5"),
    ((True, 4), {"level": 0.95}, r"successes must be an integer from 0 to 4, got True"),
    ((1, -2), {"level": 0.95}, r"n must be an integer >= 0, got -2"),
    ((1, "4"), {"level": 0.95}, r"n must be an integer >= 0, got '4'"),
    ((1, 4), {"level": 1.0}, r"level must be a number in \(0, 1\).*got 1\.0"),
    ((1, 4), {"level": 0}, r"level must be a number in \(0, 1\).*got 0"),
    ((1, 4), {"level": 95}, r"level must be a number in \(0, 1\).*got 95"),
    ((1, 4), {"level": float("nan")}, r"level must be a number in \(0, 1\).*got nan"),
    ((1, 4), {"level": "0.95"}, r"level must be a number in \(0, 1\).*got '0\.95'"),
])
def test_clopper_pearson_rejects_bad_input(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        clopper_pearson(*args, **kwargs)


# Exact values of the estimators


def test_debias_binary_exact_values():
    estimate = debias_binary(3, 4, p_one_if_true=0.75, p_one_if_false=0.25, level=0.95)
    low, high = clopper_pearson(3, 4, level=0.95)
    assert estimate.estimate == pytest.approx(1.0)
    assert estimate.std_error == pytest.approx(math.sqrt(0.75 * 0.25 / (3 * 0.5 ** 2)))
    assert estimate.ci_low == max((low - 0.25) / 0.5, 0.0) == 0.0
    assert estimate.ci_high == min((high - 0.25) / 0.5, 1.0) == 1.0
    assert (estimate.n, estimate.noisy_share) == (4, 0.75)


def test_debias_binary_maps_clopper_pearson_through_the_estimator():
    estimate = debias_binary(40, 100, p_one_if_true=0.8, p_one_if_false=0.2, level=0.9)
    low, high = clopper_pearson(40, 100, level=0.9)
    assert estimate.estimate == pytest.approx((0.4 - 0.2) / 0.6)
    assert estimate.std_error == pytest.approx(math.sqrt(0.4 * 0.6 / (99 * 0.6 ** 2)))
    assert estimate.ci_low == pytest.approx((low - 0.2) / 0.6)
    assert estimate.ci_high == pytest.approx((high - 0.2) / 0.6)


def test_debias_binary_alpha_divisor_is_bonferroni():
    estimate = debias_binary(40, 100, p_one_if_true=0.8, p_one_if_false=0.2, level=0.95, alpha_divisor=5)
    low, high = clopper_pearson(40, 100, level=1 - 0.05 / 5)
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx(((low - 0.2) / 0.6, (high - 0.2) / 0.6))


def test_debias_binary_keeps_estimate_unclipped_and_clips_interval():
    estimate = debias_rr(0, 50, flip=0.05, level=0.95)
    assert estimate.estimate == pytest.approx(-0.05 / 0.9)
    # Every report is 0, yet λ = 0.05 at least: the standard error is computed at λ̃ = 0.05, not a false 0.
    assert estimate.std_error == pytest.approx(math.sqrt(0.05 * 0.95 / 49) / 0.9, rel=1e-12)
    assert estimate.ci_low == 0.0
    assert estimate.ci_high == pytest.approx((1 - 0.025 ** (1 / 50) - 0.05) / 0.9)
    above = debias_rr(50, 50, flip=0.05, level=0.95)
    assert above.estimate == pytest.approx(0.95 / 0.9)
    assert above.ci_high == 1.0


def test_a_crosswise_design_with_p_below_q_by_hand():
    """Crosswise coded "same/different" with P(same | yes) = 0.1971293, P(same | no) = 0.8028707 (GLMMRR's
    dice-game design), 344 of 573 reports 1. θ̂ = (344/573 − q)/(p − q); the map is
    decreasing, so the interval's low end comes from the Clopper-Pearson high end."""
    p, q, ones, n = 0.1971293, 0.8028707, 344, 573
    estimate = debias_binary(ones, n, p_one_if_true=p, p_one_if_false=q, level=0.95)
    share = 344 / 573  # 0.600349…
    assert estimate.estimate == pytest.approx((share - 0.8028707) / (0.1971293 - 0.8028707), rel=1e-12)  # 0.334337…
    assert estimate.estimate == pytest.approx(0.334337, abs=1e-6)
    assert estimate.std_error == pytest.approx(math.sqrt(share * (1 - share) / 572) / 0.6057414, rel=1e-12)
    assert estimate.std_error == pytest.approx(0.033811, abs=1e-6)
    cp_low, cp_high = stats.beta.ppf(0.025, 344, 230), stats.beta.ppf(0.975, 345, 229)
    assert estimate.ci_low == pytest.approx((cp_high - q) / (p - q), rel=1e-9)
    assert estimate.ci_high == pytest.approx((cp_low - q) / (p - q), rel=1e-9)
    assert estimate.ci_low < estimate.estimate < estimate.ci_high
    # The mirror design (report "different"): the same answers, the same numbers.
    mirror = debias_binary(n - ones, n, p_one_if_true=1 - p, p_one_if_false=1 - q, level=0.95)
    for name in ("estimate", "std_error", "ci_low", "ci_high"):
        assert getattr(mirror, name) == pytest.approx(getattr(estimate, name), rel=1e-9), name


@pytest.mark.parametrize("p, q", [(0.75, 0.25), (0.25, 0.75), (0.9, 0.2), (0.2, 0.9)])
def test_the_standard_error_is_never_a_false_zero(p, q):
    """Every report equal: the standard error is computed at the nearest feasible λ, so it is positive."""
    for ones in (0, 40):
        estimate = debias_binary(ones, 40, p_one_if_true=p, p_one_if_false=q, level=0.95)
        nearest = min(p, q) if ones == 0 else max(p, q)
        assert estimate.std_error == pytest.approx(math.sqrt(nearest * (1 - nearest) / 39) / abs(p - q), rel=1e-12)
        assert estimate.estimate == pytest.approx((ones / 40 - q) / (p - q), rel=1e-12)  # unclipped
    inside = debias_binary(20, 40, p_one_if_true=p, p_one_if_false=q, level=0.95)
    assert inside.std_error == pytest.approx(math.sqrt(0.25 / 39) / abs(p - q), rel=1e-12)


def test_crosswise_intervals_cover_at_their_level():
    """P < Q: 500 seeded surveys of n = 300 at θ = 0.3; the 90% intervals cover at least 0.88 of the time
    (the Clopper-Pearson interval is conservative; the binomial SE of a 0.9 coverage over 500 is 0.013)."""
    rng = np.random.default_rng(2026)
    p, q, theta, n = 0.2, 0.7, 0.3, 300
    ones = rng.binomial(n, q + theta * (p - q), size=500)
    estimates = [debias_binary(int(k), n, p_one_if_true=p, p_one_if_false=q, level=0.9) for k in ones]
    covered = np.mean([e.ci_low <= theta <= e.ci_high for e in estimates])
    assert covered >= 0.88, covered
    mean = np.mean([e.estimate for e in estimates])
    se = math.sqrt((q + theta * (p - q)) * (1 - q - theta * (p - q)) / n) / abs(p - q) / math.sqrt(500)
    assert abs(mean - theta) < 5 * se, (mean, se)


def test_interval_entirely_outside_moves_inside_keeping_its_width():
    """The Clopper-Pearson upper end 1 - 0.025^(1/50) = 0.071 is below flip = 0.2: the mapped interval lies wholly
    below 0, so it misses every feasible share; it is moved to [0, its width] (never the point {0})."""
    width = (1 - 0.025 ** (1 / 50)) / 0.6
    below = debias_rr(0, 50, flip=0.2, level=0.95)
    assert below.ci_low == 0.0 and below.ci_high == pytest.approx(width, rel=1e-12)
    above = debias_rr(50, 50, flip=0.2, level=0.95)
    assert above.ci_high == 1.0 and above.ci_low == pytest.approx(1 - width, rel=1e-12)


def test_debias_binary_without_reports_or_with_one():
    assert debias_rr(0, 0, flip=0.1, level=0.95) == Estimate(None, None, 0.0, 1.0, 0, None)
    single = debias_rr(1, 1, flip=0.1, level=0.95)
    assert single.std_error is None
    assert single.estimate == pytest.approx(0.9 / 0.8)
    assert single.noisy_share == 1.0


def test_debias_grr_oue_multi_are_per_option_binary_estimates():
    p, q = 0.5, 0.25
    grr = debias_grr([2, 1, 1], 4, p=p, q=q, level=0.95)
    assert [e.estimate for e in grr] == pytest.approx([1.0, 0.0, 0.0])
    assert grr[0] == debias_binary(2, 4, p_one_if_true=p, p_one_if_false=q, level=0.95, alpha_divisor=3)
    oue = debias_oue([3, 1, 1, 0], 4, q=0.25, level=0.95)
    assert [e.estimate for e in oue] == pytest.approx([2.0, 0.0, 0.0, -1.0])
    assert oue[3] == debias_binary(0, 4, p_one_if_true=0.5, p_one_if_false=0.25, level=0.95, alpha_divisor=4)
    multi = debias_indicators([3, 1], 4, p=0.75, q=0.25, level=0.95)
    assert multi == [debias_binary(count, 4, p_one_if_true=0.75, p_one_if_false=0.25, level=0.95, alpha_divisor=2)
                     for count in (3, 1)]


def test_debias_duchi_mean_scales_to_the_range():
    unit = debias_rr(30, 100, flip=0.25, level=0.95)
    mean = debias_duchi_mean(30, 100, flip=0.25, lo=18, hi=90, level=0.95)
    assert mean.estimate == pytest.approx(18 + unit.estimate * 72)
    assert mean.std_error == pytest.approx(unit.std_error * 72)
    assert (mean.ci_low, mean.ci_high) == pytest.approx((18 + unit.ci_low * 72, 18 + unit.ci_high * 72))
    assert mean.noisy_share == 0.3
    assert debias_duchi_mean(0, 0, flip=0.25, lo=18, hi=90, level=0.95) == Estimate(None, None, 18.0, 90.0, 0, None)
    low_end = debias_duchi_mean(0, 40, flip=0.25, lo=-5, hi=5, level=0.95)
    assert low_end.estimate < -5 and low_end.ci_low == -5.0


@pytest.mark.parametrize("call, message", [
    (lambda: debias_binary(1, 4, p_one_if_true=0.5, p_one_if_false=0.5, level=0.95),
     r"must differ for the reports to carry information.*got p_one_if_true=0\.5, p_one_if_false=0\.5"),
    (lambda: debias_binary(1, 4, p_one_if_true=1.2, p_one_if_false=0.1, level=0.95),
     r"p_one_if_true must be a probability in \[0, 1\], got 1\.2"),
    (lambda: debias_binary(1, 4, p_one_if_true=0.9, p_one_if_false=0.1, level=0.95, alpha_divisor=0),
     r"alpha_divisor must be an integer >= 1, got 0"),
    (lambda: debias_binary(5, 4, p_one_if_true=0.9, p_one_if_false=0.1, level=0.95),
     r"ones must be an integer from 0 to 4, got 5"),
    (lambda: debias_rr(1, 4, flip=0.5, level=0.95), r"flip must be a probability in \[0, 1/2\), got 0\.5"),
    (lambda: debias_rr(1, 4, flip=None, level=0.95), r"flip must be a probability in \[0, 1/2\), got None"),
    (lambda: debias_rr(1, 4, flip=0.1, level=1.5), r"level must be a number in \(0, 1\).*got 1\.5"),
    (lambda: debias_grr([1, 1], 4, p=0.75, q=0.25, level=0.95),
     r"GRR counts must sum to the number of reports n = 4, got 2"),
    (lambda: debias_grr([4], 4, p=1.0, q=0.0, level=0.95), r"counts must be a sequence of at least 2 integers"),
    (lambda: debias_grr([2, 2], 4, p=0.6, q=0.3, level=0.95),
     r"p \+ \(d-1\)q = 1 for d = 2, got p=0\.6, q=0\.3"),
    (lambda: debias_oue([1, 5], 4, q=0.25, level=0.95), r"counts\[1\] must be an integer from 0 to 4, got 5"),
    (lambda: debias_oue([1, 2], 4, q=0.5, level=0.95), r"q must be a probability below 1/2 for OUE, got 0\.5"),
    (lambda: debias_indicators("11", 4, p=0.9, q=0.1, level=0.95), r"counts must be a sequence of at least 1 integers"),
    (lambda: debias_indicators([1, 2.0], 4, p=0.9, q=0.1, level=0.95),
     r"counts\[1\] must be an integer from 0 to 4, got 2\.0"),
    (lambda: debias_duchi_mean(1, 4, flip=0.1, lo=5, hi=5, level=0.95), r"hi must be greater than lo = 5\.0, got 5\.0"),
    (lambda: debias_duchi_mean(1, 4, flip=0.1, lo=float("inf"), hi=5, level=0.95),
     r"lo must be a finite number, got inf"),
])
def test_estimators_reject_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# Norm-Sub


def test_project_simplex_known_values():
    assert project_simplex([0.5, 0.4, 0.3, -0.1]) == pytest.approx([0.5 - 0.2 / 3, 0.4 - 0.2 / 3, 0.3 - 0.2 / 3, 0])
    assert project_simplex([1.0, 1.0, -1.0]) == pytest.approx([0.5, 0.5, 0.0])
    assert project_simplex([0.2, 0.3, 0.5]) == pytest.approx([0.2, 0.3, 0.5])
    assert project_simplex([2.0, 0.0, 0.0, 0.0]) == pytest.approx([1.0, 0.0, 0.0, 0.0])


def test_project_simplex_is_the_closest_point_of_the_simplex():
    rng = np.random.default_rng(20260101)
    for _ in range(50):
        point = rng.normal(0.2, 0.5, size=6)
        projected = project_simplex(point)
        assert projected.min() >= 0 and projected.sum() == pytest.approx(1.0)
        others = rng.dirichlet(np.ones(6), size=2000)
        assert np.linalg.norm(point - projected) <= np.linalg.norm(point - others, axis=1).min() + 1e-12


@pytest.mark.parametrize("bad", [[], [0.5, float("nan")], [[0.5, 0.5]], ["a", "b"], None])
def test_project_simplex_rejects_bad_input(bad):
    with pytest.raises(ValueError, match="estimates must be a non-empty sequence of finite numbers"):
        project_simplex(bad)


# Statistical: Warner randomized response


@pytest.mark.parametrize("epsilon, n, theta", [
    (0.5, 30, 0.0), (0.5, 30, 0.3), (0.5, 30, 1.0), (4.0, 30, 0.0), (4.0, 30, 1.0), (4.0, 30, 0.5),
    (0.5, 2000, 0.5), (4.0, 2000, 0.1), (1.0, 200, 0.0),
])
def test_rr_is_unbiased_and_covers(epsilon, n, theta):
    rng = np.random.default_rng([1, n, int(epsilon * 10), int(theta * 10)])
    threshold, flip = rr_flip(epsilon)
    truth = (rng.random((REPETITIONS, n)) < theta).astype(np.int64)
    ones = randomize_rr(truth, flip_threshold=threshold, rng=rng).sum(axis=1)
    estimates = [debias_rr(int(k), n, flip=flip, level=0.95) for k in ones]
    report_prob = flip + theta * (1 - 2 * flip)
    variance = report_prob * (1 - report_prob) / (n * (1 - 2 * flip) ** 2)
    assert_mean_unbiased([e.estimate for e in estimates], theta, variance, f"rr eps={epsilon} n={n}")
    assert_coverage([covers(e, theta) for e in estimates], f"rr eps={epsilon} n={n} theta={theta}")


def test_wald_fails_where_clopper_pearson_holds():
    """At epsilon = 4, n = 30, theta = 0, Wald covers about 42% (Brown, Cai & DasGupta 2001); CP keeps 95%."""
    rng = np.random.default_rng(42)
    threshold, flip = rr_flip(4.0)
    ones = randomize_rr(np.zeros((REPETITIONS, 30), dtype=np.int64), flip_threshold=threshold,
                             rng=rng).sum(axis=1)
    estimates = [debias_rr(int(k), 30, flip=flip, level=0.95) for k in ones]
    # Wald with the plug-in standard error, which is a false 0 whenever every report is 0.
    naive = [math.sqrt(e.noisy_share * (1 - e.noisy_share) / 29) / (1 - 2 * flip) for e in estimates]
    wald = [abs(e.estimate) <= 1.959964 * se for e, se in zip(estimates, naive)]
    assert np.mean(wald) < 0.7
    # The product's standard error is computed at the nearest feasible share, so it is never that false 0.
    assert min(e.std_error for e in estimates) >= math.sqrt(flip * (1 - flip) / 29) / (1 - 2 * flip) * (1 - 1e-12)
    assert_coverage([covers(e, 0.0) for e in estimates], "clopper-pearson")


# Statistical: GRR and OUE (simultaneous intervals)


def assert_categorical(counts, n, shares, p, q, estimator, label):
    """Check every option's mean and the simultaneous coverage of all options."""
    estimates = [estimator([int(c) for c in row]) for row in counts]
    for option, share in enumerate(shares):
        report_prob = q + share * (p - q)
        variance = report_prob * (1 - report_prob) / (n * (p - q) ** 2)
        assert_mean_unbiased([e[option].estimate for e in estimates], share, variance, f"{label} option {option}")
    assert_coverage([all(covers(e, s) for e, s in zip(row, shares)) for row in estimates], label)


@pytest.mark.parametrize("epsilon, n, shares", [
    (0.5, 30, (0.5, 0.5, 0.0)),
    (0.5, 30, (1.0, 0.0, 0.0, 0.0, 0.0, 0.0)),
    (4.0, 30, (0.0, 1.0, 0.0, 0.0, 0.0)),
    (4.0, 30, (0.4, 0.3, 0.2, 0.1, 0.0)),
    (1.0, 1000, (0.6, 0.25, 0.1, 0.05)),
])
def test_grr_is_unbiased_and_covers_simultaneously(epsilon, n, shares):
    d = len(shares)
    assert not use_oue(epsilon=epsilon, d=d)
    rng = np.random.default_rng([2, n, d, int(epsilon * 10)])
    threshold = grr_keep_threshold(epsilon=epsilon, d=d)
    p = threshold / TWO53
    q = (1 - p) / (d - 1)
    truth = rng.choice(d, size=(REPETITIONS, n), p=shares)
    reports = randomize_grr(truth, d=d, keep_threshold=threshold, rng=rng)
    counts = np.stack([(reports == option).sum(axis=1) for option in range(d)], axis=1)
    assert_categorical(counts, n, shares, p, q, lambda row: debias_grr(row, n, p=p, q=q, level=0.95),
                       f"grr eps={epsilon} n={n}")


@pytest.mark.parametrize("epsilon, n, shares, repetitions", [
    (0.5, 30, (0.5, 0.5) + (0.0,) * 6, REPETITIONS),
    (0.5, 1000, (0.3, 0.2, 0.2, 0.1, 0.1, 0.05, 0.05, 0.0), 400),
    (4.0, 30, (1.0, 0.0, 0.0, 0.0), REPETITIONS),
    (4.0, 30, (0.25,) * 4 + (0.0,) * 162, 400),
])
def test_oue_is_unbiased_and_covers_simultaneously(epsilon, n, shares, repetitions):
    d = len(shares)
    rng = np.random.default_rng([3, n, d, int(epsilon * 10)])
    threshold = oue_q_threshold(epsilon=epsilon)
    q = threshold / TWO53
    truth = rng.choice(d, size=repetitions * n, p=shares)
    reports = randomize_oue(truth, d=d, q_threshold=threshold, rng=rng).reshape(repetitions, n, d)
    counts = reports.sum(axis=1)
    assert_categorical(counts, n, shares, 0.5, q, lambda row: debias_oue(row, n, q=q, level=0.95),
                       f"oue eps={epsilon} n={n} d={d}")


# Statistical: multi (per-option Warner) and Duchi means


@pytest.mark.parametrize("epsilon, n, shares", [
    (0.5, 30, (0.0, 0.4, 1.0)),
    (4.0, 30, (0.0, 0.4, 1.0)),
    (4.0, 1000, (0.1, 0.5, 0.9, 0.0)),
])
def test_multi_per_bit_is_unbiased_and_covers(epsilon, n, shares):
    d = len(shares)
    rng = np.random.default_rng([4, n, d, int(epsilon * 10)])
    threshold, flip = rr_flip(per_option_epsilon(epsilon, d))
    truth = (rng.random((REPETITIONS, n, d)) < np.array(shares)).astype(np.int64)
    counts = randomize_multi(truth, flip_threshold=threshold, rng=rng).sum(axis=1)
    estimates = [debias_indicators([int(c) for c in row], n, p=1 - flip, q=flip, level=0.95) for row in counts]
    for option, share in enumerate(shares):
        report_prob = flip + share * (1 - 2 * flip)
        variance = report_prob * (1 - report_prob) / (n * (1 - 2 * flip) ** 2)
        column = [row[option] for row in estimates]
        label = f"multi eps={epsilon} n={n} option {option}"
        assert_mean_unbiased([e.estimate for e in column], share, variance, label)
        assert_coverage([covers(e, share) for e in column], label)


@pytest.mark.parametrize("epsilon, n, values", [
    (0.5, 30, (18,)),
    (0.5, 30, (90,)),
    (4.0, 30, (18,)),
    (4.0, 30, (20, 50, 80)),
    (0.5, 2000, (25, 40, 41, 67)),
    (1.0, 200, (90,)),
])
def test_duchi_mean_is_unbiased_and_covers(epsilon, n, values):
    lo, hi = 18, 90
    rng = np.random.default_rng([5, n, int(epsilon * 10), len(values)])
    threshold, flip = rr_flip(epsilon)
    truth = rng.choice(np.array(values), size=(REPETITIONS, n))
    ones = randomize_duchi(truth, lo=lo, hi=hi, flip_threshold=threshold, rng=rng).sum(axis=1)
    estimates = [debias_duchi_mean(int(k), n, flip=flip, lo=lo, hi=hi, level=0.95) for k in ones]
    true_mean = float(np.mean(values))
    theta = (true_mean - lo) / (hi - lo)
    report_prob = flip + theta * (1 - 2 * flip)
    variance = (hi - lo) ** 2 * report_prob * (1 - report_prob) / (n * (1 - 2 * flip) ** 2)
    label = f"duchi eps={epsilon} n={n} values={values}"
    assert_mean_unbiased([e.estimate for e in estimates], true_mean, variance, label)
    assert_coverage([covers(e, true_mean) for e in estimates], label)
    assert all(lo <= e.ci_low <= e.ci_high <= hi for e in estimates)


# The discretised piecewise mechanism (Wang et al. 2019) and its mean


def piecewise_levels(x, *, lo, hi, a, b) -> list[Fraction]:
    """Return the exact probability of every output level for the true value x, from the integer parameters."""
    levels = a + b
    grid, remainder = divmod((x - lo) * a, hi - lo)
    up = Fraction(remainder, hi - lo)
    high, low = Fraction(a, levels * b), Fraction(b, levels * a)
    probabilities = [Fraction(0)] * levels
    for g, weight in ((grid, 1 - up), (grid + 1, up)):
        if weight:
            for k in range(levels):
                probabilities[k] += weight * (high if g <= k < g + b else low)
    return probabilities


@pytest.mark.parametrize("epsilon, lo, hi", [(0.5, 0, 7), (2.0, 18, 90), (4.0, -3, 3), (8.0, 0, 1000)])
def test_piecewise_level_mean_is_exactly_linear_and_epsilon_exact(epsilon, lo, hi):
    """E[(k + 1/2)/G | x] = q + (p - q)(x - lo)/(hi - lo) exactly, and every level's ratio is at most (a/b)^2."""
    a, b = piecewise_ratio(epsilon=epsilon)
    p, q = piecewise_probabilities(a, b)
    values = sorted({lo, lo + 1, (lo + hi) // 2, hi - 1, hi})
    rows = {x: piecewise_levels(x, lo=lo, hi=hi, a=a, b=b) for x in values}
    for x, probabilities in rows.items():
        assert sum(probabilities) == 1
        mean = sum(prob * Fraction(2 * k + 1, 2 * (a + b)) for k, prob in enumerate(probabilities))
        assert mean == q + (p - q) * Fraction(x - lo, hi - lo)
    ratios = [rows[x][k] / rows[y][k] for x in values for y in values for k in range(a + b)]
    assert max(ratios) == Fraction(a, b) ** 2
    assert piecewise_epsilon(a, b) <= Decimal(epsilon)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [0.5, 1.3, 2.0, 4.0, 8.0])
def test_piecewise_worst_variance_bounds_the_exact_variance(epsilon):
    lo, hi = 0, 50
    a, b = piecewise_ratio(epsilon=epsilon)
    p, q = piecewise_probabilities(a, b)
    exact = []
    for x in range(lo, hi + 1):
        probabilities = piecewise_levels(x, lo=lo, hi=hi, a=a, b=b)
        r = [Fraction(2 * k + 1, 2 * (a + b)) for k in range(a + b)]
        mean = sum(prob * value for prob, value in zip(probabilities, r))
        exact.append(float(sum(prob * (value - mean) ** 2 for prob, value in zip(probabilities, r)) / (p - q) ** 2))
    bound = piecewise_worst_variance(a, b)
    assert max(exact) <= bound <= max(exact) * (1 + 1e-3), (max(exact), bound)
    # The continuous PM of Wang et al. (2019) at t = 1, on the [0, 1] scale, less the binning's w^2/48.
    r = math.exp(float(piecewise_epsilon(a, b)) / 2)
    assert bound == pytest.approx((1 / (r - 1) + (r + 3) / (3 * (r - 1) ** 2)) / 4, rel=2e-3)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon, n, values", [
    (0.5, 30, (18,)),
    (0.5, 30, (90,)),
    (4.0, 30, (18,)),
    (4.0, 30, (20, 50, 80)),
    (0.5, 2000, (25, 40, 41, 67)),
    (4.0, 2000, (90,)),
    (1.0, 200, (41,)),
])
def test_piecewise_mean_is_unbiased_and_covers(epsilon, n, values):
    """Tested on the mechanism directly: at eps = 0.5 the design would pick Duchi's."""
    lo, hi = 18, 90
    a, b = piecewise_ratio(epsilon=epsilon)
    rng = np.random.default_rng([11, n, int(epsilon * 10), len(values)])
    truth = rng.choice(np.array(values), size=(REPETITIONS, n))
    levels = randomize_piecewise(truth, lo=lo, hi=hi, ratio_a=a, ratio_b=b, rng=rng)
    estimates = [debias_piecewise_mean(int(row.sum()), int((row * row).sum()), n, ratio_a=a, ratio_b=b,
                                       lo=lo, hi=hi, level=0.95) for row in levels]
    true_mean = float(np.mean(values))
    # Exact variance of R over the mixture of the values: E[Var(R | x)] + Var(E[R | x]).
    r = (np.arange(a + b) + 0.5) / (a + b)
    moments = [(float(np.dot(np.array(piecewise_levels(x, lo=lo, hi=hi, a=a, b=b), dtype=float), r)),
                float(np.dot(np.array(piecewise_levels(x, lo=lo, hi=hi, a=a, b=b), dtype=float), r * r)))
               for x in values]
    mean_r = np.mean([m for m, _ in moments])
    var_r = np.mean([m2 for _, m2 in moments]) - mean_r ** 2
    spread = (a - b) / (a + b)
    variance = (hi - lo) ** 2 * var_r / (n * spread ** 2)
    label = f"piecewise eps={epsilon} n={n} values={values}"
    assert_mean_unbiased([e.estimate for e in estimates], true_mean, variance, label)
    assert_coverage([covers(e, true_mean) for e in estimates], label)
    assert all(lo <= e.ci_low <= e.ci_high <= hi for e in estimates)
    assert all(e.noisy_share == pytest.approx((row.mean() + 0.5) / (a + b)) for e, row in zip(estimates, levels))


def test_debias_piecewise_mean_known_values_and_ends():
    a, b = 3, 1  # levels 0..3, R = 1/8, 3/8, 5/8, 7/8; p = 3/4, q = 1/4
    only = debias_piecewise_mean(0, 0, 0, ratio_a=a, ratio_b=b, lo=0, hi=10, level=0.95)
    assert only == Estimate(None, None, 0.0, 10.0, 0, None)
    one = debias_piecewise_mean(3, 9, 1, ratio_a=a, ratio_b=b, lo=0, hi=10, level=0.95)
    assert (one.estimate, one.std_error, one.ci_low, one.ci_high) == (pytest.approx(12.5), None, 0.0, 10.0)
    # Reports 0, 3, 3, 1: R = 1/8, 7/8, 7/8, 3/8; mean 9/16; sample variance (49 + 25 + 25 + 9)/(256 * 3) = 9/64.
    four = debias_piecewise_mean(7, 19, 4, ratio_a=a, ratio_b=b, lo=0, hi=10, level=0.9)
    assert four.noisy_share == pytest.approx(9 / 16)
    assert four.estimate == pytest.approx(10 * (9 / 16 - 1 / 4) / (1 / 2))
    se = math.sqrt(9 / 64 / 4) / 0.5
    assert four.std_error == pytest.approx(10 * se)
    half = stats.t.ppf(0.95, 3) * se
    assert (four.ci_low, four.ci_high) == (pytest.approx(10 * max(0.625 - half, 0)), pytest.approx(10 * min(0.625 + half, 1)))


@pytest.mark.parametrize("kwargs, message", [
    ({"level_sum": 9, "level_squares": 20, "n": 2}, r"level_sum must be an integer from 0 to 6, got 9"),
    ({"level_sum": 4, "level_squares": 7, "n": 2}, r"level_squares = 7 is too small for level_sum = 4"),
    ({"level_sum": 1, "level_squares": 1, "n": 2, "ratio_a": 1}, r"ratio_a must exceed ratio_b = 1, got 1"),
    ({"level_sum": 1, "level_squares": 1, "n": 2, "ratio_b": 0}, r"ratio_b must be an integer >= 1, got 0"),
    ({"level_sum": 1, "level_squares": 1, "n": 2, "lo": 3, "hi": 3}, r"hi must be greater than lo"),
])
def test_debias_piecewise_mean_rejects_bad_input(kwargs, message):
    arguments = {"ratio_a": 3, "ratio_b": 1, "lo": 0, "hi": 10, "level": 0.95, **kwargs}
    with pytest.raises(ValueError, match=message):
        debias_piecewise_mean(arguments.pop("level_sum"), arguments.pop("level_squares"), arguments.pop("n"),
                              **arguments)
