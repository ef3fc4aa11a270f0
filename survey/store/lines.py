"""The noisy reports of a survey as CSV text made by the database, a chunk of rows at a time (the export's fast read).

``response_chunks`` yields strings, each the lines ``id,received_day[,source],cell,…\\r\\n`` of up to
``page`` rows in random-id order: the database formats each row and concatenates a whole page
(keyset pages on the primary key), so Python handles one string per page, not one per row, and
memory stays bounded on both backends whatever the survey's size. ``response_lines`` gives the
same rows as lists of lines (no line ends) for the readers that split them into cells. Each cell
is named by the caller as (question index, option): the question's scalar word for option None,
else bit ``option`` of its bit-vector words, the same values ``codec.decode_report`` gives; a
question the respondent was not asked is an empty cell. Every value is an integer, a hex id, an ISO
day or a sandbox source, so no cell ever needs CSV quoting. Rows stored while the pages are read
appear at most once (those behind the last page read are not included).

The order inside a page: PostgreSQL's ``string_agg(… ORDER BY id)`` is ordered by definition.
SQLite 3.40 has no ORDER BY inside an aggregate; its ``group_concat`` reads the page's subquery
in the subquery's ORDER BY, which SQLite keeps when the subquery has a LIMIT or feeds an aggregate
other than count/min/max (``select.c``, the omit-ORDER-BY rule's conditions 1 and 4; sqlite.org
forum post 2d76f2bcf65d256a). tests/store/test_export_lines.py checks the order on both backends.
"""

from __future__ import annotations

from typing import Iterator, Sequence

from ..core.codec import WORD_BITS
from .schema import report_columns

# Rows per page at most, and bytes per page at most (a wide survey's pages hold fewer rows).
PAGE = 20_000
PAGE_BYTES = 1 << 20
# Bytes a line may take: the id, day and source with their commas, the line end, then per cell.
LINE_FIXED = 17 + 11 + 10 + 2
SCALAR_CELL = 21
BIT_CELL = 2

# Values per format() call: SQLite takes at most 127 arguments to a function, PostgreSQL 100.
FORMAT_VALUES = 90
# Bits of one question's word made by one blob lookup on SQLite (2^5 patterns of at most 9 bytes).
LOOKUP_BITS = 5
# Past this many bytes of cells' SQL the lookups are left out (SQLite refuses a statement over 1,000,000 bytes).
LOOKUP_SQL_BYTES = 200_000

# How each backend concatenates a page's lines in order (``line`` and ``id`` of the page's subquery).
SQLITE_CONCAT = "group_concat(line, '')"
POSTGRES_CONCAT = "string_agg(line, '' ORDER BY id)"


def cell_sql(word_columns: list[str], option: int | None) -> str:
    """Return the SQL value of one cell: the word itself, or one bit of a bit-vector report (NULL when not asked)."""
    if option is None:
        return word_columns[0]
    return f"(({word_columns[option // WORD_BITS]} >> {option % WORD_BITS}) & 1)"


def bit_runs(cells: Sequence[tuple[int, int | None]]) -> list[list[tuple[int, int | None]]]:
    """Split the cells into runs: bits of one question in one word spanning at most LOOKUP_BITS, else single cells."""
    runs: list[list[tuple[int, int | None]]] = []
    for question, option in cells:
        run = runs[-1] if runs else None
        if (run and option is not None and run[0][1] is not None and run[0][0] == question
                and option // WORD_BITS == run[0][1] // WORD_BITS
                and max(o for _, o in run + [(question, option)]) - min(o for _, o in run + [(question, option)])
                < LOOKUP_BITS):
            run.append((question, option))
        else:
            runs.append([(question, option)])
    return runs


def lookup_sql(word: str, options: list[int]) -> str:
    """Return SQLite's text of several bits of one word at once: a slice of a blob of every pattern's text.

    Bit ``o`` of the word is bit ``o - low`` of ``(word >> low) & mask``, so the slice is what the
    bits' own cells give for any integer; NULL (not asked) gives the run's empty cells.
    """
    low, span = min(options), max(options) - min(options) + 1
    texts = [",".join(str((value >> (option - low)) & 1) for option in options).encode() for value in range(1 << span)]
    width = len(texts[0])
    return (f"coalesce(CAST(substr(x'{b''.join(texts).hex()}', ((({word} >> {low}) & {(1 << span) - 1}) * {width}) + 1, "
            f"{width}) AS TEXT), '{',' * (len(options) - 1)}')")


def line_value_sql(design: dict, cells: Sequence[tuple[int, int | None]], *, sandbox: bool,
                   lookup: bool = False) -> str:
    """Return the SQL text of one row's line with its CRLF end.

    One ``format('%s,%s,…')`` per 90 values (both backends have it; ``%s`` of NULL is empty),
    several joined with ``','`` for a wide design; the last one's template ends with CR LF. With
    ``lookup`` (SQLite), a run of a question's bits is one value (``lookup_sql``): fewer values
    per row, the line made about 10% faster.
    """
    words = report_columns(design)
    values = []
    for run in bit_runs(cells) if lookup else [[cell] for cell in cells]:
        question, option = run[0]
        if len(run) > 1:
            values.append(lookup_sql(words[question][option // WORD_BITS], [o % WORD_BITS for _, o in run]))
        else:
            values.append(cell_sql(words[question], option))
    if lookup and sum(map(len, values)) > LOOKUP_SQL_BYTES:  # a very wide survey: keep its SELECT short
        return line_value_sql(design, cells, sandbox=sandbox)
    values = ["id", "received_day", *(["source"] if sandbox else []), *values]
    calls = []
    for start in range(0, len(values), FORMAT_VALUES):
        part = values[start:start + FORMAT_VALUES]
        end = "\r\n" if start + FORMAT_VALUES >= len(values) else ""
        calls.append(f"format('{','.join(['%s'] * len(part))}{end}', {', '.join(part)})")
    return " || ',' || ".join(calls)


def chunk_sql(design: dict, cells: Sequence[tuple[int, int | None]], table: str, *, sandbox: bool,
              concat: str = SQLITE_CONCAT) -> str:
    """Return the SELECT of one page as (its lines concatenated, its last id, its row count).

    Parameters: the id the page starts after, and the page's most rows.
    """
    line = line_value_sql(design, cells, sandbox=sandbox, lookup=concat == SQLITE_CONCAT)
    return (f"SELECT {concat}, max(id), count(*) FROM "
            f'(SELECT id, {line} AS line FROM "{table}" WHERE id > ? ORDER BY id LIMIT ?) AS page')


def default_page(cells: Sequence[tuple[int, int | None]]) -> int:
    """Return the rows of a page: PAGE, or fewer so that a page of the widest lines stays under PAGE_BYTES."""
    line = LINE_FIXED + sum(SCALAR_CELL if option is None else BIT_CELL for _, option in cells)
    return max(1, min(PAGE, PAGE_BYTES // line))


def response_chunks(execute, design: dict, cells: Sequence[tuple[int, int | None]], table: str, *,
                    sandbox: bool = False, page: int | None = None, concat: str = SQLITE_CONCAT) -> Iterator[str]:
    """Yield the CSV lines of a report or sandbox table by random id, one string per page, through ``execute(sql, params)``."""
    page = page or default_page(cells)
    sql, after = chunk_sql(design, cells, table, sandbox=sandbox, concat=concat), ""
    while True:
        text, last, count = execute(sql, [after, page]).fetchone()
        if count:
            yield text
        if count < page:
            return
        after = last


def response_lines(execute, design: dict, cells: Sequence[tuple[int, int | None]], table: str, *,
                   sandbox: bool = False, page: int | None = None, concat: str = SQLITE_CONCAT) -> Iterator[list[str]]:
    """Yield the same rows as ``response_chunks``, each page as a list of lines without their ends."""
    for text in response_chunks(execute, design, cells, table, sandbox=sandbox, page=page, concat=concat):
        yield text[:-2].split("\r\n")
