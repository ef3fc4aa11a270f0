"""Correcting a published survey from the builder or the TOML editor: say what a save does, then do it (issue 27).

Saving an edit of a published survey first shows a confirmation page that lists the text,
settings and design changes in plain words and says what happens to the responses
(``core.revisions.describe``); confirming posts the same definition to ``/surveys/<slug>/revise``,
which classifies it again and stores it: a text or settings change keeps one data set, a design
change of a survey with responses makes a new version under the same link (``store.versioning``).
"Back to editing" posts the same definition, unsaved, back to the builder or the TOML editor
(``back_to_builder``, ``back_to_editor``), which show it for more editing; nothing is stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Blueprint, abort, flash, redirect, render_template, url_for
from flask_wtf import FlaskForm
from wtforms import HiddenField

from ..core.definition import DefinitionError, parse_definition_toml
from ..core.definition_check import every_mistake
from ..core.design import build_design
from ..core.revisions import (DESIGN, NONE, SETTINGS, TEXT, Revision, classify_change, describe, done_message,
                              plain, wording_changes)
from ..store import StoreError, StoreUnavailable
from .access import survey_for_researcher
from .auth import login_required
from .db import get_store
from .forms import LogoutForm
from .security import csrf

bp = Blueprint("revising", __name__)
csrf.exempt(bp)  # the token is checked in the view, after survey_for_researcher: 404 first to anyone else
# The value of ``action`` with which the confirmation's "Back to editing" posts the unsaved definition.
BACK_TO_EDITING = "edit"


class ReviseForm(FlaskForm):
    """The confirmation's form: the new definition as TOML, carried unchanged from the edit."""

    definition = HiddenField()


@dataclass
class Proposal:
    """What saving a new definition of a published survey would do, in plain words."""

    slug: str
    definition: str
    design: dict
    revision: Revision
    sentence: str
    responses: int
    version: int
    wordings: list[tuple[str, str, str]]

    @property
    def text_changes(self) -> list[str]:
        """The text changes, one plain phrase each."""
        return [plain(change) for change in self.revision.text_changes]

    @property
    def design_changes(self) -> list[str]:
        """The design changes, one plain phrase each."""
        return [plain(change) for change in self.revision.design_changes]

    @property
    def confirm_label(self) -> str:
        """The label of the button that stores the change ("" when nothing changes)."""
        kind = self.revision.kind
        if kind == NONE:
            return ""
        if kind in (TEXT, SETTINGS):
            return "Save the correction" if kind == TEXT else "Save the settings"
        return f"Start version {self.version + 1}" if self.responses else "Replace the design"

    @property
    def settings_changes(self) -> list[str]:
        """The settings changes (who may answer, panel), one plain phrase each with before → after."""
        return list(self.revision.settings_changes)


def is_published_edit(slug: str) -> bool:
    """Return whether ``slug`` names a published survey (open or closed, its current version) the researcher may edit."""
    store = get_store()
    return (store.survey_exists(slug) and store.survey_status(slug) != "draft"
            and store.family(slug) == slug and not store.retention(slug)["archived"])


def propose(slug: str, definition: str) -> Proposal:
    """Return what saving ``definition`` as the survey ``slug`` does; raise DefinitionError for a bad one."""
    store = get_store()
    new = parse_definition_toml(definition, source="the definition")
    if new.slug != slug:
        raise DefinitionError(f"the slug is {slug!r} and cannot change when correcting a survey; "
                              "duplicate the survey to give it a new address", source="the definition",
                              field="slug")
    design = build_design(new)
    old = parse_definition_toml(store.get_definition(slug), source="the survey")
    revision = classify_change(old, new)
    responses = store.received_count(slug)
    version = store.revision_record(slug)["version"]
    sentence = describe(revision, responses=responses, version=version,
                        epsilons=(float(old.epsilon), float(new.epsilon)))
    return Proposal(slug, definition, design, revision, sentence, responses, version, wording_changes(old, new))


def render_confirmation(proposal: Proposal, *, back: str, status: int = 200):
    """Render the page that says what the save does, with the button that does it."""
    form = ReviseForm(formdata=None, definition=proposal.definition)
    return render_template("revise_confirm.html", proposal=proposal, form=form, back=back, DESIGN=DESIGN,
                           back_action=BACK_TO_EDITING, logout_form=LogoutForm()), status


def apply(proposal: Proposal) -> str:
    """Store the proposal (text revision, new version or replaced design); return the message to flash."""
    done, number = get_store().apply_revision(proposal.slug, proposal.definition, proposal.design,
                                              proposal.revision.kind)
    return done_message(done, number, proposal.responses, settings=bool(proposal.revision.settings_changes))


@bp.post("/surveys/<slug>/revise")
@login_required
def revise(slug):
    """Store a confirmed correction of a published survey (from the confirmation page), then show its results."""
    survey_for_researcher(slug)
    if not is_published_edit(slug):
        abort(409, description="Only the current version of a published, unarchived survey can be corrected; "
                               "a draft is saved from the builder, an earlier version is kept as it was.")
    form = ReviseForm()
    if not form.validate_on_submit():
        abort(400, description="The form expired; edit the survey again.")
    try:
        proposal = propose(slug, form.definition.data or "")
    except DefinitionError:
        abort(422, description="; ".join(every_mistake(form.definition.data or "", source="the definition")))
    try:
        message = apply(proposal)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        abort(409, description=f"{str(exc)[:1].upper()}{str(exc)[1:]}.")
    flash(message, "success")
    return redirect(url_for("research.results", slug=slug))


def back_to_builder(slug: str) -> str:
    """Return the address to which "Back to editing" posts the unsaved definition for the builder."""
    return url_for("builder.build", edit=slug)


def back_to_editor(slug: str) -> str:
    """Return the address to which "Back to editing" posts the unsaved definition for the TOML editor."""
    return url_for("editor.new_survey", edit=slug)
