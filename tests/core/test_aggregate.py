"""Aggregation: exact rows of a hand-made design, byte-exact CSV, JSON, table, errors, end to end."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import binomtest

from survey.core import mechanisms as mech
from survey.core.aggregate import (CSV_HEADER, AggregateRow, aggregate, count_reports, format_decimal, rows_to_csv,
                              rows_to_json, rows_to_table)
from survey.core.definition import load_definition
from survey.core.design import build_design, response_probabilities
from survey.core.consistent import consistent_view
from survey.core.estimators import debias_indicators
from survey.core.mechanisms.duchi import debias_duchi_mean
from survey.core.mechanisms.warner import debias_rr
from survey.resources import resource_dir

TWO53 = 2**53

# Thresholds with round probabilities: flip 1/4 (p - q = 1/2), GRR keep 1/2 of 3 (q = 1/4), OUE q = 1/4,
# so that every estimate below can be checked by hand.
TINY = {
    "slug": "tiny", "title": "Tiny", "description": "", "epsilon": 10.0, "epsilon_spent": 7 * math.log(3) + math.log(2),
    "allocation": "split", "threshold_bits": 53, "hash": "0" * 64,
    "questions": [
        {"id": "smoker", "kind": "yes_no", "text": "Do you smoke?", "weight": 1.0, "mechanism": "rr",
         "flip_threshold": TWO53 // 4, "epsilon": math.log(3)},
        {"id": "colour", "kind": "choice", "text": "Favourite colour?", "weight": 1.0,
         "options": ["red", "green", "blue"], "mechanism": "grr", "keep_threshold": TWO53 // 2,
         "epsilon": math.log(2)},
        {"id": "pets", "kind": "choice", "text": "Pet?", "weight": 1.0, "options": ["cat", "dog", "fish", "none"],
         "mechanism": "oue", "q_threshold": TWO53 // 4, "epsilon": math.log(3)},
        {"id": "sports", "kind": "multi", "text": "Sports?", "weight": 1.0, "options": ["run", "swim, bike"],
         "mechanism": "rr", "flip_threshold": TWO53 // 4, "epsilon_per_option": math.log(3),
         "epsilon": 2 * math.log(3)},
        {"id": "age", "kind": "number", "text": "Age?", "weight": 1.0, "min": 0, "max": 10, "mechanism": "duchi",
         "flip_threshold": TWO53 // 4, "epsilon": math.log(3)},
    ],
}

# The last answer skips "age", so age has n = 3 and every other question n = 4.
ANSWERS = [
    {"smoker": 1, "colour": 0, "pets": [1, 0, 0, 0], "sports": [1, 0], "age": 1},
    {"smoker": 1, "colour": 1, "pets": [1, 1, 0, 0], "sports": [1, 1], "age": 0},
    {"smoker": 0, "colour": 0, "pets": [0, 0, 1, 0], "sports": [0, 0], "age": 0},
    {"smoker": 1, "colour": 1, "pets": [1, 0, 0, 1], "sports": [1, 0]},
]

LN2, LN3 = math.log(2), math.log(3)


def row(question, option, kind, mechanism, epsilon, n, noisy_share, estimate, std_error, ci_low, ci_high,
        text, consistent=None, level=0.95):
    interval = (None, None) if consistent is None else (0.0, 1.0)
    return AggregateRow(question=question, option=option, kind=kind, mechanism=mechanism, epsilon=epsilon, n=n,
                        noisy_share=noisy_share, estimate=estimate, std_error=std_error, ci_low=ci_low,
                        ci_high=ci_high, ci_level=level, text=text, consistent=consistent,
                        consistent_low=interval[0], consistent_high=interval[1])


# By hand: estimate = (share - q)/(p - q); std_error = sqrt(s(1-s)/((n-1)(p-q)^2)) with s = share clipped to [q, p]
# (blue's share 0 is computed at s = q = 1/4: sqrt((3/16)/3)/(1/4) = 1, not a false 0; the share 3/4 of pets'
# cat, above p = 1/2, at s = 1/2: sqrt((1/4)/3)/(1/4) = 2/sqrt(3)); with n = 4 every
# Clopper-Pearson interval, mapped and clipped, is the whole feasible range, and so is every consistent interval.
# With n = 4 the consistent view is the iterative Bayesian update stopped by the discrepancy principle: for the
# colour counts [2, 2, 0] the maximum likelihood (1/2, 1/2, 0); for pets a shrunk (0.894, 0.035, 0.035, 0.035).
PETS_CONSISTENT = (0.8937233565030775, 0.03542554783230741)
EXPECTED = [
    row("smoker", "yes", "yes_no", "rr", LN3, 4, 0.75, 1.0, 0.5, 0.0, 1.0, "Do you smoke?"),
    row("colour", "red", "choice", "grr", LN2, 4, 0.5, 1.0, math.sqrt(4 / 3), 0.0, 1.0, "Favourite colour?", 0.5),
    row("colour", "green", "choice", "grr", LN2, 4, 0.5, 1.0, math.sqrt(4 / 3), 0.0, 1.0, "Favourite colour?", 0.5),
    row("colour", "blue", "choice", "grr", LN2, 4, 0.0, -1.0, 1.0, 0.0, 1.0, "Favourite colour?", 0.0),
    row("pets", "cat", "choice", "oue", LN3, 4, 0.75, 2.0, math.sqrt(4 / 3), 0.0, 1.0, "Pet?", PETS_CONSISTENT[0]),
    row("pets", "dog", "choice", "oue", LN3, 4, 0.25, 0.0, 1.0, 0.0, 1.0, "Pet?", PETS_CONSISTENT[1]),
    row("pets", "fish", "choice", "oue", LN3, 4, 0.25, 0.0, 1.0, 0.0, 1.0, "Pet?", PETS_CONSISTENT[1]),
    row("pets", "none", "choice", "oue", LN3, 4, 0.25, 0.0, 1.0, 0.0, 1.0, "Pet?", PETS_CONSISTENT[1]),
    row("sports", "run", "multi", "rr", 2 * LN3, 4, 0.75, 1.0, 0.5, 0.0, 1.0, "Sports?"),
    row("sports", "swim, bike", "multi", "rr", 2 * LN3, 4, 0.25, 0.0, 0.5, 0.0, 1.0, "Sports?"),
    row("age", "", "number", "duchi", LN3, 3, 1 / 3, 10 / 6, 10 * math.sqrt((2 / 9) / (2 * 0.25)), 0.0, 10.0, "Age?"),
]

EXPECTED_CSV = (
    "question,option,kind,mechanism,epsilon,n,noisy_share,estimate,std_error,ci_low,ci_high,ci_level,ci_kind,ci_planned,consistent,consistent_low,consistent_high\r\n"
    "smoker,yes,yes_no,rr,1.0986122886681098,4,0.750000,1.000000,0.500000,0.000000,1.000000,0.95,fixed,,,,\r\n"
    "colour,red,choice,grr,0.6931471805599453,4,0.500000,1.000000,1.154701,0.000000,1.000000,0.95,fixed,,0.500000,0.000000,1.000000\r\n"
    "colour,green,choice,grr,0.6931471805599453,4,0.500000,1.000000,1.154701,0.000000,1.000000,0.95,fixed,,0.500000,0.000000,1.000000\r\n"
    "colour,blue,choice,grr,0.6931471805599453,4,0.000000,-1.000000,1.000000,0.000000,1.000000,0.95,fixed,,0.000000,0.000000,1.000000\r\n"
    "pets,cat,choice,oue,1.0986122886681098,4,0.750000,2.000000,1.154701,0.000000,1.000000,0.95,fixed,,0.893723,0.000000,1.000000\r\n"
    "pets,dog,choice,oue,1.0986122886681098,4,0.250000,0.000000,1.000000,0.000000,1.000000,0.95,fixed,,0.035426,0.000000,1.000000\r\n"
    "pets,fish,choice,oue,1.0986122886681098,4,0.250000,0.000000,1.000000,0.000000,1.000000,0.95,fixed,,0.035426,0.000000,1.000000\r\n"
    "pets,none,choice,oue,1.0986122886681098,4,0.250000,0.000000,1.000000,0.000000,1.000000,0.95,fixed,,0.035426,0.000000,1.000000\r\n"
    "sports,run,multi,rr,2.1972245773362196,4,0.750000,1.000000,0.500000,0.000000,1.000000,0.95,fixed,,,,\r\n"
    "sports,\"swim, bike\",multi,rr,2.1972245773362196,4,0.250000,0.000000,0.500000,0.000000,1.000000,0.95,fixed,,,,\r\n"
    "age,,number,duchi,1.0986122886681098,3,0.333333,1.666667,6.666667,0.000000,10.000000,0.95,fixed,,,,\r\n"
)


def assert_rows_equal(actual, expected):
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        for name in ("question", "option", "kind", "mechanism", "n", "text"):
            assert getattr(got, name) == getattr(want, name), (want.question, want.option, name)
        for name in ("epsilon", "noisy_share", "estimate", "std_error", "ci_low", "ci_high", "ci_level",
                     "consistent", "consistent_low", "consistent_high"):
            want_value = getattr(want, name)
            expected_value = None if want_value is None else pytest.approx(want_value, abs=1e-9)
            assert getattr(got, name) == expected_value, (want.question, want.option, name)


def test_csv_header_is_the_published_one():
    assert CSV_HEADER == ["question", "option", "kind", "mechanism", "epsilon", "n", "noisy_share", "estimate",
                          "std_error", "ci_low", "ci_high", "ci_level", "ci_kind", "ci_planned", "consistent",
                          "consistent_low", "consistent_high"]


def test_aggregate_tiny_design_exact_rows():
    assert_rows_equal(aggregate(TINY, ANSWERS), EXPECTED)


def test_rows_to_csv_byte_for_byte():
    assert rows_to_csv(aggregate(TINY, ANSWERS)).encode("utf-8") == EXPECTED_CSV.encode("utf-8")


def test_aggregate_reads_answers_once_from_an_iterator():
    assert_rows_equal(aggregate(TINY, iter(ANSWERS)), EXPECTED)
    assert_rows_equal(aggregate(TINY, (answer for answer in ANSWERS)), EXPECTED)


def test_aggregate_intervals_are_mapped_clopper_pearson():
    """With 40 answers the intervals are informative; check each against scipy's exact interval."""
    rows = aggregate(TINY, ANSWERS * 10, level=0.9)
    questions = {q["id"]: q for q in TINY["questions"]}
    for r in rows:
        question = questions[r.question]
        p, q = response_probabilities(question)
        d = len(question["options"]) if r.kind in ("choice", "multi") else 1
        width = question["max"] - question["min"] if r.kind == "number" else 1
        ones = round(r.noisy_share * r.n)
        ci = binomtest(ones, r.n).proportion_ci(confidence_level=1 - 0.1 / d, method="exact")
        low, high = sorted(((ci.low - q) / (p - q), (ci.high - q) / (p - q)))
        # An interval wholly beyond an end is moved inside, keeping its width (never a point).
        span = min(high - low, 1.0)
        low, high = (1.0 - span if low >= 1 else low), (span if high <= 0 else high)
        low, high = min(max(low, 0.0), 1.0) * width, min(max(high, 0.0), 1.0) * width
        assert (r.ci_low, r.ci_high) == pytest.approx((low, high), abs=1e-9), (r.question, r.option)
        assert r.estimate == pytest.approx(((ones / r.n) - q) / (p - q) * width)
        assert r.ci_level == 0.9
    assert rows_to_csv(rows).splitlines()[1] == "smoker,yes,yes_no,rr,1.0986122886681098,40,0.750000,1.000000,0.138675,0.725880,1.000000,0.9,fixed,,,,"


def test_aggregate_without_answers_gives_empty_estimates_and_whole_ranges():
    rows = aggregate(TINY, [])
    assert [(r.question, r.option, r.n) for r in rows] == [(r.question, r.option, 0) for r in EXPECTED]
    assert all(r.estimate is None and r.std_error is None and r.noisy_share is None and r.consistent is None
               for r in rows)
    assert [(r.ci_low, r.ci_high) for r in rows] == [(0.0, 1.0)] * 10 + [(0.0, 10.0)]
    lines = rows_to_csv(rows).split("\r\n")
    assert lines[1] == "smoker,yes,yes_no,rr,1.0986122886681098,0,,,,0.000000,1.000000,0.95,fixed,,,,"
    assert lines[-2] == "age,,number,duchi,1.0986122886681098,0,,,,0.000000,10.000000,0.95,fixed,,,,"
    assert lines[-1] == ""


def test_aggregate_counts_n_per_question():
    counts = count_reports(TINY, ANSWERS + [{"smoker": 0}])
    assert counts["smoker"].n == 5 and counts["smoker"].ones.tolist() == [3]
    assert counts["colour"].n == 4 and counts["colour"].ones.tolist() == [2, 2, 0]
    assert counts["pets"].ones.tolist() == [3, 1, 1, 1]
    assert counts["sports"].ones.tolist() == [3, 1]
    assert counts["age"].n == 3 and counts["age"].ones.tolist() == [1]


@pytest.mark.parametrize("answer, message", [
    ({"smoker": 2}, r"reports to 'smoker' must be 0 or 1, got 2"),
    ({"smoker": True}, r"reports to 'smoker' must be 0 or 1, got True"),
    ({"smoker": 0.5}, r"reports to 'smoker' must be 0 or 1, got 0\.5"),
    ({"smoker": None}, r"reports to 'smoker' must be 0 or 1, got None"),
    ({"colour": 3}, r"reports to 'colour' must be an option index from 0 to 2, got 3"),
    ({"colour": -1}, r"reports to 'colour' must be an option index from 0 to 2, got -1"),
    ({"colour": [0, 1, 0]}, r"reports to 'colour' must be an option index from 0 to 2, got \[0, 1, 0\]"),
    ({"pets": [1, 0, 0]}, r"reports to 'pets' must be a list of 4 values, each 0 or 1, got \[1, 0, 0\]"),
    ({"pets": [1, 0, 2, 0]}, r"reports to 'pets' must be a list of 4 values, each 0 or 1, got \[1, 0, 2, 0\]"),
    ({"pets": [1, 0, True, 0]}, r"reports to 'pets' must be a list of 4 values, each 0 or 1, got \[1, 0, True, 0\]"),
    ({"pets": [1, 0, None, 0]}, r"reports to 'pets' must be a list of 4 values, each 0 or 1, got \[1, 0, None, 0\]"),
    ({"sports": [1, 0, 0]}, r"reports to 'sports' must be a list of 2 values, each 0 or 1, got \[1, 0, 0\]"),
    ({"colour": 2**70}, r"reports to 'colour' must be an option index from 0 to 2, got 1180591620717411303424"),
    ({"sports": 1}, r"reports to 'sports' must be a list of 2 values, each 0 or 1, got 1"),
    ({"age": "1"}, r"reports to 'age' must be 0 or 1, got '1'"),
])
def test_aggregate_rejects_reports_outside_the_domain(answer, message):
    with pytest.raises(ValueError, match=message):
        aggregate(TINY, ANSWERS + [answer])


@pytest.mark.parametrize("level", [0, 1, 1.5, "0.95", None, True])
def test_aggregate_rejects_bad_level(level):
    with pytest.raises(ValueError, match=r"level must be a number in \(0, 1\)"):
        aggregate(TINY, ANSWERS, level=level)


def test_format_decimal():
    assert format_decimal(4 / 7) == "0.571429"
    assert format_decimal(-1e-9) == "0.000000"
    assert format_decimal(-0.25) == "-0.250000"
    assert format_decimal(54.1116331) == "54.111633"
    assert format_decimal(None) == ""
    assert format_decimal(float("nan")) == ""


def test_rows_to_json_is_serialisable_with_none_for_missing():
    data = rows_to_json(aggregate(TINY, ANSWERS))
    assert list(data[0]) == CSV_HEADER[:12] + ["text", "consistent", "ci_kind", "ci_planned", "consistent_low",
                                                "consistent_high"]
    assert data[0] == {"question": "smoker", "option": "yes", "kind": "yes_no", "mechanism": "rr",
                       "epsilon": pytest.approx(LN3), "n": 4, "noisy_share": 0.75, "estimate": 1.0,
                       "std_error": 0.5, "ci_low": 0.0, "ci_high": 1.0, "ci_level": 0.95, "text": "Do you smoke?",
                       "consistent": None, "ci_kind": "fixed", "ci_planned": None, "consistent_low": None,
                       "consistent_high": None}
    assert data[1]["consistent"] == pytest.approx(0.5, abs=1e-9)
    assert (data[1]["consistent_low"], data[1]["consistent_high"]) == (0.0, 1.0)
    json.dumps(data, allow_nan=False)
    empty = rows_to_json(aggregate(TINY, []))
    assert empty[0]["estimate"] is None and empty[0]["std_error"] is None
    json.dumps(empty, allow_nan=False)


def test_rows_to_table_aligns_columns():
    table = rows_to_table(aggregate(TINY, ANSWERS))
    lines = table.splitlines()
    assert not table.endswith("\n")
    assert lines[0].startswith("95% Clopper-Pearson intervals")
    header, rule, body = lines[1], lines[2], lines[3:]
    assert header.split() == ["question", "option", "mechanism", "epsilon", "n", "noisy_share", "estimate",
                              "std_error", "ci_low", "ci_high", "consistent", "consistent_low", "consistent_high"]
    spans, start = [], 0
    for dashes in rule.split(" "):
        spans.append((start, start + len(dashes)))
        start += len(dashes) + 1
    cells = [[line[a:b].strip() for a, b in spans] for line in body]
    assert cells[0] == ["smoker", "yes", "rr", "1.09862", "4", "0.7500", "1.0000", "0.5000", "0.0000", "1.0000", "-",
                        "-", "-"]
    assert cells[3] == ["colour", "blue", "grr", "0.693148", "4", "0.0000", "-1.0000", "1.0000", "0.0000", "1.0000",
                        "0.0000", "0.0000", "1.0000"]
    assert cells[9][:2] == ["sports", "swim, bike"]
    assert cells[10][:2] == ["age", "mean"] and cells[10][-4:] == ["10.0000", "-", "-", "-"]
    assert len(body) == len(EXPECTED)


def test_aggregate_smoking_survey_end_to_end():
    """Simulate the example survey through the Python mirror; rows must match direct estimator calls."""
    design = build_design(load_definition(resource_dir("examples") / "smoking.toml"))
    rng = np.random.default_rng(7)
    n = 3000
    truth = {"smoker": (rng.random(n) < 0.3).astype(np.int64), "lung_disease": (rng.random(n) < 0.1).astype(np.int64),
             "cigarettes": rng.choice(5, size=n, p=[0.6, 0.15, 0.1, 0.1, 0.05]), "age": rng.integers(18, 91, size=n)}
    questions = {q["id"]: q for q in design["questions"]}
    reports = {qid: mech.randomize_question(questions[qid], values, rng) for qid, values in truth.items()}
    answers = [dict(zip(reports, values)) for values in zip(*(r.tolist() for r in reports.values()))]
    rows = aggregate(design, answers)
    assert [(r.question, r.option) for r in rows] == (
        [("smoker", "yes"), ("lung_disease", "yes")]
        + [("cigarettes", o) for o in questions["cigarettes"]["options"]] + [("age", "")])
    flip = questions["smoker"]["flip_threshold"] / TWO53
    smoker = debias_rr(int(reports["smoker"].sum()), n, flip=flip, level=0.95)
    assert rows[0] == AggregateRow(
        question="smoker", option="yes", kind="yes_no", mechanism="rr", epsilon=questions["smoker"]["epsilon"],
        n=n, noisy_share=smoker.noisy_share, estimate=smoker.estimate, std_error=smoker.std_error,
        ci_low=smoker.ci_low, ci_high=smoker.ci_high, ci_level=0.95, text=questions["smoker"]["text"])
    p, q = response_probabilities(questions["cigarettes"])
    assert questions["cigarettes"]["mechanism"] == "ss"
    counts = reports["cigarettes"].sum(axis=0).tolist()
    choice = debias_indicators(counts, n, p=p, q=q, level=0.95)
    assert [r.estimate for r in rows[2:7]] == [e.estimate for e in choice]
    assert [(r.ci_low, r.ci_high) for r in rows[2:7]] == [(e.ci_low, e.ci_high) for e in choice]
    view = consistent_view(counts, n, p=p, q=q, multinomial=False, lows=[e.ci_low for e in choice],
                           highs=[e.ci_high for e in choice])
    assert [r.consistent for r in rows[2:7]] == list(view.shares)
    assert [(r.consistent_low, r.consistent_high) for r in rows[2:7]] == list(zip(view.lows, view.highs))
    assert sum(r.consistent for r in rows[2:7]) == pytest.approx(1.0, abs=1e-12)
    assert all(r.consistent_low <= r.consistent <= r.consistent_high for r in rows[2:7])
    age = questions["age"]
    mean = debias_duchi_mean(int(reports["age"].sum()), n, flip=age["flip_threshold"] / TWO53, lo=18, hi=90,
                             level=0.95)
    assert (rows[7].estimate, rows[7].ci_low, rows[7].ci_high) == (mean.estimate, mean.ci_low, mean.ci_high)
    # The estimates track the simulated population within 5 standard errors of the exact variance.
    population = {"smoker": truth["smoker"].mean(), "lung_disease": truth["lung_disease"].mean(),
                  "age": truth["age"].mean(),
                  **{("cigarettes", v): np.mean(truth["cigarettes"] == v) for v in range(5)}}
    for r, key, (pr, qr), width, lo in [
        (rows[0], "smoker", (1 - flip, flip), 1, 0), (rows[1], "lung_disease", (1 - flip, flip), 1, 0),
        *[(rows[2 + v], ("cigarettes", v), (p, q), 1, 0) for v in range(5)],
        (rows[7], "age", response_probabilities(age), 72, 18)]:
        theta = (population[key] - lo) / width
        report_prob = qr + theta * (pr - qr)
        standard_error = width * math.sqrt(report_prob * (1 - report_prob) / (n * (pr - qr) ** 2))
        assert abs(r.estimate - population[key]) <= 5 * standard_error, (r.question, r.option)
