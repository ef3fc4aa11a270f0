"""Re-analysis from files alone: the estimates, crosstabs and regressions of responses.csv and a codebook.

A codebook exported by this product carries its public ``design``, so the reports of each row
are turned back into wire-format reports and go through the very code the dashboard uses
(``aggregate``, ``crosstab``, ``regression``): the numbers are the dashboard's, byte for byte.

A codebook written for data collected elsewhere (``binary_codebook``) describes each yes/no item
by the probabilities p = P(report yes | true yes) and q = P(report yes | true no) of its design —
Warner's (p, 1 − p), forced response, the unrelated question, any p ≠ q — and may name *exact*
columns, asked directly, that serve as covariates of a regression. Its estimates follow Warner's
estimator (ā − q)/(p − q) with the Clopper–Pearson interval, as the product's own do.
Pure: no I/O; the caller reads the files.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import replace
from fractions import Fraction
from typing import TYPE_CHECKING, Iterable, Iterator

import numpy as np

from .aggregate import AggregateRow, aggregate_counts, check_intervals
from .answer_rows import ReanalysisError, answers_from_rows, check_header, integer_cell  # noqa: F401 (re-exported)
from .codec import decode_report, word_count
from .defaults import FIXED
from .estimators import debias_binary
from .posterior import binomial_interval, kind_prior

# The crosstab, the models and the power are imported by the analyses that use them: an aggregate of the files
# need not load scipy.stats and scipy.optimize (0.4 s of `ldp-survey analyze`'s start-up).
if TYPE_CHECKING:
    from .crosstab import Crosstab
    from .regression import Regression

BINARY = "binary"
EXACT = "exact"


def realised_epsilon(p: Fraction, q: Fraction) -> float:
    """Return ln of the largest likelihood ratio of a yes/no design's reports: max over reports of P(r|yes)/P(r|no)
    and its inverse (math.inf when a report rules an answer out)."""
    ratios = []
    for yes, no in ((p, q), (1 - p, 1 - q)):
        if (yes == 0) != (no == 0):
            return math.inf
        if yes:
            ratios += [yes / no, no / yes]
    largest = max(ratios)
    try:
        return math.log(largest)
    except OverflowError:  # a ratio beyond the floats (p near 0): the difference of its integers' logarithms
        return math.log(largest.numerator) - math.log(largest.denominator)


MAX_NAME = 200  # characters in a column's name


def name_problem(name) -> str | None:
    """Return what is wrong with a column's name (empty, too long, a control character), or None."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        return f"a column's name must have 1 to {MAX_NAME} characters, got {str(name)[:60]!r}"
    if any(unicodedata.category(char).startswith("C") for char in name):
        return f"a column's name must not hold control characters, got {name!r}"
    return None


# A probability as a decimal (0.75, 7.5e-1) or a fraction (3/4); the bounds keep Fraction from building huge powers.
_PROBABILITY = re.compile(r"[0-9]{1,30}(\.[0-9]{0,30})?([eE][-+]?[0-9]{1,3})?|\.[0-9]{1,30}|[0-9]{1,30}/[0-9]{1,30}")


def _fraction(text: str) -> Fraction:
    """Return a probability of the design exactly, refusing one outside [0, 1] or that no float can hold."""
    if not isinstance(text, str) or not _PROBABILITY.fullmatch(text.strip()):
        raise ReanalysisError(f"{text!r} is not a probability: write it as 0.75 or 3/4") from None
    try:
        value = Fraction(text.strip())
    except ZeroDivisionError:
        raise ReanalysisError(f"{text!r} is not a probability: its denominator is 0") from None
    if not 0 <= value <= 1:
        raise ReanalysisError(f"a probability must be in [0, 1], got {text}")
    if float(value) in (0.0, 1.0) and value not in (0, 1):
        raise ReanalysisError(f"{text} is too close to {float(value):g} to compute with (it rounds to "
                              f"{float(value):g} in double precision); write it as {float(value):g} if it is")
    return value


def binary_codebook(items: list[tuple[str, str, str]], *, title: str = "", exact: list[str] = (),
                    numbers: list[str] = ()) -> dict:
    """Return the codebook of data collected under any yes/no randomized-response designs.

    ``items`` are (column, p, q) with p = P(report 1 | true yes), q = P(report 1 | true no), as
    decimals or fractions; ``exact`` names columns asked directly (regression covariates, each
    value a category), ``numbers`` those asked directly that are numbers (entering linearly).
    """
    if not items:
        raise ReanalysisError("describe at least one randomized yes/no column")
    names = [column for column, _, _ in items] + list(exact) + list(numbers)
    for name in names:
        if name_problem(name):
            raise ReanalysisError(name_problem(name))
    if len(set(names)) != len(names):
        raise ReanalysisError("a column is named twice")
    columns, estimands = [], []
    spent = 0.0
    for column, p_text, q_text in items:
        p, q = _fraction(p_text), _fraction(q_text)
        if p == q:
            raise ReanalysisError(f"{column}: p = q = {p} makes the reports independent of the answers, so they "
                                  "carry no information about them: nothing can be estimated")
        epsilon = realised_epsilon(p, q)
        spent += epsilon
        columns.append({"name": column, "question": column, "text": "", "kind": "yes_no", "mechanism": BINARY,
                        "epsilon": epsilon if math.isfinite(epsilon) else None,
                        "meaning": f"1 if the randomized report says yes: a true yes is reported yes with "
                                   f"probability {float(p):.6g}, a true no with probability {float(q):.6g}"})
        estimands.append({"question": column, "option": "yes", "column": column, "value": 1,
                          "p": float(p), "q": float(q), "p_exact": f"{p.numerator}/{p.denominator}",
                          "q_exact": f"{q.numerator}/{q.denominator}", "scale": None,
                          "interval": "clopper-pearson", "simultaneous_over": 1})
    columns += [{"name": column, "question": column, "text": "", "kind": "category", "mechanism": EXACT,
                 "epsilon": None, "meaning": "an answer asked directly, not randomized: each distinct value "
                                                 "is a category"} for column in exact]
    columns += [{"name": column, "question": column, "text": "", "kind": "number", "mechanism": EXACT,
                 "epsilon": None, "meaning": "a number asked directly, not randomized: it enters a regression "
                                                 "linearly"} for column in numbers]
    return {
        "survey": "", "title": title, "design_hash": None,
        "epsilon": spent if math.isfinite(spent) else None, "epsilon_spent": spent if math.isfinite(spent) else None,
        "allocation": "split",
        "files": {"responses": "a CSV with one column per item below (0/1 for a randomized yes/no report, any "
                               "value for an exact column); other columns are ignored; an empty cell is an "
                               "item the respondent did not answer"},
        "method": "For each item, with n the non-empty cells and a the share of 1s: estimate = (a - q)/(p - q); "
                  "std_error = sqrt(a(1 - a)/(n - 1))/(p - q); the interval is Clopper-Pearson on the count of "
                  "1s, mapped through the same map and clipped to [0, 1].",
        "columns": columns, "estimands": estimands, "design": None,
    }


def design_of(book: dict) -> dict | None:
    """Return the product's design a codebook carries, or None for a codebook of another design."""
    if not isinstance(book, dict) or "columns" not in book or "estimands" not in book:
        raise ReanalysisError("this is not a codebook: it has no columns and estimands")
    return book.get("design")


def aggregate_files(book: dict, header: list[str], rows: Iterable[list[str]], *, level: float,
                    intervals: str = FIXED) -> list[AggregateRow]:
    """Return the aggregates of the responses, as the dashboard computes them (or by Warner's estimator).

    ``intervals`` is "fixed" or "posterior-PRIOR" (``aggregate_counts``); a codebook of another design
    gets the exact posterior of each item through its (p, q) (``posterior.binomial_interval``).
    """
    design = design_of(book)
    intervals = check_intervals(intervals)
    if design is not None:
        from .tallies import count_batches

        return aggregate_counts(design, count_batches(design, design_batches(book, design, header, rows)),
                                level=level, intervals=intervals)
    prior = kind_prior(intervals)
    if prior is None and intervals != FIXED:
        raise ReanalysisError(f"a codebook of another design takes fixed or posterior intervals, not {intervals}")
    check_header(book, header)
    columns = {column["question"]: column for column in book["columns"]}
    places = [header.index(estimand["column"]) for estimand in book["estimands"]]
    ones, counts = [0] * len(places), [0] * len(places)
    for number, row in enumerate(rows, start=2):
        for index, (place, estimand) in enumerate(zip(places, book["estimands"])):
            cell = row[place] if place < len(row) else ""
            if cell == "":
                continue
            value = integer_cell(cell, number, estimand["column"])
            if value not in (0, 1):
                raise ReanalysisError(f"row {number}, column {estimand['column']!r}: a report must be 0 or 1, "
                                      f"got {value}")
            counts[index] += 1
            ones[index] += value == estimand["value"]
    result = []
    for estimand, count, one in zip(book["estimands"], counts, ones):
        column = columns[estimand["question"]]
        estimate = debias_binary(one, count, p_one_if_true=estimand["p"], p_one_if_false=estimand["q"],
                                 level=level, alpha_divisor=estimand["simultaneous_over"])
        if prior is not None:
            low, high = binomial_interval(one, count, estimand["p"], estimand["q"], prior, level)
            estimate = replace(estimate, ci_low=low, ci_high=high)
        result.append(AggregateRow(
            question=estimand["question"], option=estimand["option"], kind=column["kind"],
            mechanism=column["mechanism"], epsilon=math.inf if column["epsilon"] is None else float(column["epsilon"]),
            n=estimate.n,
            noisy_share=estimate.noisy_share, estimate=estimate.estimate, std_error=estimate.std_error,
            ci_low=estimate.ci_low, ci_high=estimate.ci_high, ci_level=float(level), text=column["text"],
            ci_kind=intervals))
    return result


def _questions(book: dict) -> tuple[dict, dict]:
    design = design_of(book)
    if design is None:
        raise ReanalysisError("crosstabs need a codebook exported by ldp-survey (it carries the design); "
                              "for data from another design, use regress")
    return design, {question["id"]: question for question in design["questions"]}


def crosstab_files(book: dict, header: list[str], rows: Iterable[list[str]], a: str, b: str, *,
                   level: float) -> Crosstab:
    """Return the crosstab of two questions from the files, as the dashboard computes it."""
    from .crosstab import check_allocation, check_pair, crosstab

    design, questions = _questions(book)
    for qid in (a, b):
        if qid not in questions:
            raise ReanalysisError(f"{qid!r} is not a question of {design['slug']!r}; its questions are "
                                  f"{', '.join(questions)}")
    check_allocation(design)
    check_pair(questions[a], questions[b])
    from .tallies import joint_counts

    # The store groups the pairs in SQL and sums in that (sorted) order; group the same way here.
    distinct, counts = joint_counts(design_batches(book, design, header, rows), [a, b])
    if not counts.size:
        raise ReanalysisError(f"no response answered both {a!r} and {b!r}")
    width = word_count(questions[a])
    return crosstab(questions[a], questions[b], distinct[:, :width], distinct[:, width:], counts, level=level)


def regression_files(book: dict, header: list[str], rows: Iterable[list[str]], outcome: str, covariates: list[str],
                     *, level: float):
    """Return the model of an outcome (yes/no: logistic; number: its mean) on covariates, from the files alone."""
    from .modelling import model_questions
    from .regression import RegressionError

    names = [outcome, *covariates]
    design = design_of(book)
    if design is not None:
        from .tallies import joint_counts

        questions = model_questions(design, outcome, covariates)
        distinct, counts = joint_counts(design_batches(book, design, header, rows), names)
        return _fit(questions, distinct, counts, level)
    if len(set(names)) != len(names):
        raise RegressionError("a question appears twice among the outcome and the covariates")
    return _binary_regression(book, header, rows, names, level)


def design_batches(book: dict, design: dict, header: list[str], rows) -> Iterator:
    """Return the batches (``tallies``) of the rows: ``rows.batches(plan)`` when the reader parses chunks
    itself (the command line's), else the rows read one by one."""
    from .tallies import DesignPlan

    plan = DesignPlan(book, design, header)
    reader = getattr(rows, "batches", None)
    return reader(plan) if reader is not None else plan.slow(rows, 2)


def _fit(questions: list[dict], distinct: np.ndarray, counts: np.ndarray, level: float):
    """Fit the model over the distinct patterns of complete answers' words (the questions' words side by side)."""
    from .modelling import fit_reports
    from .regression import RegressionError

    if not counts.size:
        raise RegressionError("no response answered all of these questions")
    reports, start = [], 0
    for question in questions:
        width = word_count(question)
        reports.append([decode_report(question, row) for row in distinct[:, start:start + width].tolist()])
        start += width
    return fit_reports(questions, reports, counts, level=level)


def _binary_regression(book: dict, header: list[str], rows: Iterable[list[str]], names: list[str],
                       level: float) -> Regression:
    """Fit the model on a codebook of other designs: randomized yes/no items by their (p, q), exact columns as given."""
    from .regression import RegressionError, Variable, logistic_regression

    check_header(book, header)
    columns = {column["name"]: column for column in book["columns"]}
    estimands = {estimand["column"]: estimand for estimand in book["estimands"]}
    unknown = [name for name in names if name not in columns]
    if unknown:
        raise RegressionError(f"{unknown[0]!r} is not a column of the codebook; it has {', '.join(columns)}")
    if columns[names[0]]["mechanism"] != BINARY:
        raise RegressionError(f"the outcome {names[0]!r} must be a randomized yes/no item")
    places = [header.index(name) for name in names]
    complete = []
    for number, row in enumerate(rows, start=2):
        cells = [row[place] if place < len(row) else "" for place in places]
        if "" in cells:
            continue
        for name, cell in zip(names, cells):
            if columns[name]["mechanism"] == BINARY and cell not in ("0", "1"):
                raise ReanalysisError(f"row {number}, column {name!r}: a report must be 0 or 1, got {cell[:40]!r}")
        complete.append(tuple(cells))
    if not complete:
        raise RegressionError("no response answered all of these items")
    distinct, counts = np.unique(np.array(complete, dtype=object).astype(str), axis=0, return_counts=True)
    if any(columns[name]["kind"] == "number" for name in names[1:]):
        from .number_covariates import codebook_regression

        return codebook_regression(names, columns, estimands, distinct, counts, level=level)
    variables = []
    for index, name in enumerate(names):
        cells = distinct[:, index]
        if columns[name]["mechanism"] == BINARY:
            p, q = estimands[name]["p"], estimands[name]["q"]
            yes = cells == "1"
            variables.append(Variable(name, ("no", "yes"),
                                      np.column_stack([np.where(yes, q, 1 - q), np.where(yes, p, 1 - p)])))
        else:
            labels = tuple(sorted(set(cells.tolist()), key=_natural))
            variables.append(Variable(name, labels, (cells[:, None] == np.array(labels)[None, :]).astype(float)))
    return logistic_regression(variables[0], variables[1:], counts, level=level)


def _natural(label: str):
    """Sort numbers as numbers and before words, so that 0 is the reference category of a 0/1 column."""
    try:
        return (0, float(label), "")
    except ValueError:
        return (1, 0.0, label)


def power_files(book: dict, header: list[str], rows: Iterable[list[str]], question: str, null: float, share: float,
                *, alpha: float = 0.05, sided: int = 2, target: float = 0.8) -> dict:
    """Return the power the data had for the test that a yes/no item's share is ``null`` when it is ``share``.

    The item's (p, q) come from the codebook and n is the number of its reports in the file, so
    this is the power of the design as it was run (as ``planning.power_plan`` gives it beforehand).
    """
    from .planning import prevalence_power

    estimand = next((entry for entry in book["estimands"]
                     if entry["question"] == question and entry["option"] == "yes"), None)
    if estimand is None:
        raise ReanalysisError(f"{question!r} is not a yes/no item of the codebook")
    check_header(book, header)
    place = header.index(estimand["column"])
    n = sum(1 for row in rows if place < len(row) and row[place] != "")
    if n == 0:
        raise ReanalysisError(f"no response answered {question!r}")
    try:
        return prevalence_power(estimand["p"], estimand["q"], question, null, share, respondents=n, alpha=alpha,
                                sided=sided, target=target)
    except ValueError as exc:
        raise ReanalysisError(str(exc)) from None
