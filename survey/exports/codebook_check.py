"""Check a parsed codebook before a re-analysis uses it: every field that the analysis reads has its type and range.

A codebook of another design (``reanalysis.binary_codebook``, ``design`` null) is checked field by field,
and a key it does not define is refused (a misspelt ``P`` would otherwise be ignored). A codebook exported
by ldp-survey carries its design: the design must hash to its own ``hash`` and the codebook's
``design_hash`` (so an edited design is caught), and its columns must be those the design gives.
Errors name the field by its path (``estimands[0].p``). Pure: no I/O.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..core.design import design_hash
from ..core.mechanisms import mechanism_for
from ..core.reanalysis import BINARY, EXACT, ReanalysisError, name_problem
from .codebook import response_columns

BOOK_KEYS = {"survey", "title", "design_hash", "epsilon", "epsilon_spent", "allocation", "files", "method",
             "columns", "estimands", "design"}
# Keys a codebook may carry besides: the deletion date, and the weighting `analyze --out` used (read by people).
OPTIONAL_KEYS = {"deletion_date", "weighting"}
COLUMN_KEYS = {"name", "question", "text", "kind", "mechanism", "epsilon", "meaning"}
ESTIMAND_KEYS = {"question", "option", "column", "value", "p", "q", "p_exact", "q_exact", "scale", "interval",
                 "simultaneous_over"}
KINDS = {BINARY: ("yes_no",), EXACT: ("category", "number")}
# What a malformed (even re-hashed) design can raise in the code that reads it.
DESIGN_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError, ArithmeticError)


def _fail(where: str, problem: str) -> ReanalysisError:
    return ReanalysisError(f"the codebook's {where} {problem}")


def _is_number(value) -> bool:
    """True for a finite int or float that is not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _name(value, where: str) -> str:
    """Return a column name, refusing what ``reanalysis.name_problem`` refuses."""
    problem = name_problem(value)
    if problem:
        raise _fail(where, f"is wrong: {problem}")
    return value


def _show(value) -> str:
    """Return a short account of a JSON value for an error message."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _text(value, where: str) -> None:
    if not isinstance(value, str):
        raise _fail(where, f"must be text, got {_show(value)}")


def _keys(entry, expected: set[str], where: str) -> None:
    """Refuse a non-object, a missing key and an unknown one."""
    if not isinstance(entry, dict):
        raise _fail(where, f"must be an object, got {_show(entry)}")
    missing, extra = sorted(expected - set(entry)), sorted(set(entry) - expected)
    if missing:
        raise _fail(where, f"has no key {missing[0]!r}")
    if extra:
        raise _fail(where, f"has an unknown key {extra[0]!r}; the keys are {', '.join(sorted(expected))}")


def _probability(value, exact, where: str) -> float:
    """Return a probability in [0, 1] that agrees with its exact fraction."""
    if not _is_number(value) or not 0 <= value <= 1:
        raise _fail(where, f"must be a probability, a number in [0, 1], got {_show(value)}")
    try:
        fraction = Fraction(exact) if isinstance(exact, str) and len(exact) <= 1000 else None
    except (ValueError, ZeroDivisionError):
        fraction = None
    if fraction is None or not 0 <= fraction <= 1 or not math.isclose(float(fraction), value, rel_tol=1e-9):
        raise _fail(f"{where}_exact", f"must be the fraction {value!r} is, as text like \"3/4\", "
                                      f"got {_show(exact)}")
    if float(fraction) in (0.0, 1.0) and fraction not in (0, 1):
        raise _fail(f"{where}_exact", f"is too close to {float(fraction):g} to compute with (it rounds to it "
                                      "in double precision)")
    return float(value)


def _list(value, where: str) -> list:
    if not isinstance(value, list) or not value:
        raise _fail(where, f"must be a non-empty list, got {_show(value)}")
    return value


def _check_columns(columns: list) -> dict[str, dict]:
    """Return the columns of a codebook of another design by name, each checked."""
    by_name = {}
    for index, column in enumerate(_list(columns, "columns")):
        where = f"columns[{index}]"
        _keys(column, COLUMN_KEYS, where)
        name = _name(column["name"], f"{where}.name")
        if name in by_name:
            raise _fail(f"{where}.name", f"{name!r} names a column twice")
        if column["question"] != name:
            raise _fail(f"{where}.question", f"must be the column's name {name!r}, got {_show(column['question'])}")
        if column["mechanism"] not in KINDS:
            raise _fail(f"{where}.mechanism", f"must be {BINARY!r} or {EXACT!r}, got {_show(column['mechanism'])}")
        if column["kind"] not in KINDS[column["mechanism"]]:
            raise _fail(f"{where}.kind", f"must be {' or '.join(map(repr, KINDS[column['mechanism']]))} for a {column['mechanism']} "
                                         f"column, got {_show(column['kind'])}")
        if column["epsilon"] is not None and not (_is_number(column["epsilon"]) and column["epsilon"] >= 0):
            raise _fail(f"{where}.epsilon", f"must be null or a number >= 0, got {_show(column['epsilon'])}")
        _text(column["text"], f"{where}.text")
        _text(column["meaning"], f"{where}.meaning")
        by_name[name] = column
    return by_name


def _check_estimand(entry, index: int, columns: dict[str, dict]) -> str:
    """Check one estimand of a codebook of another design and return its column."""
    where = f"estimands[{index}]"
    _keys(entry, ESTIMAND_KEYS, where)
    column = entry["column"]
    if not isinstance(column, str) or columns.get(column, {}).get("mechanism") != BINARY:
        raise _fail(f"{where}.column", f"must name a {BINARY} column of the codebook, got {_show(column)}")
    for key, expected in (("question", column), ("option", "yes"), ("scale", None), ("interval", "clopper-pearson")):
        if entry[key] != expected:
            raise _fail(f"{where}.{key}", f"must be {_show(expected)}, got {_show(entry[key])}")
    if entry["value"] != 1 or not isinstance(entry["value"], int) or isinstance(entry["value"], bool):
        raise _fail(f"{where}.value", f"must be 1 (the report that says yes), got {_show(entry['value'])}")
    over = entry["simultaneous_over"]
    if not isinstance(over, int) or isinstance(over, bool) or not 1 <= over <= 10**6:
        raise _fail(f"{where}.simultaneous_over", f"must be a whole number from 1 to 1,000,000, got {_show(over)}")
    p = _probability(entry["p"], entry["p_exact"], f"{where}.p")
    q = _probability(entry["q"], entry["q_exact"], f"{where}.q")
    if p == q:
        raise _fail(f"{where}", f"has p = q = {p!r}: its reports are independent of the answers")
    return column


def _check_other_design(book: dict) -> None:
    """Check a codebook of another design (``design`` null) field by field."""
    _keys({key: value for key, value in book.items() if key not in OPTIONAL_KEYS}, BOOK_KEYS, "top level")
    for key in ("survey", "title", "method"):
        _text(book[key], key)
    if book["design_hash"] is not None:
        raise _fail("design_hash", f"must be null without a design, got {_show(book['design_hash'])}")
    for key in ("epsilon", "epsilon_spent"):
        if book[key] is not None and not (_is_number(book[key]) and book[key] >= 0):
            raise _fail(key, f"must be null or a number >= 0, got {_show(book[key])}")
    if book["allocation"] != "split":
        raise _fail("allocation", f"must be \"split\" without a design, got {_show(book['allocation'])}")
    if not isinstance(book["files"], dict):
        raise _fail("files", f"must be an object, got {_show(book['files'])}")
    columns = _check_columns(book["columns"])
    described = [_check_estimand(entry, index, columns)
                 for index, entry in enumerate(_list(book["estimands"], "estimands"))]
    randomized = [name for name, column in columns.items() if column["mechanism"] == BINARY]
    if sorted(described) != sorted(randomized):
        raise _fail("estimands", f"must describe each {BINARY} column once: they describe "
                                 f"{', '.join(described)} for the columns {', '.join(randomized)}")


def _check_own_design(book: dict, design) -> None:
    """Check a codebook exported by ldp-survey: its design is unaltered and its columns are the design's."""
    if not isinstance(design, dict) or not isinstance(design.get("hash"), str):
        raise _fail("design", "must be an object with its hash, as ldp-survey exports it")
    if design_hash(design) != design["hash"] or book.get("design_hash") != design["hash"]:
        raise _fail("design", "was altered: it no longer matches its hash; export the codebook again "
                              "(`ldp-survey export SLUG --codebook`)")
    try:
        expected = [(column["name"], column["question"]) for column in response_columns(design)]
        for question in design["questions"]:
            mechanism_for(question)
    except DESIGN_ERRORS as exc:
        raise _fail("design", f"is not one ldp-survey makes: {type(exc).__name__}: {exc}") from None
    columns = book.get("columns")
    if not isinstance(columns, list) or not all(isinstance(column, dict) for column in columns) or \
            [(column.get("name"), column.get("question")) for column in columns] != expected:
        raise _fail("columns", "are not those of its design; export the codebook again")
    estimands = book.get("estimands")
    if not isinstance(estimands, list) or not all(isinstance(entry, dict) for entry in estimands):
        raise _fail("estimands", "must be a list of objects")
    names = {name for name, _ in expected}
    for index, entry in enumerate(estimands):
        where = f"estimands[{index}]"
        if not isinstance(entry.get("question"), str) or entry.get("column") not in names:
            raise _fail(where, "does not name a question and a column of the design")
        if not (_is_number(entry.get("p")) and _is_number(entry.get("q")) and 0 <= entry["p"] <= 1
                and 0 <= entry["q"] <= 1 and entry["p"] != entry["q"]):
            raise _fail(where, "must have probabilities p != q in [0, 1]")


def check_codebook(book) -> None:
    """Raise ReanalysisError naming the first field of the codebook that a re-analysis cannot use."""
    if not isinstance(book, dict):
        raise ReanalysisError(f"a codebook is a JSON object, got {type(book).__name__}")
    for key in ("columns", "estimands", "design"):
        if key not in book:
            raise ReanalysisError(f"this is not a codebook: it has no {key!r}")
    if book["design"] is None:
        _check_other_design(book)
    else:
        _check_own_design(book, book["design"])
