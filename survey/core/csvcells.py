"""Vectorised reading of the plain part of a responses.csv: a chunk of whole lines without quotes becomes the
start and length of every cell, and cells of ASCII digits become integers, all in numpy.

It answers only for what it is sure of: a chunk with anything the csv module would read differently or
refuse (a quote, a NUL byte, a carriage return that does not end a line, bytes that are not UTF-8, a line
longer than the cell limit, a row whose cells do not match the header) gets None, and the caller reads that
chunk row by row, where the refusal is worded and placed (line, row) exactly. Pure: bytes in, arrays out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

COMMA, NEWLINE, RETURN, ZERO = ord(","), ord("\n"), ord("\r"), ord("0")
MOST_DIGITS = 18  # as the row-by-row reader: a whole number of at most 18 digits fits an int64


@dataclass(frozen=True)
class Cells:
    """The (rows, width) cells of a chunk: each cell's first byte in ``data`` and its length in bytes."""

    data: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray

    @property
    def rows(self) -> int:
        return self.starts.shape[0]


def _plain(data: bytes) -> bytes | None:
    """Return the chunk ending in a line end, or None if the csv module might read it otherwise."""
    if b'"' in data or b"\0" in data:
        return None
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return data if data.endswith(b"\n") else data + b"\n"


def _empty(buf: np.ndarray, width: int) -> Cells:
    return Cells(buf, np.zeros((0, width), np.int64), np.zeros((0, width), np.int64))


def split_cells(data: bytes, width: int, longest: int) -> Cells | None:
    """Return the cells of a chunk of whole lines (LF or CRLF; blank lines skipped), or None when it is not
    plainly ``width`` cells a line, every line at most ``longest`` bytes."""
    data = _plain(data)
    if data is None:
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    crlf = b"\r" in data
    if crlf and (buf[np.flatnonzero(buf == RETURN) + 1] != NEWLINE).any():
        return None  # a carriage return that does not end a line
    delimiters = np.flatnonzero((buf == COMMA) | (buf == NEWLINE))
    newline = buf[delimiters] == NEWLINE
    ends = delimiters[newline]
    if ends.size == 0:
        return _empty(buf, width)
    lengths = np.diff(ends, prepend=-1) - 1
    if lengths.max() > longest:
        return None
    blank = lengths == 0
    if crlf:
        blank |= (lengths == 1) & (buf[ends - 1] == RETURN)
    if blank.any():  # the csv module yields no row for an empty line
        gone = ends[blank]
        if crlf:
            gone = np.union1d(gone, gone[buf[gone - 1] == RETURN] - 1)
        buf = np.delete(buf, gone)
        delimiters = np.flatnonzero((buf == COMMA) | (buf == NEWLINE))
        newline = buf[delimiters] == NEWLINE
    rows = ends.size - int(np.count_nonzero(blank))
    if delimiters.size != rows * width:
        return None
    if rows == 0:
        return _empty(buf, width)
    table = delimiters.reshape(rows, width)
    # rows line ends among rows × width delimiters: each row has its own exactly when it ends every row.
    if int(np.count_nonzero(newline)) != rows or not newline.reshape(rows, width)[:, -1].all():
        return None
    starts = np.empty_like(table)
    starts[:, 1:] = table[:, :-1] + 1
    starts[0, 0] = 0
    starts[1:, 0] = table[:-1, -1] + 1
    lengths = table - starts
    if crlf:
        lengths[:, -1] -= buf[table[:, -1] - 1] == RETURN
    return Cells(buf, starts, lengths)


def integers(cells: Cells, column: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Return (values, present) of one column: empty cells absent (value 0), the others whole numbers of
    ASCII digits; None if a cell is anything else (a sign, a space, too many digits)."""
    starts, lengths = cells.starts[:, column], cells.lengths[:, column]
    present = lengths > 0
    values = np.zeros(lengths.shape, dtype=np.int64)
    if not lengths.size:
        return values, present
    top = int(lengths.max())
    if top > MOST_DIGITS:
        return None
    if top == 1:  # one digit a cell, as most reports are
        digits = cells.data[starts] - np.uint8(ZERO)  # a byte below "0" wraps above 9
        if (digits[present] > 9).any():
            return None
        return np.where(present, digits, 0).astype(np.int64), present
    for offset in range(top):
        has = offset < lengths
        digits = cells.data[np.where(has, starts + offset, 0)].astype(np.int64) - ZERO
        if ((digits < 0) | (digits > 9))[has].any():
            return None
        values = np.where(has, values * 10 + digits, values)
    return values, present
