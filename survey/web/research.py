"""The blueprint of the researcher pages (endpoints ``research.*``), and ``/`` sending researchers to their surveys.

Sign-in lives in ``auth.py``, the survey list, dashboard and downloads in ``results.py``; both add
their views to this blueprint, so every endpoint keeps its name. The app factory imports them
before it registers the blueprint.
"""

from __future__ import annotations

from flask import Blueprint, redirect, url_for

bp = Blueprint("research", __name__)


@bp.get("/")
def index():
    """Send researchers to their surveys."""
    return redirect(url_for("research.surveys"))
