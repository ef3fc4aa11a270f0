"""Expose the plain-language protection notes to templates."""

from __future__ import annotations

from ..core import explain
from ..core.releases import release_note
from ..core.readout import share_decimals, share_text
from ..core.words import format_epsilon, format_p


def init_app(app):
    """Register protection_note, sample_note, posterior_note and release_note as Jinja globals, and the epsilon filter.

    ``{{ value|epsilon }}`` shows an ε rounded up to 3 significant digits, as on every page (``words.format_epsilon``).
    """
    app.jinja_env.globals["protection_note"] = explain.protection_note
    app.jinja_env.globals["split_figure"] = explain.split_figure
    app.jinja_env.globals["sample_note"] = explain.sample_note
    app.jinja_env.globals["posterior_note"] = explain.posterior_note
    app.jinja_env.globals["release_note"] = release_note
    app.jinja_env.filters["epsilon"] = format_epsilon
    app.jinja_env.filters["p_value"] = format_p
    app.jinja_env.filters["share"] = share_text
    app.jinja_env.globals["share_decimals"] = share_decimals
