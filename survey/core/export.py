"""Write the stored noisy reports of a survey as CSV (the researcher's raw-data export).

Lines end with CRLF (RFC 4180), like the aggregates CSV. Columns: response_id,
received_day, then per question in design order its columns (``codebook.response_columns``):
one 0/1 column per bit of a bit-list report (OUE choice, multi), named ``QID__LABEL``
(e.g. ``sports__run``), so a spreadsheet keeps every bit; one column ``QID`` for any other
report (0/1 for rr and duchi, the option index for grr). A question the respondent was not
asked is an empty cell in each of its columns. An export of the sandbox (test answers and simulated
respondents, never the real responses) has a ``source`` column after received_day: "test" or
"simulated". The codebook (``survey.core.codebook``) explains
every column.
"""

from __future__ import annotations

import csv
import io
from typing import Iterable, Iterator

from .codebook import response_columns
from .csvsafe import spreadsheet_safe


def report_cells(question_columns: list[dict], report) -> list[int]:
    """Return the cells of one report in its question's columns: its bits, or the integer."""
    if isinstance(report, (list, tuple)):
        return [int(report[column["option"]]) for column in question_columns]
    return [int(report)]


def iter_responses_csv(design: dict, responses: Iterable[dict], *, rows_per_chunk: int = 1000,
                       sandbox: bool = False) -> Iterator[str]:
    """Yield the CSV of responses ``{"id", "received_day", "answers"}`` in chunks of text (for streaming).

    With ``sandbox`` the responses also carry their ``source``, written after received_day.
    """
    columns = response_columns(design)
    groups = [(question["id"], [column for column in columns if column["question"] == question["id"]])
              for question in design["questions"]]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    head = ["response_id", "received_day", *(["source"] if sandbox else [])]
    writer.writerow([*head, *(spreadsheet_safe(column["name"]) for column in columns)])
    for count, response in enumerate(responses, start=1):
        answers = response["answers"]
        row = [response["id"], response["received_day"], *([response["source"]] if sandbox else [])]
        for qid, own in groups:
            row.extend(report_cells(own, answers[qid]) if qid in answers else [""] * len(own))
        writer.writerow(row)
        if count % rows_per_chunk == 0:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()


def responses_csv(design: dict, responses: Iterable[dict], *, sandbox: bool = False) -> str:
    """Return the CSV of responses ``{"id", "received_day", "answers"}`` (as Store.iter_responses yields)."""
    return "".join(iter_responses_csv(design, responses, sandbox=sandbox))
