"""The rows of responses.csv read with a weight column: each question's debiased values per row and each row's weight.

Shares the chunked reading of ``tallies`` (a plain chunk parsed in numpy, anything else row by row with
every refusal worded and placed) and adds the weight, stratum and cluster columns; the rows stay in memory
(each question's reports as their words, debiased one question at a time), as calibration and linearised
standard errors need them row by row. A codebook of
another design (``reanalysis.binary_codebook``) is read row by row. Pure: the caller reads the file.
"""

from __future__ import annotations

from functools import partial
from itertools import islice
from typing import Iterable, Iterator

import numpy as np

from . import codec
from .aggregate import estimand_labels
from .answer_rows import ReanalysisError, answers_from_rows, check_header, integer_cell
from .csvcells import Cells, split_cells
from .mechanisms import mechanism_for
from .tallies import BATCH, DesignPlan, batch_of_answers
from .weighted_applied import with_applied
from .weighting import (RAKING, WEIGHT_BYTES, Item, Margin, Sampling, WeightedRow, Weighting, calibrate,
                        calibration_matrix, debiased, kish, label_of, weight_of, weighted_rows)


class RowColumns:
    """The weight, strata and cluster columns of the rows (each optional), checked against the header and the
    codebook; ``read`` takes them from a row read by the csv module, ``parse`` from a chunk's cells."""

    def __init__(self, book: dict, header: list[str], weights: str | None, strata: str | None = None,
                 clusters: str | None = None):
        given = [(name, what) for name, what in ((weights, "weight"), (strata, "stratum"), (clusters, "cluster"))
                 if name is not None]
        names = [name for name, _ in given]
        if len(set(names)) != len(names):
            raise ReanalysisError("the weight, strata and cluster columns must be different columns")
        for name, what in given:
            if name not in header:
                shown = ", ".join(header[:12]) + (", ..." if len(header) > 12 else "")
                raise ReanalysisError(f"the responses have no {what} column {name!r}; their columns are {shown}")
            if any(entry["name"] == name for entry in book["columns"]):
                raise ReanalysisError(f"{name!r} is a column of the codebook's questions, not a {what}")
        self.weights = None if weights is None else (weights, header.index(weights))
        self.labels = [(name, header.index(name), what) for name, what in ((strata, "stratum"), (clusters, "cluster"))
                       if name is not None]

    def read(self, row: list[str], number: int) -> tuple[float, list[str]]:
        """Return a row's weight (1 without a weight column) and its labels, each checked, naming the row."""
        def cell(place):
            return row[place] if place < len(row) else ""

        weight = 1.0 if self.weights is None else weight_of(cell(self.weights[1]), number, self.weights[0])
        return weight, [label_of(cell(place), number, name, what) for name, place, what in self.labels]

    def parse(self, cells: Cells) -> tuple[np.ndarray, list[list[str]]] | None:
        """Return a chunk's weights and labels, or None unless each is plainly valid (a positive number, a label)."""
        data = cells.data.tobytes()

        def texts(place):
            return [data[start:start + length] for start, length in
                    zip(cells.starts[:, place].tolist(), cells.lengths[:, place].tolist())]

        weights = np.ones(cells.rows)
        if self.weights is not None:
            found = texts(self.weights[1])
            if not all(WEIGHT_BYTES.fullmatch(text) for text in found):
                return None
            weights = np.array([float(text) for text in found], dtype=float)
            if weights.size and (not np.isfinite(weights).all() or weights.min() <= 0):
                return None
        labels = []
        for _, place, _ in self.labels:
            if cells.rows and cells.lengths[:, place].min() == 0:
                return None
            labels.append([text.decode("utf-8") for text in texts(place)])
        return weights, labels


class WeightedPlan(DesignPlan):
    """A design's plan that also reads each row's weight and labels: batches are (batch, weights, labels)."""

    def __init__(self, book: dict, design: dict, header: list[str], columns: RowColumns):
        super().__init__(book, design, header)
        self.columns = columns

    def parse(self, data: bytes, longest: int):
        """Return ((batch, weights, labels), rows) of a chunk, or None to read it row by row."""
        cells = split_cells(data, self.width, longest)
        if cells is None:
            return None
        batch = self.batch_of_cells(cells)
        extra = self.columns.parse(cells)
        if batch is None or extra is None:
            return None
        return (batch, *extra), cells.rows

    def slow(self, rows: Iterable[list[str]], first: int) -> Iterator[tuple]:
        """Yield (batch, weights, labels) of rows read one by one, each weight and label checked as read."""
        read: list[tuple[float, list[str]]] = []

        def weighed():
            for number, row in enumerate(rows, start=first):
                read.append(self.columns.read(row, number))
                yield row

        answers = answers_from_rows(self.book, self.design, self.header, weighed(), first=first)
        while block := list(islice(answers, BATCH)):
            taken = read[:len(block)]
            del read[:len(block)]
            labels = [[labels[index] for _, labels in taken] for index in range(len(self.columns.labels))]
            yield batch_of_answers(self.design, block), np.array([weight for weight, _ in taken]), labels


def weighted_items(book: dict, header: list[str], rows, columns: RowColumns
                   ) -> tuple[list[Item], np.ndarray, list[list[str]]]:
    """Return each question's debiased values per row, the rows' weights (1 without a weight column) and their
    stratum and cluster labels (one list per column given)."""
    design = book.get("design")
    if design is None:
        return _binary_items(book, header, rows, columns)
    plan = WeightedPlan(book, design, header, columns)
    reader = getattr(rows, "batches", None)
    batches = reader(plan) if reader is not None else plan.slow(rows, 2)
    questions = design["questions"]
    present = {question["id"]: [] for question in questions}
    values = {question["id"]: [] for question in questions}  # the reports' words
    weights, labels = [], [[] for _ in columns.labels]
    for batch, chunk_weights, chunk_labels in batches:
        weights.append(chunk_weights)
        for gathered, chunk in zip(labels, chunk_labels):
            gathered.extend(chunk)
        for question in questions:
            answered, words = batch[question["id"]]
            present[question["id"]].append(answered)
            values[question["id"]].append(words)
    weights = np.concatenate(weights) if weights else np.zeros(0)
    items = []
    for question in questions:
        qid = question["id"]
        mechanism = mechanism_for(question)
        labels_of = tuple(estimand_labels(question))
        answered = np.concatenate(present[qid]) if weights.size else np.zeros(0, dtype=bool)
        words = np.concatenate(values[qid]) if weights.size else np.zeros((0, codec.word_count(question)), np.int64)
        items.append(Item(qid, question["kind"], question["mechanism"], float(question["epsilon"]),
                          question.get("text", ""), labels_of, answered, words, mechanism.estimand_range(),
                          len(labels_of) if question["kind"] in ("choice", "multi") else 1,
                          partial(_values, question, answered)))
    return items, weights, labels


def _values(question: dict, answered: np.ndarray, words: np.ndarray) -> np.ndarray:
    """Return the debiased values of a batch's reports to one question (0 where it was not answered)."""
    mechanism = mechanism_for(question)
    p, q = mechanism.probabilities()
    values = debiased(codec.indicators(question, words).reshape(words.shape[0], -1), float(p), float(q),
                      mechanism.estimand_range())
    values[~answered] = 0.0
    return values


def _binary_items(book: dict, header: list[str], rows: Iterable[list[str]],
                  columns: RowColumns) -> tuple[list[Item], np.ndarray, list[list[str]]]:
    """Return the items of a codebook of other designs (each yes/no estimand by its (p, q)), weights and labels."""
    check_header(book, header)
    estimands = book["estimands"]
    places = [header.index(estimand["column"]) for estimand in estimands]
    cells, weights, labels = [], [], [[] for _ in columns.labels]
    for number, row in enumerate(rows, start=2):
        weight, row_labels = columns.read(row, number)
        weights.append(weight)
        for gathered, label in zip(labels, row_labels):
            gathered.append(label)
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
    by_question = {entry["question"]: entry for entry in book["columns"]}
    items = []
    for index, estimand in enumerate(estimands):
        entry = by_question[estimand["question"]]
        answered = table[:, index] >= 0
        values = np.where(answered, debiased(table[:, index], estimand["p"], estimand["q"], (0.0, 1.0)), 0.0)
        items.append(Item(estimand["question"], entry["kind"], entry["mechanism"],
                          float("inf") if entry["epsilon"] is None else float(entry["epsilon"]), entry["text"],
                          (estimand["option"],), answered, values[:, None], (0.0, 1.0),
                          int(estimand["simultaneous_over"])))
    return items, np.array(weights, dtype=float), labels


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
                   method: str = RAKING, level: float = 0.95, strata: str | None = None, clusters: str | None = None
                   ) -> tuple[Weighting, list[WeightedRow], np.ndarray, np.ndarray]:
    """Return the weighting, the weighted estimates of every question, and the rows' given and final weights."""
    columns = RowColumns(book, header, column, strata, clusters)
    items, weights, labels = weighted_items(book, header, rows, columns)
    if not weights.size:
        raise ReanalysisError("the responses have no rows to weight")
    margins = resolve_margins(items, list(margins))
    given = dict(zip([what for _, _, what in columns.labels], labels))
    sampling = None
    if given:
        sampling = Sampling.of(weights.size, given.get("stratum"), given.get("cluster"), names=(strata, clusters))
    weighting = Weighting(column, margins, method, strata, clusters, rows=int(weights.size))
    matrix = None
    final = weights
    if margins:
        matrix = calibration_matrix(items, margins)
        final = calibrate(weights, matrix, margins, method=method)
        ratio = final / weights
        weighting.adjustment = (float(ratio.min()), float(ratio.max()))
    weighting.total, weighting.effective_n = float(final.sum()), kish(final)
    calibrated = {(margin.question, margin.option) for margin in margins}
    rows = weighted_rows(items, final, level=level, calibration=matrix, calibrated=calibrated, sampling=sampling)
    if book.get("design") is not None:
        rows = with_applied(book["design"], items, rows, final, level=level, calibration=matrix, sampling=sampling)
    return weighting, rows, weights, final
