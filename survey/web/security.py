"""Attach CSRF protection and the security headers every response carries."""

from __future__ import annotations

from flask_wtf.csrf import CSRFProtect

csrf = CSRFProtect()

# Only the app's own files: no third-party script, style or connection (DESIGN.md §1).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "style-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)


def _headers(response):
    response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("X-Frame-Options", "DENY")
    return response


def init_app(app):
    """Enable Flask-WTF CSRF protection and the security headers."""
    csrf.init_app(app)
    app.after_request(_headers)
