"""Serve the browser code in client_js/ (the only scripts a page loads), compressed and revalidated.

Each file is read once per change (its modification time and size), kept in memory with its gzip
form and a strong ETag (a hash of its bytes), and sent as it is on disk, or gzip-compressed when
the client accepts it (``Vary: Accept-Encoding``). ``Cache-Control: public, max-age=300``: a browser
reuses a file for five minutes, then asks again with If-None-Match and gets 304 while it is unchanged.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import posixpath
import threading

from flask import Blueprint, current_app, request, send_from_directory
from werkzeug.security import safe_join

from ..resources import resource_dir
from . import page_bundle

bp = Blueprint("static_files", __name__)

MAX_AGE = 300
_TEXT_TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css"}
_FILES: dict[str, tuple[tuple, bytes, bytes, str]] = {}
_FILES_LOCK = threading.Lock()


def _text_file(path: str) -> tuple[bytes, bytes, str]:
    """Return a text file's bytes, their gzip form and its strong ETag, read again only when the file changed."""
    status = os.stat(path)
    stamp = (status.st_mtime_ns, status.st_size)
    with _FILES_LOCK:
        kept = _FILES.get(path)
    if kept is not None and kept[0] == stamp:
        return kept[1:]
    with open(path, "rb") as handle:
        body = handle.read()
    entry = (stamp, body, gzip.compress(body, compresslevel=9, mtime=0),
             hashlib.sha256(body).hexdigest()[:32])
    with _FILES_LOCK:
        _FILES[path] = entry
    return entry[1:]


def _accepts_gzip() -> bool:
    """Return whether the request's Accept-Encoding allows gzip (not refused with q=0)."""
    for part in request.headers.get("Accept-Encoding", "").split(","):
        name, _, parameters = part.strip().partition(";")
        if name.strip().lower() in ("gzip", "*"):
            quality = parameters.strip().removeprefix("q=") if parameters.strip().startswith("q=") else "1"
            try:
                return float(quality) > 0
            except ValueError:
                return False
    return False


@bp.get("/static/js/<path:filename>")
def client_js(filename):
    """Send one file of client_js/ (or of a folder in it, such as mechanisms/): gzip if accepted, ETag, 5 minutes' cache."""
    folder = resource_dir("client_js")
    kind = _TEXT_TYPES.get(posixpath.splitext(filename)[1])
    path = safe_join(str(folder), filename)
    if kind is None or path is None or not os.path.isfile(path):
        return send_from_directory(folder, filename, max_age=MAX_AGE)
    return _text_response(*_text_file(path), kind)


def _text_response(body: bytes, packed: bytes, etag: str, kind: str):
    """Return the response for a text file: 304 on a matching If-None-Match, else its bytes (gzip if accepted).

    Each encoding has its own strong ETag (the gzip one ends in "-gzip"), as RFC 9110 asks of representations.
    """
    compressed = _accepts_gzip()
    etag = f"{etag}-gzip" if compressed else etag
    response = current_app.response_class(status=200)
    response.set_etag(etag)
    response.headers["Cache-Control"] = f"public, max-age={MAX_AGE}"
    response.headers["Vary"] = "Accept-Encoding"
    response.mimetype = kind
    if etag in request.if_none_match:
        response.status_code = 304
        return response
    response.set_data(packed if compressed else body)
    if compressed:
        response.headers["Content-Encoding"] = "gzip"
    return response


PAGE_ENTRIES = ("respond.js", "respond-handover.js")


@bp.app_template_global()
def page_script_url(entry: str, design: dict) -> str:
    """Return the URL of ``entry``'s page script for ``design``: its modules joined, with only the mechanisms it uses."""
    from flask import url_for

    return url_for("static_files.page_script", entry=entry,
                   mechanisms=page_bundle.mechanisms_parameter(page_bundle.used_mechanisms(design)))


@bp.app_template_global()
def page_script_modules(entry: str, design: dict) -> tuple[str, ...]:
    """Return the modules ``entry``'s page script runs for ``design``, ``entry`` first, the rest sorted."""
    folder = resource_dir("client_js")
    names = page_bundle.bundle_modules(entry, page_bundle.used_mechanisms(design),
                                       lambda path: (folder / path).read_text(encoding="utf-8"))
    return (entry, *sorted(name for name in names if name != entry))


@bp.get("/static/js/page/<entry>")
def page_script(entry):
    """Send a page's modules joined into one script (survey.web.page_bundle): gzip if accepted, ETag, 5 minutes' cache."""
    if entry not in PAGE_ENTRIES:
        return current_app.response_class("no such page script\n", status=404, mimetype="text/plain")
    try:
        used = page_bundle.parse_mechanisms(request.args.get("mechanisms", ""))
    except ValueError as error:
        return current_app.response_class(f"{error}\n", status=400, mimetype="text/plain")
    return _text_response(*page_bundle.script_for(entry, used, resource_dir("client_js")), "text/javascript")


COMPRESS_AT_LEAST = 1024


@bp.after_app_request
def compress_public_html(response):
    """gzip an HTML page sent to a client that has no cookie and gets none (the respondent page), if it accepts gzip.

    Only such pages: a page that holds a secret of the client's (a signed-in researcher's, whose
    session cookie it sends) is left uncompressed, so that compression cannot leak the secret
    beside reflected text (the BREACH attack).
    """
    if (response.status_code != 200 or response.mimetype != "text/html" or response.direct_passthrough
            or response.is_streamed
            or request.cookies or "Set-Cookie" in response.headers or "Content-Encoding" in response.headers
            or not _accepts_gzip()):
        return response
    body = response.get_data()
    if len(body) < COMPRESS_AT_LEAST:
        return response
    response.set_data(gzip.compress(body, compresslevel=6, mtime=0))
    response.headers["Content-Encoding"] = "gzip"
    response.vary.add("Accept-Encoding")
    return response
