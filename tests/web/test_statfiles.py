"""Exports for statistics packages: SPSS .sav and Stata .dta files read back with the same cells as the CSVs and
with their labels, and the Frictionless Data Package validated by the frictionless library."""

from __future__ import annotations

import csv
import datetime
import io
import json
import math
import zipfile

import pyreadstat
import pytest
from frictionless import Package

from survey.cli import main
from survey.core.aggregate import CSV_HEADER
from survey.exports.labels import NAME_LIMIT
from survey.core.mechanisms import mechanism_for
from survey.store import Store

from conftest import OTHER, OWNER, create_from_toml, definition, domain_answers
from test_ownership import signed_in

SLUG = "long-names"
LONG = "household_income_before_taxes"  # 29 characters: past the 27 Stata's value-label sets leave
TOML = f"""
slug = "{SLUG}"
release_every = 1
title = "Names a package must shorten"
epsilon = 4
allocation = "sample"
sample = 3

[[questions]]
id = "{LONG}"
kind = "multi"
text = "Which sources of income did your household have?"
options = ["wages and salaries", "pensions", "benefits"]

[[questions]]
id = "in"
kind = "yes_no"
text = "Were you in work last week?"

[[questions]]
id = "region"
kind = "choice"
text = "Where do you live?"
options = ["north", "south", "east", "west"]

""" + definition("age")
READERS = {"sav": pyreadstat.read_sav, "dta": pyreadstat.read_dta}


@pytest.fixture
def survey(db_path, accounts):
    """The long-names survey, owned by OWNER, with 600 responses of which each skips one question."""
    design = create_from_toml(db_path, TOML)
    questions = [question["id"] for question in design["questions"]]
    reports = []
    for index in range(600):
        answer = domain_answers(design, **{qid: index * (number + 1) for number, qid in enumerate(questions)})
        del answer[questions[index % 4]]
        reports.append(answer)
    store = Store(db_path)
    try:
        store.share(SLUG, OWNER[0])
        store.add_responses(SLUG, design["hash"], reports)
    finally:
        store.close()
    return design


def export(cli_runner, db_path, *args):
    result = cli_runner.invoke(main, ["--db", str(db_path), "export", SLUG, *args])
    assert result.exit_code == 0, result.output + str(result.exception)
    return result


def csv_table(text: str) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], rows[1:]


@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_the_noisy_reports_read_back_with_the_cells_of_the_csv_and_labels(cli_runner, db_path, survey, tmp_path, fmt):
    header, rows = csv_table(export(cli_runner, db_path, "--responses").stdout)
    path = tmp_path / f"reports.{fmt}"
    export(cli_runner, db_path, "--responses", "-o", str(path))  # the format from the suffix
    frame, meta = READERS[fmt](str(path))
    assert len(frame) == len(rows) == 600 and len(frame.columns) == len(header)
    names = dict(zip(header, frame.columns))
    limit = NAME_LIMIT[fmt]
    assert all(len(name) <= limit for name in frame.columns)
    assert len({name.lower() for name in frame.columns}) == len(header)
    assert names["in"] != "in" if fmt == "dta" else names["in"] == "in"  # a word Stata reserves
    long_columns = [column for column in header if column.startswith(LONG)]
    assert len(long_columns) == 3 and all((names[column] != column) == (fmt == "dta") for column in long_columns)
    if fmt == "dta":  # as docs/reference/exports.md shows them
        assert [names[column] for column in long_columns] == [
            "household_income_befor_9cc6", "household_income_befor_711b", "household_income_befor_aba2"]
        assert names["in"] == "in_97d6"
    for column, name in names.items():
        label = meta.column_names_to_labels[name]
        if name != column:
            assert column in label, (column, label)  # a renamed column's label names the CSV column
    for number, row in enumerate(rows):
        for column, cell in zip(header, row):
            value = frame.iloc[number][names[column]]
            if column == "response_id":
                assert value == cell
            elif column == "received_day":
                assert value == datetime.date.fromisoformat(cell)
            elif cell == "":
                assert math.isnan(value), (number, column)
            else:
                assert value == int(cell), (number, column)
    assert sum(math.isnan(value) for value in frame[names["in"]]) == 150  # every fourth response skipped it
    questions = {question["id"]: question for question in survey["questions"]}
    for column, name in names.items():
        qid = column.split("__")[0]
        if qid in questions:
            assert questions[qid]["text"][:20] in meta.column_names_to_labels[name]
            expected = mechanism_for(questions[qid]).value_labels()
            assert {int(key): text for key, text in meta.variable_value_labels.get(name, {}).items()} == expected
    assert meta.variable_value_labels[names["in"]] == {0: "reported no", 1: "reported yes"}
    assert set(meta.variable_value_labels[names["region"]].values()) == {
        "reported north", "reported south", "reported east", "reported west"}
    assert meta.file_label.startswith("Names a package must shorten: noisy reports")


@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_the_estimates_read_back_with_the_values_of_the_json(cli_runner, db_path, survey, tmp_path, fmt):
    path = tmp_path / "estimates.data"
    export(cli_runner, db_path, "--aggregates", "--format", fmt, "--level", "0.9", "-o", str(path))
    frame, meta = READERS[fmt](str(path))
    result = cli_runner.invoke(main, ["--db", str(db_path), "aggregate", SLUG, "--format", "json", "--level", "0.9"])
    rows = json.loads(result.stdout)
    assert list(frame.columns) == CSV_HEADER and len(frame) == len(rows) == 3 + 1 + 4 + 1
    for number, row in enumerate(rows):
        for column in CSV_HEADER:
            value, expected = frame.iloc[number][column], row[column]
            if expected is None:
                assert math.isnan(value)
            elif isinstance(expected, str):
                assert value == expected
            else:
                assert value == pytest.approx(expected, rel=1e-15, abs=0)
    assert meta.column_names_to_labels["ci_low"] == "Lower confidence limit"


def test_the_data_package_is_valid_and_a_bad_cell_makes_it_invalid(cli_runner, db_path, survey, tmp_path):
    directory = tmp_path / "package"
    result = export(cli_runner, db_path, "--package", str(directory))
    assert sorted(path.name for path in directory.iterdir()) == [
        "aggregates.csv", "codebook.json", "datapackage.json", "responses.csv"]
    assert "datapackage.json" in result.stderr
    assert (directory / "responses.csv").read_text(encoding="utf-8") == export(cli_runner, db_path, "--responses").stdout
    report = Package(str(directory / "datapackage.json")).validate()
    assert report.valid, report.flatten(["rowNumber", "fieldName", "type", "note"])
    assert [task.stats["rows"] for task in report.tasks if task.type == "table"] == [600, 9]
    descriptor = json.loads((directory / "datapackage.json").read_text(encoding="utf-8"))
    fields = {field["name"]: field for field in descriptor["resources"][0]["schema"]["fields"]}
    assert fields["region"]["constraints"] == {"minimum": 0, "maximum": 3}
    assert fields["in"]["title"] == "Were you in work last week?"
    # A report no randomizer of the design can send (2 in a 0/1 column) is caught by the schema.
    text = (directory / "responses.csv").read_text(encoding="utf-8")
    header, rows = csv_table(text)
    column = header.index("in")
    row = next(row for row in rows if row[column] != "")
    row[column] = "2"
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows([header, *rows])
    (directory / "responses.csv").write_text(out.getvalue(), encoding="utf-8", newline="")
    broken = Package(str(directory / "datapackage.json")).validate()
    assert not broken.valid
    assert ["constraint-error"] == sorted({error[0] for error in broken.flatten(["type"])})


@pytest.mark.parametrize("args, message", [
    (["--responses", "--format", "sav"], "name it with -o FILE.sav"),
    (["--codebook", "--format", "dta", "-o", "x.dta"], "--codebook cannot be written as dta"),
    (["--aggregates", "-o", "x.json"], "--aggregates cannot be written as json"),
    (["--package", "dir", "-o", "x.csv"], "leave out -o and --format"),
    (["--package", "dir", "--responses"], "--responses and --package cannot go together"),
])
def test_a_wrong_combination_is_refused_with_the_reason(cli_runner, db_path, survey, tmp_path, args, message):
    result = cli_runner.invoke(main, ["--db", str(db_path), "export", SLUG, *args])
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert not (tmp_path / "dir").exists()


def test_the_results_page_links_each_download_and_only_the_owner_gets_them(app, survey, tmp_path):
    owner, other = signed_in(app, *OWNER), signed_in(app, *OTHER)
    page = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    addresses = [f"/surveys/{SLUG}/responses.sav", f"/surveys/{SLUG}/responses.dta",
                 f"/surveys/{SLUG}/results.sav?level=0.95", f"/surveys/{SLUG}/results.dta?level=0.95",
                 f"/surveys/{SLUG}/package.zip?level=0.95"]
    for address in addresses:
        assert f'href="{address}"' in page, address
        response = owner.get(address)
        assert response.status_code == 200, address
        assert response.headers["Content-Disposition"].startswith(f'attachment; filename="{SLUG}-')
        assert other.get(address).status_code == 404, address
    (tmp_path / "r.dta").write_bytes(owner.get(addresses[1]).get_data())
    assert len(pyreadstat.read_dta(str(tmp_path / "r.dta"))[0]) == 600
    assert owner.get(f"/surveys/{SLUG}/responses.por").status_code == 404
    first, second = (owner.get(addresses[4]).get_data() for _ in range(2))
    assert first == second  # no time of download in the archive
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        assert sorted(archive.namelist()) == [f"{SLUG}/{name}" for name in (
            "aggregates.csv", "codebook.json", "datapackage.json", "responses.csv")]
        assert archive.read(f"{SLUG}/responses.csv") == owner.get(f"/surveys/{SLUG}/responses.csv").get_data()
        assert archive.read(f"{SLUG}/aggregates.csv") == owner.get(f"/surveys/{SLUG}/results.csv").get_data()
        archive.extractall(tmp_path / "zip")
    assert Package(str(tmp_path / "zip" / SLUG / "datapackage.json")).validate().valid


FORMATS = {"aggregates": "csv (.csv), sav (.sav), dta (.dta), xlsx (.xlsx)",
           "responses": "csv (.csv), sav (.sav), dta (.dta)", "codebook": "json (.json)"}


@pytest.mark.parametrize("what, args, message", [
    ("aggregates", ["-o", "x.xls"], "export does not write .xls files"),
    ("aggregates", ["-o", "x.parquet"], "export does not write .parquet files"),
    ("responses", ["-o", "x.XLS"], "export does not write .xls files"),
    ("responses", ["-o", "x.txt"], "export does not write .txt files"),
    ("codebook", ["-o", "x.csv"], "--codebook cannot be written as csv"),
    ("codebook", ["-o", "x.xlsx"], "--codebook cannot be written as xlsx"),
    ("responses", ["-o", "x.xlsx"], "--responses cannot be written as xlsx"),
    ("aggregates", ["--format", "dta", "-o", "x.csv"], "--format dta contradicts the suffix of x.csv (csv)"),
    ("aggregates", ["--format", "csv", "-o", "x.xlsx"], "--format csv contradicts the suffix of x.xlsx (xlsx)"),
    ("responses", ["--format", "sav", "-o", "x.dta"], "--format sav contradicts the suffix of x.dta (dta)"),
    ("aggregates", ["--format", "xlsx"], "the xlsx format is binary: name it with -o FILE.xlsx"),
])
def test_an_unknown_or_contradictory_suffix_is_refused_listing_the_formats(cli_runner, db_path, survey, tmp_path,
                                                                            what, args, message):
    out = tmp_path / "out"
    out.mkdir()
    args = [str(out / arg) if arg.startswith("x.") else arg for arg in args]
    result = cli_runner.invoke(main, ["--db", str(db_path), "export", SLUG, f"--{what}", *args])
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert "contradicts" in message or "binary" in message or FORMATS[what] in result.stderr, result.stderr
    assert "Traceback" not in result.output and not list(out.iterdir())


def test_an_xlsx_name_gets_the_workbook_pandas_reads_with_the_csv_values(cli_runner, db_path, survey, tmp_path):
    pandas = pytest.importorskip("pandas")
    header, rows = csv_table(export(cli_runner, db_path, "--aggregates", "--level", "0.9").stdout)
    path = tmp_path / "Estimates.XLSX"
    result = export(cli_runner, db_path, "--aggregates", "--level", "0.9", "-o", str(path))
    assert f"to {path}" in result.stderr
    sheets = pandas.read_excel(path, sheet_name=None, dtype=object, keep_default_na=False)
    assert list(sheets) == ["estimates", "estimands", "columns", "about"]
    frame = sheets["estimates"]
    assert list(frame.columns) == header and len(frame) == len(rows) == 9
    for row, cells in zip(rows, frame.itertuples(index=False)):
        for text, value in zip(row, cells):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                assert value == pytest.approx(float(text), rel=0, abs=5e-7), (text, value)  # the CSV's 6 decimals
            else:
                assert str(value) == text
    assert len(sheets["estimands"]) == 9


def test_a_name_without_a_suffix_is_csv_and_format_names_an_unknown_suffix(cli_runner, db_path, survey, tmp_path):
    expected = export(cli_runner, db_path, "--responses").stdout
    export(cli_runner, db_path, "--responses", "-o", str(tmp_path / "reports"))
    assert (tmp_path / "reports").read_text(encoding="utf-8") == expected
    export(cli_runner, db_path, "--responses", "--format", "csv", "-o", str(tmp_path / "reports.part"))
    assert (tmp_path / "reports.part").read_text(encoding="utf-8") == expected


ELEVEN = """
slug = "eleven"
release_every = 1
title = "One multi-select of eleven long options"
epsilon = 2

[[questions]]
id = "sources_of_household_income_now"
kind = "multi"
text = "Which of these did your household receive in the last twelve months?"
options = [%s]
""" % ", ".join(f'"income source number {index:02d} with a long label"' for index in range(11))


def test_eleven_long_options_give_a_dta_on_the_web_and_the_command_line(app, cli_runner, db_path, accounts, tmp_path):
    """Issue 32: the 11th labelled column's value-label set went past Stata's 32 characters (a 500, a traceback)."""
    design = create_from_toml(db_path, ELEVEN)
    store = Store(db_path)
    try:
        store.share("eleven", OWNER[0])
        store.add_responses("eleven", design["hash"], [domain_answers(design, sources_of_household_income_now=index)
                                                       for index in range(30)])
    finally:
        store.close()
    owner = signed_in(app, *OWNER)
    for fmt in ("dta", "sav"):
        response = owner.get(f"/surveys/eleven/responses.{fmt}")
        assert response.status_code == 200, fmt
        (tmp_path / f"web.{fmt}").write_bytes(response.get_data())
        result = cli_runner.invoke(main, ["--db", str(db_path), "export", "eleven", "--responses", "--format", fmt,
                                          "-o", str(tmp_path / f"cli.{fmt}")])
        assert result.exit_code == 0, result.output
        for name in ("web", "cli"):
            frame, meta = READERS[fmt](str(tmp_path / f"{name}.{fmt}"))
            assert len(frame) == 30 and len(frame.columns) == 2 + 11
            assert all(len(column) <= NAME_LIMIT[fmt] for column in frame.columns)
            assert len(meta.variable_value_labels) == 11
