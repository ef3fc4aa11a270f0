"""Neutralise spreadsheet formulas in CSV text cells (CSV/formula injection).

A spreadsheet opening a CSV runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a
formula, and some also treat a leading tab or carriage return so. Every CSV this project
writes passes its text cells (never its numbers) through ``spreadsheet_safe``, which
prefixes such a cell with an apostrophe: ``=HYPERLINK(...)`` is written ``'=HYPERLINK(...)``.
Standard library only.
"""

from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text: str) -> str:
    """Return ``text``, prefixed with ``'`` when it starts with =, +, -, @, a tab or a carriage return."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text
