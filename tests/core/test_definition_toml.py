"""The TOML writer of definitions, and every error of a definition at once (the builder's validation)."""

from __future__ import annotations

import random
import tomllib
from pathlib import Path

import pytest

from survey.core.definition import DECLINE_LABEL, MAX_OPTIONS, DefinitionError, parse_definition, parse_definition_toml
from survey.core.definition_check import FieldError, definition_errors, design_errors
from survey.core.definition_toml import dump_definition, toml_float, toml_string

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# No NUL: a definition may not hold one (PostgreSQL's text cannot; tests/cli/test_hostile_arguments.py).
TRICKY = ['"', "\\", "\n", "\r", "\t", "\b", "\f", "\x01", "\x1f", "\x7f", "'", "'''", '"""', "#", "=", "[", "]",
          "é", "漢字", "😀", "\u2028", "\ufeff", " ", "a", "Z", "0", "$\\frac{1}{2}$", "=SUM(A1)"]


def tricky_text(rng: random.Random, least: int = 1) -> str:
    while True:
        text = "".join(rng.choice(TRICKY) for _ in range(rng.randint(least, 12)))
        if text.strip():
            return text.strip()


def random_definition(rng: random.Random) -> dict:
    questions = []
    for index in range(rng.randint(1, 6)):
        kind = rng.choice(["yes_no", "choice", "multi", "number"])
        question = {"id": f"q{index}_{rng.randint(0, 99)}", "kind": kind, "text": tricky_text(rng),
                    "weight": rng.choice([1.0, 0.1, 0.5, 1 / 3, 2.5, 1e-3 + 1e-9, 7.0, 123456.789])}
        if kind in ("choice", "multi"):
            options = {tricky_text(rng) for _ in range(rng.randint(2, 6))}
            question["options"] = sorted(options)
            if rng.random() < 0.5:
                question["decline"] = rng.random() < 0.7
        if kind == "number":
            low = rng.randint(-10**6, 10**6)
            question.update(min=low, max=low + rng.randint(1, 10**6))
            if rng.random() < 0.6:
                question["mechanism"] = rng.choice(["auto", "hybrid", "piecewise", "duchi"])
        questions.append(question)
    data = {"slug": f"s-{rng.randint(0, 10**6)}", "title": tricky_text(rng), "description": tricky_text(rng),
            "epsilon": rng.choice([0.1, 0.3, 1.0, 2.0, 1 / 7, 19.999999999999996, 20.0]), "questions": questions}
    if rng.random() < 0.5:
        data["access"] = rng.choice(["open", "invite"])
    if rng.random() < 0.5:
        data["series"] = rng.choice(["a", "wave.2026_b-1", "Z" * 64])
    if rng.random() < 0.3:
        data.update(allocation="sample", sample=rng.randint(1, len(questions)))
    return data


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_every_example_round_trips(path):
    defn = parse_definition_toml(path.read_text(encoding="utf-8"))
    text = dump_definition(defn)
    assert parse_definition_toml(text) == defn
    assert dump_definition(parse_definition_toml(text)) == text, "writing is deterministic"


def test_random_definitions_with_unicode_quotes_backslashes_and_newlines_round_trip():
    rng = random.Random(20261122)
    for _ in range(300):
        defn = parse_definition(random_definition(rng))
        text = dump_definition(defn)
        assert parse_definition_toml(text) == defn, text
        assert ("mechanism" in text) == any(q.mechanism != "auto" for q in defn.questions), text


def test_a_forced_mechanism_is_written_and_auto_is_not():
    data = {**VALID, "questions": [{**VALID["questions"][3], "mechanism": "piecewise"},
                                   {**VALID["questions"][3], "id": "e", "mechanism": "auto"}]}
    defn = parse_definition(data)
    text = dump_definition(defn)
    assert text.count("mechanism") == 1 and 'max = 10\nmechanism = "piecewise"' in text
    assert parse_definition_toml(text) == defn
    assert [q.mechanism for q in parse_definition_toml(text).questions] == ["piecewise", "auto"]


def test_strings_and_floats_are_valid_toml():
    for value in ["", 'say "hi"', "back\\slash", "two\nlines", "tab\tand\rreturn", "\x00\x1f\x7f", "漢字😀"]:
        assert tomllib.loads(f"v = {toml_string(value)}")["v"] == value
    for value in [0.1, 0.2 + 0.1, 1e-05, 1e20, 1e300, 5e-324, 2.0, -0.0, 123456.789, 1 / 3]:
        assert tomllib.loads(f"v = {toml_float(value)}")["v"] == value
        assert isinstance(tomllib.loads(f"v = {toml_float(value)}")["v"], float)
    with pytest.raises(ValueError, match="finite"):
        toml_float(float("inf"))


def test_access_series_and_decline_are_written_and_the_declined_option_is_not():
    defn = parse_definition({"slug": "s", "title": "t", "epsilon": 1, "access": "invite", "series": "panel.1",
                             "questions": [{"id": "a", "kind": "yes_no", "text": "A?"},
                                           {"id": "b", "kind": "choice", "text": "B?", "options": ["x", "y"],
                                            "decline": True},
                                           {"id": "c", "kind": "multi", "text": "C?", "options": ["x"]}]})
    assert defn.questions[1].options == ("x", "y", DECLINE_LABEL)
    text = dump_definition(defn)
    assert 'access = "invite"' in text and 'series = "panel.1"' in text
    assert text.count("decline") == 1 and 'options = ["x", "y"]\ndecline = true' in text
    assert DECLINE_LABEL not in text
    assert parse_definition_toml(text) == defn


def test_the_sample_allocation_is_written():
    defn = parse_definition({"slug": "s", "title": "t", "epsilon": 1, "allocation": "sample", "sample": 1,
                             "questions": [{"id": "a", "kind": "yes_no", "text": "A?"},
                                           {"id": "b", "kind": "yes_no", "text": "B?"}]})
    text = dump_definition(defn)
    assert 'allocation = "sample"' in text and "sample = 1" in text
    assert parse_definition_toml(text) == defn


VALID = {"slug": "ok", "title": "Title", "epsilon": 2.0,
         "questions": [{"id": "a", "kind": "yes_no", "text": "A?"},
                       {"id": "b", "kind": "choice", "text": "B?", "options": ["x", "y"]},
                       {"id": "c", "kind": "multi", "text": "C?", "options": ["x"]},
                       {"id": "d", "kind": "number", "text": "D?", "min": 0, "max": 10}]}


def test_a_valid_definition_has_no_errors():
    assert definition_errors(VALID) == []


def test_every_error_is_found_at_once_each_at_its_field():
    data = {"slug": "Bad Slug\n", "title": " ", "epsilon": "two", "surprise": 1,
            "questions": [{"id": "1a", "kind": "choice", "text": "", "options": ["x", "x"], "weight": 0},
                          {"id": "ok", "kind": "number", "text": "N?", "min": 5, "max": 1},
                          {"id": "ok", "kind": "multi", "text": "M?"},
                          {"id": "z", "kind": "essay", "text": "?"}]}
    found = {(error.question, error.field) for error in definition_errors(data)}
    assert found == {(None, "slug"), (None, "title"), (None, "epsilon"), (None, "surprise"),
                     (0, "id"), (0, "text"), (0, "options"), (0, "weight"), (1, "max"), (2, "id"), (2, "options"),
                     (3, "kind")}
    messages = {(e.question, e.field): e.message for e in definition_errors(data)}
    assert "duplicate question id" in messages[(2, "id")]
    assert messages[(1, "max")] == "must be greater than min (5), got 1"


def test_options_are_checked_with_decline():
    options = [f"o{i}" for i in range(MAX_OPTIONS)]
    data = {**VALID, "questions": [{**VALID["questions"][1], "options": options}]}
    assert definition_errors(data) == []
    errors = definition_errors({**data, "questions": [{**data["questions"][0], "decline": True}]})
    assert [(e.question, e.field) for e in errors] == [(0, "options")]
    assert f"at most {MAX_OPTIONS - 1} options" in errors[0].message
    errors = definition_errors({**VALID, "access": "public", "series": " x", "questions": [
        {**VALID["questions"][2], "options": ["x", DECLINE_LABEL], "decline": True},
        {**VALID["questions"][1], "decline": "yes"}]})
    assert {(e.question, e.field) for e in errors} == {(None, "access"), (None, "series"), (0, "options"),
                                                       (1, "decline")}


def test_mechanism_errors_are_found_with_the_others():
    data = {**VALID, "questions": [{**VALID["questions"][0], "mechanism": "duchi"},
                                   {**VALID["questions"][3], "mechanism": "fastest", "max": -1}]}
    messages = {(e.question, e.field): e.message for e in definition_errors(data)}
    assert set(messages) == {(0, "mechanism"), (1, "mechanism"), (1, "max")}
    assert messages[(0, "mechanism")] == "only a number question has a mechanism, not a yes_no question"
    assert messages[(1, "mechanism")] == "must be one of auto, hybrid, piecewise, duchi, opm, got 'fastest'"


def test_the_allocation_is_checked_against_the_number_of_questions():
    data = {**VALID, "allocation": "sample", "sample": 5}
    assert definition_errors(data) == [FieldError(None, "sample", "must be an integer from 1 to the number of "
                                                                  "questions (4), got 5")]
    assert definition_errors({**VALID, "questions": []}) == [
        FieldError(None, "questions", "a survey needs at least one [[questions]] table")]
    assert [e.field for e in definition_errors({**VALID, "sample": 2})] == ["sample"]


def mutate(rng: random.Random, data: dict) -> dict:
    """Return a copy of a valid definition with a few fields set to random good or bad values."""
    data = {**data, "questions": [dict(q) for q in data["questions"]]}
    values = [None, "", " ", "x", "Bad Id", "a\n", 0, -1, 1, 3, 2.5, 1e9, True, [], ["x"], ["x", "x"], ["x", "y"],
              "choice", "number", "essay", "sample", "split", "open", "invite", False, ["x", "Prefer not to say"],
              "auto", "hybrid", "piecewise", "duchi", "fastest"]
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.3:
            name = rng.choice(["slug", "title", "epsilon", "allocation", "sample", "description", "access",
                               "series"])
            target = data
        else:
            target = rng.choice(data["questions"])
            name = rng.choice(["id", "kind", "text", "options", "min", "max", "weight", "decline", "mechanism"])
        value = rng.choice(values)
        if value is None:
            target.pop(name, None)
        else:
            target[name] = value
    return data


def test_errors_are_found_exactly_when_the_parser_refuses_and_include_its_first_error():
    rng = random.Random(7)
    refused = 0
    for _ in range(1500):
        data = mutate(rng, VALID)
        errors = definition_errors(data)
        try:
            defn = parse_definition(data)
        except DefinitionError as exc:
            refused += 1
            assert errors, data
            fields = {error.field for error in errors}
            assert exc.field in fields, (exc, errors)
        else:
            assert errors == [], (data, errors)
            assert defn.slug == data["slug"]
    assert refused > 500


def test_design_errors_tie_a_refused_design_to_its_question():
    data = {**VALID, "epsilon": 0.002, "questions": [*VALID["questions"][:1],
                                                     {"id": "tiny", "kind": "yes_no", "text": "T?", "weight": 0.1}]}
    design, errors = design_errors(parse_definition(data))
    assert design is None and errors == [FieldError(1, "weight", errors[0].message)]
    assert "below the minimum" in errors[0].message
    design, errors = design_errors(parse_definition(VALID))
    assert errors == [] and design["slug"] == "ok"
    data = {**VALID, "epsilon": 0.005, "questions": [*VALID["questions"][:3],
                                                     {**VALID["questions"][3], "mechanism": "hybrid"}]}
    design, errors = design_errors(parse_definition(data))
    assert design is None and [(e.question, e.field) for e in errors] == [(3, "mechanism")]
    assert "hybrid mechanism needs a share of the budget of at least 0.00783" in errors[0].message
