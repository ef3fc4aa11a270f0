"""`analyze` reads responses.csv in chunks parsed in numpy: its numbers are those of the row-by-row reading it
replaced (kept here as the reference), byte for byte, however the file is cut into chunks and whatever odd but
valid lines it holds; and a bad cell anywhere is refused with the same words, row and line as row by row."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from survey.cli import files as files_module
from survey.core import aggregate as agg
from survey.core import crosstab as xt
from survey.exports.codebook import codebook
from survey.core.codec import decode_report, encode_column
from survey.core.csvcells import integers, split_cells
from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.exports.export import responses_csv
from survey.core.modelling import fit_reports, model_questions
from survey.core.reanalysis import ReanalysisError, aggregate_files, answers_from_rows, crosstab_files, \
    regression_files
from survey.core.regression_text import regression_to_csv
from survey.core.simulate import complete_truth, simulate_answers

from test_analysis_scripts import EVERY_KIND, SAMPLED

ANALYSES = {  # design: (crosstab pair, regression outcome and covariates)
    "every-mechanism": (("colour", "pet"), ("smoker", ["pet", "colour"])),
    "sampled": (None, None),
}


def _design(text: str) -> dict:
    return build_design(parse_definition_toml(text, source="test"))


@pytest.fixture(scope="module", params=["every-mechanism", "sampled"])
def survey(request):
    """A design, its codebook and the exported responses.csv (CRLF lines) of 1,200 simulated respondents."""
    design = _design(EVERY_KIND if request.param == "every-mechanism" else SAMPLED)
    rng = np.random.default_rng(11)
    answers = simulate_answers(design, complete_truth(design, {}, rng), 1200, rng)
    text = responses_csv(design, [{"id": index, "received_day": "2026-11-27", "answers": answer}
                                  for index, answer in enumerate(answers, start=1)])
    return request.param, design, codebook(design), text.encode()


def reference(design: dict, book: dict, data: bytes, analysis: str, names) -> str:
    """The numbers as `analyze` computed them before chunks: every row's answers, then counted at once."""
    header, *rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    answers = list(answers_from_rows(book, design, header, [row for row in rows if row]))
    if analysis == "aggregate":
        return agg.rows_to_csv(agg.aggregate(design, answers, level=0.95))
    questions = {question["id"]: question for question in design["questions"]}
    qids = list(names) if analysis == "crosstab" else [names[0], *names[1]]
    complete = [answer for answer in answers if all(qid in answer for qid in qids)]
    encoded = [encode_column(questions[qid], [answer[qid] for answer in complete]) for qid in qids]
    distinct, counts = np.unique(np.concatenate(encoded, axis=1), axis=0, return_counts=True)
    if analysis == "crosstab":
        width = encoded[0].shape[1]
        return xt.crosstab_to_csv(xt.crosstab(questions[qids[0]], questions[qids[1]], distinct[:, :width],
                                              distinct[:, width:], counts, level=0.95))
    reports, start = [], 0
    for qid, words in zip(qids, encoded):
        reports.append([decode_report(questions[qid], row) for row in distinct[:, start:start + words.shape[1]]])
        start += words.shape[1]
    return regression_to_csv(fit_reports(model_questions(design, names[0], names[1]), reports, counts, level=0.95))


def chunked(book: dict, data: bytes, analysis: str, names, tmp_path, *, slow: bool = False) -> str:
    """The numbers of the command line's reader (chunks; with ``slow`` its rows one by one)."""
    path = tmp_path / "responses.csv"
    path.write_bytes(data)
    with path.open("rb") as handle:
        header, rows = files_module.open_responses(handle, path)
        rows = iter(rows) if slow else rows
        if analysis == "aggregate":
            return agg.rows_to_csv(aggregate_files(book, header, rows, level=0.95))
        if analysis == "crosstab":
            return xt.crosstab_to_csv(crosstab_files(book, header, rows, *names, level=0.95))
        return regression_to_csv(regression_files(book, header, rows, names[0], names[1], level=0.95))


def odd_but_valid(data: bytes) -> bytes:
    """The same responses with LF and CRLF lines mixed, blank lines, a quoted cell, and no final line end."""
    lines = data.split(b"\r\n")[:-1]
    out = []
    for number, line in enumerate(lines):
        if number == 300:
            line = b'"' + line.replace(b",", b'",', 1)  # a quoted response id: that chunk is read row by row
        out.append(line + (b"\r\n" if number % 3 else b"\n") + (b"\n" if number % 250 == 7 else b""))
    return b"".join(out).rstrip(b"\r\n")


@pytest.mark.slow
@pytest.mark.parametrize("chunk", [1 << 22, 1000])
def test_the_chunked_reading_gives_the_row_by_row_numbers_byte_for_byte(survey, tmp_path, monkeypatch, chunk):
    name, design, book, data = survey
    monkeypatch.setattr(files_module, "CHUNK", chunk)
    pair, model = ANALYSES[name]
    cases = [("aggregate", None)] + ([("crosstab", pair)] if pair else []) + ([("regress", model)] if model else [])
    for variant in (data, odd_but_valid(data)):
        for analysis, names in cases:
            expected = reference(design, book, variant, analysis, names)
            assert chunked(book, variant, analysis, names, tmp_path) == expected, (analysis, chunk)


def _outcome(book, data, tmp_path, **kwargs) -> str:
    """Return the aggregate's CSV, or the error's message."""
    try:
        return chunked(book, data, "aggregate", None, tmp_path, **kwargs)
    except ReanalysisError as exc:
        return f"ReanalysisError: {exc}"
    except files_module.click.ClickException as exc:
        return f"ClickException: {exc.message}"


@pytest.mark.parametrize("bad", [b"2", b"-1", b" 1", b"1.0", b"", b"9" * 19, b"\x00", b"\xe9", b"1\r1", b'"1'])
def test_a_bad_cell_deep_in_the_file_is_refused_as_row_by_row(survey, tmp_path, monkeypatch, bad):
    """The first report of row 1,001 (after a blank line, so rows and lines differ) made bad: the same error."""
    _, design, book, data = survey
    monkeypatch.setattr(files_module, "CHUNK", 2048)
    lines = data.split(b"\r\n")
    lines[500] += b"\r\n"
    cells = lines[1000].split(b",")
    cells[2] = bad
    lines[1000] = b",".join(cells)
    broken = b"\r\n".join(lines)
    expected = _outcome(book, broken, tmp_path, slow=True)
    assert _outcome(book, broken, tmp_path) == expected
    assert expected.startswith(("ReanalysisError", "ClickException")) or bad == b""  # an empty cell is a question not asked under sample allocation


def test_plain_cells_are_split_and_read_as_numbers_and_anything_else_is_left_to_the_rows():
    cells = split_cells(b"a,1,\r\n\r\nb,22,3\n", 3, 100)
    assert cells.rows == 2 and cells.lengths.tolist() == [[1, 1, 0], [1, 2, 1]]
    values, present = integers(cells, 1)
    assert values.tolist() == [1, 22] and present.tolist() == [True, True]
    values, present = integers(cells, 2)
    assert values.tolist() == [0, 3] and present.tolist() == [False, True]
    assert integers(cells, 0) is None
    for data in (b'a,"1",2\n', b"a,1\n", b"a,1,2,3\n", b"a,1\r,2\n", b"a,\x00,2\n", b"\xff,1,2\n"):
        assert split_cells(data, 3, 100) is None, data
    assert split_cells(b"a,1,2\n" + b"x" * 200 + b"\n", 3, 100) is None
