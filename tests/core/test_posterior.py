"""Posterior intervals (survey.core.posterior): exact for indicators, checked against direct integration and by coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize

from survey.core.aggregate import (QuestionCounts, aggregate_counts, count_reports, question_rows, rows_to_csv,
                                   rows_to_table)
from survey.core.codec import tally
from survey.core.definition import parse_definition
from survey.core.design import build_design
from survey.core.mechanisms import LEVEL as LEVEL_REPORT, mechanism_for
from survey.core.posterior import (DEFAULT_PRIOR, Prior, binomial_interval, kind_prior, normal_interval,
                                   parse_prior, posterior_kind)
from survey.core.readout import readouts

LEVEL = 0.95


def direct_interval(k, n, p, q, a, b, level=LEVEL):
    """The equal-tailed interval by scipy's adaptive quadrature of the normalised density and Brent's method.

    The prior's endpoint singularities are left to quad's algebraic weight (QUADPACK's QAWS) on the end pieces.
    """
    def loglik(theta):
        lam = q + (p - q) * theta
        return k * math.log(lam) + (n - k) * math.log1p(-lam)
    mode = min(max((k / n - q) / (p - q), 0.0), 1.0)
    lam = q + (p - q) * mode
    spread = math.sqrt(lam * (1 - lam) / n) / abs(p - q)
    peak = loglik(mode)
    breaks = sorted(point for point in (mode + j * spread for j in (-12, -6, -3, -1, 0, 1, 3, 6, 12))
                    if 1e-3 < point < 1 - 1e-3)  # the end pieces, with the singular weight, reach past 0.001

    def piece(left, right):
        options = dict(epsabs=1e-14, epsrel=1e-10, limit=400)
        if left == 0:
            return integrate.quad(lambda t: math.exp((b - 1) * math.log1p(-t) + loglik(t) - peak), left, right,
                                  weight="alg", wvar=(a - 1, 0), **options)[0]
        if right == 1:
            return integrate.quad(lambda t: math.exp((a - 1) * math.log(t) + loglik(t) - peak), left, right,
                                  weight="alg", wvar=(0, b - 1), **options)[0]
        return integrate.quad(lambda t: math.exp((a - 1) * math.log(t) + (b - 1) * math.log1p(-t) + loglik(t) - peak),
                              left, right, **options)[0]

    def mass(start, end):
        edges = [start, *[point for point in breaks if start < point < end], end]
        return sum(piece(left, right) for left, right in zip(edges, edges[1:]) if right > left)
    total = mass(0.0, 1.0)

    def cdf(t):  # from the nearer end, so each singular end is integrated with its weight
        return mass(0.0, t) / total if t <= 0.5 else 1 - mass(t, 1.0) / total
    alpha = 1 - level
    return tuple(optimize.brentq(lambda t, share=share: cdf(t) - share, 1e-12, 1 - 1e-6, xtol=1e-14)
                 for share in (alpha / 2, 1 - alpha / 2))


@pytest.mark.parametrize("k, n, p, q, prior", [
    (3, 10, 0.75, 0.25, (0.5, 0.5)),
    (0, 20, 0.75, 0.25, (0.5, 0.5)),        # every report "no": the mass piles up at 0 under Jeffreys
    (20, 20, 0.75, 0.25, (0.5, 0.5)),       # and at 1
    (60, 200, 0.9, 0.1, (1.0, 1.0)),
    (7, 30, 0.75, 0.25, (2.0, 3.0)),
    (1300, 5000, 0.6, 0.4, (0.5, 0.5)),     # a debiased share below 0
    (41_234, 100_000, 0.7311, 0.2689, (0.5, 0.5)),
    (3_000_123, 10_000_000, 0.75, 0.25, (0.5, 0.5)),
])
def test_yes_no_interval_matches_direct_integration(k, n, p, q, prior):
    """The product's interval equals scipy.integrate.quad's of the normalised posterior to 1e-6."""
    got = binomial_interval(k, n, p, q, Prior(*prior), LEVEL)
    assert got == pytest.approx(direct_interval(k, n, p, q, *prior), abs=1e-6)
    assert 0 <= got[0] < got[1] <= 1


@pytest.mark.parametrize("k, n, p, q, prior", [
    (3, 10, 0.75, 0.25, (0.1, 0.1)),        # a prior far more singular than Jeffreys'
    (12, 40, 0.6, 0.4, (0.5, 0.5)),
    (3, 10, 0.25, 0.75, (0.5, 0.5)),        # p < q
    (1, 1, 0.75, 0.25, (100.0, 100.0)),     # a sharp prior, one report
])
def test_yes_no_interval_matches_the_beta_mixture(k, n, p, q, prior):
    """For small n the posterior is exactly a mixture of Beta(a + j, b + n − j), j = 0..n (expanding λ^k(1 − λ)^(n−k)
    in θ^j(1 − θ)^(n−j)); its quantiles from the regularised incomplete beta agree to 1e-9 relative."""
    assert binomial_interval(k, n, p, q, Prior(*prior), LEVEL) == pytest.approx(beta_mixture_interval(k, n, p, q, *prior),
                                                                                rel=1e-9, abs=1e-300)


def beta_mixture_interval(k, n, p, q, a, b):
    """The equal-tailed LEVEL interval of the posterior as the mixture of Beta(a + j, b + n − j), j = 0..n."""
    from scipy.special import betainc, betaln

    weights = np.array([1.0])
    for _ in range(k):
        weights = np.convolve(weights, [q, p])
    for _ in range(n - k):
        weights = np.convolve(weights, [1 - q, 1 - p])
    j = np.arange(n + 1)
    with np.errstate(divide="ignore"):  # a design with q = 0 or p = 1 gives some terms no weight
        logs = np.log(weights) + betaln(a + j, b + n - j)
    mix = np.exp(logs - logs.max())
    mix /= mix.sum()
    alpha = 1 - LEVEL
    return [optimize.brentq(lambda t, share=share: float(mix @ betainc(a + j, b + n - j, t)) - share, 0, 1,
                            xtol=1e-300, rtol=1e-15) for share in (alpha / 2, 1 - alpha / 2)]


@pytest.mark.parametrize("k, n, p, q, prior", [
    (0, 50, 1.0, 0.0, (0.5, 0.5)),          # asked directly: the posterior is Beta(a + k, b + n − k)
    (50, 50, 1.0, 0.0, (0.5, 0.5)),
    (3, 50, 1.0, 0.0, (2.0, 3.0)),
    (0, 50, 0.5, 0.0, (0.5, 0.5)),          # q = 0: no report "yes" puts the likelihood's maximum at λ = 0
    (50, 50, 1.0, 0.5, (1.0, 1.0)),         # p = 1: every report "yes" puts it at λ = 1
    (5, 7, 1.0, 0.2697867137638703, (0.5, 0.5)),  # p = 1: at θ = 1 rounding once made log1p(< −1), a NaN
    (2, 5, 0.2, 0.0, (0.3, 4.0)),
])
def test_a_design_that_rules_an_answer_out_has_a_posterior(k, n, p, q, prior):
    """Designs with q = 0 or p = 1 (a report that rules an answer out: `ldp-survey codebook --binary`) give the
    Beta mixture's interval. The likelihood is then a power of θ (or 1 − θ) at an end, which the quadrature takes
    less exactly than the prior's own singularity: 1e-6, the module's stated accuracy (about 3e-7 at worst here)."""
    got = binomial_interval(k, n, p, q, Prior(*prior), LEVEL)
    assert got == pytest.approx(beta_mixture_interval(k, n, p, q, *prior), abs=1e-6)
    assert 0 <= got[0] < got[1] <= 1


def test_no_reports_give_the_prior_interval():
    """With n = 0 the posterior is the prior: Beta(1/2, 1/2)'s 2.5% and 97.5% quantiles (sin²(π/2·u))."""
    low, high = binomial_interval(0, 0, 0.75, 0.25, DEFAULT_PRIOR, LEVEL)
    assert (low, high) == pytest.approx((math.sin(math.pi / 2 * 0.025) ** 2, math.sin(math.pi / 2 * 0.975) ** 2),
                                        abs=1e-12)


def _coverage_bounds(repetitions):
    se = math.sqrt(LEVEL * (1 - LEVEL) / repetitions)
    return LEVEL - 2.33 * se, LEVEL + 2.33 * se


def test_yes_no_coverage_under_the_prior():
    """θ drawn from Jeffreys' prior, then 60 Warner reports: the interval covers θ within 2.33 SE of 95% (600 surveys)."""
    rng = np.random.default_rng(20261126)
    repetitions, n, p, q = 600, 60, 0.75, 0.25
    thetas = rng.beta(0.5, 0.5, repetitions)
    ones = rng.binomial(n, q + (p - q) * thetas)
    hits = sum(low <= theta <= high for theta, k in zip(thetas, ones)
               for low, high in [binomial_interval(int(k), n, p, q, DEFAULT_PRIOR, LEVEL)])
    low, high = _coverage_bounds(repetitions)
    assert low <= hits / repetitions <= high


def _design(question):
    return build_design(parse_definition({"slug": "p", "title": "P", "epsilon": 1.0, "questions": [question]}))


@pytest.mark.slow
def test_choice_coverage_under_the_dirichlet_prior():
    """Shares drawn from Dirichlet(1/2, 1/2, 1/2), answers randomized by the design's mechanism: each option's
    posterior interval covers its share within 2.33 SE of 95% (500 surveys × 3 options)."""
    design = _design({"id": "c", "kind": "choice", "text": "C?", "options": ["a", "b", "c"]})
    question = design["questions"][0]
    mechanism = mechanism_for(question)
    rng = np.random.default_rng(7)
    repetitions, n, hits = 500, 80, 0
    for _ in range(repetitions):
        shares = rng.dirichlet([0.5] * 3)
        reports = mechanism.randomize(rng.choice(3, size=n, p=shares), rng)
        counts = count_reports(design, [{"c": report.tolist() if hasattr(report, "tolist") else int(report)}
                                        for report in reports])["c"]
        estimates = mechanism.posterior_estimates(counts.ones.tolist(), counts.n, LEVEL, DEFAULT_PRIOR)
        hits += sum(row.ci_low <= share <= row.ci_high for row, share in zip(estimates, shares))
    low, high = _coverage_bounds(3 * repetitions)
    assert low <= hits / (3 * repetitions) <= high


@pytest.mark.parametrize("mechanism_name", ["duchi", pytest.param("piecewise", marks=pytest.mark.slow)])
def test_number_coverage_under_the_prior(mechanism_name):
    """A number's mean drawn from Jeffreys' prior on its range: covered within 2.33 SE of 95% (400 surveys);
    exact for a bit report (duchi), by the stated normal approximation for a level report (piecewise)."""
    design = _design({"id": "x", "kind": "number", "text": "X?", "min": 0, "max": 10, "mechanism": mechanism_name})
    question = design["questions"][0]
    assert question["mechanism"] == mechanism_name
    mechanism = mechanism_for(question)
    rng = np.random.default_rng(11)
    repetitions, n, hits = 400, 300, 0
    for _ in range(repetitions):
        mean = rng.beta(0.5, 0.5)
        answers = rng.binomial(10, mean, n)  # whole answers in 0..10 whose mean is 10·mean
        reports = mechanism.randomize(answers, rng)
        counts = QuestionCounts(n, tally(question, reports)) if mechanism.report == LEVEL_REPORT else \
            QuestionCounts(n, np.array([int(reports.sum())]))
        row = question_rows(question, counts, level=LEVEL, intervals="posterior")[0]
        assert 0 <= row.ci_low <= row.ci_high <= 10
        hits += row.ci_low <= 10 * mean <= row.ci_high
    low, high = _coverage_bounds(repetitions)
    assert low <= hits / repetitions <= high


def test_normal_interval_is_a_truncated_normal_under_a_uniform_prior():
    """Under Beta(1, 1) the normal-likelihood posterior is N(c, s²) cut to [0, 1]: its quantiles in closed form."""
    from scipy.stats import truncnorm

    center, spread = 0.97, 0.05
    law = truncnorm((0 - center) / spread, (1 - center) / spread, loc=center, scale=spread)
    assert normal_interval(center, spread, Prior(1, 1), LEVEL) == pytest.approx(
        (law.ppf(0.025), law.ppf(0.975)), abs=1e-9)


def test_priors_are_read_named_and_refused():
    """jeffreys, uniform, A,B and beta(A,B) read back; nonpositive or malformed priors raise ValueError."""
    assert parse_prior("jeffreys") == Prior(0.5, 0.5) == DEFAULT_PRIOR
    assert parse_prior("Uniform") == Prior(1, 1)
    assert parse_prior("2, 3") == parse_prior("beta(2,3)") == Prior(2, 3)
    assert posterior_kind("2,3") == "posterior-beta(2,3)" and kind_prior("posterior-beta(2,3)") == Prior(2, 3)
    assert kind_prior("posterior") == DEFAULT_PRIOR and kind_prior("fixed") is None
    assert Prior(1, 1).for_option(4) == Prior(1, 3)
    for bad in ("0,1", "1", "a,b", "1,-2", "inf,1"):
        with pytest.raises(ValueError, match="prior"):
            parse_prior(bad)


def test_aggregate_rows_name_the_posterior_and_stay_in_range():
    """Posterior rows keep the unbiased estimates, name their prior in ci_kind and the words, and lie in [0, 1]."""
    design = _design({"id": "s", "kind": "yes_no", "text": "Smoke?"})
    counts = {"s": QuestionCounts(n=40, ones=np.array([3]))}  # fewer 1s than noise alone: estimate below 0
    fixed = aggregate_counts(design, counts)[0]
    row = aggregate_counts(design, counts, intervals="posterior-uniform")[0]
    assert row.estimate == fixed.estimate < 0 and row.ci_kind == "posterior-uniform" and row.ci_planned is None
    assert 0 < row.ci_low < row.ci_high < 1
    assert ",posterior-uniform," in rows_to_csv([row])
    assert "credible intervals under a uniform prior" in rows_to_table([row]).splitlines()[0]
    sentence = readouts(design, [row])[0].lines[0].sentence
    assert "95% credible interval under a uniform prior" in sentence
    with pytest.raises(ValueError, match="prior"):
        aggregate_counts(design, counts, intervals="posterior-beta(0,1)")
