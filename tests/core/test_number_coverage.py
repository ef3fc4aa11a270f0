"""Number intervals hold their level at every n: seeded coverage over mechanisms × ε × n × populations.

The reports are drawn by a sampler written here from each mechanism's published parameters
(the design entry's ratio_a, ratio_b, steps, band, flip_threshold: Wang et al. 2019; Zheng,
Mishra & Hu 2025; Duchi, Jordan & Wainwright 2013), not by the product's randomizers: the
level distribution of every answer, mixed over the population, then tallies drawn as one
multinomial per survey. Each cell must cover at least 0.95 − 2.33 Monte-Carlo SE over 400
surveys, and no interval may be a point.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest
from scipy.special import betaincinv

from survey.core.bounded_mean import mean_interval, mean_intervals
from survey.core.mechanisms import mechanism_for
from survey.core.mechanisms.duchi import Duchi
from survey.core.mechanisms.hybrid import Hybrid
from survey.core.mechanisms.opm import OptimalPiecewise
from survey.core.mechanisms.piecewise import Piecewise

REPETITIONS = 400
LEVEL = 0.95
FLOOR = LEVEL - 2.33 * math.sqrt(LEVEL * (1 - LEVEL) / REPETITIONS)
CLASSES = {"piecewise": Piecewise, "hybrid": Hybrid, "opm": OptimalPiecewise, "duchi": Duchi}
# (lo, hi, {answer: share}): symmetric, all at one end, and a skewed two-point population.
POPULATIONS = {"uniform": (0, 100, {v: 1 / 101 for v in range(101)}), "at 90": (0, 100, {90: 1.0}),
               "70/30": (0, 10, {3: 0.7, 8: 0.3})}
SIZES = (2, 3, 5, 20, 100, 1000)


def design_entry(name: str, epsilon: float, lo: int, hi: int) -> dict:
    """Return the design entry of a number question forced to ``name`` at ``epsilon``."""
    fields, realised = CLASSES[name].build(None, Decimal(repr(epsilon)))
    return {"id": "q", "kind": "number", "min": lo, "max": hi, "epsilon": float(realised), **fields}


def rounding(value: int, lo: int, hi: int, steps: int) -> dict[int, float]:
    """Return the law of the grid point in 0..steps of value rounded at random (mean steps·x)."""
    scaled = (value - lo) * steps / (hi - lo)
    low = math.floor(scaled)
    return {low: 1.0} if scaled == low else {low: 1 - (scaled - low), low + 1: scaled - low}


def band_law(grid: dict[int, float], levels: int, band: int, inside: float, outside: float) -> np.ndarray:
    """Return P(level) when the band of ``band`` levels from the grid point has ``inside`` each and others ``outside``."""
    law = np.zeros(levels)
    for point, weight in grid.items():
        row = np.full(levels, outside)
        row[point:point + band] = inside
        law += weight * row
    return law


def level_law(entry: dict, value: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (P(level), score of each level) of one answer, from the entry's published parameters."""
    lo, hi, name = entry["min"], entry["max"], entry["mechanism"]
    x = (value - lo) / (hi - lo)
    if name == "duchi":
        flip = entry["flip_threshold"] / 2**53
        one = x * (1 - flip) + (1 - x) * flip
        return np.array([1 - one, one]), np.array([0, 1])
    if name == "opm":
        a, b, m, w = entry["ratio_a"], entry["ratio_b"], entry["steps"], entry["band"]
        total = w * a + m * b
        return band_law(rounding(value, lo, hi, m), m + w, w, a / total, b / total), np.arange(m + w)
    a, b = entry["ratio_a"], entry["ratio_b"]
    g = a + b
    piecewise = band_law(rounding(value, lo, hi, a), g, b, a / (g * b), b / (g * a))
    if name == "piecewise":
        return piecewise, np.arange(g)
    beta, flip = (a - b) / a, b * b / (a * a + b * b)
    one = x * (1 - flip) + (1 - x) * flip
    law = np.concatenate([beta * piecewise, (1 - beta) * np.array([1 - one, one])])
    # R = (k + 1/2)/G on the piecewise levels, ab/G² and (a² + ab + b²)/G² for Duchi's; score 2G²R − G².
    values = np.concatenate([(np.arange(g) + 0.5) / g, [a * b / g**2, (a * a + a * b + b * b) / g**2]])
    return law, np.rint(2 * g * g * values - g * g).astype(np.int64)


def population_law(entry: dict, population: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    """Return the level law of one report from a respondent drawn from the population, and the scores."""
    laws = [(share, *level_law(entry, value)) for value, share in population.items()]
    return sum(share * law for share, law, _ in laws), laws[0][2]


def intervals(entry: dict, sums: np.ndarray, squares: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the intervals of many tallies at once, mapped as the estimator maps them (checked against it below)."""
    mechanism = mechanism_for(entry)
    lo, hi = entry["min"], entry["max"]
    p, q = (float(v) for v in mechanism.probabilities())
    if entry["mechanism"] == "duchi":
        ones = sums
        low = np.where(ones == 0, 0.0, betaincinv(ones, n - ones + 1, (1 - LEVEL) / 2))
        high = np.where(ones == n, 1.0, betaincinv(ones + 1, n - ones, 1 - (1 - LEVEL) / 2))
    else:
        scores = np.array(mechanism.level_scores())
        if entry["mechanism"] == "hybrid":
            offset, divisor = mechanism.bins ** 2, 2 * mechanism.bins ** 2
        else:
            offset, divisor = 0.5, mechanism.levels
        least, most = mechanism.report_variance_range()
        low, high = mean_intervals(sums, squares, np.full(sums.shape, n), low=scores.min(), high=scores.max(),
                                   level=LEVEL, variance=(least * divisor**2, most * divisor**2))
        low, high = (low + offset) / divisor, (high + offset) / divisor
    unit_low, unit_high = (low - q) / (p - q), (high - q) / (p - q)
    # An interval wholly beyond an end of [0, 1] is moved inside it, keeping its width (capped at 1).
    width = np.minimum(unit_high - unit_low, 1.0)
    unit_low = np.where(unit_low >= 1, 1 - width, unit_low)
    unit_high = np.where(unit_high <= 0, width, unit_high)
    unit_low, unit_high = np.clip(unit_low, 0, 1), np.clip(unit_high, 0, 1)
    return lo + unit_low * (hi - lo), lo + unit_high * (hi - lo)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["piecewise", "hybrid", "opm", "duchi"])
@pytest.mark.parametrize("epsilon", [1, 2, 4, 8])
def test_every_cell_covers_and_no_interval_is_a_point(name, epsilon):
    """Each population × n covers at least 0.95 − 2.33 SE over 400 seeded surveys; every interval has width."""
    rng = np.random.default_rng(1000 * epsilon + len(name))
    failures = []
    for population_name, (lo, hi, population) in POPULATIONS.items():
        entry = design_entry(name, epsilon, lo, hi)
        law, scores = population_law(entry, population)
        truth = sum(value * share for value, share in population.items())
        for n in SIZES:
            counts = rng.multinomial(n, law / law.sum(), size=REPETITIONS)
            sums, squares = counts @ scores, counts @ (scores * scores)
            low, high = intervals(entry, sums, squares, n)
            assert np.all(high > low), (population_name, n)
            assert np.all((lo <= low) & (high <= hi))
            for row in range(2):
                estimate = mechanism_for(entry).estimates([int(sums[row]), int(squares[row])], n, LEVEL)[0]
                assert estimate.ci_low == pytest.approx(low[row], abs=1e-9 * (hi - lo))
                assert estimate.ci_high == pytest.approx(high[row], abs=1e-9 * (hi - lo))
            coverage = float(np.mean((low <= truth) & (truth <= high)))
            if coverage < FLOOR:
                failures.append((population_name, n, coverage))
    assert not failures, failures


def opm_entry(epsilon=2, lo=0, hi=100) -> dict:
    return design_entry("opm", epsilon, lo, hi)


def test_ten_identical_reports_give_an_interval_and_a_positive_standard_error():
    """Ten reports of level 1 at ε = 2 (the middle of three levels) once gave [50, 50] and std_error 0."""
    mechanism = mechanism_for(opm_entry())
    assert mechanism.levels == 3
    estimate = mechanism.estimates([10, 10], 10, LEVEL)[0]
    assert estimate.estimate == pytest.approx(50.0)
    assert estimate.ci_low < 40 and estimate.ci_high > 60
    least = mechanism.report_variance_range()[0]
    p, q = mechanism.probabilities()
    assert least > 0
    assert estimate.std_error == pytest.approx(100 * math.sqrt(least / 10) / float(p - q), rel=1e-12)


@pytest.mark.parametrize("name", ["piecewise", "hybrid", "opm"])
def test_edge_counts_zero_one_and_two_reports(name):
    """n = 0 gives the whole range and no estimate; n = 1 an estimate, no std_error, an interval; n = 2 all three."""
    mechanism = mechanism_for(design_entry(name, 4, 18, 90))
    scores = mechanism.level_scores()
    empty = mechanism.estimates([0, 0], 0, LEVEL)[0]
    assert (empty.estimate, empty.std_error, empty.ci_low, empty.ci_high) == (None, None, 18, 90)
    for chosen in ([scores[0]], [scores[-1]], [scores[0], scores[0]], [scores[0], scores[-1]]):
        n = len(chosen)
        estimate = mechanism.estimates([sum(chosen), sum(s * s for s in chosen)], n, LEVEL)[0]
        assert 18 <= estimate.ci_low < estimate.ci_high <= 90
        assert (estimate.std_error is None) == (n == 1)
        assert n == 1 or estimate.std_error > 0


def test_bounded_mean_covers_bernoulli_and_extreme_two_point_populations():
    """Bernoulli(0.5), Bernoulli(0.01) and 0/1 at 0.999: coverage at least 0.95 − 2.33 SE at n = 2, 10, 200."""
    rng = np.random.default_rng(7)
    for top, share, low, high in ((1.0, 0.5, 0.0, 1.0), (1.0, 0.01, 0.0, 1.0), (5.0, 0.999, -1.0, 5.0)):
        truth = low + share * (top - low)
        for n in (2, 10, 200):
            hits = rng.binomial(n, share, size=REPETITIONS)
            sums = hits * top + (n - hits) * low
            squares = hits * top * top + (n - hits) * low * low
            lows, highs = mean_intervals(sums, squares, np.full(REPETITIONS, n), low=low, high=high, level=LEVEL)
            assert np.all(highs > lows) and np.all(lows >= low) and np.all(highs <= high)
            assert np.mean((lows <= truth) & (truth <= highs)) >= FLOOR, (share, n)


def test_bounded_mean_ends_and_narrowing():
    """n = 0 is the whole range; values all at the top give an interval ending there, narrowing with n."""
    assert mean_interval(0, 0, 0, low=2, high=7, level=LEVEL) == (2.0, 7.0)
    widths = []
    for n in (1, 2, 10, 100):
        low, high = mean_interval(n * 7.0, n * 49.0, n, low=2, high=7, level=LEVEL)
        assert high == pytest.approx(7.0) and 2 <= low < 7
        widths.append(high - low)
    assert widths == sorted(widths, reverse=True) and widths[-1] < 0.5
    with pytest.raises(ValueError, match="variance"):
        mean_interval(1, 1, 2, low=0, high=1, level=LEVEL, variance=(0.2, 0.1))
