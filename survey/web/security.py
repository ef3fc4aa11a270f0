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

# Paths whose responses must never be cached: researcher pages, exports, account pages, the API and join links.
NO_STORE_PREFIXES = ("/surveys", "/account", "/api/", "/join/")
HSTS_SECONDS = 31536000


def _headers(response):
    response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    # Same-origin: other sites never learn a page's address, while a researcher's form posts carry
    # the Referer that CSRF protection checks over HTTPS. Respondent pages send none at all.
    response.headers.setdefault("Referrer-Policy", "no-referrer" if request.path.startswith("/s/") else "same-origin")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("X-Frame-Options", "DENY")
    if request.path.startswith(NO_STORE_PREFIXES) and "Cache-Control" not in response.headers:
        # Researcher pages, exports, charts and the API: no copy in any cache.
        response.headers["Cache-Control"] = "no-store"
    if current_app.config.get("HSTS"):
        # `serve --https`: browsers use only HTTPS for this host for a year.
        response.headers.setdefault("Strict-Transport-Security", f"max-age={HSTS_SECONDS}")
    return response


def init_app(app):
    """Enable Flask-WTF CSRF protection and the security headers."""
    csrf.init_app(app)
    app.after_request(_headers)
