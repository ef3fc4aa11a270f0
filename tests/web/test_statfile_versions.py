"""The SPSS and Stata files of a survey with several versions end with the version, as responses.csv does (issue 27):
an integer variable ``version`` in the last place, the file's version in every case, its variable label and one value
label per version with its ε; a survey with one version (a text correction included) has no such variable."""

from __future__ import annotations

import csv
import io
import re

import pyreadstat
import pytest

from survey.cli import main
from survey.exports.codebook import VERSION_LABEL
from survey.store import Store

from conftest import OWNER, domain_answers
from test_ownership import signed_in

pytestmark = pytest.mark.both_backends

SLUG = "smoking-2026"
FIRST, SECOND = 9, 4  # responses under version 1 (ε = 2) and version 2 (ε = 1)
READERS = {"sav": pyreadstat.read_sav, "dta": pyreadstat.read_dta}
LABELS = {1: "version 1 (ε = 2)", 2: "version 2 (ε = 1)"}


def _run(cli_runner, db_path, *args):
    result = cli_runner.invoke(main, ["--db", str(db_path), *map(str, args)])
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def _add(db_path, slug: str, count: int) -> None:
    """Add ``count`` responses of varied answers to the survey's current design."""
    store = Store(db_path)
    try:
        design = store.get_design(slug)
        store.add_responses(slug, design["hash"], [domain_answers(design, smoker=index, lung_disease=index // 2,
                                                                  cigarettes=index, age=index) for index in range(count)])
    finally:
        store.close()


def _revise(cli_runner, db_path, tmp_path, change) -> None:
    """Store the survey's definition changed by ``change`` through `ldp-survey revise`."""
    store = Store(db_path)
    try:
        definition = store.get_definition(SLUG)
    finally:
        store.close()
    path = tmp_path / "revised.toml"
    path.write_text(change(definition), encoding="utf-8")
    _run(cli_runner, db_path, "revise", SLUG, path)


@pytest.fixture
def versioned(cli_runner, db_path, tmp_path, accounts):
    """The smoking survey (owned by OWNER): FIRST responses, then ε changed to 1 (version 2), then SECOND more."""
    _add(db_path, SLUG, FIRST)
    _revise(cli_runner, db_path, tmp_path, lambda text: re.sub(r"^epsilon = .*$", "epsilon = 1", text, count=1,
                                                               flags=re.M))
    _add(db_path, SLUG, SECOND)


def _csv(cli_runner, db_path, slug: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(_run(cli_runner, db_path, "export", slug, "--responses").stdout)))


def _check_version_file(path, fmt: str, rows: list[list[str]], number: int) -> None:
    """Assert the file holds responses.csv's rows with the version last: its values, labels and type."""
    frame, meta = READERS[fmt](str(path))
    header, cells = rows[0], rows[1:]
    assert header[-1] == "version" and {row[-1] for row in cells} == {str(number)}
    assert list(frame.columns) == header and len(frame) == len(cells)
    assert list(frame["response_id"]) == [row[0] for row in cells]
    assert [int(value) for value in frame["version"]] == [int(row[-1]) for row in cells]
    assert (frame["version"] == number).all()
    assert meta.column_names_to_labels["version"] == VERSION_LABEL
    assert {int(value): text for value, text in meta.variable_value_labels["version"].items()} == LABELS
    # An integer: no decimals in SPSS, a long in Stata (a report column is a double, for its missing cells).
    assert meta.original_variable_types["version"] == ("F8.0" if fmt == "sav" else "%12.0g")
    assert meta.readstat_variable_types["version"] == ("double" if fmt == "sav" else "int32")


@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_each_version_exported_by_the_command_line_carries_its_number_last(cli_runner, db_path, tmp_path, versioned,
                                                                          fmt):
    for slug, number, count in ((f"{SLUG}.v1", 1, FIRST), (SLUG, 2, SECOND)):
        rows = _csv(cli_runner, db_path, slug)
        assert len(rows) == count + 1
        path = tmp_path / f"{number}.{fmt}"
        _run(cli_runner, db_path, "export", slug, "--responses", "-o", path)
        _check_version_file(path, fmt, rows, number)
    # The sandbox's file has no version, as its responses.csv has none.
    rows = list(csv.reader(io.StringIO(_run(cli_runner, db_path, "export", SLUG, "--responses", "--sandbox").stdout)))
    _run(cli_runner, db_path, "export", SLUG, "--responses", "--sandbox", "-o", tmp_path / f"sandbox.{fmt}")
    frame, _ = READERS[fmt](str(tmp_path / f"sandbox.{fmt}"))
    assert "version" not in rows[0] and list(frame.columns) == rows[0]


def test_the_downloads_carry_the_version_and_the_codebook_says_so(app, cli_runner, db_path, tmp_path, versioned):
    owner = signed_in(app, *OWNER)
    for slug, number in ((f"{SLUG}.v1", 1), (SLUG, 2)):
        rows = list(csv.reader(io.StringIO(owner.get(f"/surveys/{slug}/responses.csv").get_data(as_text=True))))
        for fmt in ("sav", "dta"):
            response = owner.get(f"/surveys/{slug}/responses.{fmt}")
            assert response.status_code == 200, (slug, fmt)
            path = tmp_path / f"web-{number}.{fmt}"
            path.write_bytes(response.get_data())
            _check_version_file(path, fmt, rows, number)
    book = owner.get(f"/surveys/{SLUG}.v1/codebook.json").get_json()
    assert "Every row ends with version = 1, as does every case of the SPSS and Stata files" in book["files"]["responses"]


@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_one_version_has_no_version_variable_even_after_a_text_correction(cli_runner, db_path, tmp_path, accounts, fmt):
    _add(db_path, SLUG, FIRST)
    _revise(cli_runner, db_path, tmp_path, lambda text: text.replace("Do you smoke", "Do you currently smoke", 1))
    rows = _csv(cli_runner, db_path, SLUG)
    path = tmp_path / f"one.{fmt}"
    _run(cli_runner, db_path, "export", SLUG, "--responses", "-o", path)
    frame, meta = READERS[fmt](str(path))
    assert "version" not in rows[0] and list(frame.columns) == rows[0] and len(frame) == len(rows) - 1 == FIRST
    assert "version" not in meta.variable_value_labels
