"""The kind of change a new definition of a live survey is (survey/core/revisions.py)."""

import pytest

from survey.core.definition import parse_definition
from survey.core.revisions import (DESIGN, NONE, SAME_DATA_SET, SETTINGS, TEXT, classify_change, describe,
                                   done_message, plain, wording_changes, wording_history)


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


def _branched(options=("Never", "Weekly", "Daily"), equals=("Weekly", "Daily")):
    return parse_definition({
        "slug": "habits", "title": "Habits", "epsilon": 2.0,
        "questions": [
            {"id": "drink", "kind": "choice", "text": "How often do you drink?", "options": list(options)},
            {"id": "beer", "kind": "yes_no", "text": "Mostly beer?",
             "show_if": {"question": "drink", "equals": list(equals)}},
        ],
    })


def test_show_if_that_follows_a_reworded_option_is_text():
    new = _branched(("Never", "Every week", "Every day"), ("Every week", "Every day"))
    revision = classify_change(_branched(), new)
    assert revision.kind == TEXT, revision
    assert "question beer: show_if wording" in revision.text_changes


def test_show_if_naming_another_option_is_design():
    revision = classify_change(_branched(), _branched(equals=("Daily",)))
    assert revision.kind == DESIGN and "question beer: show_if" in revision.design_changes


def test_describe_says_what_happens_to_the_responses():
    text = classify_change(_definition(), _definition(title="Daily habits"))
    assert describe(text, responses=200, version=1, epsilons=(2, 2)).startswith(
        "Text only: the 200 responses stay one data set")
    design = classify_change(_definition(), _definition(epsilon=1.0))
    sentence = describe(design, responses=200, version=1, epsilons=(2.0, 1.0))
    assert "(ε 2 → 1)" in sentence and "version 2, shown apart from version 1" in sentence
    assert "simply replaces" in describe(design, responses=0, version=1, epsilons=(2.0, 1.0))
    assert plain("survey epsilon") == "Survey privacy budget ε"
    assert plain("question smoker: text") == "Question smoker: wording"


def test_wording_history_lists_each_wording_from_its_day():
    first = _definition(questions={0: {"text": "Do you smok?"}})
    second = _definition(title="Habits 2026")
    history = wording_history([("2026-11-01", first), ("2026-11-20", second)])
    assert history["questions"]["smoker"] == [{"from": "2026-11-01", "text": "Do you smok?"},
                                              {"from": "2026-11-20", "text": "Do you smoke?"}]
    assert len(history["questions"]["drink"]) == 1 and history["questions"]["drink"][0]["options"]
    assert [entry["text"] for entry in history["title"]] == ["Habits", "Habits 2026"]


def test_wording_changes_show_before_and_after():
    old = _definition(questions={0: {"text": "Do you smok?"}})
    new = _definition(title="Habits 2026", questions={1: {"options": ["Never", "Every week", "Daily"]}})
    assert wording_changes(old, new) == [
        ("Title", "Habits", "Habits 2026"), ("Question smoker", "Do you smok?", "Do you smoke?"),
        ("Options of drink", "Never · Weekly · Daily", "Never · Every week · Daily")]


@pytest.mark.parametrize("changes, phrase", [
    ({"access": "invite"}, "Access: anyone with the link → invitation only"),
    ({"panel": {"code": "C1A2B3C4", "parameters": ["PROLIFIC_PID"]}},
     "Panel: none → completion code C1A2B3C4; link parameters PROLIFIC_PID"),
])
def test_who_may_answer_and_the_panel_are_settings_not_text(changes, phrase):
    revision = classify_change(_definition(), _definition(**changes))
    assert revision.kind == SETTINGS and not revision.needs_version and SETTINGS in SAME_DATA_SET
    assert revision.settings_changes == (phrase,)
    assert not revision.text_changes and not revision.design_changes
    back = classify_change(_definition(**changes), _definition())
    assert back.kind == SETTINGS and back.settings_changes[0].split(": ", 1)[0] == phrase.split(": ", 1)[0]


def test_a_changed_panel_lists_each_of_its_fields_before_and_after():
    old = _definition(panel={"code": "OLD-1", "parameters": ["PROLIFIC_PID", "STUDY_ID"]})
    new = _definition(panel={"code": "NEW-2", "parameters": ["PROLIFIC_PID"]})
    assert classify_change(old, new).settings_changes == (
        "Panel link parameters: PROLIFIC_PID, STUDY_ID → PROLIFIC_PID", "Panel completion code: OLD-1 → NEW-2")


def test_text_and_settings_together_is_described_as_both_and_a_design_change_still_wins():
    both = classify_change(_definition(), _definition(title="Daily habits", access="invite"))
    assert both.kind == TEXT and both.text_changes == ("survey title",)
    assert both.settings_changes == ("Access: anyone with the link → invitation only",)
    sentence = describe(both, responses=200, version=1, epsilons=(2, 2))
    assert sentence.startswith("Text and settings: no change to how answers are randomized, so the 200 responses "
                               "stay one data set")
    design = classify_change(_definition(), _definition(access="invite", epsilon=1.0))
    assert design.kind == DESIGN and design.needs_version and design.settings_changes
    assert "version 2" in describe(design, responses=200, version=1, epsilons=(2.0, 1.0))


def test_describe_and_done_message_of_a_settings_change_never_say_text():
    revision = classify_change(_definition(), _definition(access="invite"))
    sentence = describe(revision, responses=1, version=1, epsilons=(2, 2))
    assert sentence == "Settings only: no change to how answers are randomized, so the 1 response stays one data set."
    assert "Text" not in sentence and "wording" not in sentence
    assert done_message("settings", 1, 3) == "Settings changed: the 3 responses stay one data set."
    assert done_message("text", 1, 3, settings=True).startswith("Wording and settings changed: the 3 responses")
    assert done_message("text", 1, 3).startswith("Wording corrected: the 3 responses")


def test_what_a_save_does_is_said_at_a_plain_reading_level():
    """Flesch–Kincaid grade 8 or below (the measure of tests/web/test_reading_level.py) for every kind's sentence."""
    import re

    import readability

    def grade(text):
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]
        return readability.getmeasures("\n".join(sentences), lang="en")["readability grades"]["Kincaid"]

    old = _definition()
    for new in (_definition(title="Daily habits"), _definition(access="invite"),
                _definition(title="Daily habits", access="invite"), _definition(epsilon=1.0)):
        sentence = describe(classify_change(old, new), responses=200, version=1, epsilons=(2.0, new.epsilon))
        assert grade(sentence) <= 8.0, (grade(sentence), sentence)
    for done in ("text", "settings"):
        assert grade(done_message(done, 1, 200)) <= 8.0
