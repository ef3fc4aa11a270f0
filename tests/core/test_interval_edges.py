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

import pytest

from survey.core import codec
from survey.core.aggregate import aggregate, rows_to_csv, rows_to_json, rows_to_table
from survey.core.crosstab import check_pair, crosstab, crosstab_to_csv, crosstab_to_json, crosstab_to_table
from survey.core.definition import MAX_EPSILON, parse_definition_toml
from survey.core.design import build_design
from survey.core.mechanisms import BITS, INDEX, LEVEL, mechanism_for
from survey.core.modelling import fit_reports
from survey.core.regression_text import regression_to_csv, regression_to_json, regression_to_table

from test_privacy_rounding import SURVEY

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
    for term in fit.terms:
        width = term.ci_high - term.ci_low
        assert math.isnan(width) or width > 1e-6 * max(1.0, abs(term.estimate)), term
    assert any("no spread" in warning for warning in fit.warnings), fit.warnings
    for text in (regression_to_csv(fit), repr(regression_to_json(fit)), regression_to_table(fit)):
        assert not NOT_A_NUMBER.search(text), text


def test_a_mean_on_a_number_covariate_that_the_reports_fit_exactly_gives_no_point_interval():
    """Two report patterns, (lowest, lowest) and (highest, highest), lie on a line: no spread to read.

    Before: the slope on the number covariate at ε = 0.6 came out as 25.11377 ± 5e-7, a point.
    """
    questions = {question["id"]: question for question in _design(0.6)["questions"]}
    chosen = [questions["n_duchi"], questions["n_piecewise"]]
    reports = [[_report(question, False), _report(question, True)] for question in chosen]
    fit = fit_reports(chosen, reports, [20, 20])
    for term in fit.terms:
        width = term.ci_high - term.ci_low
        assert math.isnan(width) or width > 1e-6 * max(1.0, abs(term.estimate)), term
    assert any("no spread" in warning for warning in fit.warnings), fit.warnings
    for text in (regression_to_csv(fit), repr(regression_to_json(fit)), regression_to_table(fit)):
        assert not NOT_A_NUMBER.search(text), text
