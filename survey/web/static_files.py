"""Serve the browser code in client_js/ (the only scripts a page loads)."""

from __future__ import annotations

from flask import Blueprint, send_from_directory

from ..resources import resource_dir

bp = Blueprint("static_files", __name__)


@bp.get("/static/js/<path:filename>")
def client_js(filename):
    """Send one file of client_js/ with a short cache lifetime."""
    response = send_from_directory(resource_dir("client_js"), filename, max_age=300)
    if filename.endswith((".js", ".mjs")):
        response.mimetype = "text/javascript"
    return response
