"""Make single-use invitation links on the dashboard and download them as CSV (owner and collaborators only).

A POST with a CSRF token, checked after the access check (as in ``lifecycle``): to anyone
else it answers 404. The tokens exist only in the downloaded file; the database keeps
their hashes.
"""

from __future__ import annotations

from flask import Blueprint, Response, flash, redirect, request, url_for
from flask_wtf import FlaskForm
from wtforms import IntegerField
from wtforms.validators import DataRequired, NumberRange

from ..core.invitations import invitation_links, links_csv
from ..store import StoreError, StoreUnavailable
from .auth import login_required
from .db import get_store
from .lifecycle import _submitted
from .security import csrf

bp = Blueprint("invitations", __name__)
csrf.exempt(bp)  # checked in the view, after survey_for_researcher (see lifecycle)
MAX_AT_ONCE = 10_000


class InvitationForm(FlaskForm):
    """How many invitation links to make."""

    count = IntegerField("Number of links", default=30,
                         validators=[DataRequired(), NumberRange(min=1, max=MAX_AT_ONCE)],
                         render_kw={"min": 1, "max": MAX_AT_ONCE, "inputmode": "numeric"})


@bp.post("/surveys/<slug>/invitations.csv")
@login_required
def make(slug):
    """Make the number of invitations asked for and return their links as a CSV download."""
    form = _submitted(slug, InvitationForm)
    if form.errors:
        flash(f"Type a number of links from 1 to {MAX_AT_ONCE}.", "error")
        return redirect(url_for("research.results", slug=slug, _anchor="invitations"))
    try:
        tokens = get_store().create_invitations(slug, form.count.data)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        flash(f"Cannot make invitations: {exc}.", "error")
        return redirect(url_for("research.results", slug=slug, _anchor="invitations"))
    text = links_csv(invitation_links(request.host_url, slug, tokens))
    return Response(text, mimetype="text/csv", headers={
        "Content-Disposition": f'attachment; filename="{slug}-invitations.csv"', "Cache-Control": "no-store"})


@bp.app_context_processor
def invitation_context():
    """Give the dashboard the invitation form and a survey's (made, used) counts."""
    return {"invitation_form": InvitationForm,
            "invitation_counts": lambda slug: get_store().invitation_counts(slug)}
