"""The researcher's survey list, debiased dashboard and downloads (CSV, codebook, spreadsheet), on ``research.bp``.

The helpers other views share are public: ``level_argument`` and ``intervals_arguments`` read ?level=,
?intervals= and ?planned=; ``cached_rows`` and ``keyed_rows`` return the aggregate rows; ``csv_response``
makes a CSV response.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from flask import Response, abort, current_app, g, render_template, request

from ..core import codec
from ..core.aggregate import aggregate_counts, rows_to_csv
from ..core.anytime import ANYTIME, DEFAULT_PLANNED, FIXED, KINDS
from ..core.crosstab import default_pair
from ..core.posterior import kind_prior, posterior_kind, web_prior
from ..core.readout import readouts
from ..core.releases import early_release_warning, release_sentence, release_view
from ..exports.export import csv_from_chunks, line_cells
from .access import survey_for_researcher
from .auth import login_required
from .db import get_store
from .forms import LogoutForm
from .research import bp
from .versions_view import csv_version, export_revisions

_CACHE_SIZE = 32
_ROWS_CACHE: OrderedDict = OrderedDict()
_CACHE_LOCK = threading.Lock()


@bp.get("/surveys")
@login_required
def surveys():
    """List the surveys the researcher owns or collaborates on, with their responses released and held.

    Archived surveys are listed only with ``?archived=1`` (the "Show archived surveys" link).
    """
    show_archived = request.args.get("archived") == "1"
    return render_template("surveys.html", show_archived=show_archived, logout_form=LogoutForm(),
                           surveys=get_store().list_surveys(user_id=g.user["id"], archived=show_archived))


def level_argument() -> float:
    raw = request.args.get("level", "0.95")
    try:
        level = float(raw)
    except ValueError:
        level = -1.0
    if not 0.5 <= level < 1:
        abort(400, description=f"level must be a number in [0.5, 1), got {raw!r}")
    return level


def intervals_arguments() -> tuple[str, int]:
    """Return ?intervals= ("fixed", the default, "anytime" or "posterior" with ?prior=) and ?planned= (default 1000).

    Posterior intervals come back as the kind "posterior-PRIOR" (``survey.core.posterior``).
    """
    kind = request.args.get("intervals", FIXED)
    if kind not in KINDS:
        kind = posterior_argument(kind)
    elif "prior" in request.args:  # a prior out of its domain is refused whatever the intervals, as every parameter
        try:
            web_prior(request.args["prior"])
        except ValueError as error:
            abort(400, description=str(error))
    raw = request.args.get("planned", str(DEFAULT_PLANNED))
    if not raw.isdigit() or not 1 <= int(raw) <= 10**9:
        abort(400, description=f"planned must be a whole number of respondents from 1 to 1000000000, got {raw!r}")
    return kind, int(raw)


def posterior_argument(kind: str) -> str:
    """Return the posterior kind of ?intervals=posterior (or posterior-PRIOR) and ?prior=, else abort with 400."""
    if not kind.startswith("posterior"):
        abort(400, description=f"intervals must be fixed, anytime or posterior, got {kind!r}")
    prior = request.args.get("prior")
    try:
        return posterior_kind(web_prior(prior) if prior is not None else kind_prior(kind))
    except ValueError as error:
        abort(400, description=str(error))


def cached_rows(slug: str, level: float, intervals: str = FIXED, planned: int = DEFAULT_PLANNED):
    """Return the design and aggregate rows, reusing them while no response has arrived."""
    design, rows, _ = keyed_rows(slug, level, intervals, planned)
    return design, rows


def keyed_rows(slug: str, level: float, intervals: str = FIXED, planned: int = DEFAULT_PLANNED):
    """Return the design, the aggregate rows and their cache key (database, slug, design hash, count, level, intervals).

    ``intervals`` is "fixed" or "anytime" (tuned for ``planned`` respondents); the key ends with both.

    The dashboard page, its charts and the CSV all need the same rows; the key holds the
    response count the rows were computed from, so a new response (or a replaced design)
    recomputes them, and a chart cached under the key is never newer than its rows.
    """
    store = get_store()
    design = survey_for_researcher(slug)
    kind = (intervals, planned if intervals == ANYTIME else None)
    key = (current_app.config["DATABASE"], slug, design["hash"], store.response_count(slug), level, *kind)
    with _CACHE_LOCK:
        rows = _ROWS_CACHE.get(key)
    if rows is None:
        # The count and the tallies are read in one snapshot, so rows are cached under their own count.
        count, counts = store.tallies(slug)
        rows = aggregate_counts(design, counts, level=level, intervals=intervals, planned=planned)
        key = key[:3] + (count, level, *kind)
        with _CACHE_LOCK:
            _ROWS_CACHE[key] = rows
            while len(_ROWS_CACHE) > _CACHE_SIZE:
                _ROWS_CACHE.popitem(last=False)
    return design, rows, key


@bp.get("/surveys/<slug>/results")
@login_required
def results(slug):
    """Show the debiased estimates of every question with their confidence intervals."""
    level = level_argument()
    intervals, planned = intervals_arguments()
    design, rows = cached_rows(slug, level, intervals, planned)
    store = get_store()
    texts = {question["id"]: question["text"] for question in design["questions"]}
    plain = readouts(design, rows)
    release = survey_release(slug, design)
    return render_template("results.html", design=design, rows=rows, level=level, intervals=intervals,
                           planned=planned, texts=texts, readouts=plain,
                           release=release, release_sentence=release_sentence(release),
                           early_release_warning=early_release_warning(release) if release.held else "",
                           methods={readout.question: readout.method for readout in plain},
                           pair=default_pair(design),
                           has_levels=any(codec.is_level(question) for question in design["questions"]),
                           n=store.response_count(slug), per_day=store.responses_per_day(slug),
                           logout_form=LogoutForm())


def survey_release(slug: str, design: dict):
    """Return the release view of a survey (``core.releases.ReleaseView``) from the store's counts."""
    state = get_store().release_state(slug)
    return release_view(design, released=state["released"], held=state["held"],
                        smallest_release=state["smallest_release"])


@bp.app_template_global()
def release_notice(design: dict) -> str | None:
    """Return the line a crosstab or regression page shows when results are released in batches, else None."""
    release = survey_release(design["slug"], design)
    if release.every == 1:
        return None
    return (f"From the {release.released:,} released responses; {release.held:,} more are held until "
            f"{release.every:,} have arrived ({release.to_go:,} to go).")


@bp.app_template_global()
def endpoint_at(rule: str) -> str | None:
    """Return the endpoint serving the URL rule (e.g. "/surveys/<slug>/results.xlsx"), or None if none does.

    The dashboard links to a download only when its route exists in this build.
    """
    return next((item.endpoint for item in current_app.url_map.iter_rules() if item.rule == rule), None)


# Rows per chunk of a streamed responses.csv (a page of the store's read).
STREAM_PAGE = 1000


def csv_response(text, filename: str) -> Response:
    """Return a CSV download of ``text`` (a string, or an iterator of chunks streamed as they come)."""
    return Response(text, mimetype="text/csv",
                    headers={"Content-Disposition": f'attachment; filename="{filename}"'})


@bp.get("/surveys/<slug>/results.csv")
@login_required
def results_csv(slug):
    """Download the aggregates: one row per estimate, debiased, with its interval."""
    _, rows = cached_rows(slug, level_argument(), *intervals_arguments())
    return csv_response(rows_to_csv(rows), f"{slug}-aggregates.csv")


def xlsx_download(slug: str) -> Response:
    """Return the spreadsheet download of a survey's estimates at ?level= and ?intervals= and its codebook (``results.xlsx``)."""
    from ..exports.codebook import codebook
    from ..exports.spreadsheet import MIMETYPE, results_workbook

    design, rows = cached_rows(slug, level_argument(), *intervals_arguments())
    return Response(results_workbook(rows, codebook(design, revisions=export_revisions(slug))), mimetype=MIMETYPE,
                    headers={"Content-Disposition": f'attachment; filename="{slug}-results.xlsx"'})


@bp.get("/surveys/<slug>/results.xlsx")
@login_required
def results_xlsx(slug):
    """Download the estimates and the codebook as a spreadsheet: typed cells, no text ever run as a formula."""
    return xlsx_download(slug)


def responses_download(design: dict) -> Response:
    """Return responses.csv of a survey's design, streamed from the database in random-id order, a page at a time."""
    slug = design["slug"]
    chunks = get_store().iter_response_chunks(slug, line_cells(design), page=STREAM_PAGE)
    return csv_response(csv_from_chunks(design, chunks, version=csv_version(slug)), f"{slug}-responses.csv")


@bp.get("/surveys/<slug>/responses.csv")
@login_required
def responses_csv_view(slug):
    """Download the noisy reports, one row per response (never a true answer)."""
    return responses_download(survey_for_researcher(slug))


@bp.get("/surveys/<slug>/codebook.json")
@login_required
def codebook_json(slug):
    """Send the codebook: the meaning of each responses.csv column and how each aggregates row follows."""
    import json

    from ..exports.codebook import codebook

    design = survey_for_researcher(slug)
    body = json.dumps(codebook(design, simulated=get_store().sandbox_counts(slug)["simulated"],
                               delete_after=get_store().retention(slug)["delete_after"],
                               revisions=export_revisions(slug)), indent=2,
                      ensure_ascii=False)
    return Response(body, mimetype="application/json",
                    headers={"Cache-Control": "no-store",
                             "Content-Disposition": f'inline; filename="{slug}-codebook.json"'})
