"""Researcher page that previews and creates a survey from a TOML definition (docs/reference/surveys.md)."""

from __future__ import annotations

from flask import Blueprint, flash, g, redirect, render_template, request, url_for

from ..core.definition import DefinitionError, parse_definition_toml
from ..core.definition_check import every_mistake
from ..core.design import build_design
from ..store import SLUG_TAKEN, SlugTaken, StoreError, StoreUnavailable
from .access import survey_for_researcher
from .auth import login_required
from .builder_text import mechanism_title
from .db import get_store
from .forms import LogoutForm, NewSurveyForm
from .revising import BACK_TO_EDITING, back_to_editor, is_published_edit, propose, render_confirmation

bp = Blueprint("editor", __name__)


@bp.route("/surveys/new", methods=("GET", "POST"))
@login_required
def new_survey():
    """Preview a definition's design without storing anything, or store it as a draft and go to its results.

    ``?edit=SLUG`` starts from a survey's definition. The draft belongs to its maker and is invisible to respondents until published on the
    dashboard; saving a definition with the slug of one's own draft replaces that draft, and with the slug of a
    published survey one may see asks first whether it corrects the text or starts a new version (``revising``).

    A rejected submission re-renders the form with the user's text and the error (status 422).
    The confirmation's "Back to editing" posts its unsaved definition here: it is shown and previewed, not stored.
    """
    form = NewSurveyForm()
    design = None
    edit = request.args.get("edit")
    unsaved = request.method == "POST" and request.form.get("action") == BACK_TO_EDITING
    if unsaved:
        form.create.data = False  # only ever shown again: the confirmation's way back stores nothing
    if (request.method == "GET" or unsaved) and edit:
        survey_for_researcher(edit)  # 404 unless the researcher may see it
    if request.method == "GET" and edit:
        form.definition.data = get_store().get_definition(edit)
    if form.validate_on_submit():
        text = form.definition_text()
        if text is not None:
            try:
                design = build_design(parse_definition_toml(text, source="the definition"))
            except DefinitionError:
                # An uploaded file's mistakes go beside the upload field, a typed one's beside the text (issue 27).
                target = form.upload if form.upload.data else form.definition
                target.errors.extend(every_mistake(text, source="the file" if form.upload.data else "the definition"))
            else:
                if form.create.data and edit == design["slug"] and _correcting(edit):
                    # A published survey one may see: say what the save does before doing it (issue 27).
                    return render_confirmation(propose(design["slug"], text), back=back_to_editor(design["slug"]))
                if form.create.data:
                    store = get_store()
                    slug = design["slug"]
                    # A draft the researcher may see is re-saved in place; anything else keeps its slug.
                    resave = (store.survey_exists(slug) and store.can_access(slug, g.user["id"])
                              and store.survey_status(slug) == "draft")
                    try:
                        store.create_survey(text, design, owner=None if resave else g.user["email"],
                                            status="draft", replace=resave)
                    except StoreUnavailable:
                        raise
                    except SlugTaken:
                        form.definition.errors.append(SLUG_TAKEN)
                        design = None
                    except StoreError as exc:
                        form.definition.errors.append(f"{exc}; choose another slug.")
                        design = None
                    else:
                        flash(f"Draft {'saved' if resave else 'created'}: respondents cannot see it until you "
                              f"publish it here; then share {url_for('respond.page', slug=slug)}", "success")
                        return redirect(url_for("research.results", slug=slug))
    status = 422 if form.errors else 200
    return render_template("new_survey.html", form=form, design=design, logout_form=LogoutForm(),
                           mechanism_title=mechanism_title, editing=edit, unsaved=unsaved), status


def _correcting(slug: str) -> bool:
    """Return whether saving under ``slug`` corrects a published survey the researcher may see."""
    store = get_store()
    return store.survey_exists(slug) and store.can_access(slug, g.user["id"]) and is_published_edit(slug)
