"""Attach CSRF protection and the security headers every response carries."""

from __future__ import annotations

import re

from flask import abort, current_app, request
from flask_wtf.csrf import CSRFProtect

csrf = CSRFProtect()

# Only the app's own files: no third-party script, style or connection (docs/explanation/privacy.md).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "style-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)

# Paths whose responses must never be cached: researcher pages, exports, account pages, the API, join and reset links.
NO_STORE_PREFIXES = ("/surveys", "/account", "/api/", "/join/", "/reset/", "/forgot")
HSTS_SECONDS = 31536000
# The only POST routes that read a JSON body: a respondent's and an interviewer's submissions, a test answer.
# Every other POST takes a form, and Flask-WTF would read a JSON body as the form (a 500 on a non-object).
JSON_POSTS = re.compile(r"/s/.*|/surveys/[^/]+/test/responses")


def response_headers(config, path: str) -> list[tuple[str, str]]:
    """Return the security headers of a response to ``path`` (``_headers`` adds those a view did not set)."""
    headers = [
        ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
        # Same-origin: other sites never learn a page's address, while a researcher's form posts carry
        # the Referer that CSRF protection checks over HTTPS. Respondent pages send none at all.
        ("Referrer-Policy", "no-referrer" if path.startswith("/s/") else "same-origin"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
    ]
    if path.startswith(NO_STORE_PREFIXES):
        # Researcher pages, exports, charts and the API: no copy in any cache.
        headers.append(("Cache-Control", "no-store"))
    if config.get("HSTS"):
        # `serve --https`: browsers use only HTTPS for this host for a year.
        headers.append(("Strict-Transport-Security", f"max-age={HSTS_SECONDS}"))
    return headers


def _headers(response):
    for name, value in response_headers(current_app.config, request.path):
        response.headers.setdefault(name, value)
    return response


def _forms_only():
    """Refuse a JSON body sent to a route that takes a form: 415, before the CSRF check or the view reads it."""
    if request.method == "POST" and request.is_json and not JSON_POSTS.fullmatch(request.path):
        abort(415, description="This address takes a form, not JSON.")


def _has_nul(values) -> bool:
    """Return whether any of the strings holds a NUL character."""
    return any("\x00" in value for value in values)


def _no_nul():
    """Refuse a NUL character in the address, the query or a form: 400 (PostgreSQL's text cannot hold one: a 500)."""
    if "\x00" in request.path or _has_nul(value for _, values in request.args.lists() for value in values):
        abort(400, description="The address holds a NUL character.")
    if request.method == "POST" and not JSON_POSTS.fullmatch(request.path) and _has_nul(
            value for _, values in request.form.lists() for value in values):
        abort(400, description="The form holds a NUL character.")


def init_app(app):
    """Enable Flask-WTF CSRF protection and the security headers."""
    app.before_request(_forms_only)
    app.before_request(_no_nul)
    csrf.init_app(app)
    app.after_request(_headers)
