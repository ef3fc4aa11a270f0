"""Researcher sign-in: the session (``load_user``, ``login_required``), the throttled password check, sign-in, sign-out."""

from __future__ import annotations

import functools
import hmac
import math
from urllib.parse import urlsplit

from flask import current_app, flash, g, redirect, render_template, request, session, url_for
from werkzeug.security import check_password_hash

from . import known_devices
from .db import get_store
from .forms import LoginForm, LogoutForm
from .research import bp


@bp.before_app_request
def load_user():
    """Put the signed-in researcher (or None) on g.user; the API (``api/views.py``) never reads the session."""
    if request.blueprint == "api":
        g.user = None
        return
    user_id, key = session.get("user_id"), session.get("key")
    g.user = get_store().get_user_by_id(user_id) if isinstance(user_id, int) else None
    if user_id is not None and not session_matches(g.user, key):
        # Signed out elsewhere, the password changed, or the account was removed (its id may be another's now).
        session.clear()
        g.user = None


def session_matches(user: dict | None, key) -> bool:
    """Return whether a session's key is the account's current session key (compared in constant time)."""
    if user is None or not isinstance(key, str) or not key or not user["session_key"]:
        return False
    return hmac.compare_digest(key.encode("utf-8"), user["session_key"].encode("utf-8"))


def login_required(view):
    """Redirect to the sign-in page when no researcher is signed in."""

    @functools.wraps(view)
    def wrapped(**kwargs):
        if g.user is None:
            return redirect(url_for("research.login", next=request.full_path.rstrip("?")))
        return view(**kwargs)

    return wrapped


def _safe_next(target: str | None) -> str:
    if target and target.startswith("/") and not target.startswith("//") and not urlsplit(target).netloc:
        return target
    return url_for("research.surveys")


def start_session(user: dict, response):
    """Sign ``user`` in: a new session, and this browser remembered as one of the account's devices."""
    session.clear()
    session.permanent = True
    session["user_id"] = user["id"]
    session["key"] = user["session_key"]
    return known_devices.remember(response, user["email"])


def check_password(email: str, password: str, *, template: str, **context):
    """Check a researcher's password under the sign-in throttle; return (account or None, refusal response or None).

    A locked (account, device) gets the page ``template`` with the lock's notice and 429;
    a wrong password returns (None, None).
    """
    throttle = current_app.extensions["ldp_signin_throttle"]
    address = request.remote_addr or ""
    known = known_devices.knows(email)
    lock = throttle.attempt(email, address, known=known)
    if lock:
        page = render_template(template, lock=lock, locked_email=email, **context)
        return None, (page, 429, {"Retry-After": str(math.ceil(lock.seconds))})
    user = get_store().get_user(email)
    if user is None:
        # Refused without a password hash: cheap, so random emails cannot load the server. The
        # quick answer tells that no such account exists; the throttle's count per address over
        # every email bounds that probing (docs/explanation/privacy.md).
        return None, None
    if check_password_hash(user["password_hash"], password):
        throttle.succeed(email, address, known=known)
        return user, None
    return None, None


@bp.route("/login", methods=("GET", "POST"))
def login():
    """Sign a researcher in."""
    form = LoginForm()
    if form.validate_on_submit():
        user, refusal = check_password(form.email.data.strip(), form.password.data, template="login.html", form=form)
        if refusal:
            return refusal
        if user:
            return start_session(user, redirect(_safe_next(request.args.get("next"))))
        flash("Wrong email or password.", "error")
    return render_template("login.html", form=form)


@bp.post("/logout")
def logout():
    """Sign the researcher out."""
    if LogoutForm().validate_on_submit():
        if g.user is not None:
            get_store().end_sessions(g.user["id"])
        session.clear()
    return redirect(url_for("research.login"))
