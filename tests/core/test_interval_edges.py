"""Every interval the product offers, driven at the edges: n = 0, 1, 2 and many; every report identical
(all at the lowest, all at the highest); ε at the smallest and largest a survey allows.

An interval never shrinks to a point, never comes out NaN/inf in CSV, JSON or the terminal table, and
lies inside the parameter's range, unless the output says in plain words that it is not valid there.
The aggregate rows (fixed, anytime, posterior; consistent views of a choice), the crosstab
measures (joint and conditional shares, odds ratios, conditional means) and the models of a
number's mean are checked here; their coverage at small n is checked by the seeded simulations
of their own test files.
"""

from __future__ import annotations

import itertools
import math
import re
from statistics import NormalDist

import numpy as np
import pytest

from survey.core import codec
from survey.core.aggregate import aggregate, rows_to_csv, rows_to_json, rows_to_table
from survey.core.crosstab import check_pair, crosstab, crosstab_to_csv, crosstab_to_json, crosstab_to_table
from survey.core.definition import MAX_EPSILON, parse_definition_toml
from survey.core.design import build_design
from survey.core.mechanisms import BITS, INDEX, LEVEL, mechanism_for
from survey.core.modelling import fit_reports
from survey.core.regression_text import regression_to_csv, regression_to_json, regression_to_table
from survey.core.weighted_rows import weighted_files
from survey.core.weighted_text import weighted_to_table
from survey.core.weighting import Weighting

from test_privacy_rounding import SURVEY
from test_weighting import _files

NOT_A_NUMBER = re.compile(r"\b(nan|inf|infinity)\b", re.IGNORECASE)
# Ten questions at ε = 0.6 give each 0.06; at MAX_EPSILON each gets 2, the most a survey of ten allows.
EPSILONS = (0.6, MAX_EPSILON)


def _design(epsilon: float, options: int = 6) -> dict:
    many = ", ".join(f'"o{i}"' for i in range(options))
    return build_design(parse_definition_toml(SURVEY.format(epsilon=epsilon, many=many, extra="")))


def _report(question: dict, high: bool):
    """Return the lowest or the highest report a question's mechanism can send (an edge of its domain)."""
    mechanism = mechanism_for(question)
    if mechanism.report == BITS:
        return [int(high)] * mechanism.estimands
    if mechanism.report in (INDEX, LEVEL):
        return mechanism.highest if high else 0
    return int(high)


def _range(question: dict) -> tuple[float, float]:
    return (question["min"], question["max"]) if question["kind"] == "number" else (0.0, 1.0)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_aggregate_intervals_at_the_edges(epsilon):
    design = _design(epsilon)
    questions = {question["id"]: question for question in design["questions"]}
    wrong = []
    for n, high, kind in itertools.product((0, 1, 2), (False, True), ("fixed", "anytime", "posterior")):
        answers = [{qid: _report(question, high) for qid, question in questions.items()}] * n
        rows = aggregate(design, answers, intervals=kind)
        for row in rows:
            low, top = _range(questions[row.question])
            where = f"{kind} {row.question}/{row.option} n={n} high={high}"
            if not (math.isfinite(row.ci_low) and math.isfinite(row.ci_high)):
                wrong.append(f"{where}: [{row.ci_low}, {row.ci_high}]")
            elif not low <= row.ci_low < row.ci_high <= top:
                wrong.append(f"{where}: [{row.ci_low}, {row.ci_high}] in [{low}, {top}]")
            if row.consistent_low is not None and not 0 <= row.consistent_low < row.consistent_high <= 1:
                wrong.append(f"{where}: consistent [{row.consistent_low}, {row.consistent_high}]")
        for text in (rows_to_csv(rows), repr(rows_to_json(rows)), rows_to_table(rows)):
            if NOT_A_NUMBER.search(text):
                wrong.append(f"{kind} n={n} high={high}: {NOT_A_NUMBER.search(text).group()} in an output")
    assert not wrong, wrong


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_crosstab_intervals_at_the_edges(epsilon):
    design = _design(epsilon, options=3)
    wrong = []
    for qa, qb in itertools.permutations(design["questions"], 2):
        try:
            check_pair(qa, qb)
        except ValueError:
            continue
        for n, (high_a, high_b) in itertools.product((0, 1, 2), ((False, False), (True, True), (True, False))):
            words_a = codec.encode_column(qa, [_report(qa, high_a)] * n) if n else []
            words_b = codec.encode_column(qb, [_report(qb, high_b)] * n) if n else []
            table = crosstab(qa, qb, words_a, words_b)
            for row in table.rows:
                where = f"{qa['id']} x {qb['id']} {row.measure} n={n}"
                if row.ci_low is None:
                    if not row.note:
                        wrong.append(f"{where}: no interval and no note")
                    continue
                high = math.inf if row.ci_high is None else row.ci_high
                if not (math.isfinite(row.ci_low) and row.ci_low < high):
                    wrong.append(f"{where}: [{row.ci_low}, {row.ci_high}]")
                if row.measure in ("joint", "b_given_a") and not 0 <= row.ci_low < high <= 1:
                    wrong.append(f"{where}: [{row.ci_low}, {row.ci_high}] outside [0, 1]")
                if row.measure == "mean_given_a" and not qb["min"] <= row.ci_low < high <= qb["max"]:
                    wrong.append(f"{where}: [{row.ci_low}, {row.ci_high}] outside [{qb['min']}, {qb['max']}]")
            for text in (crosstab_to_csv(table), repr(crosstab_to_json(table)), crosstab_to_table(table)):
                if NOT_A_NUMBER.search(text):
                    wrong.append(f"{qa['id']} x {qb['id']} n={n}: {NOT_A_NUMBER.search(text).group()} in an output")
    assert not wrong, wrong


@pytest.mark.parametrize("outcome", ["n_piecewise", "n_duchi"])
@pytest.mark.parametrize("covariate", ["two", "yes"])
def test_a_mean_model_whose_reports_show_no_spread_gives_no_point_interval(outcome, covariate):
    """Every response sent the same reports: the sandwich has no spread to read, so it gives no interval and says so.

    Before: at ε = 20 forty identical reports gave standard errors of 0 and intervals such as
    [128, 128] and [30.2, 30.2] with only "nearly unidentified" as a warning.
    """
    questions = {question["id"]: question for question in _design(MAX_EPSILON)["questions"]}
    chosen = [questions[outcome], questions[covariate]]
    fit = fit_reports(chosen, [[_report(question, True)] for question in chosen], [40])
    _assert_no_point_interval_and_says_why(fit)


def test_a_mean_on_a_number_covariate_that_the_reports_fit_exactly_gives_no_point_interval():
    """Two report patterns, (lowest, lowest) and (highest, highest), lie on a line: no spread to read.

    Before: the slope on the number covariate at ε = 0.6 came out as 25.11377 ± 5e-7, a point.
    """
    questions = {question["id"]: question for question in _design(0.6)["questions"]}
    chosen = [questions["n_duchi"], questions["n_piecewise"]]
    reports = [[_report(question, False), _report(question, True)] for question in chosen]
    fit = fit_reports(chosen, reports, [20, 20])
    _assert_no_point_interval_and_says_why(fit)


def _assert_no_point_interval_and_says_why(fit):
    """Every term's interval is absent (NaN) or wider than a point, a warning names the missing spread, and no
    output (CSV, JSON, table) prints NaN or infinity."""
    for term in fit.terms:
        width = term.ci_high - term.ci_low
        assert math.isnan(width) or width > 1e-6 * max(1.0, abs(term.estimate)), term
    assert any("no spread" in warning for warning in fit.warnings), fit.warnings
    for text in (regression_to_csv(fit), repr(regression_to_json(fit)), regression_to_table(fit)):
        assert not NOT_A_NUMBER.search(text), text


def _weighted(reports: list[int], weights: list[float]):
    book, header, rows = _files({"drug": [str(report) for report in reports]}, [repr(w) for w in weights])
    _, (row,), _, _ = weighted_files(book, header, rows, column="w", level=0.95)
    return row


@pytest.mark.parametrize("reports", [[1] * 5, [0] * 5, [1, 1], [1] * 40])
def test_weighted_identical_reports_give_the_whole_range_not_a_point(reports):
    """Before: five reports of 1 under Warner's (3/4, 1/4) gave the weighted share 1.5 ± 0 and the interval [1, 1]."""
    row = _weighted(reports, [1.0 + index % 3 for index in range(len(reports))])
    assert row.std_error is None and (row.ci_low, row.ci_high) == (0.0, 1.0), row
    table = weighted_to_table((Weighting("w", rows=len(reports)), [row]))
    assert "whole possible range" in table and not NOT_A_NUMBER.search(table)


def test_weighted_intervals_are_never_points_and_cover_whenever_the_clipped_wald_interval_did():
    """Seeded: 400 small weighted samples near the edge (θ = 0.9, n = 12, Warner's 3/4): no interval is a point,
    and each new interval holds the true share whenever the old clipped estimate ± z·SE did, so the coverage
    (printed) never falls. The old rule gave points in some repetitions (the test checks it still would)."""
    rng = np.random.default_rng(20261127)
    theta, n, repetitions = 0.9, 12, 400
    weights = [1.0 + index % 3 for index in range(n)]
    z = NormalDist().inv_cdf(0.975)
    old_points = old_covered = new_covered = 0
    for _ in range(repetitions):
        truth = rng.random(n) < theta
        reports = np.where(rng.random(n) < 0.75, truth, ~truth).astype(int).tolist()
        row = _weighted(reports, weights)
        assert row.ci_high - row.ci_low > 1e-9, row
        error = row.std_error or 0.0
        old = (min(max(row.estimate - z * error, 0.0), 1.0), min(max(row.estimate + z * error, 0.0), 1.0))
        old_points += old[1] - old[0] <= 1e-12
        covers_old, covers_new = old[0] <= theta <= old[1], row.ci_low <= theta <= row.ci_high
        assert covers_new or not covers_old, (row, old)
        old_covered += covers_old
        new_covered += covers_new
    print(f"weighted coverage at θ = {theta}, n = {n}: {new_covered / repetitions:.3f} "
          f"(clipped Wald: {old_covered / repetitions:.3f}, {old_points} point intervals)")
    assert old_points > 0 and new_covered > old_covered
