"""Plain-language protection notes built from the integer thresholds (survey/core/explain.py)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from survey.core.mechanisms.common import per_option_epsilon, rr_epsilon, rr_flip_threshold
from survey.core.mechanisms.grr import grr_keep_threshold
from survey.core.mechanisms.oue import oue_q_threshold
from survey.core.mechanisms.piecewise import piecewise_epsilon, piecewise_ratio
from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.core.explain import format_epsilon, percent, protection_note
from survey.core.words import percent_down, percent_up

TWO53 = 2**53

DEFINITION = """
slug = "notes"
title = "Notes"
epsilon = 4.0
[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"
[[questions]]
id = "colour"
kind = "choice"
text = "Favourite colour?"
options = ["red", "green", "blue", "other"]
[[questions]]
id = "country"
kind = "choice"
text = "Country?"
options = [""" + ", ".join(f'"c{i}"' for i in range(40)) + """]
[[questions]]
id = "sports"
kind = "multi"
text = "Sports you play?"
options = ["run", "swim", "cycle"]
[[questions]]
id = "age"
kind = "number"
text = "Age?"
min = 18
max = 90
"""


@pytest.fixture(scope="module")
def design():
    return build_design(parse_definition_toml(DEFINITION))


def _question(design, qid):
    return next(q for q in design["questions"] if q["id"] == qid)


@pytest.mark.parametrize("probability, text", [
    (Fraction(1, 2), "50%"),
    (Fraction(0), "0%"),
    (Fraction(1), "100%"),
    (Fraction(2, 3), "67%"),
    (Fraction(3, 1000), "0.3%"),
    (Fraction(999_999, 1_000_000), "99.9999%"),
    (Fraction(1, TWO53), "0.00000000000001%"),
    (1 - Fraction(1, TWO53), "99.99999999999999%"),
])
def test_percent_is_short_and_never_rounds_to_an_end_that_is_not_exact(probability, text):
    assert percent(probability) == text


def test_percent_rejects_a_non_probability():
    with pytest.raises(ValueError, match="probability must be in \\[0, 1\\], got 3/2"):
        percent(Fraction(3, 2))


@pytest.mark.parametrize("epsilon, text", [
    (0.5714285714285713, "0.572"), (2.0, "2"), (1.999999999999999, "2"), (0.0029, "0.0029"),
    (0.000123, "0.000123"), (0.0001231, "0.000124"), (12.34, "12.4"), (150.0, "150"),
])
def test_format_epsilon(epsilon, text):
    """ε rounds up at three significant digits (the stated guarantee is never below the bound)."""
    assert format_epsilon(epsilon) == text


def test_yes_no_note_matches_the_flip_threshold():
    threshold = rr_flip_threshold(epsilon=0.5714285714285714)
    question = {"id": "q", "kind": "yes_no", "mechanism": "rr", "flip_threshold": threshold,
                "epsilon": float(rr_epsilon(threshold))}
    assert protection_note(question) == \
        "Your real answer is sent with a chance of 64%. Otherwise, the opposite answer is sent (ε′ = 0.572)."


def test_grr_note_names_the_other_options(design):
    question = _question(design, "colour")
    assert question["mechanism"] == "grr"
    keep = percent_up(Fraction(question["keep_threshold"], TWO53))
    note = protection_note(question)
    assert note.startswith(f"Your real answer is sent with a chance of {keep}. Otherwise, one of the other 3 "
                           "options is sent, picked at random (ε′ = ")


def test_grr_note_with_two_options():
    threshold = grr_keep_threshold(epsilon=1, d=2)
    question = {"id": "q", "kind": "choice", "mechanism": "grr", "options": ["a", "b"],
                "keep_threshold": threshold, "epsilon": 1.0}
    assert "Otherwise, the other option is sent (ε′ = 1)" in protection_note(question)


def test_oue_note_describes_the_marks():
    question = {"id": "country", "kind": "choice", "mechanism": "oue", "options": [f"c{i}" for i in range(40)],
                "q_threshold": oue_q_threshold(epsilon=1), "epsilon": 1.0}
    q = percent_down(Fraction(question["q_threshold"], TWO53))
    note = protection_note(question)
    assert "for each of the 40 options" in note and "half of the time" in note and f"with a chance of {q} " in note


def test_subset_note_names_the_group_size(design):
    question = _question(design, "country")
    assert question["mechanism"] == "ss"
    keep = percent_up(Fraction(question["keep_threshold"], TWO53))
    note = protection_note(question)
    assert f"a group of {question['subset_size']} of the 40 options" in note
    assert f"in the group with a chance of {keep}." in note


def test_sampled_multi_note_says_one_option_is_sent(design):
    question = _question(design, "sports")
    assert question["mechanism"] == "sampled"
    keep = percent_up(1 - Fraction(question["flip_threshold"], TWO53))
    note = protection_note(question)
    assert note.startswith("Your device picks one of the 3 options at random, whatever you ticked")
    assert f"sent as it is with a chance of {keep}. Otherwise, the opposite is sent " \
           f"(ε′ = {format_epsilon(question['epsilon'])})" in note


def test_multi_note_gives_per_option_and_total_epsilon():
    epsilon = per_option_epsilon(6, 3)
    question = {"id": "sports", "kind": "multi", "mechanism": "rr", "options": ["a", "b", "c"],
                "flip_threshold": rr_flip_threshold(epsilon=epsilon), "epsilon": 6.0,
                "epsilon_per_option": float(epsilon)}
    keep = percent_up(1 - Fraction(question["flip_threshold"], TWO53))
    note = protection_note(question)
    assert note.startswith(f"For each of the 3 options, your tick or blank is sent as it is with a chance of {keep}.")
    assert f"ε′ = {format_epsilon(question['epsilon_per_option'])} per option, " \
           f"{format_epsilon(question['epsilon'])} in total" in note


def test_number_note_names_the_range():
    threshold = rr_flip_threshold(epsilon=0.5)
    question = {"id": "age", "kind": "number", "mechanism": "duchi", "min": 18, "max": 90,
                "flip_threshold": threshold, "epsilon": float(rr_epsilon(threshold))}
    keep = percent_up(1 - Fraction(question["flip_threshold"], TWO53))
    note = protection_note(question)
    assert note.startswith("Your number is first moved at random to the low end or the high end of 18–90.")
    assert f"Then this end is sent with a chance of {keep}." in note


def test_piecewise_number_note_gives_the_band_probability():
    a, b = piecewise_ratio(epsilon=4)
    question = {"id": "income", "kind": "number", "mechanism": "piecewise", "min": 0, "max": 250,
                "ratio_a": a, "ratio_b": b, "bins": a + b, "epsilon": float(piecewise_epsilon(a, b))}
    note = protection_note(question)
    assert note == (f"Your number is swapped for one of {a + b} points spread a bit beyond 0–250. This point is "
                    f"in a narrow band around your number with a chance of {percent_up(Fraction(a, a + b))}. "
                    "Otherwise, it is anywhere else (ε′ = 4).")
    assert "89%" in note  # a/(a + b) = 88.1…% rounds up: the band holds the number more often than 88%


def test_every_note_has_no_false_certainty(design):
    for question in design["questions"]:
        note = protection_note(question)
        assert "100%" not in note and " 0%" not in note, note


def test_huge_epsilon_keeps_honest_percentages():
    threshold = rr_flip_threshold(epsilon=30)
    question = {"id": "q", "kind": "yes_no", "mechanism": "rr", "flip_threshold": threshold, "epsilon": 30.0}
    note = protection_note(question)
    assert "100%" not in note and "99.99999999999" in note, note


def test_unknown_mechanism_is_rejected():
    with pytest.raises(ValueError, match="unsupported kind/mechanism 'number'/'laplace'"):
        protection_note({"id": "q", "kind": "number", "mechanism": "laplace", "epsilon": 1.0})


def test_bad_threshold_is_rejected():
    with pytest.raises(ValueError, match="threshold must be an integer from 0 to 2\\^53, got -1"):
        protection_note({"id": "q", "kind": "yes_no", "mechanism": "rr", "flip_threshold": -1, "epsilon": 1.0})


@pytest.mark.parametrize("epsilon, shown", [(0.29, "57%"), (0.57, "64%"), (1, "73%"), (2, "88%"), (4, "98%"),
                                            (8, "99.97%")])
def test_the_posterior_bound_from_even_odds_is_e_eps_over_1_plus_e_eps(epsilon, shown):
    from survey.core.explain import percent
    from survey.core.planning import posterior_bound

    assert posterior_bound(epsilon) == pytest.approx(math.exp(epsilon) / (1 + math.exp(epsilon)), rel=1e-12)
    assert percent(Fraction(posterior_bound(epsilon))) == shown


def test_the_respondent_page_states_the_bound_of_everything_it_sends():
    from survey.core.explain import posterior_note

    note = posterior_note({"epsilon_spent": 2.0, "epsilon": 2.0})
    assert "at most 89% sure" in note and "ε′ = 2" in note  # e²/(1 + e²) = 88.08%, rounded up


def test_hybrid_number_note_gives_both_branches(design):
    question = _question(design, "age")
    assert question["mechanism"] == "hybrid"
    a, b = question["ratio_a"], question["ratio_b"]
    note = protection_note(question)
    assert note.startswith(f"Your device hides your number in one of two ways, picked at random. With a chance of "
                           f"{percent(Fraction(a - b, a))}, your number is swapped for one of {a + b} points")
    assert f"This end is sent with a chance of {percent(Fraction(a * a, a * a + b * b))}." in note and "18–90" in note


@pytest.mark.parametrize("p, cell, sentence", [
    (0.0, "< 0.001", "p < 0.001"), (1e-30, "< 0.001", "p < 0.001"), (0.000999, "< 0.001", "p < 0.001"),
    (0.001, "0.001", "p = 0.001"), (0.861125, "0.861", "p = 0.861"), (1.0, "1.000", "p = 1.000"),
    (float("nan"), "–", "p = –"),
])
def test_a_p_value_never_reads_zero(p, cell, sentence):
    from survey.core.words import format_p, p_text

    assert format_p(p) == cell and p_text(p) == sentence


@pytest.mark.parametrize("note, plain, figure", [
    ("Your real answer is sent with a chance of 73%. Otherwise, the opposite answer is sent (ε′ = 1).",
     "Your real answer is sent with a chance of 73%. Otherwise, the opposite answer is sent.", "ε′ = 1"),
    ("For each of the 3 options, your tick or blank is sent as it is with a chance of 69%. Otherwise, the opposite "
     "is sent (ε′ = 0.5 per option, 1.5 in total).",
     "For each of the 3 options, your tick or blank is sent as it is with a chance of 69%. Otherwise, the opposite "
     "is sent.", "ε′ = 0.5 per option, 1.5 in total"),
    ("Sinon, c’est la réponse inverse qui est envoyée (ε′\u00a0=\u00a01).",
     "Sinon, c’est la réponse inverse qui est envoyée.", "ε′\u00a0=\u00a01"),
    ("وإلا تُرسل الإجابة المعاكسة (\u2066ε′\u00a0=\u00a01\u2069).", "وإلا تُرسل الإجابة المعاكسة.", "\u2066ε′\u00a0=\u00a01\u2069"),
    ("A note with no figure.", "A note with no figure.", None),
])
def test_a_note_splits_into_plain_words_and_its_privacy_figure_in_every_language(note, plain, figure):
    from survey.core.explain import split_figure

    assert split_figure(note) == (plain, figure)
