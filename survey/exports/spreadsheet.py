"""Write a survey's estimates and codebook as an XLSX workbook, every cell typed, no text ever a formula.

The CSVs and the API are the exact data; this is the download for spreadsheet programs. Sheet
``estimates`` has a header row (the aggregates CSV's columns) and one row per estimate; sheet
``estimands`` one row per estimand of the codebook (in the same order), ``columns`` one row per
column of responses.csv and ``about`` the codebook's survey-wide fields. Numbers are number
cells (openpyxl writes 16 significant digits; a spreadsheet shows 15); a missing number and an
empty text (a number's option) are empty cells; any other text is a text cell (``data_type``
``"s"``), so a label such as ``=1+1``, ``-10% or more`` or ``@a`` shows exactly as written and
is never evaluated. XLSX cannot hold the control characters U+0000–U+0008, U+000B, U+000C and
U+000E–U+001F: each becomes U+FFFD. Lists (a number's ``scale``, levels) are written as JSON
text. Uses openpyxl; builds the file in memory.
"""

from __future__ import annotations

import io
import json
import math
from typing import Iterable

import numpy as np
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.styles import Font

from ..core.aggregate import CSV_HEADER, AggregateRow

MIMETYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
REPLACEMENT = "\ufffd"
_BOLD = Font(bold=True)


def cell(sheet, value, *, bold: bool = False) -> WriteOnlyCell:
    """Return a typed cell: a number cell, an empty cell for None or nan, else a text cell (never a formula)."""
    if isinstance(value, (bool, np.bool_)):
        value = str(bool(value)).lower()
    if isinstance(value, (int, np.integer)):
        result = WriteOnlyCell(sheet, value=int(value))
    elif isinstance(value, (float, np.floating)):
        result = WriteOnlyCell(sheet, value=None if math.isnan(value) else float(value))
    elif value is None or value == "":
        result = WriteOnlyCell(sheet, value=None)
    else:
        if not isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False)
        result = WriteOnlyCell(sheet, value=ILLEGAL_CHARACTERS_RE.sub(REPLACEMENT, value))
        result.data_type = "s"
    if bold:
        result.font = _BOLD
    return result


def _sheet(workbook: Workbook, title: str, header: list[str], rows: Iterable[list]):
    """Append a sheet of a bold, frozen header row and the rows below it."""
    sheet = workbook.create_sheet(title)
    sheet.freeze_panes = "A2"
    sheet.append([cell(sheet, name, bold=True) for name in header])
    for row in rows:
        sheet.append([cell(sheet, value) for value in row])


def _union_keys(entries: list[dict]) -> list[str]:
    """Return every key of the entries, in the order they first appear."""
    return list(dict.fromkeys(key for entry in entries for key in entry))


def results_workbook(rows: Iterable[AggregateRow], book: dict) -> bytes:
    """Return the XLSX bytes of a survey's aggregate rows and its codebook ``book`` (``codebook.codebook``)."""
    workbook = Workbook(write_only=True)
    _sheet(workbook, "estimates", CSV_HEADER, ([getattr(row, name) for name in CSV_HEADER] for row in rows))
    for title in ("estimands", "columns"):
        keys = _union_keys(book[title])
        _sheet(workbook, title, keys, ([entry.get(key) for key in keys] for entry in book[title]))
    if "wording_history" in book:
        _sheet(workbook, "wordings", ["what", "from", "text", "options"], _wording_rows(book["wording_history"]))
    about = [(key, value) for key, value in book.items()
             if key not in ("estimands", "columns", "files", "design", "wording_history")]
    about += [(f"files.{key}", value) for key, value in book["files"].items()]
    _sheet(workbook, "about", ["field", "value"], ([key, value] for key, value in about))
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def _wording_rows(history: dict) -> Iterable[list]:
    """Yield the rows of the wordings sheet: the title's and each question's wordings with their first day."""
    for entry in history["title"]:
        yield ["title", entry["from"], entry["text"], None]
    for qid, entries in history["questions"].items():
        for entry in entries:
            yield [qid, entry["from"], entry["text"], " · ".join(entry["options"]) if "options" in entry else None]
