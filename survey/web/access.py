"""Who may see a survey: its owner and collaborators; everyone else gets 404 (docs/explanation/privacy.md)."""

from __future__ import annotations

from flask import abort, g

from .db import get_store


def survey_for_researcher(slug: str) -> dict:
    """Return the survey's design if the signed-in researcher owns it or collaborates on it, else abort with 404.

    A survey the researcher may not see answers exactly as one that does not exist.
    """
    store = get_store()
    if g.get("user") is None or not store.can_access(slug, g.user["id"]):
        abort(404)
    return store.get_design(slug)
