"""Every privacy figure shown to a person is rounded toward less protection, never toward more.

Table-driven over the surfaces that format one: each mechanism's respondent note ("sent with a
chance of 73%"), the revision sentence "ε 2 → 1", a series' per-wave ε₁ in the codebook meanings,
and the shared helpers of survey/core/words.py. A figure where larger means less privacy (ε, the
chance the true answer is sent, how sure someone can be) is rounded up at its shown precision; one
where larger means more privacy (the chance another option is marked) is rounded down. Each
surface is driven over a grid of ε, so that some of its exact values lie just above a rounding
boundary (the exact value comes from the integer thresholds the browser uses).
"""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

import pytest

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.core.explain import protection_note
from survey.core.mechanisms import mechanism_for
from survey.core.mechanisms.common import TWO53
from survey.core.mechanisms.hybrid import hybrid_branch
from survey.core.revisions import DESIGN, Revision, describe
from survey.core.versus_direct import bias_words
from survey.core.words import format_epsilon, percent_down, percent_up

UP, DOWN, EITHER = "up", "down", "either"
# A grid of budgets: the notes' exact chances fall all over their rounding steps.
GRID = [round(0.3 + 0.137 * step, 3) for step in range(40)]

SURVEY = """
slug = "rounding"
title = "Rounding"
epsilon = {epsilon}
{extra}
[[questions]]
id = "yes"
kind = "yes_no"
text = "Yes?"
[[questions]]
id = "two"
kind = "choice"
text = "Two?"
options = ["a", "b"]
[[questions]]
id = "four"
kind = "choice"
text = "Four?"
options = ["a", "b", "c", "d"]
[[questions]]
id = "many"
kind = "choice"
text = "Many?"
options = [{many}]
[[questions]]
id = "ticks"
kind = "multi"
text = "Ticks?"
options = ["a", "b", "c"]
[[questions]]
id = "tick"
kind = "multi"
text = "Tick?"
options = ["a"]
""" + "".join(f"""
[[questions]]
id = "n_{name}"
kind = "number"
text = "Number?"
min = 0
max = 100
mechanism = "{name}"
""" for name in ("duchi", "piecewise", "hybrid", "opm"))


def _survey(epsilon: float, options: int = 40, extra: str = "", numbers: tuple = ()) -> dict:
    many = ", ".join(f'"o{i}"' for i in range(options))
    text = SURVEY.format(epsilon=epsilon, many=many, extra=extra)
    for name in numbers:  # leave out the number questions of these mechanisms
        text = text.replace(f'id = "n_{name}"', f'id = "n_{name}_left_out"')
    definition = parse_definition_toml(text)
    if numbers:
        definition = replace(definition, questions=tuple(
            question for question in definition.questions if not question.id.endswith("_left_out")))
    return build_design(definition)


def _keep_of_flip(mechanism) -> list:
    return [(1 - Fraction(mechanism.flip_threshold, TWO53), UP)]


def _opm(m) -> list:
    width, a, b = m.band, m.ratio_a, m.ratio_b
    return [(Fraction(width * a, width * a + m.steps * b), UP)]


def _hybrid(m) -> list:
    beta, flip = hybrid_branch(m.ratio_a, m.ratio_b)
    return [(beta, EITHER), (Fraction(m.ratio_a, m.ratio_a + m.ratio_b), UP), (1 - flip, UP)]


# Per mechanism, the exact chances its note states, in order, and which way each must round.
EXACT = {
    ("yes_no", "rr"): lambda m: [(1 - m.flip, UP)],
    ("choice", "grr"): lambda m: [(Fraction(m.keep_threshold, TWO53), UP)],
    ("choice", "oue"): lambda m: [(Fraction(m.q_threshold, TWO53), DOWN)],
    ("choice", "ss"): lambda m: [(Fraction(m.keep_threshold, TWO53), UP)],
    ("multi", "rr"): _keep_of_flip,
    ("multi", "sampled"): _keep_of_flip,
    ("number", "duchi"): _keep_of_flip,
    ("number", "piecewise"): lambda m: [(Fraction(m.ratio_a, m.ratio_a + m.ratio_b), UP)],
    ("number", "opm"): _opm,
    ("number", "hybrid"): _hybrid,
}
CHANCE = re.compile(r"chance of ([0-9.]+)%")


def _notes() -> list[tuple[str, dict]]:
    """Return (mechanism, design entry) for every question of the grid's surveys (all ten mechanisms)."""
    found = []
    for epsilon in GRID:
        for options in (40, 12):
            for question in _survey(epsilon, options)["questions"]:
                found.append((f"{question['kind']}/{question['mechanism']}", question))
    return found


@pytest.fixture(scope="module")
def notes():
    return _notes()


def test_the_grid_reaches_every_mechanism_with_a_note(notes):
    assert {name for name, _ in notes} == {f"{kind}/{name}" for kind, name in EXACT}


@pytest.mark.parametrize("kind_name", sorted(EXACT), ids=lambda key: "/".join(key))
def test_each_chance_in_a_respondent_note_rounds_toward_less_protection(notes, kind_name):
    """The chance the true answer is sent reads up (73% for 72.001%), another option's mark reads down."""
    wrong = []
    for name, question in notes:
        if name != "/".join(kind_name):
            continue
        note = protection_note(question)
        shown = [Fraction(Decimal(text)) / 100 for text in CHANCE.findall(note)]
        exact = EXACT[kind_name](mechanism_for(question))
        assert len(shown) == len(exact), note
        for figure, (value, direction) in zip(shown, exact):
            if (direction == UP and figure < value) or (direction == DOWN and figure > value):
                wrong.append(f"ε′ = {question['epsilon']}: {float(value):.6%} shown as {float(figure):.6%}")
    assert not wrong, wrong


@pytest.mark.parametrize("value, digits, shown", [
    (1.0001, 3, "1.01"), (0.72001, 3, "0.721"), (1.0000001, 6, "1.00001"), (2.0, 6, "2"), (1.999999999999999, 3, "2"),
])
def test_format_epsilon_rounds_up_just_above_a_boundary(value, digits, shown):
    assert format_epsilon(value, digits) == shown


@pytest.mark.parametrize("helper, value, shown", [
    (percent_up, 0.72001, "73%"), (percent_up, Fraction(2, 3), "67%"), (percent_up, 0.99999, "99.999%"),
    (percent_up, 0.5, "50%"), (percent_down, 0.27999, "27%"), (percent_down, 0.0004, "0.04%"),
    (percent_down, 0.27, "27%"), (percent_down, 0.0, "0%"), (percent_down, Fraction(1, 3), "33%"),
])
def test_percent_helpers_round_the_way_they_say(helper, value, shown):
    assert helper(value) == shown


def test_percent_down_rejects_a_non_probability():
    with pytest.raises(ValueError, match="probability must be in"):
        percent_down(1.5)


@pytest.mark.parametrize("before, after, words", [
    (2.0, 1.0, "(ε 2 → 1)"), (1.0000001, 2.0, "(ε 1.00001 → 2)"), (3.0, 0.1234567, "(ε 3 → 0.123457)"),
])
def test_the_revision_sentence_rounds_each_epsilon_up(before, after, words):
    """"ε 2 → 1" for a change of budget: never a smaller ε than the definition's (1.0000001 is not "1")."""
    sentence = describe(Revision(kind=DESIGN, design_changes=("survey epsilon",)), responses=3, version=1,
                        epsilons=(before, after))
    assert words in sentence, sentence


EPSILON_1 = re.compile(r"per-wave ε₁ = ([0-9.]+)")


def test_a_series_codebook_meaning_rounds_the_per_wave_epsilon_up():
    """The codebook's meaning of a two-layer column states ε₁ never below the layer's realised ε₁."""
    wrong = []
    for wave in (0.31234, 0.55551, 0.71717, 1.12345, 1.33331, 1.76543):
        design = _survey(2.0, 4, f'series = "s"\nwave_epsilon = {wave}', numbers=("hybrid", "opm"))
        for question in design["questions"]:
            mechanism = mechanism_for(question)
            p, q = mechanism.probabilities()
            for meaning in mechanism.meanings(p, q):
                for text in EPSILON_1.findall(meaning):
                    if Decimal(text) < Decimal(repr(mechanism.layer_epsilon())):
                        wrong.append(f"{question['id']}: ε₁ {mechanism.layer_epsilon()!r} shown as {text}")
    assert not wrong, wrong


@pytest.mark.parametrize("bias, scale, words", [
    (0.04201, None, "4.3 percentage points"), (0.04, None, "4.0 percentage points"),
    (0.026001, 40, "2.7% of the range (1.05)"), (0.5, 1000, "50.0% of the range (500)"),
])
def test_the_versus_direct_break_even_bias_rounds_up(bias, scale, words):
    """"Randomizing wins when a direct question is off by more than X": X never reads below b* (4.201 is 4.3)."""
    assert bias_words(bias, scale) == words
