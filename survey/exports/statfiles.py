"""Write a survey's noisy reports and estimates as SPSS (.sav) and Stata (.dta) files, with labels.

The cells are those of responses.csv and of the aggregates CSV: report columns numeric (empty
where the respondent was not asked the question: system-missing in SPSS, ``.`` in Stata),
``received_day`` a date, ids and labels strings. Variable labels say what each column holds,
value labels what each report value means (``Mechanism.value_labels``); names and labels are
fitted to each package's limits by ``survey.exports.labels``. Written with pyreadstat (ReadStat),
through a temporary file because ReadStat writes only to a path. The responses of a survey with
several versions end with the integer variable ``version``, as responses.csv ends with the column
(``labels.version_variable``).

ReadStat writes a whole file from one DataFrame (pyreadstat has no append), so an SPSS or
Stata file of the responses is held in memory while it is written: ``responses_file_from_lines``
builds its columns page by page as typed arrays (about 340 bytes a response for the smoking
survey at 1,000,000, against 710 as one dict a response) and refuses a survey of more than ``MAX_ROWS`` responses
(``LDP_SURVEY_STATFILE_MAX_ROWS``) with ``StatfileTooLarge``, which names the CSV and the data
package, written in constant memory, instead.
"""

from __future__ import annotations

import datetime
import os
import tempfile
from typing import Iterable

import numpy as np

from ..core.aggregate import AggregateRow, rows_to_json
from .export import response_records
from .labels import SurveyVersion, Variable, aggregate_variables, file_label, response_variables

FORMATS = {"sav": "SPSS", "dta": "Stata"}
MIMETYPES = {"sav": "application/x-spss-sav", "dta": "application/x-stata-dta"}
STRING_COLUMNS = {"response_id", "source", "question", "option", "kind", "mechanism", "ci_kind"}
MAX_ROWS_ENV = "LDP_SURVEY_STATFILE_MAX_ROWS"
MAX_ROWS = 1_000_000
VERSION_KEY = "(version)"  # the version's column in a frame: never a report column's name, which a question may share


class StatfileTooLarge(ValueError):
    """A survey has more responses than an SPSS or Stata file is built for in memory (``max_rows``)."""


def max_rows() -> int:
    """Return the most responses an SPSS or Stata file is made of: $LDP_SURVEY_STATFILE_MAX_ROWS, else MAX_ROWS."""
    raw = os.environ.get(MAX_ROWS_ENV, "")
    return int(raw) if raw.strip().isdigit() else MAX_ROWS


def _check(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")


def _write(frame, variables: list[Variable], fmt: str, label: str) -> bytes:
    """Return the bytes of ``frame`` written as a .sav or .dta file with the variables' names and labels."""
    import pyreadstat

    frame.columns = [variable.name for variable in variables]  # in place, by position (no copy of the data)
    options = {
        "file_label": label,
        "column_labels": {variable.name: variable.label for variable in variables},
        "variable_value_labels": {variable.name: variable.values for variable in variables if variable.values},
    }
    handle, path = tempfile.mkstemp(suffix="." + fmt)
    os.close(handle)
    try:
        if fmt == "sav":
            pyreadstat.write_sav(frame, path, compress=True, **options)
        else:
            pyreadstat.write_dta(frame, path, version=15, **options)
        with open(path, "rb") as written:
            return written.read()
    finally:
        os.unlink(path)


def _frame(records: list[dict], variables: list[Variable]):
    """Return the records as a DataFrame over the variables' columns: strings, dates and floats (NaN for empty)."""
    import pandas as pd

    columns = [variable.column for variable in variables]
    frame = pd.DataFrame.from_records(records, columns=columns)
    for column in columns:
        if column in STRING_COLUMNS:
            frame[column] = frame[column].fillna("").astype(str)
        elif column == "received_day":
            frame[column] = [datetime.date.fromisoformat(day) for day in frame[column]]
        else:
            frame[column] = pd.to_numeric(frame[column], errors="raise").astype("float64")
    return frame


def _with_version(frame, version: SurveyVersion | None):
    """Return the frame with the version's number in a last column (an integer in every row), or as it is."""
    if version is not None:
        frame.insert(len(frame.columns), VERSION_KEY, np.full(len(frame), version.number, dtype="int32"))
    return frame


def _reports(variables: list[Variable], version: SurveyVersion | None) -> list[Variable]:
    """Return the variables whose cells the responses hold: all but the version's, which is added after."""
    return variables[:-1] if version is not None else variables


def responses_file(design: dict, responses: Iterable[dict], fmt: str, *, sandbox: bool = False,
                   version: SurveyVersion | None = None) -> bytes:
    """Return the noisy reports (as ``Store.iter_responses`` yields them) as a .sav or .dta file."""
    _check(fmt)
    variables = response_variables(design, fmt, sandbox=sandbox, version=version)
    records = list(response_records(design, responses, sandbox=sandbox))
    what = "noisy reports of the sandbox" if sandbox else "noisy reports (randomized; never a true answer)"
    frame = _with_version(_frame(records, _reports(variables, version)), version)
    return _write(frame, variables, fmt, file_label(design, fmt, what))


def _line_columns(pages: Iterable[list[str]], variables: list[Variable]) -> dict[str, list]:
    """Return the cells of the lines' pages per column, each page's column as one typed array or list."""
    columns = {variable.column: [] for variable in variables}
    names, days = list(columns), {}
    for page in pages:
        if not page:
            continue
        for name, cells in zip(names, zip(*(line.split(",") for line in page))):
            if name in STRING_COLUMNS:
                columns[name].append(list(cells))
            elif name == "received_day":
                columns[name].append([days.setdefault(day, datetime.date.fromisoformat(day)) for day in cells])
            else:
                columns[name].append(np.array([float(cell) if cell else np.nan for cell in cells], dtype="float64"))
    return columns


def _frame_from_lines(pages: Iterable[list[str]], variables: list[Variable]):
    """Return the DataFrame of the lines' pages, typed as ``_frame`` types the records (the same file's bytes)."""
    import pandas as pd

    data = {}
    for name, parts in _line_columns(pages, variables).items():
        if name in STRING_COLUMNS or name == "received_day":
            data[name] = pd.Series([cell for part in parts for cell in part], dtype=object)
        else:
            data[name] = pd.Series(np.concatenate(parts) if parts else np.empty(0, dtype="float64"))
    return pd.DataFrame(data, columns=[variable.column for variable in variables])


def responses_file_from_lines(design: dict, pages: Iterable[list[str]], fmt: str, *, rows: int,
                              sandbox: bool = False, version: SurveyVersion | None = None) -> bytes:
    """Return the noisy reports as a .sav or .dta file from the store's pages of CSV lines (``Store.iter_response_lines``).

    ``rows`` is how many the pages hold: more than ``max_rows()`` raise StatfileTooLarge before anything is read.
    With ``version`` (a survey with several: ``labels.survey_version``) the file ends with the variable version.
    """
    _check(fmt)
    limit = max_rows()
    if rows > limit:
        raise StatfileTooLarge(
            f"{rows:,} responses are more than an SPSS or Stata file is made of ({limit:,}: the file is built in "
            f"memory, ${MAX_ROWS_ENV} to change it); export responses.csv or the data package instead, written "
            "in constant memory, and read it with the package's CSV import")
    variables = response_variables(design, fmt, sandbox=sandbox, version=version)
    what = "noisy reports of the sandbox" if sandbox else "noisy reports (randomized; never a true answer)"
    frame = _with_version(_frame_from_lines(pages, _reports(variables, version)), version)
    return _write(frame, variables, fmt, file_label(design, fmt, what))


def aggregates_file(design: dict, rows: Iterable[AggregateRow], fmt: str) -> bytes:
    """Return the estimates as a .sav or .dta file, the columns of the aggregates CSV."""
    _check(fmt)
    variables = aggregate_variables(fmt)
    records = [{variable.column: row[variable.column] for variable in variables} for row in rows_to_json(rows)]
    return _write(_frame(records, variables), variables, fmt, file_label(design, fmt, "debiased estimates"))
