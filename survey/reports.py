"""Validate a submitted response against a survey design (DESIGN.md §1, invariant 4).

A submission is ``{"design": HASH, "answers": {QID: REPORT}}``. A report must lie in its
mechanism's output domain: 0/1 for ``rr`` and ``duchi``, an option index for ``grr``, a
list of d 0/1 integers for ``oue`` and ``multi`` (``rr``), with exactly k ones for ``ss``
(a k-subset) and at most one for ``sampled`` multi (one drawn option's randomized bit).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np


class ReportError(ValueError):
    """A submission is invalid; ``field`` names the offending key, ``status`` the HTTP status."""

    def __init__(self, message: str, *, field: str | None = None, status: int = 400):
        super().__init__(message)
        self.message = message
        self.field = field
        self.status = status

    def to_json(self) -> dict:
        """Return the error body ``{"error": MESSAGE, "field": FIELD}``."""
        return {"error": self.message, "field": self.field}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_report(question: dict, report: Any):
    """Return the report of one question if it is in the mechanism's output domain, else raise."""
    qid, mechanism = question["id"], question["mechanism"]
    if mechanism in ("rr", "duchi") and question["kind"] != "multi":
        if not _is_int(report) or report not in (0, 1):
            raise ReportError(f"the report for {qid!r} must be 0 or 1, got {report!r}", field=qid)
        return report
    if mechanism == "grr":
        d = len(question["options"])
        if not _is_int(report) or not 0 <= report < d:
            raise ReportError(f"the report for {qid!r} must be an option index from 0 to {d - 1}, "
                              f"got {report!r}", field=qid)
        return report
    if mechanism in ("oue", "rr", "ss", "sampled"):
        d = len(question["options"])
        if (not isinstance(report, list) or len(report) != d
                or not all(_is_int(bit) and bit in (0, 1) for bit in report)):
            raise ReportError(f"the report for {qid!r} must be a list of {d} values, each 0 or 1, "
                              f"got {report!r}", field=qid)
        ones = sum(report)
        if mechanism == "ss" and ones != question["subset_size"]:
            raise ReportError(f"the report for {qid!r} must have exactly {question['subset_size']} values "
                              f"equal to 1 (a subset of that size), got {ones}", field=qid)
        if mechanism == "sampled" and ones > 1:
            raise ReportError(f"the report for {qid!r} must have at most one value equal to 1, got {ones}",
                              field=qid)
        return list(report)
    raise ReportError(f"question {qid!r} has an unknown mechanism {mechanism!r}", field=qid)


def check_report_array(question: dict, reports) -> np.ndarray:
    """Return n reports of one question as an integer array if every one is in the output domain, else raise.

    The whole-array form of validate_report, for simulated batches: an (n,) array for
    rr/duchi/grr, an (n, d) array of bits for oue and multi.
    """
    qid, mechanism = question["id"], question["mechanism"]
    values = np.asarray(reports)
    if values.dtype.kind not in "iu":
        raise ReportError(f"the reports for {qid!r} must be integers, got an array of {values.dtype}", field=qid)
    if mechanism == "grr":
        shape, highest = (values.shape[0],), len(question["options"]) - 1
    elif mechanism in ("oue", "ss") or question["kind"] == "multi":
        shape, highest = (values.shape[0], len(question["options"])), 1
    elif mechanism in ("rr", "duchi"):
        shape, highest = (values.shape[0],), 1
    else:
        raise ReportError(f"question {qid!r} has an unknown mechanism {mechanism!r}", field=qid)
    if values.shape != shape:
        raise ReportError(f"the reports for {qid!r} must have shape {shape}, got {values.shape}", field=qid)
    if values.size and (values.min() < 0 or values.max() > highest):
        raise ReportError(f"the reports for {qid!r} must lie in 0..{highest}", field=qid)
    if values.size and mechanism == "ss" and np.any(values.sum(axis=1) != question["subset_size"]):
        raise ReportError(f"every report for {qid!r} must have exactly {question['subset_size']} ones", field=qid)
    if values.size and mechanism == "sampled" and np.any(values.sum(axis=1) > 1):
        raise ReportError(f"every report for {qid!r} must have at most one 1", field=qid)
    return values.astype(np.int64, copy=False)


def _unique_keys(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise ReportError(f"the key {key!r} appears more than once", field=key)
        seen[key] = value
    return seen


def _reject_constant(name):
    raise ReportError(f"{name} is not a valid report value")


def parse_submission(body: bytes) -> Any:
    """Parse a submission body as strict JSON: UTF-8, no duplicate keys, no NaN or Infinity."""
    try:
        text = body.decode("utf-8")
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_reject_constant)
    except ReportError:
        raise
    except UnicodeDecodeError as exc:
        raise ReportError("the body must be UTF-8 encoded JSON") from exc
    except json.JSONDecodeError as exc:
        raise ReportError(f"the body is not valid JSON ({exc.msg} at position {exc.pos})") from exc
    except ValueError as exc:
        raise ReportError(f"the body holds a value JSON parsing refuses ({exc})") from exc
    except RecursionError as exc:
        raise ReportError("the body nests too deeply") from exc


def validate_submission(design: dict, payload: Any) -> dict:
    """Return the validated answers ``{QID: REPORT}`` of a submission, or raise ReportError.

    Every question must be answered exactly once, with no extra keys, under the current
    design hash (a stale hash is a 409).
    """
    if not isinstance(payload, dict):
        raise ReportError("the body must be a JSON object {\"design\": HASH, \"answers\": {...}}")
    extra = sorted(set(payload) - {"design", "answers"})
    if extra:
        raise ReportError(f"unexpected key {extra[0]!r}; only \"design\" and \"answers\" are allowed",
                          field=extra[0])
    if not isinstance(payload.get("design"), str):
        raise ReportError("\"design\" must be the design hash string", field="design")
    if payload["design"] != design["hash"]:
        raise ReportError("the survey design has changed since this page was loaded; reload the page",
                          field="design", status=409)
    answers = payload.get("answers")
    if not isinstance(answers, dict):
        raise ReportError("\"answers\" must be an object mapping question ids to reports", field="answers")
    questions = {q["id"]: q for q in design["questions"]}
    unknown = sorted(set(answers) - set(questions))
    if unknown:
        raise ReportError(f"{unknown[0]!r} is not a question of this survey", field=unknown[0])
    validated = {}
    for qid, question in questions.items():
        if qid not in answers:
            raise ReportError(f"the report for {qid!r} is missing", field=qid)
        validated[qid] = validate_report(question, answers[qid])
    return validated
