"""Researcher page that previews and creates a survey from a TOML definition (DESIGN.md §4)."""

from __future__ import annotations

from flask import Blueprint, flash, g, redirect, render_template, url_for

from ..definition import DefinitionError, parse_definition_toml
from ..design import build_design
from ..store import StoreError
from .db import get_store
from .forms import LogoutForm, NewSurveyForm
from .research import login_required

bp = Blueprint("editor", __name__)


@bp.route("/surveys/new", methods=("GET", "POST"))
@login_required
def new_survey():
    """Preview a definition's design without storing anything, or store it and go to its results.

    A rejected submission re-renders the form with the user's text and the error (status 422).
    """
    form = NewSurveyForm()
    design = None
    if form.validate_on_submit():
        text = form.definition_text()
        if text is not None:
            try:
                design = build_design(parse_definition_toml(text, source="the definition"))
            except DefinitionError as exc:
                form.definition.errors.append(str(exc))
            else:
                if form.create.data:
                    try:
                        get_store().create_survey(text, design, owner=g.user["email"])
                    except StoreError as exc:
                        form.definition.errors.append(f"{exc}; choose another slug.")
                        design = None
                    else:
                        slug = design["slug"]
                        flash(f"Survey created; share {url_for('respond.page', slug=slug)}", "success")
                        return redirect(url_for("research.results", slug=slug))
    status = 422 if form.errors else 200
    return render_template("new_survey.html", form=form, design=design, logout_form=LogoutForm()), status
