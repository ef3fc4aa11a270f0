"""The kind of change a new definition of a live survey is (survey/core/revisions.py)."""

import pytest

from survey.core.definition import parse_definition
from survey.core.revisions import DESIGN, NONE, TEXT, classify_change


def _definition(**changes):
    data = {
        "slug": "habits", "title": "Habits", "epsilon": 2.0,
        "questions": [
            {"id": "smoker", "kind": "yes_no", "text": "Do you smoke?"},
            {"id": "drink", "kind": "choice", "text": "How often do you drink?", "options": ["Never", "Weekly", "Daily"]},
            {"id": "age", "kind": "number", "text": "Your age?", "min": 18, "max": 99},
        ],
    }
    questions = changes.pop("questions", None)
    data.update(changes)
    if questions is not None:
        for index, fields in questions.items():
            data["questions"][index] = {**data["questions"][index], **fields}
    return parse_definition(data)


def test_same_definition_is_no_change():
    assert classify_change(_definition(), _definition()).kind == NONE


@pytest.mark.parametrize("changes", [
    {"title": "Daily habits"},
    {"description": "About your week."},
    {"thank_you": "Thanks!"},
    {"questions": {0: {"text": "Do you smoke tobacco?"}}},
    {"questions": {1: {"options": ["Never", "Every week", "Every day"]}}},
])
def test_wording_is_a_text_change(changes):
    revision = classify_change(_definition(), _definition(**changes))
    assert revision.kind == TEXT and not revision.needs_version
    assert revision.text_changes and not revision.design_changes


@pytest.mark.parametrize("changes, phrase", [
    ({"epsilon": 1.0}, "survey epsilon"),
    ({"release_every": 10}, "survey release_every"),
    ({"questions": {1: {"options": ["Weekly", "Never", "Daily"]}}}, "order of options"),
    ({"questions": {1: {"options": ["Never", "Weekly", "Daily", "Hourly"]}}}, "number of options"),
    ({"questions": {2: {"max": 120}}}, "max"),
    ({"questions": {0: {"id": "smokes"}}}, "questions added: smokes; questions removed: smoker"),
    ({"questions": {1: {"decline": True}}}, "decline"),
])
def test_randomization_is_a_design_change(changes, phrase):
    revision = classify_change(_definition(), _definition(**changes))
    assert revision.kind == DESIGN and revision.needs_version
    assert any(phrase in change for change in revision.design_changes), revision.design_changes


def test_text_and_design_together_is_design_and_lists_both():
    revision = classify_change(_definition(), _definition(title="New", epsilon=1.0))
    assert revision.kind == DESIGN
    assert revision.text_changes == ("survey title",)
    assert revision.design_changes == ("survey epsilon",)
