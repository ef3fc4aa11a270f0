"""Report patterns kept at insert: the distinct reports of a survey's small-domain questions, with their counts.

A crosstab or a regression needs the counts of the distinct joint reports of a few questions
(``Store.joint_patterns``). They are kept current at insert, as the per-question tallies are,
in one table per design: ``patterns_<hex>`` holds one row per distinct report pattern over the
survey's *pattern questions* (each column a question's report word, -1 when it was not asked)
and how many released responses sent it; ``sandbox_patterns_<hex>`` the same per sandbox source.
Held responses are counted only when they are released. Any pair or model over pattern questions
then reads at most ``PATTERN_LIMIT`` rows, however many responses there are, and is the same
GROUP BY as over the reports, so its result is the same.

The pattern questions are those, in design order, whose report domains (plus "not asked") fit
together within PATTERN_LIMIT patterns: the smoking survey's four questions (2·2·32·2 reports, 891
patterns with "not asked"), the first two of 100 choice questions of 64 options. One row per
pattern costs one upsert per response, whatever the number of questions (a table per pair would
cost k(k−1)/2); a question left out (a large multiple choice, say) is read from the reports as before.
On PostgreSQL the released patterns are split over ``shard`` rows as the tallies are.
"""

from __future__ import annotations

from collections import Counter
from operator import itemgetter
from typing import Sequence

from ..core import codec
from ..core.mechanisms import BITS, mechanism_for

# Most rows a design's pattern table can have: a read sums at most this many.
PATTERN_LIMIT = 65_536
# The word a pattern holds for a question its respondent was not asked.
NOT_ASKED = -1

_CHOSEN: dict[str, list[int]] = {}


def domain_size(question: dict) -> int:
    """Return how many distinct reports the question can have."""
    mechanism = mechanism_for(question)
    if mechanism.report == BITS:
        return 2 ** codec.option_count(question)
    return mechanism.highest + 1


def pattern_questions(design: dict) -> list[int]:
    """Return the indices of the design's pattern questions: in order, each kept while the patterns fit PATTERN_LIMIT."""
    chosen = _CHOSEN.get(design["hash"])
    if chosen is None:
        chosen, size = [], 1
        for index, question in enumerate(design["questions"]):
            if codec.word_count(question) == 1 and size * (domain_size(question) + 1) <= PATTERN_LIMIT:
                chosen.append(index)
                size *= domain_size(question) + 1
        _CHOSEN[design["hash"]] = chosen
    return chosen


def covers(design: dict, qids: Sequence[str]) -> bool:
    """Return whether every question named is a pattern question (its joint counts are kept)."""
    index = {question["id"]: i for i, question in enumerate(design["questions"])}
    chosen = set(pattern_questions(design))
    return bool(qids) and all(index.get(qid) in chosen for qid in qids)


def columns(design: dict) -> list[str]:
    """Return the word columns of the pattern table (one per pattern question, named as in the report table)."""
    return [f"q{index}_0" for index in pattern_questions(design)]


def table_of(reports: str) -> str:
    """Return the name of the released patterns table that goes with a report table's name."""
    return "patterns_" + reports.removeprefix("reports_")


def released_table(design: dict) -> str:
    """Return the name of a design's table of released report patterns."""
    return f"patterns_{design['hash'][:16]}"


def sandbox_table(design_hash: str) -> str:
    """Return the name of a design's table of sandbox report patterns (per source)."""
    return f"sandbox_patterns_{design_hash[:16]}"


def _create(conn, table: str, design: dict, key: list[str], postgres: bool):
    words = columns(design)
    integer = "BIGINT" if postgres else "INTEGER"
    head = "".join(f"{name} {kind} NOT NULL, " for name, kind in key)
    body = "".join(f"{name} {integer} NOT NULL, " for name in words)
    primary = ", ".join([name for name, _ in key] + words)
    conn.execute(f'CREATE TABLE IF NOT EXISTS "{table}" ({head}{body}count {integer} NOT NULL, '
                 f"PRIMARY KEY ({primary})){'' if postgres else ' WITHOUT ROWID'}")


def create_released(conn, design: dict, *, postgres: bool = False):
    """Create a design's empty released patterns table (with a ``shard`` column on PostgreSQL), if it has pattern questions."""
    if pattern_questions(design):
        _create(conn, released_table(design), design, [("shard", "INTEGER")] if postgres else [], postgres)


def create_sandbox(conn, design: dict, *, postgres: bool = False):
    """Create a design's empty sandbox patterns table (keyed by source too), if it has pattern questions."""
    if pattern_questions(design):
        _create(conn, sandbox_table(design["hash"]), design, [("source", "TEXT")], postgres)


def drop_released(conn, reports: str):
    """Drop the released patterns table that goes with a report table."""
    conn.execute(f'DROP TABLE IF EXISTS "{table_of(reports)}"')


def drop_sandbox(conn, design_hash: str):
    """Drop a design's sandbox patterns table."""
    conn.execute(f'DROP TABLE IF EXISTS "{sandbox_table(design_hash)}"')


def clear_sandbox(conn, design: dict, source: str):
    """Delete one sandbox source's patterns (its responses were deleted)."""
    if pattern_questions(design):
        conn.execute(f'DELETE FROM "{sandbox_table(design["hash"])}" WHERE source = ?', [source])


def _positions(design: dict) -> list[int]:
    """Return where each pattern question's word sits in a report-table row (id, day, words…)."""
    starts, start = [], 2
    for question in design["questions"]:
        starts.append(start)
        start += codec.word_count(question)
    return [starts[index] for index in pattern_questions(design)]


def count_rows(design: dict, rows: Sequence[tuple]) -> Counter:
    """Return how many of the report-table rows (id, day, words…) have each pattern (NOT_ASKED for a NULL word).

    The rows are counted as they are (``itemgetter`` in C); only the few distinct patterns are then rewritten.
    """
    positions = _positions(design)
    pick = itemgetter(*positions) if len(positions) > 1 else (lambda row: (row[positions[0]],))
    counts = Counter(map(pick, rows))
    for pattern in [pattern for pattern in counts if None in pattern]:
        asked = tuple(NOT_ASKED if word is None else word for word in pattern)
        counts[asked] += counts.pop(pattern)
    return counts


def add_rows(conn, design: dict, rows: Sequence[tuple], *, source: str | None = None, shard: int | None = None):
    """Add report-table rows (id, day, words…) to the released patterns (in ``shard`` on PostgreSQL), or with
    ``source`` to the sandbox's, in the caller's transaction: the one hook of every batch insert."""
    if not pattern_questions(design) or not rows:
        return
    counts = count_rows(design, rows)
    key = {"source": source} if source is not None else ({} if shard is None else {"shard": shard})
    names = [*key, *columns(design)]
    table = released_table(design) if source is None else sandbox_table(design["hash"])
    conn.executemany(f'INSERT INTO "{table}" ({", ".join(names)}, count) VALUES ({", ".join("?" * (len(names) + 1))}) '
                     f'ON CONFLICT ({", ".join(names)}) DO UPDATE SET count = "{table}".count + excluded.count',
                     [(*key.values(), *pattern, count) for pattern, count in sorted(counts.items())])


def trigger_statement(design: dict) -> str | None:
    """Return the statement of SQLite's tally trigger that counts the new report row ``NEW`` in the patterns."""
    if not pattern_questions(design):
        return None
    names = columns(design)
    values = ", ".join(f"coalesce(NEW.{name}, {NOT_ASKED})" for name in names)
    table = released_table(design)
    return (f'INSERT INTO "{table}" ({", ".join(names)}, count) VALUES ({values}, 1) '
            f"ON CONFLICT ({', '.join(names)}) DO UPDATE SET count = count + 1;")


def submit_statement(design: dict) -> str:
    """Return the statement of PostgreSQL's submission function that counts its response (words ``p_words``) in the patterns."""
    if not pattern_questions(design):
        return ""
    positions = [position - 1 for position in _positions(design)]  # p_words[1] is the first word column
    names = columns(design)
    values = ", ".join(f"coalesce(p_words[{position}], {NOT_ASKED})" for position in positions)
    table = released_table(design)
    return (f'INSERT INTO "{table}" (shard, {", ".join(names)}, count) VALUES (p_shard, {values}, 1) '
            f'ON CONFLICT (shard, {", ".join(names)}) DO UPDATE SET count = "{table}".count + 1;')


def fill(conn, design: dict, reports: str, *, sandbox: bool = False, postgres: bool = False):
    """Fill a design's (empty) patterns table from its report table, or with ``sandbox`` from its sandbox table (a migration)."""
    names = columns(design)
    if not names:
        return
    words = ", ".join(f"coalesce({name}, {NOT_ASKED})" for name in names)
    if sandbox:
        target, key, value, group = sandbox_table(design["hash"]), "source, ", "source, ", "source, "
    else:
        target, group = released_table(design), ""
        key, value = ("shard, ", "0, ") if postgres else ("", "")
    conn.execute(f'INSERT INTO "{target}" ({key}{", ".join(names)}, count) '
                 f'SELECT {value}{words}, count(*) FROM "{reports}" GROUP BY {group}{words}')


def recreate(conn, design: dict, reports: str, sandbox: str, *, postgres: bool = False):
    """Make a design's patterns tables anew from its report and sandbox tables (both must exist: a migration)."""
    conn.execute(f'DROP TABLE IF EXISTS "{released_table(design)}"')
    drop_sandbox(conn, design["hash"])
    create_released(conn, design, postgres=postgres)
    create_sandbox(conn, design, postgres=postgres)
    fill(conn, design, reports, postgres=postgres)
    fill(conn, design, sandbox, sandbox=True, postgres=postgres)


def kept_and_recounted(execute, design: dict, reports: str, *, sandbox: bool = False) -> tuple[dict, dict]:
    """Return the patterns kept for a report (or sandbox) table and those recounted from its rows: {pattern: count}."""
    names = columns(design)
    if not names:
        return {}, {}
    key = "source, " if sandbox else ""
    table = sandbox_table(design["hash"]) if sandbox else released_table(design)
    kept = {tuple(row[:-1]): row[-1] for row in execute(
        f'SELECT {key}{", ".join(names)}, CAST(sum(count) AS BIGINT) FROM "{table}" '
        f'GROUP BY {key}{", ".join(names)}').fetchall() if row[-1]}
    words = ", ".join(f"coalesce({name}, {NOT_ASKED})" for name in names)
    counted = {tuple(row[:-1]): row[-1] for row in execute(
        f'SELECT {key}{words}, count(*) FROM "{reports}" GROUP BY {key}{words}').fetchall()}
    return kept, counted
