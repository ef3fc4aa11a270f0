"""Answer 503 when the store cannot take a request now (disk full, read-only, locked, unreachable); ``GET /readyz``.

Respondents get a JSON sentence their page shows while it sends the same reports again
after Retry-After; the API its JSON error; researchers a plain page; the operator one
log line per failing request naming the cause (and its path, without any token in it). A database error that is not a fault (a
bug) stays a 500. Retry-After is $LDP_SURVEY_RETRY_AFTER seconds (default 10).
"""

from __future__ import annotations

import os
import sqlite3
import sys

from flask import Blueprint, current_app, jsonify, render_template, request

from ..store import StoreUnavailable, unavailable
from .db import get_store
from .errors import wants_json
from .log_privacy import scrub_path

bp = Blueprint("unavailable", __name__)
RETRY_AFTER_ENV = "LDP_SURVEY_RETRY_AFTER"
DEFAULT_RETRY_AFTER = 10
RESPONDENT_MESSAGE = ("The survey cannot store answers right now. Your answers are kept on this page and will be "
                      "sent again automatically; nothing was stored yet.")


def retry_after() -> int:
    """Return the seconds a client is asked to wait before sending again (the app's RETRY_AFTER)."""
    return current_app.config["RETRY_AFTER"]


def respond(exc: StoreUnavailable):
    """Return the 503 for this request and log the cause once.

    The API answers in its JSON error format; the respondent API, and any request sent as
    JSON (the test-mode page's), the respondents' sentence; everything else an HTML page.
    """
    current_app.logger.error("store unavailable (%s): %s %s: %s", exc.cause, request.method, scrub_path(request.path),
                             exc.__cause__ or exc)
    current_app.extensions["ldp_stores"].discard()
    seconds = retry_after()
    headers = {"Retry-After": str(seconds), "Cache-Control": "no-store"}
    if request.path.startswith("/api/"):
        return jsonify({"error": f"the database cannot take requests now ({exc.cause}); nothing was changed; "
                                 f"try again in {seconds} seconds"}), 503, headers
    if wants_json() or request.is_json:
        return jsonify({"error": RESPONDENT_MESSAGE, "field": None}), 503, headers
    message = (f"The survey database cannot take requests right now ({exc.cause}), so nothing was changed. "
               f"Please try again in {seconds} seconds; if this goes on, tell the person who runs this server.")
    return render_template("error.html", status=503, message=message), 503, headers


def raw_fault(exc: Exception):
    """Answer a database exception that escaped the store unclassified: 503 if it is a fault, else the usual 500."""
    error = unavailable(exc)
    if error is None:
        raise exc
    return respond(error)


@bp.get("/readyz")
def readyz():
    """Answer 200 {"status": "ready"} when the store takes a write now, else 503 {"status", "cause", "error"}."""
    try:
        get_store().ready()
    except Exception as exc:
        error = exc if isinstance(exc, StoreUnavailable) else unavailable(exc)
        if error is None:
            raise
        current_app.logger.error("store unavailable (%s): readiness check: %s", error.cause, error.__cause__ or error)
        current_app.extensions["ldp_stores"].discard()
        body = {"status": "unavailable", "cause": error.cause,
                "error": f"the database cannot take requests now ({error.cause})"}
        return jsonify(body), 503, {"Retry-After": str(retry_after()), "Cache-Control": "no-store"}
    return jsonify({"status": "ready"}), 200, {"Cache-Control": "no-store"}


def init_app(app):
    """Set RETRY_AFTER (unless configured) and register the 503 handlers and /readyz."""
    if "RETRY_AFTER" not in app.config:
        text = os.environ.get(RETRY_AFTER_ENV, "").strip() or str(DEFAULT_RETRY_AFTER)
        if not text.isdigit() or not 1 <= int(text) <= 3600:
            raise ValueError(f"{RETRY_AFTER_ENV} must be a whole number of seconds from 1 to 3600, got {text!r}")
        app.config["RETRY_AFTER"] = int(text)
    app.register_error_handler(StoreUnavailable, respond)
    app.register_error_handler(sqlite3.DatabaseError, raw_fault)
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None:
        app.register_error_handler(psycopg.Error, raw_fault)
    app.register_blueprint(bp)
