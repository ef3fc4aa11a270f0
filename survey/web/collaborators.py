"""Collaborators without the command line: join links, removing a collaborator, handing ownership over.

The owner makes a single-use join link, the colleague opens it; the owner removes a
collaborator or makes one the owner (each after a confirmation page). Anyone who sees an
invitation-only survey may cancel one respondent invitation link.

``/surveys/<slug>/collaborators/...`` are the owner's POSTs (CSRF checked after the access
check, as in ``lifecycle``: 404 to anyone who may not see the survey, 403 to a
collaborator). ``/join/<token>`` is the colleague's page: an unknown, used, revoked or
expired link gets one generic answer that names no survey.
"""

from __future__ import annotations

from flask import Blueprint, abort, flash, g, redirect, render_template, url_for
from flask_wtf import FlaskForm
from werkzeug.security import generate_password_hash
from wtforms import EmailField, HiddenField, PasswordField, StringField
from wtforms.validators import DataRequired, EqualTo, Length

from ..core.invitations import invite_token
from ..store import EMAIL_MAX, MIN_PASSWORD_LENGTH, JoinLinkInvalid, StoreError, StoreUnavailable
from ..store.joining import JOIN_DAYS
from .auth import check_password, login_required, start_session
from .db import get_store
from .forms import LogoutForm
from .lifecycle import _submitted
from .security import csrf

bp = Blueprint("collaborators", __name__)
TOKEN_MAX = 64


class InviteForm(FlaskForm):
    """Make a join link for a colleague's email."""

    email = EmailField("Colleague's email", validators=[DataRequired(), Length(max=EMAIL_MAX)],
                       render_kw={"autocomplete": "off", "spellcheck": "false", "autocapitalize": "off"})


class RevokeForm(FlaskForm):
    """Revoke one join link, named by its id."""

    invitation = HiddenField(validators=[DataRequired()])


class PersonForm(FlaskForm):
    """Remove a collaborator, or make them the owner: their email, and whether the owner confirmed."""

    email = HiddenField(validators=[DataRequired(), Length(max=EMAIL_MAX)])
    confirmed = HiddenField()


class CancelInvitationForm(FlaskForm):
    """Cancel one respondent invitation link, pasted whole or as its token."""

    link = StringField("Invitation link to cancel", validators=[DataRequired(), Length(max=2048)],
                       render_kw={"autocomplete": "off", "spellcheck": "false", "autocapitalize": "off"})


class AcceptForm(FlaskForm):
    """Accept the invitation as the researcher already signed in with the invited email."""


class SignInToJoinForm(FlaskForm):
    """Accept the invitation by signing in to the invited (existing) account."""

    password = PasswordField("Your password", validators=[DataRequired(), Length(max=1024)],
                             render_kw={"autocomplete": "current-password"})


class NewAccountForm(FlaskForm):
    """Accept the invitation by setting the password of a new account."""

    password = PasswordField(f"Choose a password (at least {MIN_PASSWORD_LENGTH} characters)",
                             validators=[DataRequired(), Length(min=MIN_PASSWORD_LENGTH, max=1024)],
                             render_kw={"autocomplete": "new-password", "minlength": MIN_PASSWORD_LENGTH})
    confirm = PasswordField("Type it again", validators=[DataRequired(), EqualTo("password", "The passwords differ.")],
                            render_kw={"autocomplete": "new-password"})


def _owners_form(slug: str, form_class: type[FlaskForm]) -> FlaskForm:
    """Return the posted form of an owner's action: 404 to strangers, 400 on a bad token, 403 to a collaborator."""
    form = _submitted(slug, form_class)
    if not get_store().is_owner(slug, g.user["id"]):
        abort(403, description="Only the survey's owner can invite collaborators, revoke their links, remove or promote them.")
    return form


def _people(slug: str):
    return redirect(url_for("research.results", slug=slug, _anchor="people"))


def _kept_version(slug: str, what: str):
    """Return the refusal (a flash and the people section) if ``slug`` is a kept version, else None.

    Who sees a kept version follows its survey (``store.accounts.people_of``): its people are managed there.
    """
    try:
        get_store().refuse_people_action(slug, what)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        flash(f"{str(exc)[:1].upper()}{str(exc)[1:]}.", "error")
        return _people(slug)
    return None


@bp.post("/surveys/<slug>/collaborators/invite")
@csrf.exempt  # checked by _owners_form, after the access check
@login_required
def invite(slug):
    """Make a single-use join link for the email typed and show it, once."""
    form = _owners_form(slug, InviteForm)
    refused = _kept_version(slug, "invite collaborators")
    if refused:
        return refused
    if form.errors:
        flash("Type your colleague's email address.", "error")
        return _people(slug)
    try:
        token, record = get_store().invite_collaborator(slug, g.user["id"], form.email.data)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        flash(f"Cannot make a join link: {exc}.", "error")
        return _people(slug)
    link = url_for("collaborators.join", token=token, _external=True)
    return render_template("join_link.html", link=link, record=record, slug=slug, days=JOIN_DAYS,
                           title=get_store().get_design(slug)["title"], logout_form=LogoutForm())


@bp.post("/surveys/<slug>/collaborators/revoke")
@csrf.exempt  # checked by _owners_form, after the access check
@login_required
def revoke(slug):
    """Revoke one pending join link: opening it then shows the generic "does not work" page."""
    form = _owners_form(slug, RevokeForm)
    refused = _kept_version(slug, "revoke join links")
    if refused:
        return refused
    try:
        record = get_store().revoke_collaborator_invitation(slug, int(form.invitation.data or ""))
    except StoreUnavailable:
        raise
    except (StoreError, ValueError):
        flash("There is no such join link; it may have been used or revoked already.", "error")
    else:
        flash(f"Revoked the join link for {record['email']}.", "success")
    return _people(slug)


PERSON_ACTIONS = {
    "remove": ("Remove {email} from this survey?", "They no longer see this survey or its results; its pages "
               "answer them “not found”. You can invite them again later.", "Remove collaborator",
               "Removed {email}: they no longer see this survey."),
    "transfer": ("Make {email} the owner of this survey?", "They get what only the owner may do (inviting, "
                 "removing and promoting collaborators); you stay a collaborator and no longer may.", "Make them the owner",
                 "{email} owns this survey now; you are a collaborator."),
}


def _person_action(slug: str, action: str):
    """Ask the owner to confirm, then remove a collaborator or make them the owner."""
    form = _owners_form(slug, PersonForm)
    refused = _kept_version(slug, "remove collaborators" if action == "remove" else "hand ownership over")
    if refused:
        return refused
    email = (form.email.data or "").strip()
    question, consequence, button, done = (text.format(email=email) for text in PERSON_ACTIONS[action])
    if form.confirmed.data != "yes":
        return render_template("confirm_person.html", slug=slug, email=email, question=question,
                               consequence=consequence, button=button, action=action, form=form,
                               title=get_store().get_design(slug)["title"], logout_form=LogoutForm())
    store = get_store()
    try:
        (store.remove_collaborator if action == "remove" else store.transfer_ownership)(slug, g.user["id"], email)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        flash(f"{str(exc)[:1].upper()}{str(exc)[1:]}.", "error")
    else:
        flash(done, "success")
    return _people(slug)


@bp.post("/surveys/<slug>/collaborators/remove")
@csrf.exempt  # checked by _owners_form, after the access check
@login_required
def remove(slug):
    """Take a collaborator's access away, after a confirmation."""
    return _person_action(slug, "remove")


@bp.post("/surveys/<slug>/collaborators/transfer")
@csrf.exempt  # checked by _owners_form, after the access check
@login_required
def transfer(slug):
    """Make a collaborator the owner (the owner becomes a collaborator), after a confirmation."""
    return _person_action(slug, "transfer")


@bp.post("/surveys/<slug>/invitations/cancel")
@csrf.exempt  # checked by _submitted, after the access check
@login_required
def cancel_invitation(slug):
    """Cancel one respondent invitation link: opening it then says it was used."""
    form = _submitted(slug, CancelInvitationForm)
    target = url_for("research.results", slug=slug, _anchor="invitations")
    if form.errors:
        flash("Paste the invitation link to cancel.", "error")
    elif get_store().cancel_invitation(slug, invite_token(form.link.data)):
        flash("Cancelled that invitation link: it no longer admits an answer.", "success")
    else:
        flash("That is no unused invitation link of this survey (unknown, used or cancelled already).", "error")
    return redirect(target)


def _invalid():
    return render_template("join.html", invitation=None, days=JOIN_DAYS), 404


def _form_for(invitation: dict, account: dict | None) -> FlaskForm:
    if g.user is not None and g.user["email"].lower() == invitation["email"].lower():
        return AcceptForm()
    return SignInToJoinForm() if account else NewAccountForm()


def _accepted(token: str, **who):
    """Use the link for the account ``who`` names (or creates); sign it in and open the survey."""
    try:
        user = get_store().accept_invitation(token, **who)
    except JoinLinkInvalid:
        return None
    response = start_session(user, redirect(url_for("research.results", slug=user["survey"])))
    flash("Welcome: you now see this survey as a collaborator.", "success")
    return response


@bp.route("/join/<token>", methods=("GET", "POST"))
def join(token):
    """Show a join link's invitation, and accept it: sign in, or set the password of a new account."""
    store = get_store()
    invitation = store.join_invitation(token) if len(token) <= TOKEN_MAX else None
    if invitation is None:
        return _invalid()
    account = store.get_user(invitation["email"])
    form = _form_for(invitation, account)
    page = {"invitation": invitation, "form": form, "account": account}
    if form.validate_on_submit():
        if isinstance(form, AcceptForm):
            done = _accepted(token, user_id=g.user["id"])
        elif isinstance(form, SignInToJoinForm):
            user, refusal = check_password(invitation["email"], form.password.data, template="join.html", **page)
            if refusal:
                return refusal
            if user is None:
                form.password.errors.append("Wrong password for this account.")
                return render_template("join.html", **page), 200
            done = _accepted(token, user_id=user["id"])
        else:
            try:
                done = _accepted(token, password_hash=generate_password_hash(form.password.data))
            except StoreUnavailable:
                raise
            except StoreError as exc:
                form.password.errors.append(f"{str(exc)[:1].upper()}{str(exc)[1:]}.")
                return render_template("join.html", **page), 409
        return done or _invalid()
    return render_template("join.html", **page), 400 if form.errors else 200


@bp.app_context_processor
def collaborators_context():
    """Give the dashboard the owner check, a survey's pending join links and the two forms."""
    return {"is_survey_owner": lambda slug: g.get("user") is not None and get_store().is_owner(slug, g.user["id"]),
            "pending_join_links": lambda slug: get_store().collaborator_invitations(slug),
            "invite_form": InviteForm, "revoke_invite_form": RevokeForm, "person_form": PersonForm,
            "cancel_invitation_form": CancelInvitationForm}
