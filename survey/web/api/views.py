"""The read-only JSON API for scripts and notebooks, under ``/api/``, authenticated by a researcher's API token.

Every request carries ``Authorization: Bearer TOKEN`` (``ldp-survey token create``, or the
"API tokens" page); the session cookie is never read here, so the blueprint is exempt from
CSRF protection and answers GET only. A survey the token's researcher may not see answers
``404`` exactly as one that does not exist (``access.survey_for_researcher``); a missing,
unknown or revoked token answers ``401`` with ``WWW-Authenticate: Bearer``. Every error is
JSON ``{"error": MESSAGE}``. The noisy reports come as responses.csv (streamed) or as JSON
pages over the random response ids; the estimates also as the spreadsheet download.
"""

from __future__ import annotations

import re

from flask import Blueprint, abort, g, jsonify, request, url_for
from werkzeug.exceptions import HTTPException

from ...core.aggregate import rows_to_json
from ...core.crosstab import CrosstabError, check_allocation, check_pair, crosstab_to_json
from ...exports.export import header, response_records
from ...store import StoreError, StoreUnavailable, SurveyNotFound
from .. import unavailable
from ..access import survey_for_researcher
from ..crosstab import crosstab_table
from ..db import get_store
from ..results import (cached_rows, intervals_arguments, level_argument, responses_download, survey_release,
                       xlsx_download)
from ..security import csrf
from ..sessionless import Sessionless
from .errors import error, error_for
from .openapi import DEFAULT_LIMIT, MAX_LIMIT, openapi_document, query_parameters

bp = Blueprint("api", __name__, url_prefix="/api")
csrf.exempt(bp)

_CURSOR = re.compile(r"[0-9a-f]{16}")
_LIMIT = re.compile(r"[0-9]{1,6}")
_FORMATS = {"text/csv": "csv", "application/json": "json"}


def init_app(app):
    """Register the API blueprint and keep the session cookie out of it (and out of respondents' submissions)."""
    app.session_interface = Sessionless(app.session_interface)
    app.register_blueprint(bp)


def bearer_token() -> str | None:
    """Return the token of the request's ``Authorization: Bearer`` header, or None."""
    scheme, _, token = request.headers.get("Authorization", "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


@bp.before_request
def authenticate():
    """Put the token's researcher on g.user, or answer 401 (the session cookie plays no part)."""
    g.user = None
    if request.endpoint == "api.openapi":
        return None
    token = bearer_token()
    if token is None:
        return error(401, "send an API token: Authorization: Bearer TOKEN (see `ldp-survey token create`)")
    user = get_store().user_for_token(token)
    if user is None:
        return error(401, "this API token is unknown or has been revoked")
    g.user = user
    return None


@bp.before_request
def refuse_unknown_parameters():
    """Answer 400 for a query parameter the route does not take, so that a misspelt ``?levle=`` is not ignored."""
    if request.url_rule is None or request.endpoint == "api.unknown":
        return None
    allowed = query_parameters(request.url_rule.rule)
    unknown = sorted(set(request.args) - set(allowed))
    if unknown:
        takes = f"it takes {', '.join(allowed)}" if allowed else "it takes none"
        return error(400, f"unknown query parameter {unknown[0]!r} for {request.path}: {takes}")
    return None


@bp.errorhandler(HTTPException)
def http_error(exc: HTTPException):
    return error_for(exc)


@bp.errorhandler(SurveyNotFound)
def survey_not_found(exc):
    return error(404, "not found")


@bp.errorhandler(StoreUnavailable)
def store_unavailable(exc):
    return unavailable.respond(exc)


@bp.errorhandler(StoreError)
def store_error(exc):
    return error(400, str(exc))


def _survey_json(survey: dict) -> dict:
    return {"slug": survey["slug"], "title": survey["title"], "owner": survey["owner"],
            "responses": survey["responses"], "created_day": survey["created_day"],
            "design_hash": survey["design_hash"], "status": survey.get("status", "open")}


@bp.get("/openapi.json")
def openapi():
    """The OpenAPI 3.1 description of this API (no token needed: it reveals no survey)."""
    return jsonify(openapi_document())


@bp.get("/surveys")
def surveys():
    """The surveys the token's researcher owns or collaborates on."""
    return jsonify({"surveys": [_survey_json(survey)
                                for survey in get_store().list_surveys(user_id=g.user["id"])]})


@bp.get("/surveys/<slug>/results")
def results(slug):
    """The debiased estimates with intervals at ?level= and ?intervals= (as ``aggregate --format json``), the design hash and n."""
    survey_for_researcher(slug)
    level = level_argument()
    intervals, planned = intervals_arguments()
    design, rows = cached_rows(slug, level, intervals, planned)
    return jsonify({"slug": slug, "title": design["title"], "design_hash": design["hash"],
                    "responses": get_store().response_count(slug),
                    "release": survey_release(slug, design).as_dict(), "level": level, "intervals": intervals,
                    "planned": planned if intervals == "anytime" else None, "rows": rows_to_json(rows)})


@bp.get("/surveys/<slug>/crosstab")
def crosstab_view(slug):
    """The crosstab of questions ?a= and ?b= (as ``crosstab --format json``); 400 for bad or missing questions."""
    design = survey_for_researcher(slug)
    level = level_argument()
    questions = {question["id"]: question for question in design["questions"]}
    a, b = request.args.get("a", "").strip(), request.args.get("b", "").strip()
    try:
        check_allocation(design)
    except CrosstabError as exc:
        return error(400, str(exc))
    missing = [name for name, value in (("a", a), ("b", b)) if not value]
    if missing:
        return error(400, f"choose two questions with ?a=Q&b=Q (missing: {' and '.join(missing)}); "
                          f"the questions are {', '.join(questions)}")
    for value in (a, b):
        if value not in questions:
            return error(400, f"{value!r} is not a question of {slug!r}; the questions are {', '.join(questions)}")
    try:
        check_pair(questions[a], questions[b])
    except CrosstabError as exc:
        return error(400, str(exc))
    table = crosstab_table(slug, design, questions[a], questions[b], level)
    return jsonify({"slug": slug, "design_hash": design["hash"], **crosstab_to_json(table)})


@bp.get("/surveys/<slug>/regression")
def regression_view(slug):
    """The logistic regression of ?outcome= on ?covariates=A,B (as ``regress --format json``); 400 with the reason."""
    from ...core.regression import RegressionError
    from ...core.regression_text import regression_to_json
    from ..regression import fit

    design = survey_for_researcher(slug)
    level = level_argument()
    outcome = request.args.get("outcome", "").strip()
    covariates = [name.strip() for name in request.args.get("covariates", "").split(",") if name.strip()]
    try:
        model = fit(slug, design, outcome, covariates, level)
    except RegressionError as exc:
        return error(400, str(exc))
    return jsonify({"slug": slug, "design_hash": design["hash"], **regression_to_json(model)})


@bp.get("/surveys/<slug>/codebook")
def codebook_view(slug):
    """The codebook (as ``/surveys/<slug>/codebook.json``): each responses column's meaning, each estimand's p and q."""
    from ...exports.codebook import codebook

    design = survey_for_researcher(slug)
    return jsonify(codebook(design, simulated=get_store().sandbox_counts(slug)["simulated"],
                            revisions=get_store().revision_record(slug)))


@bp.get("/surveys/<slug>/results.xlsx")
def results_xlsx(slug):
    """The estimates at ?level= and the codebook as a spreadsheet (as ``/surveys/<slug>/results.xlsx``)."""
    return xlsx_download(slug)


def _responses_format(forced: str | None) -> str:
    """Return "csv" or "json": ?format=, else the path's .csv, else the Accept header, else CSV."""
    asked = request.args.get("format")
    if asked is not None and asked not in ("csv", "json"):
        abort(400, description=f"format must be csv or json, got {asked!r}")
    if forced is not None and asked not in (None, forced):
        abort(400, description=f"responses.{forced} is {forced.upper()}; for {asked.upper()} ask "
                               f"/api/surveys/<slug>/responses?format={asked}")
    best = request.accept_mimetypes.best_match(list(_FORMATS))
    return asked or forced or _FORMATS.get(best, "csv")


def _page() -> tuple[int, str | None]:
    """Return the JSON page's ?limit= (1 to MAX_LIMIT, DEFAULT_LIMIT if absent) and ?cursor= (a response id or None)."""
    raw, cursor = request.args.get("limit", str(DEFAULT_LIMIT)), request.args.get("cursor")
    if not _LIMIT.fullmatch(raw) or not 1 <= int(raw) <= MAX_LIMIT:
        abort(400, description=f"limit must be a whole number from 1 to {MAX_LIMIT}, got {raw!r}")
    if cursor is not None and not _CURSOR.fullmatch(cursor):
        abort(400, description="cursor must be the response_id the previous page's next link names "
                               f"(16 hex digits), got {cursor!r}")
    return int(raw), cursor


@bp.get("/surveys/<slug>/responses")
@bp.get("/surveys/<slug>/responses.csv", endpoint="responses_csv", defaults={"forced": "csv"})
def responses(slug, forced=None):
    """The noisy reports: responses.csv streamed (CSV), or a page of JSON rows in random-id order with a next link."""
    design = survey_for_researcher(slug)
    if _responses_format(forced) == "csv":
        if {"limit", "cursor"} & set(request.args):
            abort(400, description="limit and cursor page the JSON (?format=json); the CSV holds every response")
        response = responses_download(design)
    else:
        limit, cursor = _page()
        store = get_store()
        rows = list(response_records(design, store.iter_responses(slug, after=cursor, limit=limit + 1)))
        more = len(rows) > limit
        rows = rows[:limit]
        following = (url_for("api.responses", slug=slug, format="json", limit=limit, cursor=rows[-1]["response_id"])
                     if more else None)
        response = jsonify({"slug": slug, "design_hash": design["hash"], "responses": store.response_count(slug),
                            "columns": header(design), "limit": limit, "rows": rows, "next": following})
        if following:
            response.headers["Link"] = f'<{following}>; rel="next"'
    response.vary.add("Accept")
    return response


@bp.get("/", defaults={"rest": ""})
@bp.get("/<path:rest>")
def unknown(rest):
    """Any other path under /api/: a JSON 404 (another method than GET is refused with 405 while routing)."""
    return error(404, "not found")
