"""Convert errors to responses: JSON under /s/ (the respondent API), HTML pages elsewhere."""

from __future__ import annotations

import flask_babel
from flask import g, jsonify, make_response, render_template, request
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from ..core.reports import ReportError
from ..core.wording import N_
from ..store import SurveyNotFound
from .api.errors import error_for
from .sessionless import SUBMISSIONS


NO_SURVEY = N_("There is no survey at this address.")


def wants_json() -> bool:
    """Return whether the client expects a JSON error (the respondent API, whatever the method, and .json URLs)."""
    path = request.path
    return ((request.method == "POST" and path.startswith("/s/")) or path.endswith(".json")
            or SUBMISSIONS.fullmatch(path) is not None)


def researcher_url() -> bool:
    """Return whether the path is a researcher's (anything but the respondent pages and the static files)."""
    return not request.path.startswith(("/s/", "/static/"))


def _error(status: int, message: str, field=None):
    if wants_json():
        return jsonify({"error": message, "field": field}), status
    if researcher_url():
        from .forms import LogoutForm

        # formdata=None: an error page never reads the request's body (a JSON one raised here: a 500).
        form = LogoutForm(formdata=None) if getattr(g, "user", None) else None
        return render_template("error.html", status=status, message=message, researcher=True,
                               logout_form=form), status
    # In the page's language where the catalogs have the sentence (a respondent's error pages, survey.web.i18n).
    return render_template("error.html", status=status, message=flask_babel.gettext(message)), status


def init_app(app):
    """Register the error handlers."""

    @app.errorhandler(ReportError)
    def report_error(exc):
        return jsonify(exc.to_json()), exc.status

    @app.errorhandler(SurveyNotFound)
    def survey_not_found(exc):
        return _error(404, NO_SURVEY)

    @app.errorhandler(CSRFError)
    def csrf_error(exc):
        return _error(400, f"The security token is missing or invalid ({exc.description}); reload the page.",
                      "csrf_token")

    @app.errorhandler(HTTPException)
    def http_error(exc):
        if exc.code == 413:
            limit = app.config["MAX_CONTENT_LENGTH"]
            return _error(413, f"The request body is larger than the limit of {limit} bytes.")
        if request.path.startswith("/api/"):
            # Raised while routing, before the API blueprint is chosen (another method than GET).
            return error_for(exc)
        message = exc.description or exc.name
        if exc.code == 404 and researcher_url() and not wants_json():
            message = "There is no page at this address, or it is not one of your surveys."
        response = make_response(_error(exc.code or 500, message))
        if isinstance(exc, MethodNotAllowed) and exc.valid_methods:
            response.headers["Allow"] = ", ".join(exc.valid_methods)
        return response
