"""The signed-in researcher's "API tokens" page: list, create (shown once) and revoke tokens."""

from __future__ import annotations

from flask import Blueprint, flash, g, redirect, render_template, url_for
from flask_wtf import FlaskForm
from wtforms import HiddenField, StringField, SubmitField
from wtforms.validators import DataRequired, Length

from ..store import TOKEN_LABEL_MAX, StoreError, StoreUnavailable
from .auth import login_required
from .db import get_store
from .forms import LogoutForm

bp = Blueprint("account", __name__)


class NewTokenForm(FlaskForm):
    """Make a new API token with an optional label."""

    label = StringField("Label (optional, e.g. the laptop or notebook that will use it)",
                        validators=[Length(max=TOKEN_LABEL_MAX)], render_kw={"autocomplete": "off"})
    create = SubmitField("Create token")


class RevokeTokenForm(FlaskForm):
    """Revoke one token, named by its id."""

    token_id = HiddenField(validators=[DataRequired()])
    revoke = SubmitField("Revoke")


def _page(new_token: str | None = None, new_label: str | None = None, form: NewTokenForm | None = None,
          status: int = 200):
    tokens = get_store().list_tokens(g.user["id"])
    return render_template("tokens.html", tokens=tokens, form=form or NewTokenForm(formdata=None),
                           revoke_form=RevokeTokenForm(formdata=None), new_token=new_token, new_label=new_label,
                           logout_form=LogoutForm()), status


@bp.get("/account/tokens")
@login_required
def tokens():
    """List the researcher's API tokens (label and creation day; a token itself is never shown again)."""
    return _page()


@bp.post("/account/tokens")
@login_required
def create_token():
    """Make a new token and show it on this one page, once; it is not kept anywhere but its hash."""
    form = NewTokenForm()
    if not form.validate_on_submit():
        return _page(form=form, status=400)
    try:
        record, token = get_store().create_token(g.user["email"], form.label.data)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        form.label.errors = [str(exc)]
        return _page(form=form, status=400)
    return _page(new_token=token, new_label=record["label"])


@bp.post("/account/tokens/revoke")
@login_required
def revoke_token():
    """Revoke one of the researcher's tokens; requests with it answer 401 from now on."""
    form = RevokeTokenForm()
    if form.validate_on_submit():
        try:
            record = get_store().revoke_token(g.user["id"], int(form.token_id.data))
        except StoreUnavailable:
            raise
        except (StoreError, ValueError):
            flash("There is no such token.", "error")
        else:
            flash(f"Revoked the token {record['label']}.", "info")
    else:
        flash("The form expired; try again.", "error")
    return redirect(url_for("account.tokens"))
