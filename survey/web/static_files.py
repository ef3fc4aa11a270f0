"""Serve the browser code in client_js/ (the only scripts a page loads)."""

from __future__ import annotations

import functools
import posixpath
import re

from flask import Blueprint, send_from_directory

from ..resources import resource_dir

bp = Blueprint("static_files", __name__)

# The relative specifier of a static import or re-export: import x from './a.js', import './a.js',
# export { x } from '../a.js', export * from './mechanisms/a.js'.
_IMPORT = re.compile(
    r"""^\s*(?:import\b[^;'"]*?\bfrom|import|export\s*(?:\*(?:\s+as\s+\w+)?|\{[^}]*\})\s*from)"""
    r"""\s*['"](\.{1,2}/[\w./-]+\.js)['"]""",
    re.MULTILINE,
)


def _resolve(importer: str, specifier: str) -> str:
    """Return the client_js path of ``specifier`` imported by module ``importer`` (both relative to client_js)."""
    name = posixpath.normpath(posixpath.join(posixpath.dirname(importer), specifier))
    if name.startswith("../") or name == "..":
        raise ValueError(f"{importer} imports {specifier}, outside client_js")
    return name


@bp.app_template_global()
@functools.cache
def page_modules(entry: str) -> tuple[str, ...]:
    """Return ``entry`` and every client_js module it imports, directly or not: all the code a page runs.

    Paths are relative to client_js (``mechanisms/grr.js``); imports are resolved relative to the
    importing module, as the browser does. The respondent page lists them so that anyone can read
    exactly what randomizes their answers.
    """
    folder = resource_dir("client_js")
    found, pending = [entry], [entry]
    while pending:
        importer = pending.pop()
        source = (folder / importer).read_text(encoding="utf-8")
        for specifier in _IMPORT.findall(source):
            name = _resolve(importer, specifier)
            if name not in found:
                found.append(name)
                pending.append(name)
    return (entry, *sorted(found[1:]))


@bp.get("/static/js/<path:filename>")
def client_js(filename):
    """Send one file of client_js/ (or of a folder in it, such as mechanisms/) with a short cache lifetime."""
    response = send_from_directory(resource_dir("client_js"), filename, max_age=300)
    if filename.endswith((".js", ".mjs")):
        response.mimetype = "text/javascript"
    return response
