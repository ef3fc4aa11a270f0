"""Build the ldp-survey web application (Flask app factory, flaskr style)."""

from __future__ import annotations

import logging
import os

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

SESSION_HOURS = 12


def create_app(test_config: dict | None = None) -> Flask:
    """Create the app: respondent pages, the researcher dashboard and the JSON endpoints.

    ``test_config`` overrides the configuration; otherwise DATABASE comes from the
    environment variable LDP_SURVEY_DB (default ``ldp-survey.db``) and the session key from
    LDP_SURVEY_SECRET_KEY, else the file ``<database>.secret-key`` beside a SQLite file or a row of a
    database server's, made on first use (``secret``). FLOOD_STORE ("memory" or "database") is
    where the flood limit counts (``flood.flood_store``). PROXIES (default 0) is the
    number of reverse proxies in front of the app whose X-Forwarded-For to trust (the flood
    limit and the sign-in throttle then count the client's own address). SMTP_HOST, SMTP_PORT,
    SMTP_SECURITY, SMTP_USER, SMTP_PASSWORD and MAIL_FROM (else $LDP_SURVEY_<name>) are the
    server that sends e-mailed invitations (``mail``).
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
        # The cookie is sent only when the session changes. Refreshed on every response, a slow
        # response (a chart drawn while the researcher clicks Publish) would put back the cookie
        # it was sent with, over the newer one that carries the next page's message.
        SESSION_REFRESH_EACH_REQUEST=False,
        JSON_SORT_KEYS=False,
    )
    if test_config:
        app.config.update(test_config)

    # auth and results add their views to research.bp: imported here, before it is registered.
    from . import (account, auth, builder, charts, collaborators, crosstab, db, delivery, editor, errors,
                   explain_filters, fast_submissions, flood, handover, health, i18n, interviewers, invitations, lifecycle, limits, log_privacy,
                   packages, passwords, regression, research, respond, results, revising, sandbox, security,
                   static_files, unavailable)
    from .api import views as api
    from .throttle import SignInThrottle

    fast_submissions.install(app)
    proxies = app.config.get("PROXIES", 0)
    if proxies:
        # Behind N reverse proxies the client's address is the N-th from the right of
        # X-Forwarded-For; without this setting that header is ignored (a client could forge it).
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies)
    limits.init_app(app)
    db.init_app(app)
    flood.init_app(app)
    app.extensions["ldp_signin_throttle"] = SignInThrottle(app.extensions["ldp_stores"], app.config["SECRET_KEY"])
    security.init_app(app)
    # No join link, invitation or API token in any log line (the app's, or the development server's).
    log_privacy.install(app.logger, logging.getLogger("werkzeug"))
    i18n.init_app(app)
    errors.init_app(app)
    unavailable.init_app(app)
    explain_filters.init_app(app)
    for blueprint in (health.bp, static_files.bp, respond.bp, research.bp, editor.bp, lifecycle.bp,
                      invitations.bp, collaborators.bp, builder.bp, crosstab.bp, charts.bp, account.bp, sandbox.bp, packages.bp,
                      regression.bp, delivery.bp, passwords.bp, handover.bp, interviewers.bp, revising.bp):
        app.register_blueprint(blueprint)
    from . import offline  # offline field mode: the service worker and manifests of the survey pages

    app.register_blueprint(offline.bp)
    api.init_app(app)
    return app
