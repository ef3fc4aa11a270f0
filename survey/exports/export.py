"""Write the stored noisy reports of a survey as CSV (the researcher's raw-data export).

Lines end with CRLF (RFC 4180), like the aggregates CSV. Columns: response_id,
received_day, then per question in design order its columns (``codebook.response_columns``):
one 0/1 column per bit of a bit-list report (OUE choice, multi), named ``QID__LABEL``
(e.g. ``sports__run``), so a spreadsheet keeps every bit; one column ``QID`` for any other
report (0/1 for rr and duchi, the option index for grr). A question the respondent was not
asked is an empty cell in each of its columns. An export of the sandbox (test answers and simulated
respondents, never the real responses) has a ``source`` column after received_day: "test" or
"simulated". The codebook (``survey.exports.codebook``) explains every column. ``response_records``
gives the same rows as JSON-ready dicts (None for an empty cell), for the API's paginated JSON.
``csv_from_lines`` writes the same bytes from lines the store makes page by page
(``Store.iter_response_lines`` over ``line_cells``), ``csv_from_chunks`` from the store's pages
of text (``Store.iter_response_chunks``): the exports' fast path, in constant memory.
"""

from __future__ import annotations

import csv
import io
from typing import Iterable, Iterator

from .codebook import response_columns, version_column


def report_cells(question_columns: list[dict], report) -> list[int]:
    """Return the cells of one report in its question's columns: its bits, or the integer."""
    if isinstance(report, (list, tuple)):
        return [int(report[column["option"]]) for column in question_columns]
    return [int(report)]


def header(design: dict, *, sandbox: bool = False) -> list[str]:
    """Return the header of responses.csv: response_id, received_day (source, for the sandbox), the report columns."""
    return ["response_id", "received_day", *(["source"] if sandbox else []),
            *(column["name"] for column in response_columns(design))]


def _row_maker(design: dict, *, sandbox: bool = False):
    """Return a function giving one response's cells in the header's order ("" for a question not asked)."""
    columns = response_columns(design)
    groups = [(question["id"], [column for column in columns if column["question"] == question["id"]])
              for question in design["questions"]]

    def cells(response: dict) -> list:
        answers = response["answers"]
        row = [response["id"], response["received_day"], *([response["source"]] if sandbox else [])]
        for qid, own in groups:
            row.extend(report_cells(own, answers[qid]) if qid in answers else [""] * len(own))
        return row

    return cells


def iter_responses_csv(design: dict, responses: Iterable[dict], *, rows_per_chunk: int = 1000,
                       sandbox: bool = False) -> Iterator[str]:
    """Yield the CSV of responses ``{"id", "received_day", "answers"}`` in chunks of text (for streaming).

    With ``sandbox`` the responses also carry their ``source``, written after received_day.
    """
    cells = _row_maker(design, sandbox=sandbox)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(header(design, sandbox=sandbox))
    for count, response in enumerate(responses, start=1):
        writer.writerow(cells(response))
        if count % rows_per_chunk == 0:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()


def line_cells(design: dict) -> list[tuple[int, int | None]]:
    """Return each report column of the header as (question index, option): a bit's option, None for a scalar."""
    index = {question["id"]: number for number, question in enumerate(design["questions"])}
    return [(index[column["question"]], column["option"]) for column in response_columns(design)]


def line_bound(design: dict, *, sandbox: bool = False) -> int:
    """Return an upper bound on the bytes of one line of responses.csv (20 digits a cell, the line end)."""
    return 16 + 1 + 10 + (10 if sandbox else 0) + 21 * len(response_columns(design)) + 2


def csv_from_lines(design: dict, pages: Iterable[list[str]], *, sandbox: bool = False) -> Iterator[str]:
    """Yield responses.csv as chunks of text, one per page of lines (``Store.iter_response_lines``), the header in the first.

    The lines hold only integers, hex ids, ISO days and sandbox sources, which CSV never quotes,
    so the bytes are those of ``iter_responses_csv``.
    """
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow(header(design, sandbox=sandbox))
    head = out.getvalue()
    for page in pages:
        if page:
            yield head + "\r\n".join(page) + "\r\n"
            head = ""
    if head:
        yield head


def csv_from_chunks(design: dict, chunks: Iterable[str], *, sandbox: bool = False,
                    version: int | None = None) -> Iterator[str]:
    """Yield responses.csv as the store's chunks of CRLF-ended lines (``Store.iter_response_chunks``), the header in the first.

    The same bytes and chunks as ``csv_from_lines``, with no work per row in Python. With
    ``version`` (a survey that has several versions) every row ends with a ``version`` column.
    """
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow(header(design, sandbox=sandbox) + (
        [version_column(design, sandbox=sandbox)] if version is not None else []))
    head = out.getvalue()
    for chunk in chunks:
        # Every cell is a number, an id or a day: a line break only ever ends a row.
        yield head + (chunk if version is None else chunk.replace("\r\n", f",{int(version)}\r\n"))
        head = ""
    if head:
        yield head


def response_records(design: dict, responses: Iterable[dict], *, sandbox: bool = False) -> Iterator[dict]:
    """Yield each response as a dict over the CSV's header: the same cells, None where the CSV's is empty."""
    names, cells = header(design, sandbox=sandbox), _row_maker(design, sandbox=sandbox)
    for response in responses:
        yield {name: None if cell == "" else cell for name, cell in zip(names, cells(response))}


def responses_csv(design: dict, responses: Iterable[dict], *, sandbox: bool = False) -> str:
    """Return the CSV of responses ``{"id", "received_day", "answers"}`` (as Store.iter_responses yields)."""
    return "".join(iter_responses_csv(design, responses, sandbox=sandbox))
