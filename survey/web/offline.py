"""Offline field mode: the service worker and web app manifest of the respondent pages (docs/how-to/offline.md).

The worker (client_js/sw.js) is served as ``/s/offline-worker.js`` so that its scope is ``/s/``, the
survey pages, with no ``Service-Worker-Allowed`` header; ``Cache-Control: no-cache``, so a browser
always asks whether it changed. Each survey's manifest makes its page installable; its start is the
survey's page. Neither holds anything of a respondent: the queue of randomized bodies lives in the
browser's IndexedDB (client_js/offline-queue.js).
"""

from __future__ import annotations

from flask import Blueprint, current_app, json, url_for

from ..resources import resource_dir
from .db import get_store
from .respond import _visible_status
from .static_files import _text_file, _text_response

bp = Blueprint("offline", __name__)

WORKER_FILE = "sw.js"
MANIFEST_MAX_AGE = 300
# The app's icon: a square with a check mark, in the stylesheet's colours (no image file to ship).
ICON = (b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 512 512">'
        b'<rect width="512" height="512" rx="64" fill="#1d4e89"/>'
        b'<path d="M136 270l80 80 160-180" fill="none" stroke="#fff" stroke-width="48" '
        b'stroke-linecap="round" stroke-linejoin="round"/></svg>\n')


@bp.get("/s/offline-worker.js")
def worker():
    """Send the service worker of the survey pages (client_js/sw.js), revalidated on every update check."""
    response = _text_response(*_text_file(str(resource_dir("client_js") / WORKER_FILE)), "text/javascript")
    response.headers["Cache-Control"] = "no-cache"
    return response


@bp.get("/s/offline-icon.svg")
def icon():
    """Send the installed survey page's icon."""
    response = current_app.response_class(ICON, mimetype="image/svg+xml")
    response.headers["Cache-Control"] = f"public, max-age={MANIFEST_MAX_AGE}"
    return response


def manifest_of(design: dict) -> dict:
    """Return the web app manifest of a survey's respondent page."""
    page = url_for("respond.page", slug=design["slug"])
    return {
        "id": page,
        "name": design["title"],
        "short_name": design["title"][:30],
        "start_url": page,
        "scope": page,
        "display": "standalone",
        "background_color": "#ffffff",
        "theme_color": "#1d4e89",
        "icons": [{"src": url_for("offline.icon"), "sizes": "any", "type": "image/svg+xml", "purpose": "any"}],
    }


@bp.get("/s/<slug>/manifest.webmanifest")
def manifest(slug):
    """Return the survey page's web app manifest (404 for a draft or an unknown survey)."""
    store = get_store()
    design = store.get_design(slug)
    _visible_status(store, slug)
    response = current_app.response_class(json.dumps(manifest_of(design)), mimetype="application/manifest+json")
    response.headers["Cache-Control"] = f"public, max-age={MANIFEST_MAX_AGE}"
    return response
