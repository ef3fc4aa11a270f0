"""A survey's lifecycle on the dashboard: publish a draft, close, reopen, duplicate, share, archive, set a
deletion date, and delete (a draft, or any survey with all its data).

Publishing, closing and deleting cannot be taken back quietly, so each asks first: a POST
without ``confirm=yes`` changes nothing and returns to the dashboard at ``?confirm=<action>``,
which shows the question and the confirming button (no JavaScript needed).

Every route is a POST (with a CSRF token) protected by ``survey_for_researcher``: to anyone
but the survey's owner and collaborators it answers 404, exactly as for a survey that does
not exist. The CSRF token is checked inside each view, after the access check, so another
researcher learns nothing from a missing token either.

Deleting a survey (a draft too), archiving, releasing early and the deletion date are the
owner's alone (a collaborator gets 403); an archived survey releases nothing until unarchived. The deletion asks on a page of its own
(``GET /surveys/<slug>/delete``), which offers the data package for download first.
"""

from __future__ import annotations

from flask import Blueprint, abort, flash, g, redirect, render_template, url_for
from flask_wtf import FlaskForm
from wtforms import DateField, EmailField, HiddenField, StringField
from wtforms.validators import DataRequired, Length, Optional

from ..core.definition import DefinitionError
from ..core.definition_toml import definition_with_slug
from ..store import SLUG_TAKEN, SlugTaken, StoreError, StoreUnavailable
from .access import survey_for_researcher
from .auth import login_required
from .db import get_store
from .security import csrf

bp = Blueprint("lifecycle", __name__)
csrf.exempt(bp)  # checked in each view, after survey_for_researcher (see the module docstring)


class LifecycleForm(FlaskForm):
    """Publish, close, reopen or delete (a POST with a CSRF token)."""

    confirm = HiddenField()


class DuplicateForm(FlaskForm):
    """Duplicate a survey into a new draft under a new slug."""

    new_slug = StringField("New slug", validators=[DataRequired(), Length(max=64)],
                           render_kw={"autocomplete": "off", "spellcheck": "false", "autocapitalize": "off"})


class DeletionDateForm(FlaskForm):
    """Set or clear the day from which ``ldp-survey purge --due`` deletes the survey."""

    day = DateField("Deletion date", validators=[Optional()])


class ShareForm(FlaskForm):
    """Add a collaborator by the email of their researcher account."""

    email = EmailField("Researcher's email", validators=[DataRequired(), Length(max=254)],
                       render_kw={"autocomplete": "off", "spellcheck": "false", "autocapitalize": "off"})


def _submitted(slug: str, form_class: type[FlaskForm]) -> FlaskForm:
    """Return the posted form of a survey's action: 404 unless the researcher may see the survey, then 400 on a bad token.

    The access check comes first, so another researcher learns nothing from a missing token.
    """
    survey_for_researcher(slug)
    form = form_class()
    if not form.validate_on_submit() and "csrf_token" in form.errors:
        abort(400, description="The security token is missing or invalid; reload the page.")
    return form


def _sentence(exc: Exception) -> str:
    text = str(exc)
    return f"{text[:1].upper()}{text[1:]}."


def _results(slug: str, **args):
    return redirect(url_for("research.results", slug=slug, **args))


CONFIRMED = ("publish", "close", "delete", "release")


def _unconfirmed(form: LifecycleForm, slug: str, action: str):
    """Return the redirect that asks to confirm ``action``, or None when the form says confirm=yes."""
    if form.confirm.data == "yes":
        return None
    return _results(slug, confirm=action, _anchor="confirm")


def _transition(slug: str, action: str, done: str):
    form = _submitted(slug, LifecycleForm)
    if action in CONFIRMED and (ask := _unconfirmed(form, slug, action)):
        return ask
    try:
        getattr(get_store(), f"{action}_survey")(slug)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        flash(_sentence(exc), "error")
    else:
        flash(done, "success")
    return _results(slug)


@bp.post("/surveys/<slug>/publish")
@login_required
def publish(slug):
    """Open a draft to respondents (after confirmation)."""
    return _transition(slug, "publish",
                       f"Published: respondents can answer at {url_for('respond.page', slug=slug)}. "
                       "The design is frozen once the first response arrives.")


@bp.post("/surveys/<slug>/close")
@login_required
def close(slug):
    """Stop taking responses (after confirmation)."""
    return _transition(slug, "close", "Closed: the survey takes no more responses; its results stay here.")


@bp.post("/surveys/<slug>/reopen")
@login_required
def reopen(slug):
    """Take responses again."""
    return _transition(slug, "reopen", "Reopened: the survey takes responses again.")


@bp.post("/surveys/<slug>/duplicate")
@login_required
def duplicate(slug):
    """Copy the survey's definition into a new draft under the slug given."""
    form = _submitted(slug, DuplicateForm)
    if form.errors:
        flash("Type a new slug for the copy.", "error")
        return _results(slug)
    new_slug = form.new_slug.data.strip()
    store = get_store()
    try:
        text, design = definition_with_slug(store.get_definition(slug), new_slug)
        store.duplicate_survey(slug, text, design)
    except StoreUnavailable:
        raise
    except SlugTaken:
        flash(f"Cannot duplicate: {SLUG_TAKEN}", "error")
        return _results(slug)
    except (DefinitionError, StoreError) as exc:
        flash(f"Cannot duplicate: {exc}", "error")
        return _results(slug)
    flash(f"Duplicated into the draft {new_slug}: edit or publish it here.", "success")
    return _results(new_slug)


def _owner_only(slug: str, what: str):
    """Abort with 403 unless the signed-in researcher owns the survey (after the 404 of survey_for_researcher)."""
    if not get_store().is_owner(slug, g.user["id"]):
        abort(403, description=f"Only the survey's owner can {what}.")


@bp.get("/surveys/<slug>/delete")
@login_required
def delete_page(slug):
    """Ask the owner to confirm deleting a survey with all its data, offering its data package first."""
    design = survey_for_researcher(slug)
    _owner_only(slug, "delete it with its data")
    store = get_store()
    survey = next(item for item in store.list_surveys() if item["slug"] == slug)
    kept = [version for version in store.versions(slug) if version["slug"] in store.kept_versions(slug)]
    # A kept version's people are its survey's: deleting the version takes no one's access.
    people = store.collaborators(slug) if store.people(slug)["survey"] == slug else []
    return render_template("delete_survey.html", design=design, survey=survey, kept=kept,
                           invitations=store.invitation_counts(slug)[0], people=people,
                           form=LifecycleForm())


@bp.post("/surveys/<slug>/delete")
@login_required
def delete(slug):
    """Delete a survey: a draft after the dashboard's confirmation, any other (owner only) after the delete page's."""
    form = _submitted(slug, LifecycleForm)
    store = get_store()
    draft = store.survey_status(slug) == "draft" and not store.received_count(slug)
    _owner_only(slug, "delete it" if draft else "delete it with its data")
    if form.confirm.data != "yes":
        return _results(slug, confirm="delete", _anchor="confirm") if draft else \
            redirect(url_for("lifecycle.delete_page", slug=slug))
    try:
        store.delete_draft(slug) if draft else store.delete_survey(slug)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        flash(_sentence(exc), "error")
        return _results(slug)
    flash(f"Deleted the draft {slug}." if draft else f"Deleted {slug} and all its data.", "success")
    return redirect(url_for("research.surveys"))


@bp.post("/surveys/<slug>/archive")
@login_required
def archive(slug):
    """Archive the survey (the owner only): closed, read-only and hidden from the survey list."""
    _submitted(slug, LifecycleForm)
    _owner_only(slug, "archive it")
    return _retention_change(slug, "archive_survey", "Archived: read-only, takes no responses, and listed only "
                                                     "under “Show archived surveys”.")


@bp.post("/surveys/<slug>/unarchive")
@login_required
def unarchive(slug):
    """Bring an archived survey back to the list, closed (the owner only)."""
    _submitted(slug, LifecycleForm)
    _owner_only(slug, "unarchive it")
    return _retention_change(slug, "unarchive_survey", "Unarchived: the survey is closed; reopen it to take responses.")


@bp.post("/surveys/<slug>/deletion-date")
@login_required
def deletion_date(slug):
    """Set or clear the survey's deletion date (the owner only); an empty date clears it."""
    form = _submitted(slug, DeletionDateForm)
    _owner_only(slug, "set its deletion date")
    if form.errors:
        flash("Give the deletion date as a day, e.g. 2027-06-30.", "error")
        return _results(slug, _anchor="keeping")
    day = form.day.data.isoformat() if form.day.data else None
    return _retention_change(slug, "set_deletion_date",
                             f"From {day} the survey and all its data will be deleted." if day
                             else "The survey has no deletion date now.", day)


def _retention_change(slug: str, method: str, done: str, *args):
    """Call a store method of the survey's retention, flash what happened, and return to the dashboard."""
    try:
        getattr(get_store(), method)(slug, *args)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        flash(_sentence(exc), "error")
    else:
        flash(done, "success")
    return _results(slug, _anchor="keeping")


@bp.post("/surveys/<slug>/release")
@login_required
def release(slug):
    """Release the responses held for the next release now, fewer than the step (the owner only, after confirmation)."""
    form = _submitted(slug, LifecycleForm)
    store = get_store()
    if not store.is_owner(slug, g.user["id"]):
        flash("Only the survey's owner can release held responses early.", "error")
        return _results(slug, _anchor="releases")
    if ask := _unconfirmed(form, slug, "release"):
        return ask
    try:
        moved = store.release_held(slug)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        flash(_sentence(exc), "error")
        return _results(slug, _anchor="releases")
    flash(f"Released {moved:,} held response{'' if moved == 1 else 's'}: they are in the results now."
          if moved else "No responses were held: nothing to release.", "success")
    return _results(slug, _anchor="releases")


@bp.post("/surveys/<slug>/share")
@login_required
def share(slug):
    """Let another researcher (an existing account) see and act on the survey, as a collaborator (the owner only).

    A collaborator gets 403, as for the owner's other actions on people (``collaborators``).
    """
    form = _submitted(slug, ShareForm)
    if not get_store().is_owner(slug, g.user["id"]):
        abort(403, description="Only the survey's owner can add collaborators.")
    if form.errors:
        flash("Type the email of a researcher account.", "error")
        return _results(slug, _anchor="people")
    email = form.email.data.strip()
    try:
        role = get_store().share(slug, email)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        flash(f"Cannot share: {exc}.", "error")
    else:
        flash(f"{email} is the {role} of this survey." if role == "owner"
              else f"Shared: {email} now sees this survey as a collaborator.", "success")
    return _results(slug, _anchor="people")


@bp.app_context_processor
def lifecycle_context():
    """Give the dashboard templates the survey's status, its people and the lifecycle forms."""
    return {"survey_status": lambda slug: get_store().survey_status(slug),
            "survey_is_owner": lambda slug: g.user is not None and get_store().is_owner(slug, g.user["id"]),
            "survey_people": lambda slug: get_store().people(slug),
            "survey_retention": lambda slug: get_store().retention(slug), "deletion_date_form": DeletionDateForm,
            "lifecycle_form": LifecycleForm, "duplicate_form": DuplicateForm, "share_form": ShareForm,
            "confirmed_actions": CONFIRMED}
