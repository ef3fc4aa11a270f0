"""Expose the plain-language protection notes to templates."""

from __future__ import annotations

from ..core import explain


def init_app(app):
    """Register protection_note, sample_note and posterior_note as Jinja globals."""
    app.jinja_env.globals["protection_note"] = explain.protection_note
    app.jinja_env.globals["sample_note"] = explain.sample_note
    app.jinja_env.globals["posterior_note"] = explain.posterior_note
