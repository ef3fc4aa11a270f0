"""Estimates in plain words (survey.core.readout): one sentence per row, figures rounded honestly, places on the axis."""

from __future__ import annotations

import math

import pytest

from survey.core.aggregate import AggregateRow
from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.core.mechanisms import mechanism_for
from survey.core.readout import axis_range, line, readouts
from survey.core.words import format_epsilon

YES_NO = {"id": "smoker", "kind": "yes_no", "text": "Do you smoke?"}
CHOICE = {"id": "trip", "kind": "choice", "text": "Why travel?", "options": ["Business", "Leisure"]}
MULTI = {"id": "sport", "kind": "multi", "text": "Which sports?", "options": ["swimming", "running"]}
NUMBER = {"id": "age", "kind": "number", "text": "How old are you?", "min": 18, "max": 90}


def row(question, option, estimate, low, high, n=500, level=0.95):
    return AggregateRow(question=question["id"], option=option, kind=question["kind"], mechanism="", epsilon=1.0,
                        n=n, noisy_share=0.5, estimate=estimate, std_error=0.02, ci_low=low, ci_high=high,
                        ci_level=level)


def test_a_yes_no_share_reads_as_a_sentence_in_whole_percents():
    said = line(YES_NO, row(YES_NO, "yes", 0.2512, 0.2104, 0.2896))
    assert said.sentence == ("Between 21% and 29% of respondents answered yes to “Do you smoke?” (95% confidence); "
                             "the best single estimate is 25%.")
    assert (said.label, said.estimate_text, said.interval_text) == ("yes", "25%", "21% to 29%")
    assert said.estimate_at == pytest.approx(25.12) and said.low_at == pytest.approx(21.04) and not said.outside


def test_choice_and_multi_options_say_their_intervals_hold_together():
    chose = line(CHOICE, row(CHOICE, "Business", 0.16, 0.12, 0.20, level=0.9))
    assert chose.sentence == ("Between 12% and 20% of respondents chose “Business” (90% confidence, holding for all "
                              "options at once); the best single estimate is 16%.")
    ticked = line(MULTI, row(MULTI, "running", 0.4, 0.3, 0.5))
    assert ticked.sentence.startswith("Between 30% and 50% of respondents ticked “running” (95% confidence, holding")


def test_a_narrow_interval_gets_a_decimal_and_ends_never_read_the_same():
    assert line(YES_NO, row(YES_NO, "yes", 0.2512, 0.2391, 0.2633)).interval_text == "23.9% to 26.3%"
    assert line(YES_NO, row(YES_NO, "yes", 0.25012, 0.25001, 0.25023)).interval_text == "25.00% to 25.02%"


def test_a_number_is_a_mean_to_two_significant_digits_of_its_interval():
    said = line(NUMBER, row(NUMBER, "", 36.04, 34.12, 37.93))
    assert said.sentence == ("The mean answer to “How old are you?” is between 34.1 and 37.9 (95% confidence); "
                             "the best single estimate is 36.0.")
    assert said.label == "mean" and said.estimate_at == pytest.approx((36.04 - 18) / 72 * 100)
    assert line(NUMBER, row(NUMBER, "", 45.1, 27.3, 63.0)).interval_text == "27 to 63"


def test_an_estimate_past_the_possible_range_is_explained_and_sits_at_the_edge():
    below = line(CHOICE, row(CHOICE, "Leisure", -0.013, 0.0, 0.25))
    assert "the best single estimate is -1%. That estimate is below 0%, which no true answer can be" in below.sentence
    assert below.outside == "below" and below.estimate_at == 0.0
    above = line(NUMBER, row(NUMBER, "", 93.2, 80.0, 90.0))
    assert above.outside == "above" and above.estimate_at == 100.0 and "above 90," in above.sentence
    assert line(YES_NO, row(YES_NO, "yes", -0.0004, 0.0, 0.04)).estimate_text == "0.0%", "never -0"


@pytest.mark.parametrize("estimate", [None, math.nan])
def test_no_estimate_says_why(estimate):
    nobody = line(YES_NO, row(YES_NO, "yes", estimate, math.nan, math.nan, n=0))
    assert nobody.sentence == "No estimate: nobody has answered this question yet."
    assert nobody.estimate_at is None and nobody.estimate_text == "–"


def test_readouts_name_the_mechanism_in_words_and_the_axis_ends(smoking_toml):
    design = build_design(parse_definition_toml(smoking_toml.read_text(encoding="utf-8"), source="smoking.toml"))
    questions = {question["id"]: question for question in design["questions"]}
    rows = [row(questions["smoker"], "yes", 0.3, 0.2, 0.4, n=80), row(questions["age"], "", 40.0, 35.0, 45.0, n=80)]
    smoker, lung, cigarettes, age = readouts(design, rows)
    assert smoker.method == mechanism_for(questions["smoker"]).list_title == "randomized response"
    assert smoker.n == 80 and smoker.epsilon == format_epsilon(questions["smoker"]["epsilon"])
    assert smoker.axis == ("0%", "100%") and age.axis == ("18", "90") and len(age.lines) == 1
    assert age.method == mechanism_for(questions["age"]).list_title and lung.lines == cigarettes.lines == ()
    assert axis_range(NUMBER) == (18.0, 90.0) and axis_range(YES_NO) == (0.0, 1.0)
