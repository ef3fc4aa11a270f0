"""Validate a submitted response against a survey design (docs/explanation/privacy.md).

A submission is ``{"design": HASH, "answers": {QID: REPORT}}``, optionally with
``"submission"`` (the browser's random id, 32 lowercase hex digits: a retry with the same
id is stored once) and ``"invite"`` (an invitation token). A report must lie in its
mechanism's output domain (``Mechanism.domain``): a 0/1 bit, an option index or an output
level up to the mechanism's ``highest``, or a list of d 0/1 integers that also obeys the
mechanism's own rule (a subset of exactly k options; at most one drawn option).
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from .mechanisms import BITS, mechanism_for


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
    qid = question["id"]
    mechanism = _mechanism(question)
    if mechanism.report != BITS:
        if not _is_int(report) or not 0 <= report <= mechanism.highest:
            raise ReportError(f"the report for {qid!r} must be {mechanism.domain()}, got {report!r}", field=qid)
        return report
    if (not isinstance(report, list) or len(report) != mechanism.estimands
            or not all(_is_int(bit) and bit in (0, 1) for bit in report)):
        raise ReportError(f"the report for {qid!r} must be {mechanism.domain()}, got {report!r}", field=qid)
    error = mechanism.report_error(qid, sum(report))
    if error is not None:
        raise ReportError(error, field=qid)
    return list(report)


def _mechanism(question: dict):
    try:
        return mechanism_for(question)
    except ValueError as exc:
        raise ReportError(f"question {question['id']!r} has an unknown mechanism {question.get('mechanism')!r}",
                          field=question["id"]) from exc


def check_report_array(question: dict, reports) -> np.ndarray:
    """Return n reports of one question as an integer array if every one is in the output domain, else raise.

    The whole-array form of validate_report, for simulated batches: an (n,) array of scalar
    reports, or an (n, d) array of bits for a bit-vector report.
    """
    qid = question["id"]
    values = np.asarray(reports)
    if values.dtype.kind not in "iu":
        raise ReportError(f"the reports for {qid!r} must be integers, got an array of {values.dtype}", field=qid)
    mechanism = _mechanism(question)
    shape = (values.shape[0], mechanism.estimands) if mechanism.report == BITS else (values.shape[0],)
    highest = mechanism.highest
    if values.shape != shape:
        raise ReportError(f"the reports for {qid!r} must have shape {shape}, got {values.shape}", field=qid)
    if values.size and (values.min() < 0 or values.max() > highest):
        raise ReportError(f"the reports for {qid!r} must lie in 0..{highest}", field=qid)
    if values.size and mechanism.report == BITS:
        error = mechanism.batch_error(qid, values.sum(axis=1))
        if error is not None:
            raise ReportError(error, field=qid)
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


SUBMISSION_KEYS = {"design", "answers", "submission", "invite"}
SUBMISSION_ID_RE = re.compile(r"[0-9a-f]{32}")
INVITE_RE = re.compile(r"[A-Za-z0-9_-]{22}")


def admission_fields(design: dict, payload: dict) -> tuple[str | None, str | None]:
    """Return the (submission id, invitation token) of a validated submission, each None when absent, or raise.

    An invitation-only survey (``access = "invite"``) needs a token: 403 without one; any
    other survey takes none (400), not even the key with a null value.
    """
    submission = payload.get("submission")
    if submission is not None and (not isinstance(submission, str) or not SUBMISSION_ID_RE.fullmatch(submission)):
        raise ReportError(f"\"submission\" must be 32 lowercase hexadecimal digits, got {submission!r}",
                          field="submission")
    invite = payload.get("invite")
    if design.get("access") == "invite":
        if invite is None:
            raise ReportError("this survey is by invitation only: open it from your invitation link; "
                              "nothing was stored", field="invite", status=403)
        if not isinstance(invite, str) or not INVITE_RE.fullmatch(invite):
            raise ReportError("this invitation link is not valid for this survey; nothing was stored",
                              field="invite", status=403)
    elif "invite" in payload:
        raise ReportError("this survey is open to anyone and takes no \"invite\" key (not even null); "
                          "nothing was stored", field="invite")
    return submission, invite


def validate_submission(design: dict, payload: Any) -> dict:
    """Return the validated answers ``{QID: REPORT}`` of a submission, or raise ReportError.

    Every question must be answered exactly once (under ``sample`` allocation: exactly
    ``sample`` distinct questions of the survey), with no extra keys, under the current
    design hash (a stale hash is a 409).
    """
    if not isinstance(payload, dict):
        raise ReportError("the body must be a JSON object {\"design\": HASH, \"answers\": {...}}")
    extra = sorted(set(payload) - SUBMISSION_KEYS)
    if extra:
        raise ReportError(f"unexpected key {extra[0]!r}; only \"design\", \"answers\", \"submission\" "
                          "and \"invite\" are allowed", field=extra[0])
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
    if design.get("allocation") == "sample":
        return _validate_sampled(design, questions, answers)
    validated = {}
    for qid, question in questions.items():
        if qid not in answers:
            raise ReportError(f"the report for {qid!r} is missing", field=qid)
        validated[qid] = validate_report(question, answers[qid])
    return validated


def _validate_sampled(design: dict, questions: dict, answers: dict) -> dict:
    """Return the validated answers of a sample-mode submission: exactly m distinct questions, each in its domain.

    Object keys are already distinct (parse_submission refuses a repeated key) and known.
    """
    m = int(design["sample"])
    if len(answers) != m:
        raise ReportError(f"each respondent answers exactly {m} of the {len(questions)} questions of this survey, "
                          f"got reports to {len(answers)}", field="answers")
    return {qid: validate_report(question, answers[qid]) for qid, question in questions.items() if qid in answers}
