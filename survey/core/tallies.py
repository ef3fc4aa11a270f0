"""Tallies of a re-analysis with the product's design, read in batches: each batch holds, per question, which
rows answered it and their reports as stored words (``codec``); the batches sum into the counts the
dashboard's estimators take (``count_batches``) or into the counts of distinct joint reports that crosstabs
and regressions take (``joint_counts``).

A chunk of plain CSV lines is parsed in numpy (``DesignPlan.parse``); any chunk it is not sure of is read
row by row (``DesignPlan.slow``, the wire-format path of ``reanalysis.answers_from_rows``), which words and
places every refusal. Integer sums are exact, so the numbers do not depend on how the file was cut.
Pure: the caller reads the file.
"""

from __future__ import annotations

from itertools import islice
from typing import Iterable, Iterator

import numpy as np

from . import codec
from .aggregate import QuestionCounts
from .csvcells import Cells, integers, split_cells
from .mechanisms import BITS, mechanism_for
from .answer_rows import answers_from_rows, check_header

BATCH = 8192  # answers turned into one batch on the row-by-row path

Batch = dict  # question id -> (present: bool (n,), words: int64 (n, word_count)), zeros where absent


class DesignPlan:
    """How the rows of one design's responses.csv become batches: plain chunks in numpy, the rest row by row."""

    def __init__(self, book: dict, design: dict, header: list[str]):
        check_header(book, header)
        self.book, self.design, self.header, self.width = book, design, header, len(header)
        position = {name: index for index, name in enumerate(header)}
        self.groups = [(question, [position[column["name"]] for column in book["columns"]
                                   if column["question"] == question["id"]])
                       for question in design["questions"]]

    def parse(self, data: bytes, longest: int) -> tuple[Batch, int] | None:
        """Return the batch of a chunk of whole lines and its row count, or None to read it row by row."""
        cells = split_cells(data, self.width, longest)
        if cells is None:
            return None
        batch = self.batch_of_cells(cells)
        return None if batch is None else (batch, cells.rows)

    def batch_of_cells(self, cells: Cells) -> Batch | None:
        """Return the batch of a chunk's cells, or None unless every report is plainly valid."""
        batch = {}
        for question, places in self.groups:
            parsed = _question(cells, question, places)
            if parsed is None:
                return None
            batch[question["id"]] = parsed
        return batch

    def slow(self, rows: Iterable[list[str]], first: int) -> Iterator[Batch]:
        """Yield the batches of rows read one by one, the first of them row number ``first``."""
        answers = answers_from_rows(self.book, self.design, self.header, rows, first=first)
        while block := list(islice(answers, BATCH)):
            yield batch_of_answers(self.design, block)


def _question(cells: Cells, question: dict, places: list[int]) -> tuple[np.ndarray, np.ndarray] | None:
    """Return (present, words) of one question's columns, or None unless every report is plainly valid."""
    try:
        mechanism = mechanism_for(question)
    except ValueError:
        return None
    columns = [integers(cells, place) for place in places]
    if any(column is None for column in columns):
        return None
    words = np.zeros((cells.rows, codec.word_count(question)), dtype=np.int64)
    if not columns:
        return np.zeros(cells.rows, dtype=bool), words
    present = columns[0][1]
    if any((other != present).any() for _, other in columns[1:]):
        return None  # a question with some of its columns empty
    values = np.column_stack([column for column, _ in columns])[present]
    if not values.size:
        return present, words
    if mechanism.report == BITS:
        if len(places) != mechanism.estimands or values.max() > 1:
            return None
        if mechanism.batch_error(question["id"], values.sum(axis=1)) is not None:
            return None
        words[present] = codec.encode_column(question, values)
    else:
        if values[:, 0].max() > mechanism.highest:
            return None
        words[present, 0] = values[:, 0]
    return present, words


def batch_of_answers(design: dict, answers: list[dict]) -> Batch:
    """Return the batch of validated wire-format answers."""
    batch = {}
    for question in design["questions"]:
        qid = question["id"]
        present = np.fromiter((qid in answer for answer in answers), dtype=bool, count=len(answers))
        words = np.zeros((len(answers), codec.word_count(question)), dtype=np.int64)
        if present.any():
            words[present] = codec.encode_column(question, [answer[qid] for answer in answers if qid in answer])
        batch[qid] = (present, words)
    return batch


def count_batches(design: dict, batches: Iterable[Batch]) -> dict[str, QuestionCounts]:
    """Return each question's report count and tallies (``aggregate.count_reports``'s) summed over the batches."""
    questions = design["questions"]
    n = {question["id"]: 0 for question in questions}
    ones = {question["id"]: np.zeros(codec.tally_count(question), dtype=np.int64) for question in questions}
    for batch in batches:
        for question in questions:
            present, words = batch[question["id"]]
            n[question["id"]] += int(np.count_nonzero(present))
            ones[question["id"]] += codec.tally(question, words[present])
    return {qid: QuestionCounts(n=n[qid], ones=ones[qid]) for qid in n}


def joint_counts(batches: Iterable[Batch], qids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Return the distinct rows of the questions' words among rows that answered all of them, sorted, and
    their counts (as ``np.unique(..., axis=0, return_counts=True)`` over all of those rows)."""
    found: dict[tuple, int] = {}
    width = 0
    for batch in batches:
        mask = np.logical_and.reduce([batch[qid][0] for qid in qids])
        rows = np.concatenate([batch[qid][1][mask] for qid in qids], axis=1)
        width = rows.shape[1]
        if not rows.shape[0]:
            continue
        distinct, counts = _distinct(rows)
        for key, count in zip(map(tuple, distinct.tolist()), counts.tolist()):
            found[key] = found.get(key, 0) + count
    keys = sorted(found)
    return (np.array(keys, dtype=np.int64).reshape(len(keys), width),
            np.array([found[key] for key in keys], dtype=np.intp))


def _distinct(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the distinct rows of non-negative integers and their counts: each row one mixed-radix number
    when their product of ranges fits (counted with bincount when small), else sorted as rows."""
    ranges = rows.max(axis=0) + 1
    size = 1
    for value in ranges.tolist():
        size *= value
    if size >= 1 << 62:
        return np.unique(rows, axis=0, return_counts=True)
    keys = np.ravel_multi_index(tuple(rows.T), tuple(ranges.tolist()))
    if size <= 1 << 22:
        counts = np.bincount(keys, minlength=size)
        keys = np.flatnonzero(counts)
        counts = counts[keys]
    else:
        keys, counts = np.unique(keys, return_counts=True)
    return np.column_stack(np.unravel_index(keys, tuple(ranges.tolist()))).astype(np.int64), counts
