"""Power of a prevalence test under randomized response (Blair, Imai & Zhou 2015): the formula against a
simulation of the test itself, the respondents needed, and `plan --power` on a definition."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import norm

from survey.cli import main
from survey.core.planning import (power_one_sample, power_two_sample, prevalence_std_error,
                                  respondents_for_power)

from conftest import REPO

# Forced response with 2/3 truthful, 1/6 forced yes, 1/6 forced no (Blair, Imai & Zhou's running example).
P, Q = 5 / 6, 1 / 6
REPETITIONS = 20000


def simulated_power(rng, *, null, share, n, alpha, sided, share_b=None):
    """Run the test REPETITIONS times on simulated reports and return the share of rejections."""
    def estimate(truth):
        ones = rng.binomial(n, Q + (P - Q) * truth, size=REPETITIONS)
        return (ones / n - Q) / (P - Q)

    if share_b is None:
        difference, center, se_null = estimate(share), null, prevalence_std_error(P, Q, null, n)
    else:
        difference, center = estimate(share) - estimate(share_b), 0.0
        se_null = math.sqrt(2) * prevalence_std_error(P, Q, share_b, n)
    if sided == 2:
        z = norm.ppf(1 - alpha / 2)
        return float(np.mean(np.abs(difference - center) > z * se_null))
    return float(np.mean(difference - center > norm.ppf(1 - alpha) * se_null))


@pytest.mark.parametrize("null, share, n, alpha, sided", [
    (0.0, 0.03, 1500, 0.05, 1), (0.1, 0.15, 600, 0.05, 2), (0.3, 0.25, 1200, 0.01, 2), (0.5, 0.6, 300, 0.1, 1)])
def test_one_sample_power_is_within_two_points_of_simulation(null, share, n, alpha, sided):
    rng = np.random.default_rng(int(n * 1000 * share))
    formula = power_one_sample(P, Q, null=null, alternative=share, n=n, alpha=alpha, sided=sided)
    assert 0.15 < formula < 0.98
    assert abs(formula - simulated_power(rng, null=null, share=share, n=n, alpha=alpha, sided=sided)) < 0.02


@pytest.mark.parametrize("share_a, share_b, n, sided", [(0.3, 0.2, 1000, 2), (0.15, 0.05, 600, 1)])
def test_two_sample_power_is_within_two_points_of_simulation(share_a, share_b, n, sided):
    rng = np.random.default_rng(n)
    formula = power_two_sample(P, Q, share_a=share_a, share_b=share_b, n=n, sided=sided)
    assert 0.15 < formula < 0.98
    simulated = simulated_power(rng, null=0.0, share=share_a, share_b=share_b, n=n, alpha=0.05, sided=sided)
    assert abs(formula - simulated) < 0.02


def test_the_formula_is_blair_imai_and_zhous():
    """Their one-sided test of a share of 0 at n = 1,000 and a true share of 0.05, written out by hand."""
    c, d = 2 / 3, 1 / 6
    se = lambda share: math.sqrt(((c * share + d) * (1 - c * share - d)) / c**2 / 1000)  # noqa: E731
    threshold = 0 + norm.ppf(0.95) * se(0)
    expected = norm.sf(threshold, 0.05, se(0.05))
    assert power_one_sample(P, Q, null=0, alternative=0.05, n=1000, sided=1) == pytest.approx(expected, rel=1e-12)


def test_the_respondents_needed_are_the_fewest_that_reach_the_power():
    def power_at(n):
        return power_one_sample(P, Q, null=0.1, alternative=0.2, n=n)

    needed = respondents_for_power(power_at, 0.8)
    assert power_at(needed) >= 0.8 > power_at(needed - 1)
    with pytest.raises(ValueError, match="too close"):
        respondents_for_power(lambda n: 0.05, 0.8)


def test_plan_power_on_a_definition(cli_runner):
    smoking = str(REPO / "examples" / "smoking.toml")
    result = cli_runner.invoke(main, ["plan", smoking, "--power", "smoker", "0.2", "0.3", "--respondents", "3000",
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    power = json.loads(result.stdout)["power"][0]
    assert power["question"] == "smoker" and power["test"] == "one_sample" and power["sided"] == 2
    assert power["power"] == pytest.approx(power_one_sample(power["p"], power["q"], null=0.2, alternative=0.3, n=3000))
    assert power["power"] < 0.8 or power["respondents_needed"] <= 3000
    table = cli_runner.invoke(main, ["plan", smoking, "--power-two", "smoker", "0.3", "0.2", "--one-sided"])
    assert "Power of the one-sided test at level 0.05 that two groups share smoker's share" in table.stdout
    for args, message in ((["--power", "cigarettes", "0.1", "0.2"], "the power is for a yes/no question"),
                          (["--power", "nobody", "0.1", "0.2"], "'nobody' is not a question"),
                          (["--power", "smoker", "0.2", "0.2"], "nothing to detect"),
                          (["--power", "smoker", "0.2", "1.5"], "must be in [0, 1]")):
        refused = cli_runner.invoke(main, ["plan", smoking, *args])
        assert refused.exit_code == 2 and message in refused.stderr, refused.stderr
