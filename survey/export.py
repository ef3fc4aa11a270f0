"""Write the stored noisy reports of a survey as CSV (the researcher's raw-data export).

Lines end with CRLF (RFC 4180), like the aggregates CSV. Columns: response_id,
received_day, then one column per question id in design order. A bit-list report (OUE
choice, multi) is written as a string of 0/1 such as ``01001``, one character per option
in design order; any other report is an integer.
"""

from __future__ import annotations

import csv
import io
from typing import Iterable, Iterator


def report_cell(report) -> str | int:
    """Return one report as a CSV cell: a 0/1 string for a bit list, else the integer."""
    if isinstance(report, list):
        return "".join(str(int(bit)) for bit in report)
    return int(report)


def iter_responses_csv(design: dict, responses: Iterable[dict], *, rows_per_chunk: int = 1000) -> Iterator[str]:
    """Yield the CSV of responses ``{"id", "received_day", "answers"}`` in chunks of text (for streaming).

    A question a respondent was not asked is an empty cell.
    """
    qids = [question["id"] for question in design["questions"]]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["response_id", "received_day", *qids])
    for count, response in enumerate(responses, start=1):
        answers = response["answers"]
        writer.writerow([response["id"], response["received_day"],
                         *(report_cell(answers[qid]) if qid in answers else "" for qid in qids)])
        if count % rows_per_chunk == 0:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()


def responses_csv(design: dict, responses: Iterable[dict]) -> str:
    """Return the CSV of responses ``{"id", "received_day", "answers"}`` (as Store.iter_responses yields)."""
    return "".join(iter_responses_csv(design, responses))
