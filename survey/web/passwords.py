"""A researcher's own password: change it signed in, or set a new one with a single-use reset link.

``/account/password`` asks the current password (under the sign-in throttle) and the new one
twice; ``/forgot`` e-mails a reset link where SMTP is configured and answers the same whether
or not the address has an account; ``/reset/<token>`` sets a new password once. A new
password ends every other session of the account and clears its sign-in locks.
"""

from __future__ import annotations

import math
import os
import threading

from flask import Blueprint, current_app, flash, g, redirect, render_template, request, session, url_for
from flask_wtf import FlaskForm
from werkzeug.security import generate_password_hash
from wtforms import EmailField, PasswordField
from wtforms.validators import DataRequired, EqualTo, Length

from ..core.invitations import check_base
from ..store import EMAIL_MAX, MIN_PASSWORD_LENGTH
from ..store.accounts import RESET_SECONDS
from .auth import check_password, login_required, start_session
from .db import get_store
from .forms import LogoutForm
from .mail import MailError, mail_config, send_message

bp = Blueprint("passwords", __name__)
RESET_MINUTES = RESET_SECONDS // 60
SENT = ("If {email} has an account here, a link to set a new password is on its way to it. "
        "The link works once, for {minutes} minutes.")


def _new_password_fields(cls):
    """Add the new password, typed twice, with the account rules, to a form class."""
    cls.password = PasswordField(f"New password (at least {MIN_PASSWORD_LENGTH} characters)",
                                 validators=[DataRequired(), Length(min=MIN_PASSWORD_LENGTH, max=1024)],
                                 render_kw={"autocomplete": "new-password", "minlength": MIN_PASSWORD_LENGTH})
    cls.confirm = PasswordField("Type the new password again",
                                validators=[DataRequired(), EqualTo("password", "The passwords differ.")],
                                render_kw={"autocomplete": "new-password"})
    return cls


@_new_password_fields
class ChangePasswordForm(FlaskForm):
    """Change one's own password: the current one, then the new one twice."""

    current = PasswordField("Current password", validators=[DataRequired(), Length(max=1024)],
                            render_kw={"autocomplete": "current-password"})


@_new_password_fields
class ResetPasswordForm(FlaskForm):
    """Set a new password with a reset link."""


class ForgotForm(FlaskForm):
    """Ask for a reset link by e-mail."""

    email = EmailField("Your account's email", validators=[DataRequired(), Length(max=EMAIL_MAX)],
                       render_kw={"autocomplete": "username", "spellcheck": "false", "autocapitalize": "off"})


def _change_page(form, status=200):
    return render_template("password.html", form=form, logout_form=LogoutForm()), status


@bp.route("/account/password", methods=("GET", "POST"))
@login_required
def change():
    """Change the signed-in researcher's password; their other sessions end, this one goes on."""
    form = ChangePasswordForm()
    if not form.validate_on_submit():
        return _change_page(form, 400 if form.errors else 200)
    user, refusal = check_password(g.user["email"], form.current.data, template="password.html", form=form,
                                   logout_form=LogoutForm())
    if refusal:
        return refusal
    if user is None or user["id"] != g.user["id"]:
        form.current.errors.append("That is not your current password.")
        return _change_page(form, 400)
    session["key"] = get_store().change_password(user["id"], generate_password_hash(form.password.data))
    flash("Your password is changed; every other session of your account is signed out.", "success")
    return redirect(url_for("passwords.change"))


def mail_ready() -> bool:
    """Return whether this server can e-mail reset links: SMTP and its public address (PUBLIC_URL) configured.

    Without a public address a link would take the host the request named, which whoever asks
    for the link chooses (a forged Host would receive the victim's token), so none is sent.
    """
    if not _configured_base():
        return False
    try:
        mail_config(current_app.config)
    except MailError:
        return False
    return True


def _configured_base() -> str | None:
    """Return the configured public address (PUBLIC_URL or LDP_SURVEY_PUBLIC_URL), or None."""
    return current_app.config.get("PUBLIC_URL") or os.environ.get("LDP_SURVEY_PUBLIC_URL") or None


def _send_reset(config, email: str, link: str):
    """Send the reset link; a failure is logged, never shown (the page answers the same for every address)."""
    body = (f"Someone (we hope you) asked to set a new password for the ldp-survey account {email}.\n\n"
            f"Open this link to choose one. It works once, for {RESET_MINUTES} minutes:\n\n{link}\n\n"
            "If you did not ask, ignore this message: your password stays as it is.\n")
    try:
        send_message(config, email, "Set a new ldp-survey password", body)
    except MailError as exc:
        current_app.logger.warning("a password reset message could not be sent: %s", exc)


@bp.route("/forgot", methods=("GET", "POST"))
def forgot():
    """Ask for a reset link by e-mail; the answer is the same whether or not the address has an account."""
    form, ready = ForgotForm(), mail_ready()
    if not (ready and form.validate_on_submit()):
        return render_template("forgot.html", form=form, ready=ready), 400 if form.errors else 200
    email = form.email.data.strip()
    throttle = current_app.extensions["ldp_signin_throttle"]
    lock = throttle.attempt("reset:" + email.lower(), request.remote_addr or "")
    if lock:
        return (render_template("forgot.html", form=form, ready=ready, wait=lock.minutes), 429,
                {"Retry-After": str(math.ceil(lock.seconds))})
    issued = get_store().issue_password_reset(email)
    if issued is not None:
        token, account = issued
        link = public_base() + url_for("passwords.reset", token=token)
        # Sent aside, so that the answer takes as long for an unknown address as for a known one.
        threading.Thread(target=_send_with_app, args=(current_app._get_current_object(), account["email"], link),
                         daemon=True).start()
    return render_template("forgot.html", form=ForgotForm(formdata=None), ready=ready,
                           sent=SENT.format(email=email, minutes=RESET_MINUTES)), 200


def public_base() -> str:
    """Return the address e-mailed links start with: PUBLIC_URL (or LDP_SURVEY_PUBLIC_URL), never the Host header."""
    return check_base(_configured_base())


def _send_with_app(app, email: str, link: str):
    """Send one reset message inside the app's context (from a thread of its own)."""
    with app.app_context():
        _send_reset(mail_config(app.config), email, link)


@bp.route("/reset/<token>", methods=("GET", "POST"))
def reset(token):
    """Set a new password with a single-use reset link, then sign in; other sessions end."""
    store = get_store()
    account = store.password_reset_account(token)
    if account is None:
        return render_template("reset.html", form=None, minutes=RESET_MINUTES), 404
    form = ResetPasswordForm()
    if form.validate_on_submit():
        user = store.use_password_reset(token, generate_password_hash(form.password.data))
        if user is None:
            return render_template("reset.html", form=None, minutes=RESET_MINUTES), 404
        flash("Your new password is set; every other session of your account is signed out.", "success")
        return start_session(user, redirect(url_for("research.surveys")))
    return render_template("reset.html", form=form, account=account), 400 if form.errors else 200
