"""The respondent page in handover mode: an interviewer session's link, its submissions and its end (docs/how-to/handover.md).

The session's secret link is the authorization: on an invitation-only survey it stands for the
invitations, and its allowance of responses replaces the per-client flood limit (a request with
no working session is counted in the flood limit as any other). A response stores nothing of
its session: the session's count is taken in a transaction of its own and given back when the
response is not stored or was stored before (``survey.store.interviews``). No cookie is read or
set on these paths (``sessionless``).
"""

from __future__ import annotations

import time

from flask import Blueprint, Response, abort, jsonify, request, url_for

from ..core.interviews import in_grace, interview_submission
from ..core.reports import ReportError
from ..store import InterviewRefused
from ..store.interviews import REFUSALS
from . import flood
from .db import get_store
from .i18n import render_respondent_page
from .respond import OWN_PAGE, STORED_BODY, _visible_status, store_submission, validated
from .security import csrf

bp = Blueprint("handover", __name__)
csrf.exempt(bp)  # no session: the secret link is the credential, and another site's request is refused


@bp.get("/s/<slug>/interview/<token>")
def page(slug, token):
    """Render the survey in handover mode, or say plainly why this link takes no answers (404 unknown, 410 ended)."""
    store = get_store()
    design = store.get_design(slug)
    status = _visible_status(store, slug)
    session = store.interview_session(slug, token)
    if session is None:
        blocked, code = "interview-unknown", 404
    elif status == "closed":
        blocked, code = "closed", 410
    elif session["state"] != "active":  # past its expiry, a session storing late sends still shows no form
        blocked, code = f"interview-{'expired' if session['state'] == 'late-sends' else session['state']}", 410
    else:
        blocked, code = None, 200
    handover = None if blocked else {"answered": session["answered"], "allowance": session["allowance"],
                                     "label": session["label"]}
    # Offline field mode: even an ended session's page sends, and so reports, what waits on this device for it.
    offline = None if session is None else {"action": url_for("handover.submit", slug=slug, token=token),
                                            "queue": f"{slug} interview {session['id']}"}
    response = render_respondent_page(design, blocked=blocked, invite="", handover=handover, offline=offline,
                                    page_entry="respond-handover.js", action=(
        None if blocked else url_for("handover.submit", slug=slug, token=token)))
    return response, code, {"Cache-Control": "no-store"}


def _own_page():
    if request.headers.get("Sec-Fetch-Site", "none") not in OWN_PAGE:
        raise ReportError("answers are accepted only from the survey's own page; nothing was stored", status=403)


@bp.post("/s/<slug>/interview/<token>/responses")
def submit(slug, token):
    """Store one response through a working session, counted against its allowance; refuse anything else, storing nothing.

    201 as ``respond.submit`` (a retried submission id is stored and counted once, even after the
    allowance ran out); 403 {"field": "interview"} for an unknown link, 410 for an ended, expired (more than
    ``EXPIRY_GRACE_HOURS`` ago: queued offline bodies arrive late)
    or used-up session or a closed survey; 429 when a client without a working session floods.
    """
    _own_page()
    store = get_store()
    now = time.time()
    session = store.interview_session(slug, token, now=now)
    state = "unknown" if session is None else session["state"]
    if state == "late-sends" or (state == "expired" and in_grace(session["expires_at"], now)):
        state = "active"  # a body randomized offline before the expiry, arriving late: stored (EXPIRY_GRACE_HOURS)
    if state != "active":
        flooded = flood.check()  # without a working session, the flood limit counts the request
        if flooded is not None:
            return flooded
        if state != "used-up":  # a used-up session may still be sent a retry of a stored response
            raise ReportError(REFUSALS[state], field="interview", status=403 if session is None else 410)
    if not request.is_json:
        raise ReportError("the body must be JSON sent with Content-Type: application/json")
    design, answers, submission = _admitted(store, slug, request.get_data(cache=False))
    try:
        store.take_interview(slug, token, now=now)
    except InterviewRefused as exc:
        if submission is not None and store.submission_stored(slug, submission, answers):
            # A retry of a response stored before the allowance ran out (its reply was lost): stored once.
            return Response(STORED_BODY, status=201, mimetype="application/json")
        raise ReportError(str(exc), field=exc.field, status=exc.status) from exc
    try:
        stored = store_submission(store, slug, design, answers, submission, None)
    except BaseException:
        store.give_back_interview(slug, token)
        raise
    if not stored:
        store.give_back_interview(slug, token)  # a retry of a stored submission: counted once
    store.forget_interview_order()
    return Response(STORED_BODY, status=201, mimetype="application/json")


def _admitted(store, slug: str, body: bytes) -> tuple[dict, dict, str | None]:
    """Return (design, validated answers, submission id) of a body sent through a session, or raise ReportError."""
    design, answers, payload = validated(store, slug, body)
    return design, answers, interview_submission(payload)


@bp.post("/s/<slug>/interview/<token>/end")
def end(slug, token):
    """End the session from its own device: 200 {"ended": true}, or 404 when the link has no session to end."""
    _own_page()
    store = get_store()
    if store.interview_session(slug, token) is None:
        abort(404, description="There is no interviewer session at this address.")
    store.end_interview_token(slug, token)
    return jsonify({"ended": True})
