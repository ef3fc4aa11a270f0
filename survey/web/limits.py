"""Refuse a request whose declared body is over MAX_CONTENT_LENGTH before anything reads it."""

from __future__ import annotations

from flask import abort, current_app, request


def refuse_oversized_body():
    """Answer 413 (the app's usual error body) when Content-Length declares more than the limit.

    Only the header is looked at: ``wsgi.input`` is not touched, so a client announcing
    200 MiB gets its answer at once and the server never receives the body.
    """
    limit = current_app.config.get("MAX_CONTENT_LENGTH")
    length = request.content_length
    if limit is not None and length is not None and length > limit:
        abort(413)


def init_app(app):
    """Run the check before every other before_request function (CSRF protection reads the form)."""
    app.before_request_funcs.setdefault(None, []).insert(0, refuse_oversized_body)
