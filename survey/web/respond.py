"""Serve the respondent page, the public design and the noisy-report endpoint."""

from __future__ import annotations

from flask import Blueprint, Response, abort, jsonify, request

from ..core.definition import SLUG_RE
from ..core.reports import INVITE_RE, ReportError, admission_fields, parse_submission, validate_submission
from ..core.wording import N_
from ..store import AdmissionError, StoreError, StoreUnavailable, SurveyClosed
from . import flood
from .db import get_store
from .i18n import render_respondent_page
from .security import csrf

bp = Blueprint("respond", __name__)
NO_SURVEY = N_("There is no survey at this address.")
# The body of every 201, made once: the hot path of the server.
STORED_BODY = b'{"stored": true}\n'
# Sec-Fetch-Site values of a request the survey's own page made (or one typed by hand / sent by a script).
OWN_PAGE = frozenset({"same-origin", "none"})
# The WSGI environ key under which the fast path (``fast_submissions``) hands a store's refusal to ``submit``.
STORE_FAILED = "ldp_survey.store_failed"


@bp.get("/s/<slug>")
def page(slug):
    """Render the survey form; the browser randomizes every answer before sending it.

    A draft is not visible yet (404). A closed survey's page, and an invitation-only
    survey's page without a usable ``?invite=TOKEN``, say why in plain words and show no
    form (``blocked``). The page sets no cookie.
    """
    store = get_store()
    design = store.get_design(slug)
    status = _visible_status(store, slug)
    invite = request.args.get("invite", "") if design.get("access") == "invite" else ""
    blocked = "closed" if status == "closed" else _invitation_problem(store, design, invite)
    response = render_respondent_page(design, blocked=blocked, invite="" if blocked else invite)
    return response, 200, {"Cache-Control": "no-store"}


def _invitation_problem(store, design: dict, invite: str) -> str | None:
    """Return "invite-missing", "invite-unknown" or "invite-used" when the page cannot be answered, else None.

    A read-only look-up that neither uses the token nor records it: it tells the page what
    sending would answer (403 for a missing or unknown token, 409 for a used one).
    """
    if design.get("access") != "invite":
        return None
    if not invite:
        return "invite-missing"
    if not INVITE_RE.fullmatch(invite):
        return "invite-unknown"
    status = store.invitation_status(design["slug"], invite)
    return None if status == "unused" else f"invite-{status}"


@bp.get("/s/<slug>/design.json")
def design_json(slug):
    """Return the public design: mechanisms, integer thresholds, realised epsilons and hash (404 for a draft)."""
    store = get_store()
    design = store.get_design(slug)
    _visible_status(store, slug)
    return jsonify(design)


def _visible_status(store, slug: str) -> str:
    """Return the survey's status, answering 404 for a draft (respondents cannot see it yet) and for a kept
    version (``SLUG.v1``: never a respondent's address; its survey's link serves the current version)."""
    status = store.survey_status(slug)
    if status == "draft" or not SLUG_RE.fullmatch(slug):
        abort(404, description=NO_SURVEY)
    return status


def _closed(slug: str, exc: Exception | None = None) -> ReportError:
    message = str(exc) if exc else f"survey {slug!r} takes no responses"
    return ReportError(f"{message}; nothing was stored", field=None, status=410)


@bp.post("/s/<slug>/responses")
@csrf.exempt
def submit(slug):
    """Validate one response against the current design and store it, or store nothing.

    201 on success, and the same 201 for a repeat of a stored submission id with the same
    answers (stored once); 400 {"error", "field"} for a bad report; 403 for a missing or
    unknown invitation; 409 for a stale design, a used invitation or a submission id stored
    with other answers; 410 when the survey is closed or still a draft (checked by the
    INSERT itself, so a submission racing a close is not stored); 429 when this client sent
    too many this minute (``flood``).

    No session and no CSRF token: the request carries no credential another site could
    borrow, it must be JSON (a cross-site page cannot send that without CORS, which this
    app never grants), and a browser's request from another site is refused (403).
    """
    flooded = flood.check()
    if flooded is not None:
        return flooded
    failed = request.environ.get(STORE_FAILED)
    if failed is not None:
        # The fast path validated this submission and the store refused it or failed:
        # answer as if it had happened here, without storing anything twice.
        raise failed
    if request.headers.get("Sec-Fetch-Site", "none") not in OWN_PAGE:
        raise ReportError("answers are accepted only from the survey's own page; nothing was stored", status=403)
    store = get_store()
    if not request.is_json:
        store.get_design(slug)
        raise ReportError("the body must be JSON sent with Content-Type: application/json")
    design, answers, submission, invite = admitted(store, slug, request.get_data(cache=False))
    store_submission(store, slug, design, answers, submission, invite)
    return Response(STORED_BODY, status=201, mimetype="application/json")


def admitted(store, slug: str, body: bytes) -> tuple[dict, dict, str | None, str | None]:
    """Return (design, validated answers, submission id, invitation) of a submission's JSON body, or raise ReportError.

    Nothing is written: a refusal here can be answered again by the app's own handlers.
    """
    design, answers, payload = validated(store, slug, body)
    submission, invite = admission_fields(design, payload)
    return design, answers, submission, invite


def validated(store, slug: str, body: bytes) -> tuple[dict, dict, object]:
    """Return (design, validated answers, parsed payload) of a submission's JSON body, or raise ReportError.

    The design is the survey's current one, read for every submission (one indexed SELECT, the parsed
    design kept by hash and wording): a settings change keeps the hash, so a copy kept by the process
    would let a worker that did not make the change accept a submission without an invitation after
    the survey became invitation-only. A refusal of a survey that is no longer open says so (410)
    rather than naming the report.
    """
    design = store.get_design(slug)
    payload = parse_submission(body)
    try:
        answers = validate_submission(design, payload)
    except ReportError:
        if store.survey_status(slug) != "open":
            raise _closed(slug) from None
        raise
    return design, answers, payload


def store_submission(store, slug: str, design: dict, answers: dict, submission: str | None,
                     invite: str | None) -> bool:
    """Store a validated submission, raising the store's refusals as the ReportError the respondent gets.

    Return False for a repeat of a stored submission id (nothing stored again), else True.
    """
    try:
        if submission is None and invite is None:
            store.add_response(slug, design["hash"], answers)
            return True
        return store.add_submission(slug, design["hash"], answers, submission=submission, invite=invite)
    except AdmissionError as exc:
        raise ReportError(str(exc), field=exc.field, status=exc.status) from exc
    except SurveyClosed as exc:
        raise _closed(slug, exc) from exc
    except StoreUnavailable:
        raise
    except StoreError as exc:
        raise ReportError(str(exc), field="design", status=409) from exc
