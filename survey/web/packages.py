"""Downloads for statistics packages: the noisy reports and estimates as SPSS .sav and Stata .dta files,
and every file of the survey as a Frictionless Data Package in one zip."""

from __future__ import annotations

import io
import zipfile

from flask import Blueprint, Response

from ..exports.codebook import codebook
from ..exports.datapackage import package_files
from ..exports.statfiles import MIMETYPES, aggregates_file, responses_file
from .access import survey_for_researcher
from .auth import login_required
from .db import get_store
from .results import cached_rows, intervals_arguments, level_argument

bp = Blueprint("packages", __name__)


def _attachment(content: bytes, mimetype: str, filename: str) -> Response:
    return Response(content, mimetype=mimetype, headers={"Content-Disposition": f'attachment; filename="{filename}"'})


@bp.get("/surveys/<slug>/responses.<any(sav, dta):fmt>")
@login_required
def responses_download(slug, fmt):
    """Download the noisy reports as an SPSS or Stata file, with variable and value labels."""
    design = survey_for_researcher(slug)
    content = responses_file(design, get_store().iter_responses(slug), fmt)
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
                    delete_after=store.retention(slug)["delete_after"])
    files = package_files(design, rows, store.iter_responses(slug), book)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            # A fixed date: the archive says nothing of when it was made, and the same data give the same bytes.
            archive.writestr(zipfile.ZipInfo(f"{slug}/{name}", date_time=(1980, 1, 1, 0, 0, 0)), text,
                             compress_type=zipfile.ZIP_DEFLATED)
    return _attachment(buffer.getvalue(), "application/zip", f"{slug}-data.zip")
