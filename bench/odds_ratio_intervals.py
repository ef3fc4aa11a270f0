"""Compare odds-ratio intervals that hold at every n, by simulation, at the planning test's setting.

Two yes/no questions at ε′ = 2 each (a survey of ε = 4, split), P(A) = 0.3, P(B | not A) = 0.2,
odds ratio 2.5. For each n given, REPS surveys (default 200) are drawn as the four report-pair
counts; each method's 95% interval is computed from them:

- ``box``: the four cells' bounded-mean intervals at 1 − α/4, [L00·L11/(U01·U10), U00·U11/(L01·L10)];
- ``cond``: P(B | A yes) and P(B | A no), each test-inverted at 1 − α/2 (the crosstab's interval);
- ``cond_swap``: the same conditioning on B instead of A (the odds ratio is symmetric).

It prints each method's power to exclude 1, the median width of the log interval, the median
lower end and the coverage, and the planner's power at n. Run by hand, in process, no server:
``PYTHONPATH=. python bench/odds_ratio_intervals.py [REPS] N...`` (about 3 s per 200 surveys and method).
"""
import math
import sys
import time

import numpy as np

from survey.core import crosstab_bounds as bounds
from survey.core.crosstab import odds_ratio_bounds
from survey.core.definition import parse_definition
from survey.core.design import build_design, response_probabilities
from survey.core.crosstab_planning import odds_ratio_cells, odds_ratio_power

POPULATION = {"share_a": 0.3, "share_b_without_a": 0.2, "odds_ratio": 2.5}
DEFINITION = {"slug": "or", "title": "OR", "epsilon": 4, "questions": [
    {"id": "a", "kind": "yes_no", "text": "A?"}, {"id": "b", "kind": "yes_no", "text": "B?"}]}
SIDES = [(True, True), (True, False), (False, True), (False, False)]


def setting():
    """Return the two design questions, their factors and ranges, and the report pairs' probabilities."""
    qa, qb = build_design(parse_definition(DEFINITION))["questions"]
    (pa, q_a), (pb, q_b) = response_probabilities(qa), response_probabilities(qb)
    matrix = np.kron(np.array([[1 - q_a, 1 - pa], [q_a, pa]]), np.array([[1 - q_b, 1 - pb], [q_b, pb]]))
    reported = matrix @ odds_ratio_cells(**POPULATION)
    bits = np.array([0, 0, 1, 1.0]), np.array([0, 1, 0, 1.0])
    factors = ((bits[0] - q_a) / (pa - q_a))[:, None], ((bits[1] - q_b) / (pb - q_b))[:, None]
    ranges = bounds.factor_range(qa, pa, q_a), bounds.factor_range(qb, pb, q_b)
    return qa, qb, factors, ranges, reported


def box(counts, factors, ranges, level):
    """Return the four-cell Bonferroni box interval."""
    cells = bounds.Cells(*factors, counts.astype(float), *ranges, SIDES)
    low, high, _ = bounds.clipped(*bounds.batched([cells.joint_request()], cells.n, 1 - (1 - level) / 4)[0])
    ends = {side: (float(cells.split(low)[side][0, 0]), float(cells.split(high)[side][0, 0])) for side in SIDES}
    (l00, u00), (l11, u11) = ends[False, False], ends[True, True]
    (l01, u01), (l10, u10) = ends[False, True], ends[True, False]
    return l00 * l11 / (u01 * u10), (u00 * u11 / (l01 * l10) if l01 > 0 and l10 > 0 else math.inf)


def conditional(counts, factors, ranges, level, swap=False):
    """Return the interval from the two conditional shares at 1 − α/2 (conditioning on B when ``swap``)."""
    if swap:
        factors, ranges = factors[::-1], ranges[::-1]  # each report pair's row keeps its count
    cells = bounds.Cells(*factors, counts.astype(float), *ranges, [(True, True), (False, True)])
    (low, high, _), _ = bounds.conditional_hulls(cells, bounds.odds_level(level), np.full(2, np.nan))
    ci_low, ci_high = odds_ratio_bounds((low[0], high[0]), (low[1], high[1]))
    return ci_low, math.inf if ci_high is None else ci_high


def main(argv):
    """Print each method's power, median log-width, median lower end and coverage at each n."""
    reps, sizes = int(argv[0]), [int(value) for value in argv[1:]]
    qa, qb, factors, ranges, reported = setting()
    methods = {"box": box, "cond": conditional, "cond_swap": lambda *args: conditional(*args, swap=True)}
    rng = np.random.default_rng(1)
    for n in sizes:
        draws = rng.multinomial(n, reported, size=reps)
        print(f"n = {n:,}: planned power {odds_ratio_power(qa, qb, respondents=n, **POPULATION):.3f}")
        for name, method in methods.items():
            start = time.time()
            ends = np.array([method(draw, factors, ranges, 0.95) for draw in draws])
            with np.errstate(divide="ignore"):
                widths = np.log(ends[:, 1]) - np.log(ends[:, 0])
            covered = np.mean((ends[:, 0] <= 2.5) & (2.5 <= ends[:, 1]))
            print(f"  {name:9s} power {np.mean(ends[:, 0] > 1):.3f}  median log-width {np.median(widths):.3f}  "
                  f"median low {np.median(ends[:, 0]):.3f}  coverage {covered:.3f}  ({time.time() - start:.1f} s)")


if __name__ == "__main__":
    main(sys.argv[1:] or ["200", "3000"])
