"""Serve the browser code in client_js/ (the only scripts a page loads)."""

from __future__ import annotations

import functools
import re

from flask import Blueprint, send_from_directory

from ..resources import resource_dir

bp = Blueprint("static_files", __name__)

_IMPORT = re.compile(r"""^\s*import\b[^;]*?\bfrom\s+['"]\./([\w.-]+\.js)['"]""", re.MULTILINE)


@bp.app_template_global()
@functools.cache
def page_modules(entry: str) -> tuple[str, ...]:
    """Return ``entry`` and every client_js module it imports, directly or not: all the code a page runs.

    The respondent page lists them so that anyone can read exactly what randomizes their answers.
    """
    folder = resource_dir("client_js")
    found, pending = [entry], [entry]
    while pending:
        source = (folder / pending.pop()).read_text(encoding="utf-8")
        for name in _IMPORT.findall(source):
            if name not in found:
                found.append(name)
                pending.append(name)
    return (entry, *sorted(found[1:]))


@bp.get("/static/js/<path:filename>")
def client_js(filename):
    """Send one file of client_js/ with a short cache lifetime."""
    response = send_from_directory(resource_dir("client_js"), filename, max_age=300)
    if filename.endswith((".js", ".mjs")):
        response.mimetype = "text/javascript"
    return response
