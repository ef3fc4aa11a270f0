"""SPSS and Stata files of random definitions up to the definition limits write and read back whole.

Seeded random definitions (question counts up to MAX_QUESTIONS, options up to MAX_OPTIONS, option
labels up to 200 characters, ids up to 64, texts up to MAX_TEXT, any Unicode) are written with
``survey.exports.statfiles`` in both formats and read back with pyreadstat: every variable name within the
format's limit (and its value-label set's name, which ReadStat makes of the name and a counter),
unique ignoring case, stable when other questions come and go; every label as written; every cell
as the CSV's.
"""

from __future__ import annotations

import datetime
import math
import random

import numpy as np
import pyreadstat
import pytest

from survey.core.definition import MAX_OPTIONS, MAX_QUESTIONS, MAX_TEXT, parse_definition
from survey.core.design import build_design
from survey.exports.export import response_records
from survey.exports.labels import NAME_LIMIT, SET_NAME_LIMIT, response_variables
from survey.core.simulate import complete_truth, simulate_answers
from survey.exports.statfiles import responses_file

READERS = {"sav": pyreadstat.read_sav, "dta": pyreadstat.read_dta}
ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
WORDS = ["income", "wages and salaries", "Prefer", "ÅÄÖ åäö", "日本語の選択肢", "emoji 🙂", "quote \" ' \\",
         "tab\tand space", "=1+1", "-10% or more", "x" * 30]


def _id(rng: random.Random, taken: set[str]) -> str:
    """Return a new question id: a letter or underscore, then up to 63 letters, digits or underscores."""
    while True:
        length = rng.choice([1, 2, 8, 31, 32, 40, 64])
        qid = rng.choice(ALPHABET[:52] + "_") + "".join(rng.choice(ALPHABET) for _ in range(length - 1))
        if qid.lower() not in {t.lower() for t in taken} or rng.random() < 0.2:
            if qid not in taken:
                taken.add(qid)
                return qid


def _label(rng: random.Random, limit: int) -> str:
    """Return a label of 1 to ``limit`` characters of words in several scripts."""
    size = rng.choice([1, 10, 35, limit])
    text = " ".join(rng.choice(WORDS) for _ in range(size))[:size].strip()
    return text or "x"


def random_definition(rng: random.Random, big: bool) -> dict:
    """Return a valid definition: a few questions, or (``big``) many, with many long options."""
    count = rng.randint(60, MAX_QUESTIONS) if big else rng.randint(1, 12)
    taken: set[str] = set()
    questions = []
    for _ in range(count):
        kind = rng.choice(["yes_no", "choice", "multi", "number"])
        question = {"id": _id(rng, taken), "kind": kind, "text": _label(rng, MAX_TEXT)}
        if kind in ("choice", "multi"):
            options = rng.choice([2, 3, 11, 40, MAX_OPTIONS - 1]) if big or rng.random() < 0.3 else rng.choice([2, 11])
            labels = []
            while len(labels) < options:
                label = f"{_label(rng, 200)[:194].strip()} {len(labels)}"
                labels.append(label)
            question["options"] = labels
            question["decline"] = rng.random() < 0.3
        if kind == "number":
            low = rng.randint(-10**6, 10**6)
            question.update(min=low, max=low + rng.randint(1, 10**6))
        questions.append(question)
    return {"slug": "random", "title": _label(rng, 200), "description": "", "epsilon": rng.choice([0.5, 2.0, 8.0]),
            "questions": questions}


def _responses(design: dict, rng: np.random.Generator, n: int) -> list[dict]:
    """Return n simulated responses as Store.iter_responses yields them."""
    answers = simulate_answers(design, complete_truth(design, {}, rng), n, rng)
    return [{"id": f"r{index:05d}", "received_day": "2026-11-26", "answers": answer}
            for index, answer in enumerate(answers)]


def check_round_trip(design: dict, responses: list[dict], fmt: str, tmp_path) -> None:
    """Write the responses in ``fmt``, read them back, and check names, labels, value labels and cells."""
    variables = response_variables(design, fmt)
    path = tmp_path / f"responses.{fmt}"
    path.write_bytes(responses_file(design, responses, fmt))
    frame, meta = READERS[fmt](str(path))
    names = [variable.name for variable in variables]
    assert list(frame.columns) == names
    assert all(len(name.encode()) <= NAME_LIMIT[fmt] for name in names)
    labelled = [variable.name for variable in variables if variable.values]
    if SET_NAME_LIMIT[fmt] is not None:
        assert all(len(f"{name}{counter}") <= SET_NAME_LIMIT[fmt] for counter, name in enumerate(labelled))
    assert len({name.lower() for name in names}) == len(names)
    for variable in variables:
        assert meta.column_names_to_labels[variable.name] == variable.label
        got = {int(key): text for key, text in meta.variable_value_labels.get(variable.name, {}).items()}
        assert got == variable.values
    records = list(response_records(design, responses))
    assert len(frame) == len(records)
    for variable in variables:
        cells = frame[variable.name].tolist()
        for cell, record in zip(cells, records):
            expected = record[variable.column]
            if variable.column == "received_day":
                assert cell == datetime.date.fromisoformat(expected)
            elif variable.column == "response_id":
                assert cell == expected
            elif expected is None:
                assert math.isnan(cell)
            else:
                assert cell == int(expected)


@pytest.mark.parametrize("seed", [pytest.param(0, marks=pytest.mark.slow), *range(1, 12)])
def test_random_definitions_read_back_in_both_formats(seed, tmp_path):
    rng = random.Random(seed)
    design = build_design(parse_definition(random_definition(rng, big=seed == 0)))
    responses = _responses(design, np.random.default_rng(seed), 2 if seed == 0 else 5)
    for fmt in ("sav", "dta"):
        check_round_trip(design, responses, fmt, tmp_path)


def _limit_definition(count: int) -> dict:
    """Return a definition at the limits: multis of MAX_OPTIONS long options, 64-character ids alike for 60."""
    options = [f"{'option label that runs long ' * 6}{index}"[-200:] for index in range(MAX_OPTIONS)]
    questions = [{"id": f"{'q' * 60}{index:04d}", "kind": "multi", "text": "é" * MAX_TEXT, "options": options}
                 for index in range(count)]
    return {"slug": "limits", "title": "日" * 200, "description": "", "epsilon": 8.0, "questions": questions}


@pytest.mark.slow
def test_names_and_label_sets_fit_at_the_definition_limits_and_do_not_move():
    design = build_design(parse_definition(_limit_definition(MAX_QUESTIONS)))
    alone = build_design(parse_definition(_limit_definition(1)))
    for fmt in ("sav", "dta"):
        variables = response_variables(design, fmt)
        assert len(variables) == 2 + MAX_QUESTIONS * MAX_OPTIONS
        names = [variable.name for variable in variables]
        assert all(len(name) <= NAME_LIMIT[fmt] and name.isascii() for name in names)
        assert len({name.lower() for name in names}) == len(names)
        labelled = [variable.name for variable in variables if variable.values]
        assert len(labelled) == MAX_QUESTIONS * MAX_OPTIONS
        if SET_NAME_LIMIT[fmt] is not None:
            assert max(len(f"{name}{counter}") for counter, name in enumerate(labelled)) <= SET_NAME_LIMIT[fmt]
        # the first question's columns keep their names when 99 questions come or go
        first = {variable.column: variable.name for variable in response_variables(alone, fmt)}
        assert all(first[variable.column] == variable.name for variable in variables[:len(first)])
        sizes = {"sav": lambda text: len(text.encode()), "dta": len}[fmt]
        limits = {"sav": (256, 120), "dta": (80, 8000)}[fmt]
        assert all(sizes(variable.label) <= limits[0] for variable in variables)
        assert all(variable.label.endswith("…") for variable in variables[2:])
        values = [text for variable in variables[2:MAX_OPTIONS + 2] for text in variable.values.values()]
        assert all(sizes(text) <= limits[1] for text in values)
