"""Hand out a survey's link from the dashboard: its QR code, e-mailed invitations and reminders, the send log.

Owner and collaborators only (404 to anyone else); every action is a POST with a CSRF token,
checked after the access check (as in ``lifecycle``). The SMTP server comes from the app's
configuration or the environment (``mail``), never the database. A click sends at most
WEB_BATCH messages and starts none after WEB_SECONDS, so no request runs for long: the page
says how many are left, and the next click goes on with them (``mailing``). Each address's
link token is derived from the app's SECRET_KEY (``secret.link_tokens``), never stored.
"""

from __future__ import annotations

import csv
import io

from flask import Blueprint, Response, current_app, flash, redirect, request, url_for
from flask_wtf import FlaskForm
from flask_wtf.file import FileField, FileRequired, FileSize
from wtforms import HiddenField

from ..core.invitations import read_addresses, survey_link
from ..exports.qr import qr_image
from ..store import StoreError, StoreUnavailable
from .access import survey_for_researcher
from .auth import login_required
from .db import get_store
from .lifecycle import _submitted
from .mail import MailError, MailNotConfigured, mail_config
from .mailing import NotOpen, send_mail, stale_words
from .secret import link_tokens
from .security import csrf

bp = Blueprint("delivery", __name__)
csrf.exempt(bp)  # checked in the view, after survey_for_researcher (see lifecycle)
WEB_BATCH = 200
WEB_SECONDS = 20.0
UPLOAD_MAX = 60 * 1024


class AddressesForm(FlaskForm):
    """A CSV file with an ``email`` column."""

    addresses = FileField("CSV file with an “email” column",
                          validators=[FileRequired("Choose a CSV file."), FileSize(UPLOAD_MAX)],
                          render_kw={"accept": ".csv,text/csv"})


class MailForm(FlaskForm):
    """Send, remind or delete: the action is in the URL; ``confirm`` asks first for a deletion."""

    confirm = HiddenField()


def _token_for():
    """Return the app's ``token_for(slug, nonce)`` of e-mailed links (from its SECRET_KEY)."""
    return link_tokens(current_app.config["SECRET_KEY"])


def _back(slug: str):
    return redirect(url_for("research.results", slug=slug, _anchor="email-invitations"))


@bp.get("/surveys/<slug>/link-qr.<any(svg, png):kind>")
@login_required
def link_qr(slug, kind):
    """Return the QR code of the survey's public link, as SVG or PNG (``?download`` as a file)."""
    survey_for_researcher(slug)
    image = qr_image(survey_link(request.host_url, slug), kind)
    response = Response(image, mimetype="image/svg+xml" if kind == "svg" else "image/png")
    if "download" in request.args:
        response.headers["Content-Disposition"] = f'attachment; filename="{slug}-qr.{kind}"'
    return response


@bp.post("/surveys/<slug>/addresses")
@login_required
def add_addresses(slug):
    """Add the addresses of an uploaded CSV file, each with its own invitation; send nothing yet."""
    form = _submitted(slug, AddressesForm)
    if form.errors:
        flash(" ".join(message for messages in form.errors.values() for message in messages), "error")
        return _back(slug)
    try:
        text = form.addresses.data.read().decode("utf-8-sig")
        addresses, problems = read_addresses(text)
    except (UnicodeDecodeError, ValueError, csv.Error) as exc:
        flash(f"Cannot read the file: {exc}." if not isinstance(exc, UnicodeDecodeError)
              else "Cannot read the file: save it as CSV in UTF-8.", "error")
        return _back(slug)
    if problems:
        flash("Nothing was added: " + "; ".join(problems[:5]) + ("; …" if len(problems) > 5 else "") + ".", "error")
        return _back(slug)
    try:
        added, known = get_store().add_addresses(slug, addresses, _token_for())
    except StoreUnavailable:
        raise
    except StoreError as exc:
        flash(f"Cannot add the addresses: {exc}.", "error")
        return _back(slug)
    flash(f"Added {added} address{'es' if added != 1 else ''}" + (f"; {known} were already on the list" if known else "")
          + ". Nothing is sent until you click Send invitations.", "success")
    return _back(slug)


@bp.post("/surveys/<slug>/mail/<any(invitation, reminder):kind>")
@login_required
def send(slug, kind):
    """Send the next WEB_BATCH invitations ("invitation") or reminders ("reminder") due, and say what happened."""
    _submitted(slug, MailForm)
    try:
        config = mail_config(current_app.config)
        run = send_mail(get_store(), config, slug, request.host_url, kind, _token_for(), limit=WEB_BATCH,
                        seconds=WEB_SECONDS)
    except (MailNotConfigured, NotOpen) as exc:
        flash(f"Cannot send: {exc}.", "error")
        return _back(slug)
    except MailError as exc:
        flash(f"Sending stopped: {exc}. What was sent is logged; click again to go on.", "error")
        return _back(slug)
    left = sum(address["token"] is not None for address in get_store().addresses_to_mail(slug, kind, _token_for()))
    words = f"Sent {run.sent} {kind}{'s' if run.sent != 1 else ''}"
    if run.failed:
        words += f"; {len(run.failed)} failed (see the send log)"
    if left:
        words += f"; {left} still to send: click again to go on"
    if run.stale:
        words += f". {stale_words(run.stale, kind)}"
    flash(words + ".", "error" if run.failed or run.stale else "success")
    return _back(slug)


@bp.get("/surveys/<slug>/mail-log.csv")
@login_required
def mail_log(slug):
    """Download the send log: address, kind, sent or failed, the error, the day; nothing anyone answered."""
    survey_for_researcher(slug)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["email", "kind", "status", "error", "day"])
    for row in get_store().mail_log(slug):
        writer.writerow([_cell(row["email"]), row["kind"], row["status"], _cell(row["error"] or ""), row["day"]])
    return Response(out.getvalue(), mimetype="text/csv", headers={
        "Content-Disposition": f'attachment; filename="{slug}-mail-log.csv"', "Cache-Control": "no-store"})


def _cell(text: str) -> str:
    """Return a CSV cell that no spreadsheet reads as a formula."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


@bp.post("/surveys/<slug>/addresses/delete")
@login_required
def delete_addresses(slug):
    """Delete the survey's addresses and send log for good, after a confirmation."""
    form = _submitted(slug, MailForm)
    if form.confirm.data != "yes":
        return redirect(url_for("research.results", slug=slug, confirm_addresses="delete", _anchor="email-invitations"))
    try:
        deleted = get_store().delete_addresses(slug)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        flash(f"Cannot delete the addresses: {exc}.", "error")
        return _back(slug)
    flash(f"Deleted {deleted} address{'es' if deleted != 1 else ''} and the send log. "
          "The links already sent keep working until you close the survey.", "success")
    return _back(slug)


@bp.app_context_processor
def delivery_context():
    """Give the dashboard the forms, the address counts and whether e-mail is configured."""

    def mail_ready() -> str | None:
        try:
            mail_config(current_app.config)
        except MailNotConfigured as exc:
            return str(exc)
        return None

    return {"addresses_form": AddressesForm, "mail_form": MailForm, "mail_problem": mail_ready,
            "address_counts": lambda slug: get_store().address_counts(slug),
            "public_link": lambda slug: survey_link(request.host_url, slug)}
