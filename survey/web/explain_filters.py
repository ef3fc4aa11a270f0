"""Expose the plain-language protection notes to templates."""

from __future__ import annotations

from ..core import explain
from ..core.releases import release_note


def init_app(app):
    """Register protection_note, sample_note, posterior_note and release_note as Jinja globals."""
    app.jinja_env.globals["protection_note"] = explain.protection_note
    app.jinja_env.globals["sample_note"] = explain.sample_note
    app.jinja_env.globals["posterior_note"] = explain.posterior_note
    app.jinja_env.globals["release_note"] = release_note
