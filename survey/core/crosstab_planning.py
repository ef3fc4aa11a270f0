"""Plan the crosstabs of two questions: the variance of a conditional share and of the log odds ratio, and the
respondents (or the power) an odds ratio's guaranteed interval needs to exclude 1.

Part of the planning that serves the command line and the builder (``survey.core.planning`` holds the rest);
the odds ratio's interval is the one ``survey.core.crosstab_bounds`` gives from the two conditional shares.
Pure: no I/O.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.stats import norm

from . import crosstab_bounds as bounds
from .design import response_probabilities
from .planning import DEFAULT_LEVEL, z_value


def _report_matrix(question: dict) -> np.ndarray:
    """Return P[y, x], the chance of report y given true answer x, of a yes/no question or a {"p", "q"} (Warner 1965)."""
    p, q = (question["p"], question["q"]) if "kind" not in question else response_probabilities(question)
    return np.array([[1 - q, 1 - p], [q, p]])


def log_odds_ratio_variance(question_a: dict, question_b: dict, cells) -> float:
    """Return n·Var of the estimated log odds ratio of two yes/no questions with true cells (π00, π01, π10, π11).

    The cells are estimated by inverting both randomizations, π̂ = (P_A⁻¹ ⊗ P_B⁻¹)λ̂, whose
    covariance is M(diag λ − λλᵀ)Mᵀ/n; the delta method on log(π00π11/(π01π10)) gives the rest.
    """
    for question in (question_a, question_b):
        if question["kind"] != "yes_no":
            raise ValueError(f"odds ratios need two yes/no questions; {question['id']!r} is {question['kind']}")
    pi = np.asarray(cells, dtype=float)
    if pi.shape != (4,) or (pi <= 0).any() or not math.isclose(pi.sum(), 1.0, abs_tol=1e-9):
        raise ValueError(f"the cells must be 4 positive shares summing to 1, got {list(pi)}")
    randomize = np.kron(_report_matrix(question_a), _report_matrix(question_b))
    reported = randomize @ pi
    inverse = np.linalg.inv(randomize)
    covariance = inverse @ (np.diag(reported) - np.outer(reported, reported)) @ inverse.T
    gradient = np.array([1 / pi[0], -1 / pi[1], -1 / pi[2], 1 / pi[3]])
    return float(gradient @ covariance @ gradient)


def odds_ratio_cells(share_a: float, share_b_without_a: float, odds_ratio: float) -> np.ndarray:
    """Return the cells (π00, π01, π10, π11) of a population with P(A), P(B | not A) and the odds ratio."""
    for name, value in (("the share with A", share_a), ("the share with B among those without A", share_b_without_a)):
        if not 0 < value < 1:
            raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    if not odds_ratio > 0 or odds_ratio == 1:
        raise ValueError(f"the odds ratio to detect must be positive and not 1, got {odds_ratio!r}")
    odds = odds_ratio * share_b_without_a / (1 - share_b_without_a)
    share_b_with_a = odds / (1 + odds)
    return np.array([(1 - share_a) * (1 - share_b_without_a), (1 - share_a) * share_b_without_a,
                     share_a * (1 - share_b_with_a), share_a * share_b_with_a])


# Most respondents the odds-ratio planner searches: beyond it a plan is not useful.
MOST_RESPONDENTS = 10**9


def respondents_for_odds_ratio(question_a: dict, question_b: dict, *, share_a: float, share_b_without_a: float,
                               odds_ratio: float, level: float = DEFAULT_LEVEL, power: float = 0.8) -> int:
    """Return the fewest respondents (answering both questions) at which odds_ratio_power reaches ``power``.

    Doubling, then bisection on n (the planned power grows with n); ValueError when even
    MOST_RESPONDENTS do not reach it.
    """
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    key = _odds_key(question_a, question_b, share_a, share_b_without_a, odds_ratio, level)
    low, high = 0, 1
    while _odds_power(*key, high) < power:
        if high >= MOST_RESPONDENTS:
            raise ValueError(f"even {MOST_RESPONDENTS:,} respondents do not reach {power:.0%} power: "
                             f"the odds ratio {odds_ratio:g} is too close to 1")
        low, high = high, min(2 * high, MOST_RESPONDENTS)
    while high - low > 1:
        middle = (low + high) // 2
        if _odds_power(*key, middle) >= power:
            high = middle
        else:
            low = middle
    return high


def odds_ratio_power(question_a: dict, question_b: dict, *, share_a: float, share_b_without_a: float,
                     odds_ratio: float, respondents: float, level: float = DEFAULT_LEVEL) -> float:
    """Return the chance that the crosstab's odds-ratio interval excludes 1 with ``respondents`` answering both.

    The crosstab's interval is [odds(c1_low)/odds(c0_high), odds(c1_high)/odds(c0_low)] from the
    guaranteed intervals of c1 = P(B | A) and c0 = P(B | not A) at level 1 − α/2
    (survey.core.crosstab_bounds). Approximated: each end's distance from its estimate is taken
    as fixed, namely the distance of the interval computed from the expected tallies at n
    (rounded to a whole number) from the truth; the estimates ĉ1, ĉ0 are taken as normal around
    the truth with the covariance of the debiased cells (log_odds_ratio_variance's), and the
    delta method carries them to the log of each end. The power is P(log low > 0) + P(log high < 0).
    """
    if not respondents > 0:
        raise ValueError(f"the respondents must be more than 0, got {respondents!r}")
    key = _odds_key(question_a, question_b, share_a, share_b_without_a, odds_ratio, level)
    return _odds_power(*key, max(1, round(respondents)))


def _odds_key(question_a: dict, question_b: dict, share_a: float, share_b_without_a: float, odds_ratio: float,
              level: float) -> tuple:
    """Return the hashable parameters of an odds-ratio plan, checking the questions, population and level."""
    for question in (question_a, question_b):
        if question["kind"] != "yes_no":
            raise ValueError(f"odds ratios need two yes/no questions; {question['id']!r} is {question['kind']}")
    odds_ratio_cells(share_a, share_b_without_a, odds_ratio)
    z_value(level)
    (p_a, q_a), (p_b, q_b) = response_probabilities(question_a), response_probabilities(question_b)
    return (float(p_a), float(q_a), float(p_b), float(q_b), float(share_a), float(share_b_without_a),
            float(odds_ratio), float(level))


@functools.lru_cache(maxsize=4096)
def _odds_power(p_a, q_a, p_b, q_b, share_a, share_b_without_a, odds_ratio, level, n: int) -> float:
    """Return odds_ratio_power for the parameters of _odds_key at a whole n (cached: bisection asks again)."""
    pi = odds_ratio_cells(share_a, share_b_without_a, odds_ratio)
    truth = np.array([pi[3] / (pi[2] + pi[3]), pi[1] / (pi[0] + pi[1])])
    low, high = _expected_share_intervals(p_a, q_a, p_b, q_b, pi, n, level, truth)
    covariance = _share_covariance(p_a, q_a, p_b, q_b, pi) / n
    # The interval's log ends: logit(ĉ1 − d) − logit(ĉ0 + d') and logit(ĉ1 + d) − logit(ĉ0 − d').
    below = _chance_positive(low[0] - truth[0], high[1] - truth[1], truth, covariance)
    above = _chance_positive(low[1] - truth[1], high[0] - truth[0], truth[::-1], covariance[::-1, ::-1])
    return below + above


def _expected_share_intervals(p_a, q_a, p_b, q_b, pi, n: int, level: float, truth):
    """Return (lows, highs) of c1 = P(B | A) and c0 = P(B | not A) computed from the expected tallies of n respondents."""
    randomize = np.kron(_report_matrix({"p": p_a, "q": q_a}), _report_matrix({"p": p_b, "q": q_b}))
    reported = randomize @ pi
    bits = np.array([0.0, 0.0, 1.0, 1.0]), np.array([0.0, 1.0, 0.0, 1.0])
    factor_a, factor_b = ((bits[0] - q_a) / (p_a - q_a))[:, None], ((bits[1] - q_b) / (p_b - q_b))[:, None]
    ranges = ((0 - q_a) / (p_a - q_a), (1 - q_a) / (p_a - q_a)), ((0 - q_b) / (p_b - q_b), (1 - q_b) / (p_b - q_b))
    cells = bounds.Cells(factor_a, factor_b, n * reported, *ranges, [(True, True), (False, True)], n=n)
    (low, high, _), _ = bounds.conditional_hulls(cells, bounds.odds_level(level), truth)
    return low, high


def _share_covariance(p_a, q_a, p_b, q_b, pi) -> np.ndarray:
    """Return n·Cov of (ĉ1, ĉ0), the shares of B among A and among not A, by the delta method on the debiased cells."""
    randomize = np.kron(_report_matrix({"p": p_a, "q": q_a}), _report_matrix({"p": p_b, "q": q_b}))
    reported = randomize @ pi
    inverse = np.linalg.inv(randomize)
    cells = inverse @ (np.diag(reported) - np.outer(reported, reported)) @ inverse.T
    with_a, without_a = pi[2] + pi[3], pi[0] + pi[1]
    gradient = np.array([[0.0, 0.0, -pi[3] / with_a ** 2, pi[2] / with_a ** 2],
                         [-pi[1] / without_a ** 2, pi[0] / without_a ** 2, 0.0, 0.0]])
    return gradient @ cells @ gradient.T


def _chance_positive(shift_first: float, shift_second: float, truth, covariance) -> float:
    """Return P(logit(x̂ + s1) − logit(ŷ + s2) > 0), (x̂, ŷ) normal around ``truth`` with ``covariance`` (delta method)."""
    x, y = truth[0] + shift_first, truth[1] + shift_second
    if not (0 < x < 1 and 0 < y < 1):
        return 0.0
    mean = math.log(x / (1 - x)) - math.log(y / (1 - y))
    gradient = np.array([1 / (x * (1 - x)), -1 / (y * (1 - y))])
    spread = math.sqrt(max(float(gradient @ covariance @ gradient), 0.0))
    if spread == 0:
        return float(mean > 0)
    return float(norm.cdf(mean / spread))


def pair_share(design: dict) -> float:
    """Return the share of respondents who answer a given pair of questions: 1 under split, m(m−1)/(k(k−1)) under sample."""
    if design.get("allocation") != "sample":
        return 1.0
    k, m = len(design["questions"]), int(design["sample"])
    return m * (m - 1) / (k * (k - 1))


def _bit_probabilities(question: dict) -> tuple[float, float]:
    """Return (p, q) of a question whose every indicator is reported as a bit; a number's is not planned."""
    if question["kind"] == "number":
        raise ValueError(f"the share of a number question's answers within another's is not planned; "
                         f"{question['id']!r} is a number")
    return response_probabilities(question)


def conditional_share_variance(question_a: dict, question_b: dict, cells) -> float:
    """Return n·Var of the crosstab's share of B's indicator among A's, P(I_B | I_A), for true cells (π00, π01, π10, π11).

    The cells are those of (I_A, I_B) in the order 00, 01, 10, 11. Each report is a bit with
    P(R = 1) = q + Δ·I, so the covariance of (R_A R_B, R_A, R_B) is exact from the cells, and
    crosstab's own linear map and quotient rule give the rest (crosstab.estimator_map).
    """
    from .crosstab import estimator_map

    (p_a, q_a), (p_b, q_b) = _bit_probabilities(question_a), _bit_probabilities(question_b)
    pi = np.asarray(cells, dtype=float)
    if pi.shape != (4,) or (pi < 0).any() or not math.isclose(pi.sum(), 1.0, abs_tol=1e-9):
        raise ValueError(f"the cells must be 4 shares summing to 1, got {list(pi)}")
    share_a, share_b, both = pi[2] + pi[3], pi[1] + pi[3], pi[3]
    if share_a <= 0:
        raise ValueError("the share with A's indicator must be positive")
    bit_a, bit_b = np.array([q_a, p_a]), np.array([q_b, p_b])
    x = float(np.outer(bit_a, bit_b).ravel() @ pi)
    y, z = q_a + (p_a - q_a) * share_a, q_b + (p_b - q_b) * share_b
    moments = np.array([[x * (1 - x), x * (1 - y), x * (1 - z)],
                        [x * (1 - y), y * (1 - y), x - y * z],
                        [x * (1 - z), x - y * z, z * (1 - z)]])
    jacobian, _ = estimator_map(p_a, q_a, p_b, q_b)
    gradient = np.array([-both / share_a ** 2, 0.0, 1 / share_a])
    return float(gradient @ jacobian @ moments @ jacobian.T @ gradient)


def worst_conditional_share_variance(question_a: dict, question_b: dict, share_a: float, *, steps: int = 50) -> float:
    """Return the largest conditional_share_variance when a ``share_a`` has A's indicator, over B's shares.

    The maximum is over P(I_B | I_A) and P(I_B | not I_A) on a grid of ``steps`` + 1 values each in [0, 1].
    """
    if not 0 < share_a <= 1:
        raise ValueError(f"the share with A's indicator must be in (0, 1], got {share_a!r}")
    grid = np.linspace(0.0, 1.0, steps + 1)
    return max(conditional_share_variance(question_a, question_b, [(1 - share_a) * (1 - other), (1 - share_a) * other,
                                                                  share_a * (1 - within), share_a * within])
               for within in grid for other in grid)
