"""Serve the respondent page, the public design and the noisy-report endpoint."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, render_template, request

from ..reports import ReportError, parse_submission, validate_submission
from ..store import StoreError
from .db import get_store

bp = Blueprint("respond", __name__)
# The body of every 201, made once: the hot path of the server.
STORED_BODY = b'{"stored": true}\n'



@bp.get("/s/<slug>")
def page(slug):
    """Render the survey form; the browser randomizes every answer before sending it."""
    design = get_store().get_design(slug)
    response = render_template("respond.html", design=design)
    return response, 200, {"Cache-Control": "no-store"}


@bp.get("/s/<slug>/design.json")
def design_json(slug):
    """Return the public design: mechanisms, integer thresholds, realised epsilons and hash."""
    return jsonify(get_store().get_design(slug))


@bp.post("/s/<slug>/responses")
def submit(slug):
    """Validate one response against the current design and store it, or store nothing.

    201 on success; 400 {"error", "field"} for a bad report; 409 for a stale design.
    """
    store = get_store()
    design = store.recent_design(slug)
    if not request.is_json:
        raise ReportError("the body must be JSON sent with Content-Type: application/json")
    payload = parse_submission(request.get_data(cache=False))
    if isinstance(payload, dict) and payload.get("design") != design["hash"]:
        design = store.get_design(slug)
    answers = validate_submission(design, payload)
    try:
        store.add_response(slug, design["hash"], answers)
    except StoreError as exc:
        raise ReportError(str(exc), field="design", status=409) from exc
    return Response(STORED_BODY, status=201, mimetype="application/json")
