"""The rows of an exported responses.csv read back as the wire-format answers the browser sent, each report checked.

Shared by the re-analysis (``reanalysis``) and its chunked tallies (``tallies``), so neither imports the other
for it. Pure: no Flask, no SQL, no I/O.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

from .codec import is_bit_vector
from .reports import ReportError, validate_report


class ReanalysisError(ValueError):
    """The files cannot be read together: the message names the row, the column and what is wrong."""


_WHOLE = re.compile(r"-?[0-9]{1,18}")  # ASCII digits only: int() would also take " 1", "1_0" and other scripts' digits


def integer_cell(cell: str, row: int, column: str) -> int:
    """Return a cell of a report column as an integer, refusing anything but ASCII digits (at most 18)."""
    if not _WHOLE.fullmatch(cell):
        shown = repr(cell) if len(cell) <= 40 else f"{cell[:37]!r}..."
        raise ReanalysisError(f"row {row}, column {column!r}: {shown} is not a whole number of at most 18 digits")
    return int(cell)


def check_header(book: dict, header: list[str]) -> None:
    """Refuse a header that lacks a column the codebook describes."""
    missing = [column["name"] for column in book["columns"] if column["name"] not in header]
    if missing:
        raise ReanalysisError(f"the responses have no column {missing[0]!r} that the codebook describes; "
                              f"are they from another survey?")


def answers_from_rows(book: dict, design: dict, header: list[str], rows: Iterable[list[str]], *,
                      first: int = 2) -> Iterator[dict]:
    """Yield each row of responses.csv as the wire-format answers the browser sent, each report checked
    (the first of them row number ``first``: the header is row 1)."""
    check_header(book, header)
    position = {name: index for index, name in enumerate(header)}
    groups = []
    for question in design["questions"]:
        names = [column["name"] for column in book["columns"] if column["question"] == question["id"]]
        groups.append((question, names, [position[name] for name in names]))
    for number, row in enumerate(rows, start=first):
        answers = {}
        for question, names, places in groups:
            cells = [row[place] if place < len(row) else "" for place in places]
            if all(cell == "" for cell in cells):
                continue
            if any(cell == "" for cell in cells):
                raise ReanalysisError(f"row {number}: question {question['id']!r} has some of its columns empty")
            values = [integer_cell(cell, number, name) for cell, name in zip(cells, names)]
            report = values if is_bit_vector(question) else values[0]
            try:
                answers[question["id"]] = validate_report(question, report)
            except ReportError as exc:
                raise ReanalysisError(f"row {number}: {exc.message}") from None
        yield answers
