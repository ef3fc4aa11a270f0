"""Read the files of a re-analysis defensively: responses.csv streamed in bounded memory, the codebook's JSON
bounded in size and depth. Every problem becomes a click.ClickException naming the file, the line and what
is wrong, never a traceback."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import BinaryIO, Iterator

import click

MAX_ROW = 1 << 20  # bytes in one row of responses.csv (one line, or the lines of a quoted cell spanning several)
MAX_CELL = 1 << 16  # characters in one cell
CHUNK = 1 << 22  # bytes of responses.csv parsed at once
TOO_LONG = f"a cell is longer than the {MAX_CELL:,} characters allowed"
MAX_CODEBOOK = 32 << 20  # bytes in a codebook
MAX_DEPTH = 64  # nesting of the codebook's arrays and objects (a codebook of ldp-survey needs 6)
BOM = b"\xef\xbb\xbf"
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _fail(path: Path, line: int | None, problem: str) -> click.ClickException:
    """Return the error that names the file, the line (when known) and the problem."""
    where = f"{path}, line {line}" if line else f"{path}"
    return click.ClickException(f"{where}: {problem}")


class _Lines:
    """Iterate over the decoded lines of a binary file, each row at most MAX_ROW bytes, counting the lines."""

    def __init__(self, handle: BinaryIO, path: Path):
        self.handle, self.path = handle, path
        self.line = 0  # physical lines read so far
        self.row = 0  # bytes of the row being read

    def __iter__(self):
        return self

    def __next__(self) -> str:
        raw = self.handle.readline(MAX_ROW + 1 - self.row)
        if not raw:
            raise StopIteration
        self.line += 1
        self.row += len(raw)
        if self.row > MAX_ROW:
            raise _fail(self.path, self.line, f"a row is longer than {MAX_ROW:,} bytes; is this a responses "
                                              "file (one row per response)?")
        if self.line == 1 and raw.startswith(BOM):
            raw = raw[len(BOM):]
        if b"\0" in raw:
            raise _fail(self.path, self.line, "contains a NUL byte; is this a binary file rather than a CSV?")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _fail(self.path, self.line, f"byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line is "
                                              "not UTF-8; save the file as UTF-8 text") from None


def _cells(row: list[str], lines: _Lines, width: int | None) -> list[str]:
    """Return the row after checking its cells' sizes and, when ``width`` is given, their number."""
    for cell in row:
        if len(cell) > MAX_CELL:
            raise _fail(lines.path, lines.line, f"{TOO_LONG} (it has {len(cell):,})")
    if width is not None and len(row) != width:
        raise _fail(lines.path, lines.line, f"the row has {len(row)} cells but the header has {width} columns")
    return row


def _csv_error(exc: csv.Error, lines: _Lines) -> click.ClickException:
    """Return the error of a CSV the csv module cannot parse (its own cell limit worded as ours)."""
    problem = TOO_LONG if "field larger than field limit" in str(exc) else f"not a valid CSV: {exc}"
    return _fail(lines.path, lines.line, problem)


def _header(reader, lines: _Lines) -> list[str]:
    """Return the header row, refusing an empty file and a column named twice."""
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise _csv_error(exc, lines) from None
    if not header:
        raise _fail(lines.path, None, "is empty: it has no header row")
    header = _cells(header, lines, None)
    seen = set()
    for name in header:
        if name in seen:
            raise _fail(lines.path, lines.line, f"the header names the column {name!r} twice")
        seen.add(name)
    return header


def _rows(reader, lines: _Lines, width: int) -> Iterator[list[str]]:
    """Yield the rows after the header, each checked; blank lines are skipped."""
    while True:
        lines.row = 0
        try:
            row = next(reader, None)
        except csv.Error as exc:
            raise _csv_error(exc, lines) from None
        if row is None:
            return
        if row:
            yield _cells(row, lines, width)


def open_responses(handle: BinaryIO, path: Path, *, progress=None) -> tuple[list[str], "Rows"]:
    """Return the header and the checked rows of a responses file opened in binary mode (``progress(bytes)``
    is told how far the file has been read)."""
    lines = _Lines(handle, path)
    header = _header(csv.reader(lines), lines)
    return header, Rows(handle, path, len(header), lines.line, progress)


class Rows:
    """The rows after the header: iterated one by one, or read in chunks of whole lines that a plan parses
    (``batches``), a chunk it cannot parse read row by row from the same place, so that every refusal has
    the words and the line of the row-by-row reader."""

    def __init__(self, handle: BinaryIO, path: Path, width: int, line: int, progress=None):
        self.handle, self.path, self.width, self.line = handle, path, width, line
        self.progress = progress or (lambda position: None)

    def __iter__(self) -> Iterator[list[str]]:
        lines = _Lines(self.handle, self.path)
        lines.line = self.line
        for count, row in enumerate(_rows(csv.reader(lines), lines, self.width)):
            if count % 4096 == 0:
                self.progress(self.handle.tell())
            yield row
        self.progress(self.handle.tell())

    def batches(self, plan) -> Iterator:
        """Yield ``plan``'s batches of the rows: ``plan.parse(chunk, MAX_CELL)`` for each chunk of whole lines,
        giving (batch, rows) or None, and ``plan.slow(rows, first row number)`` where it gives None."""
        position, line, number = self.handle.tell(), self.line, 2
        while True:
            self.handle.seek(position)
            data = self.handle.read(CHUNK)
            if not data:
                return
            if len(data) == CHUNK:  # not the end of the file: keep whole lines
                data = data[:data.rfind(b"\n") + 1]
            parsed = plan.parse(data, MAX_CELL) if data else None
            if parsed is not None:
                batch, rows = parsed
                yield batch
                position += len(data)
                line += data.count(b"\n")
                number += rows
            else:
                self.handle.seek(position)
                lines = _Lines(self.handle, self.path)
                lines.line = line
                counted = _Counted(_rows_until(self.handle, lines, self.width, position + max(len(data), 1)))
                yield from plan.slow(counted, number)
                position, line, number = self.handle.tell(), lines.line, number + counted.count
            self.progress(position)


def _rows_until(handle: BinaryIO, lines: _Lines, width: int, stop: int) -> Iterator[list[str]]:
    """Yield the checked rows from the handle's position until the first that ends at or after ``stop``."""
    for row in _rows(csv.reader(lines), lines, width):
        yield row
        if handle.tell() >= stop:
            return


class _Counted:
    """An iterator that counts what it yields."""

    def __init__(self, rows: Iterator):
        self.rows, self.count = rows, 0

    def __iter__(self):
        for row in self.rows:
            self.count += 1
            yield row


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """Return the object of the pairs, refusing a key given twice (json.loads would keep only the last)."""
    result = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"the key {key!r} appears twice in one object")
        result[key] = value
    return result


def _check_depth(data: bytes, path: Path) -> None:
    """Refuse arrays and objects nested more than MAX_DEPTH deep, before json.loads recurses into them."""
    import numpy as np

    bare = _STRING.sub(b'""', data)  # brackets inside strings do not nest; strings hold no raw newline
    codes = np.frombuffer(bare, dtype=np.uint8)
    steps = np.isin(codes, (ord("["), ord("{"))).astype(np.int64) - np.isin(codes, (ord("]"), ord("}")))
    depth = np.cumsum(steps)
    deep = np.flatnonzero(depth > MAX_DEPTH)
    if deep.size:
        line = bare.count(b"\n", 0, int(deep[0])) + 1
        raise _fail(path, line, f"arrays and objects are nested more than {MAX_DEPTH} deep; this is not a codebook")


def read_codebook(path: Path) -> object:
    """Return the parsed JSON of a codebook, at most MAX_CODEBOOK bytes and MAX_DEPTH deep, strictly JSON."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CODEBOOK + 1)
    except OSError as exc:
        raise click.ClickException(f"cannot read the codebook {path}: {exc.strerror or exc}") from exc
    if len(data) > MAX_CODEBOOK:
        raise _fail(path, None, f"is larger than {MAX_CODEBOOK >> 20} MiB; this is not a codebook")
    if data.startswith(BOM):
        data = data[len(BOM):]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise _fail(path, line, f"byte 0x{data[exc.start]:02x} is not UTF-8; a codebook is UTF-8 JSON") from None
    _check_depth(data, path)
    try:
        return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise _fail(path, exc.lineno, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise _fail(path, None, f"not a codebook: {exc}") from None
