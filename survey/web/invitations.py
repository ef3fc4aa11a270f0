"""Make single-use invitation links on the dashboard and download them as CSV, or as a ZIP file with a QR code of each.

Owner and collaborators only.

A POST with a CSRF token, checked after the access check (as in ``lifecycle``): to anyone
else it answers 404. The tokens exist only in the downloaded file; the database keeps
their hashes.
"""

from __future__ import annotations

import io
import zipfile

from flask import Blueprint, Response, flash, redirect, request, url_for
from flask_wtf import FlaskForm
from wtforms import IntegerField
from wtforms.validators import DataRequired, NumberRange

from ..core.invitations import invitation_links, links_csv
from ..exports.qr import QR_FORMATS, qr_image
from ..store import StoreError, StoreUnavailable
from .auth import login_required
from .db import get_store
from .lifecycle import _submitted
from .security import csrf

bp = Blueprint("invitations", __name__)
csrf.exempt(bp)  # checked in the view, after survey_for_researcher (see lifecycle)
MAX_AT_ONCE = 10_000
# QR codes take a few milliseconds each: a ZIP holds at most this many links.
MAX_QR_AT_ONCE = 1_000


class InvitationForm(FlaskForm):
    """How many invitation links to make."""

    count = IntegerField("Number of links", default=30,
                         validators=[DataRequired(), NumberRange(min=1, max=MAX_AT_ONCE)],
                         render_kw={"min": 1, "max": MAX_AT_ONCE, "inputmode": "numeric"})


@bp.post("/surveys/<slug>/invitations.csv")
@login_required
def make(slug):
    """Make the number of invitations asked for and return their links as a CSV download, or a ZIP with QR codes."""
    form = _submitted(slug, InvitationForm)
    as_zip = request.form.get("format") == "zip"
    if form.errors or (as_zip and form.count.data > MAX_QR_AT_ONCE):
        flash(f"Type a number of links from 1 to {MAX_QR_AT_ONCE if as_zip else MAX_AT_ONCE}"
              f"{' for QR codes' if as_zip else ''}.", "error")
        return redirect(url_for("research.results", slug=slug, _anchor="invitations"))
    try:
        tokens = get_store().create_invitations(slug, form.count.data)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        flash(f"Cannot make invitations: {exc}.", "error")
        return redirect(url_for("research.results", slug=slug, _anchor="invitations"))
    links = invitation_links(request.host_url, slug, tokens)
    if as_zip:
        return Response(links_zip(links), mimetype="application/zip", headers={
            "Content-Disposition": f'attachment; filename="{slug}-invitations.zip"', "Cache-Control": "no-store"})
    return Response(links_csv(links), mimetype="text/csv", headers={
        "Content-Disposition": f'attachment; filename="{slug}-invitations.csv"', "Cache-Control": "no-store"})


def links_zip(links: list[str]) -> bytes:
    """Return a ZIP file of the links' CSV and, per link, its QR code as SVG and PNG (invitation-0001.svg, ...)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("invitations.csv", links_csv(links))
        for number, link in enumerate(links, 1):
            for kind in QR_FORMATS:
                archive.writestr(f"invitation-{number:04d}.{kind}", qr_image(link, kind))
    return out.getvalue()


@bp.app_context_processor
def invitation_context():
    """Give the dashboard the invitation form and a survey's (made, used) counts."""
    return {"invitation_form": InvitationForm,
            "invitation_counts": lambda slug: get_store().invitation_counts(slug)}
