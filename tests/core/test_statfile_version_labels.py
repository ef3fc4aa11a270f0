"""The version variable of the SPSS and Stata files of a survey with several versions (``labels.version_variable``):
when it is there, its name beside a question called version, its labels, and files without it unchanged."""

from __future__ import annotations

import pyreadstat
import pytest

from survey.core.definition import parse_definition
from survey.core.design import build_design
from survey.exports.codebook import VERSION_LABEL, version_column
from survey.exports.datapackage import responses_schema
from survey.exports.export import csv_from_chunks, responses_csv
from survey.exports.labels import NAME_LIMIT, SurveyVersion, response_variables, survey_version
from survey.exports.statfiles import responses_file

READERS = {"sav": pyreadstat.read_sav, "dta": pyreadstat.read_dta}


def _design(first_id: str = "version") -> dict:
    """Return a design whose first question is called ``first_id`` (a name the version variable would take)."""
    return build_design(parse_definition({
        "slug": "named", "title": "A question called version", "epsilon": 0.6666666666666664,
        "questions": [{"id": first_id, "kind": "yes_no", "text": "Which version do you use?"},
                      {"id": "colour", "kind": "choice", "text": "Colour?", "options": ["red", "blue", "green"]}]}))


def test_survey_version_is_none_for_one_version_and_holds_every_epsilon_otherwise():
    one = [{"slug": "s", "version": 1, "epsilon": 2.0}]
    assert survey_version(one, "s") is None
    two = [{"slug": "s.v1", "version": 1, "epsilon": 2.0}, {"slug": "s", "version": 2, "epsilon": 0.4942}]
    assert survey_version(two, "s.v1") == SurveyVersion(1, {1: 2.0, 2: 0.4942})
    assert survey_version(two, "s").number == 2


@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_a_question_called_version_keeps_its_name_and_the_version_variable_gets_another(tmp_path, fmt):
    design = _design()
    version = SurveyVersion(2, {1: 2.0, 2: 0.6666666666666664, 3: 0.4942})
    plain = response_variables(design, fmt)
    variables = response_variables(design, fmt, version=version)
    assert variables[:-1] == plain  # the version only adds a last variable
    last = variables[-1]
    # responses.csv's version column is then survey_version (``version_column``), and the file's variable too.
    assert version_column(design) == "survey_version"
    assert last.column == "survey_version" and last.name == "survey_version"
    assert len(last.name) <= NAME_LIMIT[fmt] and [v.name for v in plain].count("version") == 1
    assert last.label == VERSION_LABEL
    # ε rounded up to 3 significant digits, as on the pages: 0.6666… reads 0.667, never 0.666.
    assert last.values == {1: "version 1 (ε = 2)", 2: "version 2 (ε = 0.667)", 3: "version 3 (ε = 0.495)"}
    responses = [{"id": f"{index:016x}", "received_day": "2026-01-02",
                  "answers": {"version": index % 2, "colour": index % 3}} for index in range(5)]
    assert responses_csv(design, responses).startswith("response_id,received_day,version,colour\r\n")
    path = tmp_path / f"named.{fmt}"
    path.write_bytes(responses_file(design, responses, fmt, version=version))
    frame, meta = READERS[fmt](str(path))
    assert list(frame.columns) == ["response_id", "received_day", "version", "colour", last.name]
    assert list(frame["version"]) == [0, 1, 0, 1, 0] and list(frame[last.name]) == [2] * 5
    assert meta.column_names_to_labels[last.name] == last.label
    assert meta.variable_value_labels["version"] == {0: "reported no", 1: "reported yes"}


def test_no_two_columns_of_responses_csv_share_a_name_when_a_question_is_called_version():
    design = _design()
    head = "".join(csv_from_chunks(design, ["0000000000000001,2026-01-02,1,2\r\n"], version=3))
    assert head == "response_id,received_day,version,colour,survey_version\r\n0000000000000001,2026-01-02,1,2,3\r\n"
    names = [field["name"] for field in responses_schema(design, version=3)["fields"]]
    assert names[-1] == "survey_version" and len(names) == len(set(names))
    # A design without such a question keeps the plain name.
    assert version_column(_design("brand")) == "version"
