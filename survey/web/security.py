"""Attach CSRF protection and the security headers every response carries."""

from __future__ import annotations

from flask import current_app, request
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


def init_app(app):
    """Enable Flask-WTF CSRF protection and the security headers."""
    csrf.init_app(app)
    app.after_request(_headers)
