"""Anytime-valid intervals (survey.core.anytime): a survey watched after every response keeps its coverage.

Each simulation runs RUNS seeded surveys of LOOKS responses drawn i.i.d. from a known population,
randomized by the product's own mechanism, and reads both kinds of interval after every response:
the fixed-n 95% interval (Clopper-Pearson, or Student's t for a level mechanism) and the 95%
confidence sequence. A run "covers at every look" when the truth (every option's share at once,
for a choice question) lies in its interval at all LOOKS looks. The confidence sequence must do
so in at least 95% of runs; the fixed interval, watched the same way, in clearly fewer (below 85%).
The vectorised intervals are checked against the product's (``Mechanism.estimates`` and
``Mechanism.anytime_estimates``) at several looks of one run, so the simulation measures the
product's intervals.
"""

from __future__ import annotations

import math
from decimal import Decimal
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.special import betaincinv
from scipy.stats import t as student_t

from survey.core.anytime import (
    DEFAULT_PLANNED,
    anytime_estimate,
    bernstein_radius,
    check_kind,
    check_planned,
    half_width,
    mixture_ratio,
    radius,
)
from survey.core.estimators import Estimate
from survey.core.mechanisms import Duchi, GeneralizedRR, Piecewise, WarnerRR

RUNS = 400
LOOKS = 2000
LEVEL = 0.95
MIN_ANYTIME = 0.95
MAX_FIXED = 0.85
CHECKED_LOOKS = (1, 2, 10, 137, 1000, LOOKS)


def _mechanism(cls, kind: str, *, epsilon: float, options=None, lo=0, hi=10):
    """Return the mechanism ``cls`` built as the design builds it, for a question of ``kind`` at ``epsilon``."""
    question = SimpleNamespace(kind=kind, options=options, min=lo, max=hi)
    fields, _ = cls.build(question, Decimal(epsilon))
    return cls.from_entry({"kind": kind, "options": options, "min": lo, "max": hi, **fields})


def _clopper_pearson(ones: np.ndarray, n: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Return the Clopper-Pearson limits of every (ones, n), vectorised as estimators.clopper_pearson."""
    safe_low = np.maximum(ones, 1)
    safe_high = np.minimum(ones, n - 1)
    low = np.where(ones == 0, 0.0, betaincinv(safe_low, n - safe_low + 1, alpha / 2))
    high = np.where(ones == n, 1.0, betaincinv(safe_high + 1, n - safe_high, 1 - alpha / 2))
    return low, high


def _inside(low, high, lo: float, hi: float):
    """Return [low, high] clipped to [lo, hi], one wholly beyond an end moved inside keeping its width (as the product)."""
    width = np.minimum(high - low, hi - lo)
    low, high = np.where(low >= hi, hi - width, low), np.where(high <= lo, lo + width, high)
    return np.clip(low, lo, hi), np.clip(high, lo, hi)


def _indicator_intervals(mechanism, ones: np.ndarray, n: np.ndarray, over: int):
    """Return (estimate, fixed low, fixed high, anytime low, anytime high) of indicator counts at every look."""
    p, q = mechanism.response_probabilities()
    estimate = (ones / n - q) / (p - q)
    low, high = _clopper_pearson(ones, n, (1 - LEVEL) / over)
    fixed = _inside((low - q) / (p - q), (high - q) / (p - q), 0, 1)
    half = _half(mechanism, n, over)
    return estimate, *fixed, *_inside(estimate - half, estimate + half, 0, 1)


def _half(mechanism, n, over: int = 1):
    """Return the product's anytime half-width at every look (in the estimand's units), vectorised."""
    a, b = mechanism.debiased_range()
    return half_width(n, spread=b - a, level=LEVEL, planned=DEFAULT_PLANNED, simultaneous_over=over,
                      variance=mechanism.debiased_variance())


def _report(name: str, anytime: float, fixed: float):
    print(f"\n{name}: covered at every one of {LOOKS} looks in {anytime:.1%} of {RUNS} runs with anytime intervals, "
          f"{fixed:.1%} with fixed-n 95% intervals")
    assert anytime >= MIN_ANYTIME, f"{name}: anytime intervals covered at every look in only {anytime:.1%}"
    assert fixed < MAX_FIXED, f"{name}: fixed intervals covered at every look in {fixed:.1%}, not clearly short"


def _matches_product(mechanism, ones_at, n_values, vectorised):
    """Check that the product's fixed and anytime intervals equal the vectorised ones at the looks given."""
    for look in n_values:
        ones = ones_at(look)
        fixed = mechanism.estimates(ones, look, LEVEL)
        anytime = mechanism.anytime_estimates(ones, look, LEVEL, DEFAULT_PLANNED)
        for index, (kept, watched) in enumerate(zip(fixed, anytime)):
            expected = [column[look - 1] if column.ndim == 1 else column[look - 1, index] for column in vectorised]
            assert kept.estimate == pytest.approx(expected[0], abs=1e-9)
            if not np.isnan(expected[1]):  # NaN: the product's fixed interval is checked elsewhere
                assert (kept.ci_low, kept.ci_high) == pytest.approx((expected[1], expected[2]), abs=1e-9)
            assert (watched.ci_low, watched.ci_high) == pytest.approx((expected[3], expected[4]), abs=1e-9)
            assert watched.estimate == kept.estimate


def test_yes_no_watched_after_every_response():
    """Warner's randomized response at ε = 1, true share 0.3: anytime ≥ 95% at every look, fixed clearly short."""
    mechanism = _mechanism(WarnerRR, "yes_no", epsilon=1.0)
    rng = np.random.default_rng(20260601)
    truth = 0.3
    reports = mechanism.randomize((rng.random((RUNS, LOOKS)) < truth).astype(np.int64), rng)
    ones = np.cumsum(reports, axis=1)
    n = np.arange(1, LOOKS + 1)
    estimate, fixed_low, fixed_high, any_low, any_high = _indicator_intervals(mechanism, ones, n, 1)
    _matches_product(mechanism, lambda look: [int(ones[0, look - 1])], CHECKED_LOOKS,
                     [column[0] for column in (estimate, fixed_low, fixed_high, any_low, any_high)])
    fixed = np.mean(np.all((fixed_low <= truth) & (truth <= fixed_high), axis=1))
    anytime = np.mean(np.all((any_low <= truth) & (truth <= any_high), axis=1))
    _report("yes/no (Warner, ε = 1)", anytime, fixed)


@pytest.mark.slow
def test_choice_watched_after_every_response_simultaneously():
    """GRR over 4 options at ε = 2: every option's interval holds at every look at once (Bonferroni over 4)."""
    options = ("a", "b", "c", "d")
    mechanism = _mechanism(GeneralizedRR, "choice", epsilon=2.0, options=options)
    rng = np.random.default_rng(20260602)
    shares = np.array([0.4, 0.3, 0.2, 0.1])
    reports = mechanism.randomize(rng.choice(4, size=(RUNS, LOOKS), p=shares), rng)
    ones = np.cumsum(reports[..., None] == np.arange(4), axis=1)
    n = np.arange(1, LOOKS + 1)[None, :, None]
    estimate, fixed_low, fixed_high, any_low, any_high = _indicator_intervals(mechanism, ones, n, len(options))
    _matches_product(mechanism, lambda look: [int(count) for count in ones[0, look - 1]], CHECKED_LOOKS,
                     [column[0] for column in (estimate, fixed_low, fixed_high, any_low, any_high)])
    fixed = np.mean(np.all((fixed_low <= shares) & (shares <= fixed_high), axis=(1, 2)))
    anytime = np.mean(np.all((any_low <= shares) & (shares <= any_high), axis=(1, 2)))
    _report("choice of 4 (GRR, ε = 2, simultaneous)", anytime, fixed)


NUMBER_VALUES = np.arange(0, 11)
NUMBER_SHARES = np.array([0.2, 0.05, 0.05, 0.05, 0.05, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])


def _number_answers(rng) -> tuple[np.ndarray, float]:
    return rng.choice(NUMBER_VALUES, size=(RUNS, LOOKS), p=NUMBER_SHARES), float(NUMBER_VALUES @ NUMBER_SHARES)


def test_duchi_mean_watched_after_every_response():
    """Duchi et al.'s mechanism on 0..10 at ε = 1: the mean's anytime intervals hold at every look."""
    mechanism = _mechanism(Duchi, "number", epsilon=1.0)
    rng = np.random.default_rng(20260603)
    answers, truth = _number_answers(rng)
    ones = np.cumsum(mechanism.randomize(answers, rng), axis=1)
    n = np.arange(1, LOOKS + 1)
    unit = _indicator_intervals(mechanism, ones, n, 1)
    a, b = mechanism.debiased_range()
    p, q = mechanism.response_probabilities()
    half = _half(mechanism, n)
    estimate = 10 * unit[0]
    any_low, any_high = _inside(estimate - half, estimate + half, 0, 10)
    fixed_low, fixed_high = 10 * unit[1], 10 * unit[2]
    assert (a, b) == pytest.approx((-10 * q / (p - q), 10 * (1 - q) / (p - q)))
    _matches_product(mechanism, lambda look: [int(ones[0, look - 1])], CHECKED_LOOKS,
                     [column[0] for column in (estimate, fixed_low, fixed_high, any_low, any_high)])
    fixed = np.mean(np.all((fixed_low <= truth) & (truth <= fixed_high), axis=1))
    anytime = np.mean(np.all((any_low <= truth) & (truth <= any_high), axis=1))
    _report("number mean (Duchi, ε = 1)", anytime, fixed)


def test_piecewise_mean_watched_after_every_response():
    """The piecewise mechanism on 0..10 at ε = 2: the mean's anytime intervals hold at every look; a fixed-n
    interval (Student's t, the narrowest usual one) watched at every look does not. The product's own fixed-n
    interval (guaranteed at each single n) is checked in test_number_coverage.py, not here."""
    mechanism = _mechanism(Piecewise, "number", epsilon=2.0)
    rng = np.random.default_rng(20260604)
    answers, truth = _number_answers(rng)
    levels = mechanism.randomize(answers, rng)
    value = mechanism.level_value_array(levels)
    level_sum, level_squares = np.cumsum(levels, axis=1), np.cumsum(levels * levels, axis=1)
    n = np.arange(1, LOOKS + 1)
    p, q = mechanism.response_probabilities()
    mean = np.cumsum(value, axis=1) / n
    estimate = 10 * (mean - q) / (p - q)
    squares = np.cumsum(value * value, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = np.maximum(squares - n * mean * mean, 0) / (n - 1)
        half_t = student_t.ppf(1 - (1 - LEVEL) / 2, n - 1) * np.sqrt(variance / n) / (p - q)
    unit = (mean - q) / (p - q)
    fixed_low = np.where(n < 2, 0.0, 10 * np.clip(unit - half_t, 0, 1))
    fixed_high = np.where(n < 2, 10.0, 10 * np.clip(unit + half_t, 0, 1))
    half = _half(mechanism, n)
    any_low, any_high = _inside(estimate - half, estimate + half, 0, 10)
    unchecked = np.full((RUNS, LOOKS), np.nan)
    _matches_product(mechanism, lambda look: [int(level_sum[0, look - 1]), int(level_squares[0, look - 1])],
                     CHECKED_LOOKS, [column[0] for column in (estimate, unchecked, unchecked, any_low, any_high)])
    fixed = np.mean(np.all((fixed_low <= truth) & (truth <= fixed_high), axis=1))
    anytime = np.mean(np.all((any_low <= truth) & (truth <= any_high), axis=1))
    _report("number mean (piecewise, ε = 2)", anytime, fixed)


def test_the_mixture_is_tuned_for_the_planned_n():
    """ρ solves r − log r = 1 + 2 log(1/α), so the boundary at the planned n is narrower than any other tuning's."""
    for alpha in (0.1, 0.05, 0.01, 0.05 / 7):
        ratio = mixture_ratio(alpha)
        assert ratio > 1 and ratio - math.log(ratio) == pytest.approx(1 + 2 * math.log(1 / alpha))
        for planned in (100, 1000, 25000):
            best = radius(planned, alpha=alpha, planned=planned)
            for other in (planned // 3, planned * 3, planned + 50):
                assert best < radius(planned, alpha=alpha, planned=other)


def test_the_radius_is_the_normal_mixture_boundary():
    """At n the half-width is √((n/4 + ρ) log((n/4 + ρ)/(ρα²)))/n, shrinking with n and infinite with no report."""
    alpha, planned = 0.05, 1000
    rho = (planned / 4) / (mixture_ratio(alpha) - 1)
    for n in (1, 7, 1000, 123456):
        expected = math.sqrt((n / 4 + rho) * math.log((n / 4 + rho) / (rho * alpha ** 2))) / n
        assert radius(n, alpha=alpha, planned=planned) == pytest.approx(expected, rel=1e-12)
    assert radius(0, alpha=alpha, planned=planned) == math.inf
    widths = radius(np.arange(1, 5000), alpha=alpha, planned=planned)
    assert np.all(np.diff(widths) < 0)


def test_no_report_spans_the_feasible_range_and_intervals_are_clipped():
    """With n = 0 the interval is the whole feasible range; otherwise it is clipped to it around the estimate."""
    empty = Estimate(estimate=None, std_error=None, ci_low=0.0, ci_high=1.0, n=0, noisy_share=None)
    assert anytime_estimate(empty, debiased=(-1.0, 2.0), feasible=(3.0, 9.0), level=0.95, planned=100) == Estimate(
        estimate=None, std_error=None, ci_low=3.0, ci_high=9.0, n=0, noisy_share=None)
    one = Estimate(estimate=-0.2, std_error=0.1, ci_low=0.0, ci_high=0.3, n=400, noisy_share=0.4)
    watched = anytime_estimate(one, debiased=(-1.0, 2.0), feasible=(0.0, 1.0), level=0.95, planned=400)
    assert watched.ci_low == 0.0 and watched.ci_high == pytest.approx(-0.2 + 3 * radius(400, alpha=0.05, planned=400))
    assert (watched.estimate, watched.std_error, watched.n, watched.noisy_share) == (-0.2, 0.1, 400, 0.4)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "1000", 10**9 + 1])
def test_a_planned_n_must_be_a_whole_number_of_respondents(bad):
    """The planned n is a whole number from 1 to 10^9."""
    with pytest.raises(ValueError, match="planned"):
        check_planned(bad)


def test_the_kinds_are_fixed_and_anytime():
    """Only "fixed" and "anytime" name a kind of interval."""
    assert check_kind("fixed") == "fixed" and check_kind("anytime") == "anytime"
    with pytest.raises(ValueError, match="fixed or anytime"):
        check_kind("sequential")


def test_the_planner_reports_the_width_of_each_kind_at_the_planned_n():
    """At the planned n the planner's two half-widths are the product's: anytime exactly, fixed within 3%."""
    from pathlib import Path

    from survey.core.definition import parse_definition_toml
    from survey.core.design import build_design
    from survey.core.mechanisms import mechanism_for
    from survey.core.planning import plan_question, question_previews

    defn = parse_definition_toml((Path(__file__).resolve().parents[2] / "examples" / "smoking.toml")
                                 .read_text(encoding="utf-8"))
    design = build_design(defn)
    respondents = 1500
    previews = question_previews(defn, respondents=respondents, design=design)
    for question, preview in zip(design["questions"], previews):
        mechanism = mechanism_for(question)
        plan = plan_question(question, respondents=respondents, margin=0.05)
        assert preview["anytime_half_width"] == plan.anytime_half_width
        assert 1.3 < plan.anytime_half_width / plan.half_width < 1.7, question["id"]
        if mechanism.report == "level":
            continue
        p, q = mechanism.response_probabilities()
        worst = min(max(0.5, min(p, q)), max(p, q))
        ones = [round(respondents * worst)] * mechanism.estimands
        if question["kind"] == "choice":
            ones = [round(respondents * worst)] + [round(respondents * q)] * (mechanism.estimands - 1)
        lo, hi = mechanism.estimand_range()
        fixed = mechanism.estimates(ones, respondents, 0.95)[0]
        watched = mechanism.anytime_estimates(ones, respondents, 0.95, respondents)[0]
        assert (watched.estimate - watched.ci_low) / (hi - lo) == pytest.approx(plan.anytime_half_width, rel=1e-9)
        assert (fixed.estimate - fixed.ci_low) / (hi - lo) == pytest.approx(plan.half_width, rel=0.03)
        print(f"\n{question['id']} ({mechanism.name}) at {respondents:,}: ±{plan.half_width:.1%} at the end, "
              f"±{plan.anytime_half_width:.1%} valid at every look "
              f"(ratio {plan.anytime_half_width / plan.half_width:.2f})")


def test_the_bennett_boundary_solves_its_mixture():
    """At its half-width the discrete Bennett mixture is exactly 2/α; it shrinks with n and is infinite with no report."""
    from scipy.special import logsumexp

    alpha, planned, variance, spread = 0.05, 800, 0.3, 2.5
    steps = np.arange(-8, 9)
    weights = 1 / ((abs(steps) + 1) * (abs(steps) + 2))
    lambdas = math.sqrt(2 * math.log(2 / alpha) / (variance * planned)) * 2.0 ** (steps / 2)
    psi = (np.expm1(lambdas * spread) - lambdas * spread) / spread ** 2
    for n in (1, 50, 800, 40000):
        boundary = n * bernstein_radius(n, alpha=alpha, planned=planned, variance=variance, spread=spread)
        mixture = logsumexp(np.log(weights / weights.sum()) + lambdas * boundary - variance * n * psi)
        assert mixture == pytest.approx(math.log(2 / alpha), abs=1e-9)
    assert bernstein_radius(0, alpha=alpha, planned=planned, variance=variance, spread=spread) == math.inf
    widths = bernstein_radius(np.arange(1, 3000), alpha=alpha, planned=planned, variance=variance, spread=spread)
    assert np.all(np.diff(widths) < 0)


@pytest.mark.parametrize("cls", __import__("survey.core.mechanisms", fromlist=["MECHANISMS"]).MECHANISMS,
                         ids=lambda cls: f"{cls.kind}-{cls.name}")
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_every_mechanism_pays_about_half_again_at_the_planned_n(cls, epsilon):
    """Anytime / fixed half-width at the planned n is 1.3 to 1.75 for every mechanism: a report's variance bounds it."""
    from survey.core.planning import z_value

    kind = cls.kind
    options = None if kind in ("yes_no", "number") else tuple("abcdefgh")
    try:
        mechanism = _mechanism(cls, kind, epsilon=epsilon, options=options)
    except ValueError:
        pytest.skip(f"{cls.name} cannot be built at ε = {epsilon}")
    over = mechanism.estimands
    for planned in (200, 1000, 20000):
        fixed = z_value(LEVEL, over) * math.sqrt(mechanism.debiased_variance() / planned)
        a, b = mechanism.debiased_range()
        watched = half_width(planned, spread=b - a, level=LEVEL, planned=planned, simultaneous_over=over,
                             variance=mechanism.debiased_variance())
        assert 1.3 < watched / fixed < 1.75, (planned, watched / fixed)
