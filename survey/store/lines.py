"""The noisy reports of a survey as CSV lines made by the database, page by page (the export's fast read).

``response_lines`` yields lists of text lines ``id,received_day[,source],cell,…`` in random-id
order, ``page`` rows at a time (keyset pages on the primary key, so memory stays bounded on
both backends whatever the survey's size). Each cell is named by the caller as
(question index, option): the question's scalar word for option None, else bit ``option`` of
its bit-vector words, the same values ``codec.decode_report`` gives; a question the respondent
was not asked is an empty cell. Every value is an integer, a hex id, an ISO day or a sandbox
source, so no cell ever needs CSV quoting. Rows stored while the pages are read appear at most
once (those behind the last page read are not included).
"""

from __future__ import annotations

from typing import Iterator, Sequence

from ..core.codec import WORD_BITS
from .schema import report_columns

PAGE = 20_000


# Values per format() call: SQLite takes at most 127 arguments to a function, PostgreSQL 100.
FORMAT_VALUES = 90


def cell_sql(word_columns: list[str], option: int | None) -> str:
    """Return the SQL value of one cell: the word itself, or one bit of a bit-vector report (NULL when not asked)."""
    if option is None:
        return word_columns[0]
    return f"(({word_columns[option // WORD_BITS]} >> {option % WORD_BITS}) & 1)"


def line_sql(design: dict, cells: Sequence[tuple[int, int | None]], table: str, *, sandbox: bool) -> str:
    """Return the SELECT of one page of lines: rows after an id (parameter 1), at most a page (parameter 2).

    One ``format('%s,%s,…')`` per 90 values (both backends have it; ``%s`` of NULL is empty),
    several joined with ``','`` for a wide design: one call per row is as fast as the
    database's own CSV output.
    """
    words = report_columns(design)
    values = ["id", "received_day", *(["source"] if sandbox else []),
              *(cell_sql(words[question], option) for question, option in cells)]
    calls = []
    for start in range(0, len(values), FORMAT_VALUES):
        part = values[start:start + FORMAT_VALUES]
        calls.append(f"format('{','.join(['%s'] * len(part))}', {', '.join(part)})")
    line = " || ',' || ".join(calls)
    return f'SELECT {line} FROM "{table}" WHERE id > ? ORDER BY id LIMIT ?'


def response_lines(execute, design: dict, cells: Sequence[tuple[int, int | None]], table: str, *,
                   sandbox: bool = False, page: int = PAGE) -> Iterator[list[str]]:
    """Yield the lines of a report or sandbox table by random id, ``page`` at a time, through ``execute(sql, params)``."""
    sql, after = line_sql(design, cells, table, sandbox=sandbox), ""
    while True:
        rows = execute(sql, [after, page]).fetchall()
        if rows:
            yield [row[0] for row in rows]
        if len(rows) < page:
            return
        after = rows[-1][0].split(",", 1)[0]
