"""Every CSV writes labels exactly (stdlib quoting only); slugs and question ids are matched in full."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from survey.core.aggregate import QuestionCounts, aggregate_counts, rows_to_csv
from survey.core.definition import DefinitionError, parse_definition
from survey.core.design import build_design
from survey.exports.export import responses_csv


FORMULA_DEFINITION = {
    "slug": "formulas", "title": "Formulas", "epsilon": 4.0,
    "questions": [
        {"id": "pick", "kind": "choice", "text": "?", "options": ["=HYPERLINK(\"x\")", "-1", "+1", "@a", "plain"]},
        {"id": "yes", "kind": "yes_no", "text": "?"},
    ],
}


def test_aggregates_csv_writes_labels_exactly_and_numbers_as_numbers():
    design = build_design(parse_definition(FORMULA_DEFINITION))
    # Estimates below zero show that negative numbers stay numbers.
    counts = {"pick": QuestionCounts(n=10, ones=np.array([0, 0, 0, 0, 10])), "yes": QuestionCounts(n=10, ones=np.array([0]))}
    text = rows_to_csv(aggregate_counts(design, counts, level=0.95))
    lines = text.split("\r\n")
    assert lines[1].startswith('pick,"=HYPERLINK(""x"")",choice,grr,')
    assert lines[2].startswith("pick,-1,choice,grr,") and lines[3].startswith("pick,+1,choice,grr,")
    assert lines[4].startswith("pick,@a,choice,grr,") and lines[5].startswith("pick,plain,choice,grr,")
    assert "'" not in text
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert [row["option"] for row in parsed] == [*FORMULA_DEFINITION["questions"][0]["options"], "yes"]
    assert parsed[0]["estimate"].startswith("-0.") and parsed[5]["estimate"].startswith("-")


def test_responses_csv_header_names_are_slugs():
    design = build_design(parse_definition({
        "slug": "formulas", "title": "Formulas", "epsilon": 1.0,
        "questions": [{"id": "pick", "kind": "multi", "text": "?", "options": ["=HYPERLINK(\"x\")", "-1", "@a"]}]}))
    text = responses_csv(design, [])
    assert text == "response_id,received_day,pick__hyperlink_x,pick__1,pick__a\r\n"


@pytest.mark.parametrize("slug", ["smoking\n", "smoking\r\n", "\nsmoking", "smoking ", "Smoking"])
def test_a_slug_is_matched_in_full(slug):
    data = {"slug": slug, "title": "T", "epsilon": 1.0, "questions": [{"id": "q", "kind": "yes_no", "text": "?"}]}
    with pytest.raises(DefinitionError, match="field 'slug'"):
        parse_definition(data)


@pytest.mark.parametrize("qid", ["smoker\n", "smoker\r\n", "\nsmoker", "smo ker", "1smoker"])
def test_a_question_id_is_matched_in_full(qid):
    data = {"slug": "s", "title": "T", "epsilon": 1.0, "questions": [{"id": qid, "kind": "yes_no", "text": "?"}]}
    with pytest.raises(DefinitionError, match="field 'id'"):
        parse_definition(data)


def test_valid_slugs_and_ids_still_pass():
    data = {"slug": "a-1", "title": "T", "epsilon": 1.0,
            "questions": [{"id": "_q1", "kind": "yes_no", "text": "?"}, {"id": "Q", "kind": "yes_no", "text": "?"}]}
    assert parse_definition(data).slug == "a-1"
    assert parse_definition({**data, "slug": "x"}).slug == "x"


def test_crosstab_csv_writes_option_fields_exactly():
    from survey.core.crosstab import crosstab, crosstab_to_csv

    design = build_design(parse_definition({
        "slug": "formulas", "title": "Formulas", "epsilon": 4.0,
        "questions": [{"id": "a", "kind": "choice", "text": "?", "options": ["=1+1", "plain"]},
                      {"id": "b", "kind": "choice", "text": "?", "options": ["-x", "@y"]}]}))
    qa, qb = design["questions"]
    table = crosstab(qa, qb, [[0], [1], [0], [1]], [[0], [0], [1], [1]], [30, 20, 10, 40])
    lines = crosstab_to_csv(table).split("\r\n")[1:-1]
    cells = [line.split(",")[:3] for line in lines]
    assert ["joint", "=1+1", "-x"] in cells and ["joint", "plain", "@y"] in cells
    assert all(a in ("=1+1", "plain") and b in ("", "-x", "@y") for _, a, b in cells)
    assert cells == [[row.measure, row.a_option, row.b_option] for row in table.rows]
