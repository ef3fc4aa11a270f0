"""Rows of a report table made from validated answers or per-question arrays, with the tally increments they bring.

A row is (id, day, every word column of every question, in design order; ``schema``); a
``Batch`` holds many rows and the counts they add to each question's tallies, so a batch's
tallies are added in a few UPDATEs instead of by the per-row trigger.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core import codec


class Batch:
    """Rows ready for a report table and the tally increments they bring."""

    def __init__(self, design: dict):
        self.rows: list[tuple] = []
        self.reports = [0] * len(design["questions"])
        self.ones: dict[tuple[int, int], int] = {}

    def count(self, index: int, reports: int, ones):
        """Add ``reports`` reports to question ``index`` and ``ones[i]`` 1s to its indicator i."""
        self.reports[index] += reports
        for option, count in enumerate(ones):
            if count:
                self.ones[index, option] = self.ones.get((index, option), 0) + int(count)

    def minus(self, part: Batch, rows: list[tuple]) -> Batch:
        """Return the batch of ``rows``: these counts less those of ``part``, the batch of the other rows."""
        rest = Batch.__new__(Batch)
        rest.rows = rows
        rest.reports = [mine - theirs for mine, theirs in zip(self.reports, part.reports)]
        rest.ones = {key: count - part.ones.get(key, 0) for key, count in self.ones.items()}
        return rest


def batch_from_rows(design: dict, rows: Sequence[tuple]) -> Batch:
    """Return the batch of report-table rows (id, day, words…), its counts recomputed from the words."""
    batch = Batch(design)
    batch.rows = list(rows)
    start = 2
    for index, question in enumerate(design["questions"]):
        width = codec.word_count(question)
        answered = [row[start:start + width] for row in batch.rows if row[start] is not None]
        if answered:
            batch.count(index, len(answered), codec.tally(question, np.array(answered, dtype=np.int64)))
        start += width
    return batch


def row_from_answer(design: dict, rid: str, day: str, answer: dict) -> tuple:
    """Return the report table's row of one validated wire-format answer ``{QID: REPORT}`` (a question may be absent).

    Only the row: a single INSERT leaves the tallies to the trigger.
    """
    row = [rid, day]
    for question in design["questions"]:
        report = answer.get(question["id"])
        if report is None:
            row.extend([None] * codec.word_count(question))
        else:
            row.extend(codec.encode_report(question, report))
    return tuple(row)


def batch_from_answers(design: dict, ids: Sequence[str], days: Sequence[str], answers: Sequence[dict]) -> Batch:
    """Return the batch of validated wire-format answers ``{QID: REPORT}`` (a question may be absent)."""
    batch = Batch(design)
    questions = list(enumerate(design["questions"]))
    for rid, day, answer in zip(ids, days, answers):
        batch.rows.append(row_from_answer(design, rid, day, answer))
        for index, question in questions:
            report = answer.get(question["id"])
            if report is None:
                continue
            batch.reports[index] += 1
            for option, increment in codec.tally_increments(question, report):
                batch.ones[index, option] = batch.ones.get((index, option), 0) + increment
    return batch


def batch_from_columns(design: dict, ids: Sequence[str], days: Sequence[str],
                       columns: Sequence[np.ndarray], asked: np.ndarray | None = None) -> Batch:
    """Return the batch of reports given per question as (n, words) int64 arrays.

    ``asked`` is None when every question is answered, else the (n, k) boolean matrix of
    the questions each respondent answered (sample allocation): the others are NULL.
    """
    batch = Batch(design)
    values = [np.asarray(ids, dtype=object), np.asarray(days, dtype=object)]
    for index, (question, words) in enumerate(zip(design["questions"], columns)):
        if asked is None:
            batch.count(index, len(words), codec.tally(question, words))
            values.extend(words[:, word] for word in range(words.shape[1]))
            continue
        answered = asked[:, index]
        batch.count(index, int(answered.sum()), codec.tally(question, words[answered]))
        for word in range(words.shape[1]):
            column = words[:, word].astype(object)
            column[~answered] = None
            values.append(column)
    batch.rows = list(zip(*(column.tolist() for column in values)))
    return batch
