"""The optimal piecewise mechanism for numbers (Zheng, Mishra & Hu 2025): variance table, privacy, estimator, design.

The output distribution is enumerated here from the mechanism's definition with exact fractions,
independently of survey.core.mechanisms; the worst-case variances of Duchi's, the piecewise, the
hybrid and the optimal piecewise mechanism are tabulated at the ε of the issue, and the design's
``auto`` is checked to take the optimal piecewise mechanism exactly where its worst case is the least.
"""

from __future__ import annotations

import math
from decimal import Context, Decimal
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import chi2

from survey.core import codec
from survey.core.mechanisms.common import rr_flip_threshold
from survey.core.mechanisms.duchi import duchi_worst_variance
from survey.core.mechanisms.hybrid import hybrid_ratio, hybrid_worst_variance
from survey.core.mechanisms.opm import (debias_level_mean, opm_epsilon, opm_probabilities, opm_ratio, opm_shape,
                                        opm_variance, opm_worst, opm_worst_variance, randomize_opm)
from survey.core.mechanisms.piecewise import piecewise_ratio, piecewise_worst_variance
from survey.core.aggregate import aggregate, aggregate_counts
from survey.core.definition import parse_definition
from survey.core.design import build_design
from survey.core.mechanisms import OptimalPiecewise, choose
from survey.store import Store

EPSILONS = (0.5, 1, 1.29, 2, 3, 4, 8)
DIGITS = Context(prec=50)


def exact_distribution(value: int, lo: int, hi: int, a: int, b: int, m: int, w: int) -> list[Fraction]:
    """Return P(k) for every level k in 0..m+w−1: x rounded onto the grid 0..m, band levels A/D, others B/D."""
    total = w * a + m * b
    grid, up = divmod(Fraction(value - lo, hi - lo) * m, 1)
    probabilities = [Fraction(0)] * (m + w)
    for point, weight in ((int(grid), 1 - up), (int(grid) + 1, up)):
        if weight:
            for k in range(m + w):
                probabilities[k] += weight * Fraction(a if point <= k < point + w else b, total)
    return probabilities


def parameters(epsilon) -> tuple[int, int, int, int]:
    """Return (A, B, m, w) the design gives at a share of ``epsilon``."""
    a, b = opm_ratio(epsilon=epsilon)
    return (a, b, *opm_shape(a, b))


def worst_variances(epsilon) -> dict[str, float]:
    """Return the worst-case n·Var over single answers of one report's estimate of x in [0, 1], per mechanism."""
    a, b = piecewise_ratio(epsilon=epsilon)
    ha, hb = hybrid_ratio(epsilon=epsilon)
    return {"duchi": duchi_worst_variance(rr_flip_threshold(epsilon=epsilon)),
            "piecewise": piecewise_worst_variance(a, b),
            "hybrid": hybrid_worst_variance(ha, hb),
            "opm": opm_worst_variance(*parameters(epsilon))}


# The worst-case n·Var on [0, 1] (× range² for a number's mean), computed by worst_variances and kept here
# as the table of the mechanisms' reference entry: the optimal piecewise mechanism's column never exceeds
# the best of the others by more than Duchi's (its two-level member) discretisation at ε ≤ 1, and it is the
# least from ε = 2 on.
TABLE = {
    0.5: {"duchi": 4.1677, "piecewise": 5.3057, "hybrid": 4.2248, "opm": 4.1677},
    1: {"duchi": 1.1707, "piecewise": 1.3059, "hybrid": 1.0724, "opm": 1.1707},
    1.29: {"duchi": 0.77409, "piecewise": 0.77403, "hybrid": 0.64290, "opm": 0.69118},
    2: {"duchi": 0.43102, "piecewise": 0.30689, "hybrid": 0.26061, "opm": 0.24998},
    3: {"duchi": 0.30514, "piecewise": 0.12324, "hybrid": 0.10806, "opm": 0.093112},
    4: {"duchi": 0.26901, "piecewise": 0.060339, "hybrid": 0.054755, "opm": 0.039802},
    8: {"duchi": 0.25034, "piecewise": 0.0063353, "hybrid": 0.0062295, "opm": 0.0020939},
}


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_worst_case_variance_table_and_auto_takes_the_least(epsilon):
    """The table's worst cases, and the design's choice: the mechanism of least worst case (opm has no gain_needed)."""
    variances = worst_variances(epsilon)
    assert variances == pytest.approx(TABLE[epsilon], rel=1e-4)
    assert OptimalPiecewise.gain_needed == 0
    least = min(variances, key=lambda name: (variances[name], name != "duchi"))
    question = SimpleNamespace(kind="number", options=None, min=0, max=100, mechanism="auto")
    chosen, _, realised = choose(question, Decimal(repr(epsilon)))
    assert chosen.name == least, (variances, chosen.name)
    assert realised <= Decimal(repr(epsilon))
    if epsilon >= 2:
        assert chosen is OptimalPiecewise and variances["opm"] < min(variances["hybrid"], variances["piecewise"])


def test_the_band_share_falls_with_epsilon_and_is_wider_than_wang_et_al():
    """The optimum's band share w/G falls as ε grows, above the piecewise mechanism's 1/(1 + e^(ε/2)) at every ε."""
    shares = []
    for epsilon in (3, 4, 8, 10):
        m, w = parameters(epsilon)[2:]
        shares.append(w / (m + w))
        assert w / (m + w) > 1 / (1 + math.exp(epsilon / 2))
    assert shares == sorted(shares, reverse=True)


@pytest.mark.parametrize("epsilon", [2, 4, 8])
def test_exact_variance_and_mean_line_match_enumeration(epsilon):
    """E[R] = q + (p − q)x and Var((R − q)/(p − q)) = opm_variance for every answer of 0..40, from the enumeration."""
    a, b, m, w = parameters(epsilon)
    p, q = opm_probabilities(a, b, m, w)
    assert p + q == 1
    g = m + w
    values = [Fraction(2 * k + 1, 2 * g) for k in range(g)]
    lo, hi = 0, 40
    for value in range(lo, hi + 1):
        x = Fraction(value - lo, hi - lo)
        probabilities = exact_distribution(value, lo, hi, a, b, m, w)
        assert sum(probabilities) == 1
        mean = sum(pr * v for pr, v in zip(probabilities, values))
        assert mean == q + (p - q) * x
        variance = sum(pr * v * v for pr, v in zip(probabilities, values)) - mean * mean
        assert variance / (p - q) ** 2 == opm_variance(a, b, m, w, x)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [2, 3, 4, 8, 10])
def test_worst_case_variance_is_the_maximum_over_a_dense_grid(epsilon):
    """The exact worst case bounds the variance at 20,000 points of [0, 1] and is attained among them."""
    a, b, m, w = parameters(epsilon)
    worst_x, worst = opm_worst(a, b, m, w)
    grid = [Fraction(i, 20000) for i in range(20001)] + [worst_x]
    dense = max(opm_variance(a, b, m, w, x) for x in grid)
    assert dense == worst


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1, 2, 4, 8, 20])
def test_realised_epsilon_is_the_largest_level_ratio_and_never_above_the_budget(epsilon):
    """ε′ = ln(max over levels and answers of P(k | x)/P(k | x′)) exactly, and ε′ <= ε."""
    a, b, m, w = parameters(epsilon)
    lo, hi = 0, 7
    rows = [exact_distribution(value, lo, hi, a, b, m, w) for value in range(lo, hi + 1)]
    ratio = max(first[k] / second[k] for first in rows for second in rows for k in range(m + w))
    assert ratio == Fraction(a, b)
    realised = DIGITS.ln(DIGITS.divide(Decimal(a), Decimal(b)))
    assert abs(realised - opm_epsilon(a, b)) < Decimal(10) ** -40
    assert opm_epsilon(a, b) <= Decimal(repr(epsilon))
    assert w * a + m * b <= 2**32 and m + w <= 512


def test_numpy_randomizer_fits_the_exact_distribution():
    """The simulation's randomizer draws every level with the exact probability (chi-square, seeded)."""
    a, b, m, w = parameters(4)
    rng = np.random.default_rng(12)
    for value in (18, 40, 61, 90):
        levels = randomize_opm(np.full(200_000, value), lo=18, hi=90, ratio_a=a, ratio_b=b, steps=m, band=w,
                                    rng=rng)
        expected = np.array([float(p) for p in exact_distribution(value, 18, 90, a, b, m, w)]) * levels.size
        counts = np.bincount(levels, minlength=m + w)
        stat = float(((counts - expected) ** 2 / expected).sum())
        assert stat < chi2.ppf(1 - 1e-4, m + w - 1), (value, stat)


def _simulate(epsilon, truth_p, repetitions, n, seed, lo=0, hi=100):
    a, b, m, w = parameters(epsilon)
    p = opm_probabilities(a, b, m, w)[0]
    rng = np.random.default_rng(seed)
    answers = lo + rng.binomial(hi - lo, truth_p, size=(repetitions, n))
    levels = randomize_opm(answers, lo=lo, hi=hi, ratio_a=a, ratio_b=b, steps=m, band=w, rng=rng)
    estimates = [debias_level_mean(int(row.sum()), int((row * row).sum()), n, levels=m + w, p=p, lo=lo, hi=hi,
                                   level=0.95) for row in levels]
    weights = [math.comb(hi - lo, k) * truth_p ** k * (1 - truth_p) ** (hi - lo - k) for k in range(hi - lo + 1)]
    # The exact n·Var of the mean's estimate for this population of answers: E[V(x)] + Var(x), × range².
    population = sum(weight * opm_variance(a, b, m, w, Fraction(k, hi - lo)) for k, weight in enumerate(weights))
    spread = truth_p * (1 - truth_p) / (hi - lo)
    exact_se = (hi - lo) * math.sqrt((float(population) + spread) / n)
    return estimates, lo + (hi - lo) * truth_p, exact_se


@pytest.mark.slow
@pytest.mark.parametrize("epsilon, truth_p", [(2, 0.3), (4, 0.8), (4, 0.02), (8, 0.37)])
def test_simulated_means_are_unbiased_and_intervals_cover(epsilon, truth_p):
    """600 seeded surveys of 2000: mean within 4.5 SE of the truth, intervals cover >= 93%, SEs match the exact one."""
    estimates, truth, exact_se = _simulate(epsilon, truth_p, 600, 2000, seed=int(epsilon * 100 + truth_p * 100))
    values = np.array([e.estimate for e in estimates])
    assert abs(values.mean() - truth) <= 4.5 * exact_se / math.sqrt(len(values)), (values.mean(), truth)
    coverage = np.mean([e.ci_low <= truth <= e.ci_high for e in estimates])
    assert coverage >= 0.93, coverage
    # The estimated standard error, the spread of the estimates and the exact variance agree.
    assert np.mean([e.std_error for e in estimates]) == pytest.approx(exact_se, rel=0.03)
    assert values.std(ddof=1) == pytest.approx(exact_se, rel=0.1)


def test_estimator_rejects_impossible_tallies():
    with pytest.raises(ValueError, match="level_sum"):
        debias_level_mean(100, 10**6, 2, levels=12, p=Fraction(3, 4), lo=0, hi=1, level=0.95)
    with pytest.raises(ValueError, match="level_squares"):
        debias_level_mean(10, 20, 2, levels=12, p=Fraction(3, 4), lo=0, hi=1, level=0.95)
    with pytest.raises(ValueError, match="p must be"):
        debias_level_mean(0, 0, 0, levels=12, p=Fraction(1, 2), lo=0, hi=1, level=0.95)
    empty = debias_level_mean(0, 0, 0, levels=12, p=Fraction(3, 4), lo=0, hi=1, level=0.95)
    assert (empty.estimate, empty.ci_low, empty.ci_high) == (None, 0, 1)


OPM_SURVEY = {"slug": "op", "title": "Op", "epsilon": 8.0, "release_every": 1, "questions": [
    {"id": "smoker", "kind": "yes_no", "text": "Smoke?"},
    {"id": "hours", "kind": "number", "text": "Hours?", "min": 0, "max": 60}]}


def test_design_entry_and_tally_trigger_on_a_real_database(tmp_path):
    """auto picks opm at a share of 4; every level through the INSERT trigger gives codec.tally's Σk and Σk²."""
    design = build_design(parse_definition(OPM_SURVEY))
    question = design["questions"][1]
    assert question["mechanism"] == "opm"
    a, b, m, w = (question[key] for key in ("ratio_a", "ratio_b", "steps", "band"))
    assert (a, b, m, w) == parameters(4.0) and question["levels"] == m + w
    assert question["epsilon"] == float(opm_epsilon(a, b)) <= question["epsilon_nominal"] == 4.0
    levels = list(range(question["levels"])) + [0, m + w - 1, 3]
    path = tmp_path / "op.sqlite"
    store = Store(path)
    try:
        store.create_survey("", design)
        for level in levels:
            store.add_response("op", design["hash"], {"smoker": level % 2, "hours": level})
        counts = store.question_counts("op")
        assert counts["hours"] == (len(levels), [int(x) for x in codec.tally(question, np.array(levels))])
        assert counts == store.recount("op")
        answers = list(store.iter_answers("op"))
    finally:
        store.close()
    assert aggregate_counts(design, counts) == aggregate(design, answers)
