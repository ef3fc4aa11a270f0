"""The API's error format: JSON ``{"error": MESSAGE}``, a 401 saying how to authenticate, a 405 saying the API is read-only.

Used by the API's views and by the app's error handlers (``web/errors.py``) for an error raised while
routing, before the API blueprint is chosen; it imports nothing of either, so no import circle forms.
"""

from __future__ import annotations

from flask import jsonify, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound

REALM = 'Bearer realm="ldp-survey"'


def error(status: int, message: str):
    """Return the JSON error response ``{"error": message}`` with ``status`` (401 says how to authenticate)."""
    response = jsonify({"error": message})
    response.status_code = status
    if status == 401:
        response.headers["WWW-Authenticate"] = REALM
    return response


def error_for(exc: HTTPException):
    """Return the API's JSON answer to an HTTP error, raised in a view or while routing (``web/errors.py``)."""
    if isinstance(exc, NotFound):
        return error(404, "not found")
    if isinstance(exc, MethodNotAllowed):
        response = error(405, f"the API is read-only: use GET, not {request.method}")
        response.headers["Allow"] = ", ".join(exc.valid_methods or ["GET", "HEAD", "OPTIONS"])
        return response
    return error(exc.code or 500, exc.description or exc.name)
