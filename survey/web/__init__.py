"""Build the ldp-survey web application (Flask app factory, flaskr style)."""

from __future__ import annotations

import os

from flask import Flask

SESSION_HOURS = 12


def create_app(test_config: dict | None = None) -> Flask:
    """Create the app: respondent pages, the researcher dashboard and the JSON endpoints.

    ``test_config`` overrides the configuration; otherwise DATABASE comes from the
    environment variable LDP_SURVEY_DB (default ``ldp-survey.db``) and the session key
    is generated once and kept in the database's settings table.
    """
    from ..resources import resource_dir

    app = Flask(__name__, static_folder=None, template_folder=str(resource_dir("templates")))
    app.config.from_mapping(
        DATABASE=os.environ.get("LDP_SURVEY_DB", "ldp-survey.db"),
        MAX_CONTENT_LENGTH=64 * 1024,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        # A researcher's session lasts at most this long, and every CSRF token with it.
        PERMANENT_SESSION_LIFETIME=SESSION_HOURS * 3600,
        WTF_CSRF_TIME_LIMIT=SESSION_HOURS * 3600,
        JSON_SORT_KEYS=False,
    )
    if test_config:
        app.config.update(test_config)

    from . import (db, editor, errors, explain_filters, health, limits, research, respond, security,
                   static_files)

    from .throttle import SignInThrottle

    app.extensions["ldp_signin_throttle"] = SignInThrottle()
    limits.init_app(app)
    from . import flood; flood.init_app(app)  # noqa: E702
    db.init_app(app)
    security.init_app(app)
    errors.init_app(app)
    explain_filters.init_app(app)
    app.register_blueprint(health.bp)
    app.register_blueprint(static_files.bp)
    app.register_blueprint(respond.bp)
    app.register_blueprint(research.bp)
    app.register_blueprint(editor.bp)
    from . import lifecycle; app.register_blueprint(lifecycle.bp)  # noqa: E702
    from . import invitations; app.register_blueprint(invitations.bp)  # noqa: E702
    from .crosstab import bp as crosstab_bp
    app.register_blueprint(crosstab_bp)
    from .charts import bp as charts_bp
    app.register_blueprint(charts_bp)
    from . import account, api

    app.register_blueprint(account.bp)
    api.init_app(app)
    return app
