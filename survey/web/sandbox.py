"""Test mode and the sandbox: the owner and collaborators answer any survey (a draft too) as a respondent.

A test answer runs the respondent page's own randomization and the same validation as a
real one, then goes to the survey's sandbox (``Store.add_responses(source="test")``): never
into its results, exports, API or response count, and it never freezes a draft's design.
Every route answers 404 to anyone else, exactly as for a survey that does not exist, and
redirects a signed-out visitor to sign in. POSTs carry a CSRF token, checked after the
access check (as in ``lifecycle``).
"""

from __future__ import annotations

from flask import Blueprint, Response, abort, current_app, flash, redirect, render_template, request, url_for
from flask_wtf import FlaskForm
from flask_wtf.csrf import CSRFError
from wtforms import HiddenField

from ..core.aggregate import aggregate_counts
from ..core.reports import ReportError, parse_submission, validate_submission
from ..store import SANDBOX_SOURCES, StoreError, StoreUnavailable
from .access import survey_for_researcher
from .auth import login_required
from .db import get_store
from .forms import LogoutForm
from .i18n import render_respondent_page
from .security import csrf

bp = Blueprint("sandbox", __name__)
csrf.exempt(bp)  # checked in each view, after survey_for_researcher
# What a clear button deletes, in the page's words.
SOURCE_WORDS = {"test": "test answers", "simulated": "simulated responses"}
# The keys of a real submission that test mode ignores: no invitation or submission id is needed or used.
ADMISSION_KEYS = ("submission", "invite")


class ClearForm(FlaskForm):
    """Delete the sandbox's test answers or its simulated responses."""

    source = HiddenField()


def _protect(slug: str):
    """Abort with 404 unless the researcher may see the survey, then with 400 on a bad CSRF token."""
    design = survey_for_researcher(slug)
    if not current_app.config.get("WTF_CSRF_ENABLED", True):
        return design
    try:
        csrf.protect()
    except CSRFError:
        abort(400, description="The security token is missing or invalid; reload the page.")
    return design


@bp.get("/surveys/<slug>/test")
@login_required
def page(slug):
    """Render the respondent page in test mode, whatever the survey's status and access."""
    design = survey_for_researcher(slug)
    return render_respondent_page(design, blocked=None, invite="", test_mode=True,
                                  action=url_for("sandbox.submit", slug=slug))


@bp.post("/surveys/<slug>/test/responses")
@login_required
def submit(slug):
    """Validate a test answer against the current design as a real one is, and store it in the sandbox.

    201 when stored; 400 for a bad report or token; 409 for a stale design.
    """
    design = _protect(slug)
    if not request.is_json:
        raise ReportError("the body must be JSON sent with Content-Type: application/json")
    payload = parse_submission(request.get_data(cache=False))
    if isinstance(payload, dict):
        payload = {key: value for key, value in payload.items() if key not in ADMISSION_KEYS}
    answers = validate_submission(design, payload)
    try:
        get_store().add_responses(slug, design["hash"], [answers], source="test")
    except StoreUnavailable:
        raise
    except StoreError as exc:
        raise ReportError(str(exc), field="design", status=409) from exc
    return Response(b'{"stored": true, "test": true}\n', status=201, mimetype="application/json")


@bp.get("/surveys/<slug>/sandbox")
@login_required
def view(slug):
    """Show the sandbox: how many test answers and simulated responses it holds, their estimates, and clear buttons."""
    design = survey_for_researcher(slug)
    store = get_store()
    count, counts = store.tallies(slug, sandbox=True)
    rows = aggregate_counts(design, counts) if count else []
    return render_template("sandbox.html", design=design, rows=rows, n=count,
                           kept=store.sandbox_counts(slug), clear_form=ClearForm, words=SOURCE_WORDS,
                           logout_form=LogoutForm())


@bp.post("/surveys/<slug>/sandbox/clear")
@login_required
def clear(slug):
    """Delete the sandbox's test answers (source=test) or simulated responses (source=simulated)."""
    _protect(slug)
    source = request.form.get("source", "")
    if source not in SANDBOX_SOURCES:
        abort(400, description=f"source must be one of {', '.join(SANDBOX_SOURCES)}")
    deleted = get_store().clear_sandbox(slug, source)
    flash(f"Cleared the {SOURCE_WORDS[source]} ({deleted} deleted); the real responses are untouched.", "success")
    return redirect(url_for("sandbox.view", slug=slug))


@bp.app_context_processor
def sandbox_context():
    """Give the dashboard the sandbox's counts, for its line on what is kept apart."""
    return {"sandbox_counts": lambda slug: get_store().sandbox_counts(slug)}
