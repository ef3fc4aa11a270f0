"""The panel and thank-you parts of a definition: parsed, validated with clear errors, written back, in the design."""

from __future__ import annotations

import pytest

from survey.core.definition import DefinitionError, parse_definition, parse_definition_toml
from survey.core.definition_check import definition_errors
from survey.core.definition_toml import dump_definition
from survey.core.design import build_design

BASE = {"slug": "panel-study", "title": "A panel study", "epsilon": 2.0,
        "questions": [{"id": "smoker", "kind": "yes_no", "text": "Do you smoke?"}]}
PROLIFIC = {"parameters": ["PROLIFIC_PID", "STUDY_ID", "SESSION_ID"], "code": "C1A2B3C4",
            "redirect": "https://app.prolific.com/submissions/complete?cc={code}"}


def test_a_prolific_panel_and_a_thank_you_reach_the_design_and_round_trip_through_toml():
    defn = parse_definition({**BASE, "panel": PROLIFIC, "thank_you": "  Thank you for taking part!  "})
    assert defn.panel.parameters == ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
    assert defn.thank_you == "Thank you for taking part!"
    design = build_design(defn)
    assert design["panel"] == PROLIFIC and design["thank_you"] == "Thank you for taking part!"
    assert parse_definition_toml(dump_definition(defn)) == defn


def test_without_them_the_design_and_its_hash_are_unchanged():
    plain = build_design(parse_definition(BASE))
    assert "panel" not in plain and "thank_you" not in plain
    with_panel = build_design(parse_definition({**BASE, "panel": PROLIFIC}))
    assert with_panel["hash"] != plain["hash"], "the completion is part of the frozen, hashed design"
    assert "[panel]" not in dump_definition(parse_definition(BASE))


@pytest.mark.parametrize("panel", [
    {"code": "ABC"},
    {"redirect": "/thanks"},
    {"redirect": "done.html?x={rid}", "parameters": ["rid"]},
    {"parameters": ["workerId", "assignmentId"], "code": "mturk-2026_x"},
    {"parameters": ["rid"], "redirect": "https://panel.example/end?status=complete&rid={rid}&c={code}", "code": "X"},
])
def test_valid_completions(panel):
    assert parse_definition({**BASE, "panel": panel}).panel.redirect == panel.get("redirect")


@pytest.mark.parametrize(("panel", "field", "words"), [
    ({"redirect": "http://app.prolific.com/complete?cc=X"}, "panel.redirect", "https:// URL or a relative one"),
    ({"redirect": "javascript:alert(1)"}, "panel.redirect", "https:// URL or a relative one"),
    ({"redirect": "//evil.example/x"}, "panel.redirect", "write https:// before another host"),
    ({"redirect": "/\\evil.example"}, "panel.redirect", "backslashes"),
    ({"redirect": "https://a.example/x y"}, "panel.redirect", "no spaces"),
    ({"redirect": "https:///path-only"}, "panel.redirect", "https:// URL"),
    ({"redirect": "https://a.example/?cc={code}"}, "panel.redirect", "uses {code} but the panel has no code"),
    ({"redirect": "https://a.example/?p={PID}", "parameters": ["pid"]}, "panel.redirect",
     "{PID} is neither {code} nor a declared parameter; use {code}, {pid}"),
    ({"redirect": "https://{rid}.example/", "parameters": ["rid"]}, "panel.redirect", "not in its host"),
    ({"redirect": "https://a.example/?x={code", "code": "A"}, "panel.redirect", "unmatched"),
    ({"redirect": ""}, "panel.redirect", "a URL of at most"),
    ({"parameters": ["PROLIFIC PID"], "code": "A"}, "panel.parameters", "a parameter name must be"),
    ({"parameters": ["1st"], "code": "A"}, "panel.parameters", "a parameter name must be"),
    ({"parameters": ["invite"], "code": "A"}, "panel.parameters", "read by the survey page itself"),
    ({"parameters": ["a", "a"], "code": "A"}, "panel.parameters", "distinct"),
    ({"parameters": "PROLIFIC_PID", "code": "A"}, "panel.parameters", "must be a list"),
    ({"parameters": [f"p{i}" for i in range(11)], "code": "A"}, "panel.parameters", "at most 10"),
    ({"code": "two words"}, "panel.code", "letters, digits"),
    ({"code": 123}, "panel.code", "letters, digits"),
    ({"parameters": ["pid"]}, "panel.code", "needs a completion"),
    ({"code": "A", "url": "https://x.example"}, "panel.url", "not a field of panel"),
    ("https://x.example", "panel", "must be a table"),
])
def test_bad_panels_are_refused_naming_the_field(panel, field, words):
    with pytest.raises(DefinitionError) as caught:
        parse_definition({**BASE, "panel": panel}, source="study.toml")
    assert caught.value.field == field and words in caught.value.reason, str(caught.value)
    assert str(caught.value).startswith(f"study.toml, field {field!r}: ")


@pytest.mark.parametrize("thank_you", ["", "   ", 42, "x" * 2001])
def test_a_bad_thank_you_is_refused(thank_you):
    with pytest.raises(DefinitionError) as caught:
        parse_definition({**BASE, "thank_you": thank_you})
    assert caught.value.field == "thank_you"


def test_the_forms_error_list_names_the_panel_field():
    errors = definition_errors({**BASE, "panel": {"redirect": "http://x.example/"}, "thank_you": ""})
    assert {(error.field, error.question) for error in errors} == {("panel.redirect", None), ("thank_you", None)}
