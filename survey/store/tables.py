"""The tables of a SQLite database that hold a survey's rows (what deleting a survey must empty)."""

from __future__ import annotations


def survey_tables(conn) -> list[str]:
    """Return every table of the database that has a ``survey`` column (the rows a survey's deletion removes)."""
    tables = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()]
    return [table for table in tables
            if any(column[1] == "survey" for column in conn.execute(f'PRAGMA table_info("{table}")').fetchall())]
