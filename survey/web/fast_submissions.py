"""Store a respondent's submission straight from WSGI, without Flask's request machinery.

``POST /s/<slug>/responses`` is the server's hot path: every respondent's answers, under
load all of a server's work. Flask's request context, routing, hooks and response object
cost about as much again as validating and storing the answers, so the submissions that
will be stored take this shorter path, with the same checks in the same order (``respond``'s
``admitted`` and ``store_submission``) and the same 201 with the same headers.

Everything else goes to the app, which answers it as it always has: another method or
address, a body that is not declared JSON or is too large, another site's request, a
refusal, a fault. Nothing is done twice: a submission the fast path already counted in the
flood limit carries its wait (``flood.TAKEN``), and one it validated and the store refused
carries the store's exception (``respond.STORE_FAILED``), raised by the view to be answered
by the app's own handlers (503 with Retry-After, 409, 410, …). The body read here is handed
on as it came.
"""

from __future__ import annotations

import io

from ..core.definition import SLUG_RE
from . import flood
from .respond import OWN_PAGE, STORE_FAILED, STORED_BODY, admitted, store_submission
from .security import response_headers
from .sessionless import SUBMISSIONS

STORED_LENGTH = str(len(STORED_BODY))


class FastSubmissions:
    """WSGI middleware: serve the submissions that will be stored; hand every other request to ``inner``."""

    def __init__(self, app, inner):
        self.app = app
        self.inner = inner

    def __call__(self, environ, start_response):
        slug = self._slug(environ)
        if slug is None:
            return self.inner(environ, start_response)
        try:
            body = environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))
        except OSError:
            body = b""  # the client went away: the app answers the short body
        environ["wsgi.input"] = io.BytesIO(body)  # unread from here on: the app reads it if it answers
        limiter = self.app.extensions.get("ldp_submission_limiter")
        if limiter is not None:
            try:
                wait = limiter.take(environ.get("REMOTE_ADDR") or "")
            except Exception:
                return self.inner(environ, start_response)  # the app counts it again and answers the fault
            environ[flood.TAKEN] = wait
            if wait:
                return self.inner(environ, start_response)
        try:
            store = self.app.extensions["ldp_stores"].get()
            design, answers, submission, invite = admitted(store, slug, body)
        except Exception:
            return self.inner(environ, start_response)
        try:
            store_submission(store, slug, design, answers, submission, invite)
        except Exception as exc:
            environ[STORE_FAILED] = exc
            return self.inner(environ, start_response)
        start_response("201 CREATED", [("Content-Type", "application/json"), ("Content-Length", STORED_LENGTH),
                                       *response_headers(self.app.config, environ["PATH_INFO"])])
        return [STORED_BODY]

    def _slug(self, environ) -> str | None:
        """Return the survey's slug when the fast path takes this request, else None."""
        if environ.get("REQUEST_METHOD") != "POST":
            return None
        match = SUBMISSIONS.fullmatch(environ.get("PATH_INFO", ""))
        if match is None or not SLUG_RE.fullmatch(match.group(1)):
            return None
        if environ.get("HTTP_SEC_FETCH_SITE", "none") not in OWN_PAGE or not _is_json(environ.get("CONTENT_TYPE", "")):
            return None
        length = environ.get("CONTENT_LENGTH", "")
        limit = self.app.config.get("MAX_CONTENT_LENGTH")
        if not length.isdigit() or (limit is not None and int(length) > limit):
            return None
        return match.group(1)


def _is_json(content_type: str) -> bool:
    """Return whether a Content-Type is JSON as Werkzeug's ``Request.is_json`` decides it."""
    mimetype = content_type.split(";", 1)[0].strip().lower()
    return mimetype == "application/json" or (mimetype.startswith("application/") and mimetype.endswith("+json"))


def install(app):
    """Put the fast path in front of the app's WSGI callable (inside any proxy fix added later)."""
    app.wsgi_app = FastSubmissions(app, app.wsgi_app)
