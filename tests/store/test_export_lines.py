"""Exports in constant memory: the lines the database makes page by page give the bytes of the
response-by-response writers, on both backends, for every encoding, the sandbox and unasked questions;
the command line and the web stream them, and an SPSS/Stata file is refused past its bound."""

from __future__ import annotations

import io
import json
import re
import zipfile

import numpy as np
import pytest

from survey.cli import main as cli
from survey.core.aggregate import rows_to_csv
from survey.core.definition import parse_definition
from survey.core.design import build_design
from survey.core.simulate import complete_truth, simulate_answers, simulate_reports
from survey.exports.codebook import codebook
from survey.exports.datapackage import data_package
from survey.exports.export import csv_from_chunks, csv_from_lines, header, line_cells, responses_csv
from survey.exports.statfiles import StatfileTooLarge, responses_file, responses_file_from_lines
from survey.store import Store
from survey.store.lines import (BIT_CELL, LINE_FIXED, PAGE_BYTES, SCALAR_CELL, bit_runs, cell_sql, default_page,
                                line_value_sql, lookup_sql)

pytestmark = pytest.mark.both_backends

WIDE = [f"option {i}" for i in range(130)]
PAGE = 7


def design_of(allocation: dict) -> dict:
    """Return a survey with every report encoding: bits, index, a 130-option bit vector (three words), levels."""
    return build_design(parse_definition({
        "slug": "mixed", "title": "Mixed", "epsilon": 7.5, "release_every": 1, **allocation,
        "questions": [
            {"id": "smoker", "kind": "yes_no", "text": "Smoke?"},
            {"id": "colour", "kind": "choice", "text": "Colour?", "options": ["red", "green", "blue"]},
            {"id": "wide", "kind": "choice", "text": "Wide", "options": WIDE},
            {"id": "sports", "kind": "multi", "text": "Sports?", "options": ["run", "swim", "ride"]},
            {"id": "age", "kind": "number", "text": "Age?", "min": 18, "max": 90},
        ]}))


@pytest.fixture(params=[{}, {"allocation": "sample", "sample": 2}], ids=["all-asked", "sampled"])
def stored(request, db_path):
    """A store holding 40 responses and 9 simulated sandbox ones (under sample allocation, NULL cells)."""
    design = design_of(request.param)
    rng = np.random.default_rng(5)
    truth = complete_truth(design, {}, rng)
    store = Store(db_path)
    store.create_survey("", design)
    store.add_responses("mixed", design["hash"], simulate_answers(design, truth, 40, rng))
    columns, asked = simulate_reports(design, truth, 9, rng)
    store.add_report_columns("mixed", design["hash"], columns, asked=asked, source="simulated")
    yield store, design
    store.close()


def new_csv(store, design, *, sandbox=False, page=PAGE) -> str:
    return "".join(csv_from_lines(design, store.iter_response_lines("mixed", line_cells(design), sandbox=sandbox,
                                                                    page=page), sandbox=sandbox))


def test_the_lines_give_the_bytes_of_the_response_writer(stored):
    store, design = stored
    assert len(line_cells(design)) > 90  # more values than one format() call takes
    for sandbox in (False, True):
        old = responses_csv(design, store.iter_responses("mixed", sandbox=sandbox), sandbox=sandbox)
        for page in (1, PAGE, 1000):
            assert new_csv(store, design, sandbox=sandbox, page=page) == old
        assert old.count("\r\n") == (9 if sandbox else 40) + 1
        if design.get("allocation") == "sample":
            assert ",," in old  # a question not asked is an empty cell


def test_the_pages_are_bounded_and_in_random_id_order(stored):
    store, design = stored
    pages = list(store.iter_response_lines("mixed", line_cells(design), page=PAGE))
    assert [len(page) for page in pages] == [7, 7, 7, 7, 7, 5]
    ids = [line.split(",", 1)[0] for page in pages for line in page]
    assert ids == sorted(ids) and len(set(ids)) == 40


def test_an_empty_survey_is_its_header(db_path):
    design = design_of({})
    store = Store(db_path)
    try:
        store.create_survey("", design)
        assert new_csv(store, design) == responses_csv(design, []) and new_csv(store, design).count("\r\n") == 1
    finally:
        store.close()


def undated(content: bytes, fmt: str) -> bytes:
    """Return a .sav or .dta file without the time it was written (SPSS: header bytes 92-108; Stata: <timestamp>)."""
    if fmt == "sav":
        return content[:92] + content[109:]
    return re.sub(rb"<timestamp>.*?</timestamp>", b"", content, count=1, flags=re.S)


def test_statistics_files_from_lines_are_the_bytes_of_the_record_writer(stored):
    store, design = stored
    for fmt in ("sav", "dta"):
        for sandbox in (False, True):
            old = responses_file(design, store.iter_responses("mixed", sandbox=sandbox), fmt, sandbox=sandbox)
            lines = store.iter_response_lines("mixed", line_cells(design), sandbox=sandbox, page=PAGE)
            new = responses_file_from_lines(design, lines, fmt, sandbox=sandbox, rows=49)
            assert len(new) == len(old) and undated(new, fmt) == undated(old, fmt), (fmt, sandbox)


def test_a_statistics_file_past_its_bound_is_refused_before_reading(stored, monkeypatch):
    store, design = stored
    monkeypatch.setenv("LDP_SURVEY_STATFILE_MAX_ROWS", "39")

    def never():
        raise AssertionError("read")
        yield

    with pytest.raises(StatfileTooLarge, match=r"40 responses are more than .*\(39: .*responses.csv"):
        responses_file_from_lines(design, never(), "sav", rows=40)


def test_the_command_line_streams_the_csv_and_the_package_and_refuses_a_large_sav(stored, db_path, tmp_path,
                                                                                  cli_runner, monkeypatch):
    store, design = stored
    old = responses_csv(design, store.iter_responses("mixed"))
    printed = cli_runner.invoke(cli, ["--db", str(db_path), "export", "mixed", "--responses"])
    assert printed.exit_code == 0, printed.output
    assert printed.stdout_bytes == old.encode()
    written = cli_runner.invoke(cli, ["--db", str(db_path), "export", "mixed", "--responses",
                                      "-o", str(tmp_path / "r.csv")])
    assert written.exit_code == 0 and (tmp_path / "r.csv").read_bytes() == old.encode()
    packaged = cli_runner.invoke(cli, ["--db", str(db_path), "export", "mixed", "--package", str(tmp_path / "p")])
    assert packaged.exit_code == 0, packaged.output
    assert (tmp_path / "p" / "responses.csv").read_bytes() == old.encode()
    monkeypatch.setenv("LDP_SURVEY_STATFILE_MAX_ROWS", "10")
    refused = cli_runner.invoke(cli, ["--db", str(db_path), "export", "mixed", "--responses",
                                      "-o", str(tmp_path / "r.sav")])
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert "40 responses are more than an SPSS or Stata file is made of (10" in refused.stderr
    assert not (tmp_path / "r.sav").exists()


def old_zip(slug: str, files: dict) -> bytes:
    """Return the package's zip as it was built before, in memory with writestr."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(zipfile.ZipInfo(f"{slug}/{name}", date_time=(1980, 1, 1, 0, 0, 0)), text,
                             compress_type=zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def test_the_web_streams_the_package_zip_with_its_former_bytes_and_refuses_a_large_sav(stored, db_path,
                                                                                       monkeypatch):
    from werkzeug.security import generate_password_hash

    from survey.core.aggregate import aggregate_counts
    from survey.web import create_app

    store, design = stored
    store.add_user("owner@example.org", generate_password_hash("owner password"))
    store.share("mixed", "owner@example.org")
    app = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "test",
                      "MAX_SUBMISSIONS_PER_MINUTE": 0})
    try:
        client = app.test_client()
        login = client.get("/login").get_data(as_text=True)
        csrf = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', login).group(1)
        assert client.post("/login", data={"csrf_token": csrf, "email": "owner@example.org",
                                           "password": "owner password"}).status_code == 302
        response = client.get("/surveys/mixed/package.zip", buffered=False)
        assert response.status_code == 200 and response.is_streamed
        body = b"".join(bytes(chunk) for chunk in response.response)
        response.close()
        assert int(response.headers["Content-Length"]) == len(body)
        design = store.get_design("mixed")
        rows = aggregate_counts(design, store.question_counts("mixed"))
        files = {"responses.csv": responses_csv(design, store.iter_responses("mixed")),
                 "aggregates.csv": rows_to_csv(rows),
                 "codebook.json": json.dumps(codebook(design, simulated=9), indent=2, ensure_ascii=False) + "\n",
                 "datapackage.json": json.dumps(data_package(design), indent=2, ensure_ascii=False) + "\n"}
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            assert {name: archive.read(f"mixed/{name}").decode() for name in files} == files
        assert body == old_zip("mixed", files)
        monkeypatch.setenv("LDP_SURVEY_STATFILE_MAX_ROWS", "10")
        refused = client.get("/surveys/mixed/responses.sav")
        assert refused.status_code == 422
        assert "40 responses are more than" in refused.get_data(as_text=True)
    finally:
        app.extensions["ldp_stores"].close_all()


def chunks_of(store, design, *, sandbox=False, page=None) -> list[str]:
    return list(store.iter_response_chunks("mixed", line_cells(design), sandbox=sandbox, page=page))


@pytest.mark.parametrize("sandbox", [False, True], ids=["responses", "sandbox"])
def test_the_chunks_give_the_bytes_with_a_page_boundary_at_the_chunk_size(stored, sandbox):
    store, design = stored
    rows = 9 if sandbox else 40
    old = responses_csv(design, store.iter_responses("mixed", sandbox=sandbox), sandbox=sandbox)
    head = old.split("\r\n", 1)[0] + "\r\n"
    for page in (1, rows // 3, rows - 1, rows, rows + 1, None):
        chunks = chunks_of(store, design, sandbox=sandbox, page=page)
        assert head + "".join(chunks) == old, page
        assert "".join(csv_from_chunks(design, iter(chunks), sandbox=sandbox)) == old
        sizes = [chunk.count("\r\n") for chunk in chunks]
        expected = [page] * (rows // page) + ([rows % page] if rows % page else []) if page else [rows]
        assert sizes == expected, page  # a last page exactly full is followed by no empty chunk
        assert all(chunk.endswith("\r\n") and "\r\n\r\n" not in chunk for chunk in chunks)
    ids = [line.split(",", 1)[0] for line in "".join(chunks_of(store, design, sandbox=sandbox, page=4)).splitlines()]
    assert ids == sorted(ids) and len(set(ids)) == rows  # random-id order across and within the pages


def test_unasked_questions_are_empty_cells_in_every_column_of_the_chunks(stored):
    store, design = stored
    width = len(header(design, sandbox=True))
    names = header(design, sandbox=True)
    wide = [index for index, name in enumerate(names) if name.startswith("wide__")]
    lines = "".join(chunks_of(store, design, sandbox=True, page=3)).splitlines()
    cells = [line.split(",") for line in lines]
    assert all(len(row) == width for row in cells)
    blanks = [row for row in cells if row[wide[0]] == ""]
    if design.get("allocation") == "sample":
        assert blanks and all(all(row[index] == "" for index in wide) for row in blanks)
        assert all(all(row[index] in ("0", "1") for index in wide) for row in cells if row not in blanks)
    else:
        assert not any("" in row for row in cells)


def test_a_page_of_the_widest_lines_stays_within_its_byte_bound(db_path):
    design = design_of({})
    cells = line_cells(design)
    page = default_page(cells)
    bound = LINE_FIXED + sum(SCALAR_CELL if option is None else BIT_CELL for _, option in cells)
    assert page * bound <= PAGE_BYTES < (page + 1) * bound
    store = Store(db_path)
    try:
        store.create_survey("", design)
        rng = np.random.default_rng(3)
        store.add_responses("mixed", design["hash"], simulate_answers(design, complete_truth(design, {}, rng), 5, rng))
        columns, asked = simulate_reports(design, complete_truth(design, {}, rng), 4, rng)
        store.add_report_columns("mixed", design["hash"], columns, asked=asked, source="test")
        for sandbox in (False, True):
            lines = "".join(chunks_of(store, design, sandbox=sandbox)).split("\r\n")[:-1]
            assert lines and max(len(line) + 2 for line in lines) <= bound
    finally:
        store.close()


@pytest.mark.parametrize("options", [[0, 1, 2], [3, 4, 5, 6, 7], [60, 61, 62], [2, 0, 4]])
def test_a_lookup_of_bits_is_the_text_of_each_bit_for_any_integer_and_null(options):
    import sqlite3

    values = [None, 0, 1, 5, 31, 255, 2**62 + 7, 2**63 - 1, -1, -2**63, -12345]
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE t (w INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?)", [(value,) for value in values])
        bits = " || ',' || ".join(f"coalesce({cell_sql(['w'], option)}, '')" for option in options)
        rows = conn.execute(f"SELECT {lookup_sql('w', options)}, {bits} FROM t ORDER BY rowid").fetchall()
    finally:
        conn.close()
    assert [looked for looked, _ in rows] == [one for _, one in rows]
    assert rows[0][0] == "," * (len(options) - 1)


def test_bit_runs_stay_in_one_word_and_span_and_a_very_wide_survey_keeps_its_select_short():
    cells = [(0, None), (1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 62), (1, 63), (2, None), (3, 1)]
    assert [len(run) for run in bit_runs(cells)] == [1, 5, 1, 1, 1, 1, 1]
    wide = build_design(parse_definition({
        "slug": "wide", "title": "Wide", "epsilon": 20, "release_every": 1,
        "questions": [{"id": f"q{i}", "kind": "choice", "text": "?", "options": WIDE[:64]} for i in range(100)]}))
    sql = line_value_sql(wide, line_cells(wide), sandbox=False, lookup=True)
    assert sql == line_value_sql(wide, line_cells(wide), sandbox=False) and len(sql) < 1_000_000
    assert "substr(x'" in line_value_sql(design_of({}), line_cells(design_of({})), sandbox=False, lookup=True)
