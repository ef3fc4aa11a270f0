"""The rows of responses.csv read with a weight column: each question's debiased values per row and each row's weight.

Shares the chunked reading of ``tallies`` (a plain chunk parsed in numpy, anything else row by row with
every refusal worded and placed) and adds the weight column; the rows stay in memory (one float per
estimand and row), as calibration and linearised standard errors need them row by row. A codebook of
another design (``reanalysis.binary_codebook``) is read row by row. Pure: the caller reads the file.
"""

from __future__ import annotations

from itertools import islice
from typing import Iterable, Iterator

import numpy as np

from . import codec
from .aggregate import estimand_labels
from .answer_rows import ReanalysisError, answers_from_rows, check_header, integer_cell
from .csvcells import Cells, split_cells
from .mechanisms import mechanism_for
from .tallies import BATCH, DesignPlan, batch_of_answers
from .weighting import (RAKING, WEIGHT_BYTES, Item, Margin, WeightedRow, Weighting, calibrate, calibration_matrix,
                        debiased, kish, weight_of, weighted_rows)


def check_weight_column(book: dict, header: list[str], column: str | None) -> int | None:
    """Return the place of the weight column in the header, refusing one that is absent or a report column."""
    if column is None:
        return None
    if column not in header:
        shown = ", ".join(header[:12]) + (", ..." if len(header) > 12 else "")
        raise ReanalysisError(f"the responses have no weight column {column!r}; their columns are {shown}")
    if any(entry["name"] == column for entry in book["columns"]):
        raise ReanalysisError(f"{column!r} is a column of the codebook's questions, not a weight")
    return header.index(column)


class WeightedPlan(DesignPlan):
    """A design's plan that also reads each row's weight: batches are (batch, weights)."""

    def __init__(self, book: dict, design: dict, header: list[str], column: str | None):
        super().__init__(book, design, header)
        self.column, self.place = column, check_weight_column(book, header, column)

    def parse(self, data: bytes, longest: int):
        """Return ((batch, weights), rows) of a chunk, or None to read it row by row."""
        cells = split_cells(data, self.width, longest)
        if cells is None:
            return None
        batch = self.batch_of_cells(cells)
        weights = self._weights(cells)
        if batch is None or weights is None:
            return None
        return (batch, weights), cells.rows

    def _weights(self, cells: Cells) -> np.ndarray | None:
        """Return the chunk's weights, or None unless every one is plainly a positive finite number."""
        if self.place is None:
            return np.ones(cells.rows)
        data = cells.data.tobytes()
        values = []
        for start, length in zip(cells.starts[:, self.place].tolist(), cells.lengths[:, self.place].tolist()):
            text = data[start:start + length]
            if not WEIGHT_BYTES.fullmatch(text):
                return None
            values.append(float(text))
        weights = np.array(values, dtype=float)
        if weights.size and (not np.isfinite(weights).all() or weights.min() <= 0):
            return None
        return weights

    def slow(self, rows: Iterable[list[str]], first: int) -> Iterator[tuple[dict, np.ndarray]]:
        """Yield (batch, weights) of rows read one by one, each weight checked as its row is read."""
        weights: list[float] = []

        def weighed():
            for number, row in enumerate(rows, start=first):
                if self.place is None:
                    weights.append(1.0)
                else:
                    weights.append(weight_of(row[self.place] if self.place < len(row) else "", number,
                                             self.column))
                yield row

        answers = answers_from_rows(self.book, self.design, self.header, weighed(), first=first)
        while block := list(islice(answers, BATCH)):
            yield batch_of_answers(self.design, block), np.array(weights[:len(block)])
            del weights[:len(block)]


def weighted_items(book: dict, header: list[str], rows, column: str | None) -> tuple[list[Item], np.ndarray]:
    """Return each question's debiased values per row and the rows' weights (1 without a weight column)."""
    design = book.get("design")
    if design is None:
        return _binary_items(book, header, rows, column)
    plan = WeightedPlan(book, design, header, column)
    reader = getattr(rows, "batches", None)
    batches = reader(plan) if reader is not None else plan.slow(rows, 2)
    questions = design["questions"]
    present = {question["id"]: [] for question in questions}
    values = {question["id"]: [] for question in questions}
    weights = []
    for batch, chunk_weights in batches:
        weights.append(chunk_weights)
        for question in questions:
            answered, words = batch[question["id"]]
            present[question["id"]].append(answered)
            values[question["id"]].append(_values(question, answered, words))
    weights = np.concatenate(weights) if weights else np.zeros(0)
    items = []
    for question in questions:
        qid = question["id"]
        mechanism = mechanism_for(question)
        labels = tuple(estimand_labels(question))
        items.append(Item(qid, question["kind"], question["mechanism"], float(question["epsilon"]),
                          question.get("text", ""), labels,
                          np.concatenate(present[qid]) if weights.size else np.zeros(0, dtype=bool),
                          np.concatenate(values[qid]) if weights.size else np.zeros((0, len(labels))),
                          mechanism.estimand_range(),
                          len(labels) if question["kind"] in ("choice", "multi") else 1))
    return items, weights


def _values(question: dict, answered: np.ndarray, words: np.ndarray) -> np.ndarray:
    """Return the debiased values of a batch's reports to one question (0 where it was not answered)."""
    mechanism = mechanism_for(question)
    p, q = mechanism.probabilities()
    raw = codec.indicators(question, words).reshape(words.shape[0], -1)
    return np.where(answered[:, None], debiased(raw, float(p), float(q), mechanism.estimand_range()), 0.0)


def _binary_items(book: dict, header: list[str], rows: Iterable[list[str]],
                  column: str | None) -> tuple[list[Item], np.ndarray]:
    """Return the items of a codebook of other designs (each yes/no estimand by its (p, q)) and the weights."""
    check_header(book, header)
    place = check_weight_column(book, header, column)
    estimands = book["estimands"]
    places = [header.index(estimand["column"]) for estimand in estimands]
    cells, weights = [], []
    for number, row in enumerate(rows, start=2):
        weights.append(1.0 if place is None else weight_of(row[place] if place < len(row) else "", number, column))
        reports = []
        for where, estimand in zip(places, estimands):
            cell = row[where] if where < len(row) else ""
            if cell == "":
                reports.append(-1)
                continue
            value = integer_cell(cell, number, estimand["column"])
            if value not in (0, 1):
                raise ReanalysisError(f"row {number}, column {estimand['column']!r}: a report must be 0 or 1, "
                                      f"got {value}")
            reports.append(int(value == estimand["value"]))
        cells.append(reports)
    table = np.array(cells, dtype=np.int64).reshape(len(cells), len(estimands))
    columns = {entry["question"]: entry for entry in book["columns"]}
    items = []
    for index, estimand in enumerate(estimands):
        entry = columns[estimand["question"]]
        answered = table[:, index] >= 0
        values = np.where(answered, debiased(table[:, index], estimand["p"], estimand["q"], (0.0, 1.0)), 0.0)
        items.append(Item(estimand["question"], entry["kind"], entry["mechanism"],
                          float("inf") if entry["epsilon"] is None else float(entry["epsilon"]), entry["text"],
                          (estimand["option"],), answered, values[:, None], (0.0, 1.0),
                          int(estimand["simultaneous_over"])))
    return items, np.array(weights, dtype=float)


def resolve_margins(items: list[Item], margins: list[Margin]) -> list[Margin]:
    """Return the margins with a bare value's option filled in (a yes/no's "yes", a number's mean ""), checked:
    an option named once, and a single choice's shares summing to 1 when all its options are given."""
    found = {item.question: item for item in items}
    resolved = []
    for margin in margins:
        item = found.get(margin.question)
        if margin.option is None and item is not None:
            if len(item.labels) != 1:
                raise ReanalysisError(f"{margin.question!r} has options {', '.join(item.labels)}: give each "
                                      f"share as OPTION:SHARE, e.g. {margin.question}={item.labels[0]}:0.4,...")
            margin = Margin(margin.question, item.labels[0], margin.value)
        if any(other.question == margin.question and other.option == margin.option for other in resolved):
            raise ReanalysisError(f"the margin of {margin.question!r} option {margin.option!r} is given twice")
        resolved.append(margin)
    for item in items:
        given = [margin.value for margin in resolved if margin.question == item.question]
        if item.kind == "choice" and len(given) == len(item.labels) and abs(sum(given) - 1) > 1e-6:
            raise ReanalysisError(f"the margins of single-choice {item.question!r} sum to {sum(given):.6g}, not 1; "
                                  "give shares of the whole population that add up to 1 (or leave an option out)")
    return resolved


def weighted_files(book: dict, header: list[str], rows, *, column: str | None, margins: list[Margin] = (),
                   method: str = RAKING, level: float = 0.95
                   ) -> tuple[Weighting, list[WeightedRow], np.ndarray, np.ndarray]:
    """Return the weighting, the weighted estimates of every question, and the rows' given and final weights."""
    items, weights = weighted_items(book, header, rows, column)
    if not weights.size:
        raise ReanalysisError("the responses have no rows to weight")
    margins = resolve_margins(items, list(margins))
    weighting = Weighting(column, margins, method, rows=int(weights.size))
    matrix = None
    final = weights
    if margins:
        matrix = calibration_matrix(items, margins)
        final = calibrate(weights, matrix, margins, method=method)
        ratio = final / weights
        weighting.adjustment = (float(ratio.min()), float(ratio.max()))
    weighting.total, weighting.effective_n = float(final.sum()), kish(final)
    calibrated = {(margin.question, margin.option) for margin in margins}
    rows = weighted_rows(items, final, level=level, calibration=matrix, calibrated=calibrated)
    return weighting, rows, weights, final
