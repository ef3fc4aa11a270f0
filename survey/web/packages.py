"""Downloads for statistics packages: the noisy reports and estimates as SPSS .sav and Stata .dta files,
and every file of the survey as a Frictionless Data Package in one zip.

The zip is written to a temporary file as the responses are read, page by page, then sent from
it in chunks and deleted, so its size never sits in memory; an SPSS or Stata file is built in
memory (ReadStat writes whole files) and refused with 422 beyond ``statfiles.max_rows()``.
"""

from __future__ import annotations

import tempfile
import zipfile

from flask import Blueprint, Response, abort

from ..exports.codebook import codebook
from ..exports.datapackage import package_files
from ..exports.export import csv_from_chunks, line_bound, line_cells
from ..exports.statfiles import MIMETYPES, StatfileTooLarge, aggregates_file, responses_file_from_lines
from .access import survey_for_researcher
from .auth import login_required
from .db import get_store
from .versions_view import csv_version, export_revisions, file_version
from .results import cached_rows, intervals_arguments, level_argument

bp = Blueprint("packages", __name__)


def _attachment(content: bytes, mimetype: str, filename: str) -> Response:
    return Response(content, mimetype=mimetype, headers={"Content-Disposition": f'attachment; filename="{filename}"'})


@bp.get("/surveys/<slug>/responses.<any(sav, dta):fmt>")
@login_required
def responses_download(slug, fmt):
    """Download the noisy reports as an SPSS or Stata file, with variable and value labels."""
    design = survey_for_researcher(slug)
    store = get_store()
    try:
        content = responses_file_from_lines(design, store.iter_response_lines(slug, line_cells(design)), fmt,
                                            rows=store.response_count(slug), version=file_version(slug))
    except StatfileTooLarge as exc:
        abort(422, description=str(exc))
    return _attachment(content, MIMETYPES[fmt], f"{slug}-responses.{fmt}")


@bp.get("/surveys/<slug>/results.<any(sav, dta):fmt>")
@login_required
def results_download(slug, fmt):
    """Download the estimates at ?level= (and ?intervals=) as an SPSS or Stata file."""
    design, rows = cached_rows(slug, level_argument(), *intervals_arguments())
    return _attachment(aggregates_file(design, rows, fmt), MIMETYPES[fmt], f"{slug}-results.{fmt}")


@bp.get("/surveys/<slug>/package.zip")
@login_required
def package_zip(slug):
    """Download the Frictionless Data Package: datapackage.json, responses.csv, aggregates.csv, codebook.json."""
    design, rows = cached_rows(slug, level_argument(), *intervals_arguments())
    store = get_store()
    book = codebook(design, simulated=store.sandbox_counts(slug)["simulated"],
                    delete_after=store.retention(slug)["delete_after"], revisions=export_revisions(slug))
    version = csv_version(slug)
    files = package_files(design, rows, csv_from_chunks(design, store.iter_response_chunks(slug, line_cells(design)),
                                                        version=version), book, version=version)
    handle = tempfile.TemporaryFile()
    try:
        _write_zip(handle, slug, files, bound=(store.response_count(slug) + 1) * line_bound(design))
        size = handle.tell()
        handle.seek(0)
    except BaseException:
        handle.close()
        raise
    response = Response(_file_chunks(handle), mimetype="application/zip",
                        headers={"Content-Disposition": f'attachment; filename="{slug}-data.zip"'})
    response.headers["Content-Length"] = str(size)
    return response


def _write_zip(handle, slug: str, files: dict, *, bound: int) -> None:
    """Write the package's files into ``handle`` as a zip, each streamed member's text encoded chunk by chunk.

    A streamed member of at most ``bound`` bytes gets ZIP64 headers only when it may pass 2 GiB, as
    ``writestr`` decides from a known size, so a package's zip has the bytes it had when built in memory.
    """
    with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            # A fixed date: the archive says nothing of when it was made, and the same data give the same bytes.
            info = zipfile.ZipInfo(f"{slug}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            if isinstance(content, str):
                archive.writestr(info, content, compress_type=zipfile.ZIP_DEFLATED)
                continue
            with archive.open(info, "w", force_zip64=bound * 1.05 > zipfile.ZIP64_LIMIT) as member:
                for chunk in content:
                    member.write(chunk.encode("utf-8"))


def _file_chunks(handle, size: int = 1 << 20):
    """Yield a file's bytes in chunks, closing (and so deleting) it at the end."""
    try:
        while chunk := handle.read(size):
            yield chunk
    finally:
        handle.close()
