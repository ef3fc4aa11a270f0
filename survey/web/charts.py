"""Chart routes: one matplotlib chart per question as SVG or PNG, and the whole survey in one SVG.

Every chart is drawn once per change of its data (``chart_cache``: keyed by database,
slug, design hash, response count, level, question and format; concurrent requests wait
for one drawing), carries a strong ETag (304 on a matching If-None-Match) and
``Cache-Control: no-store`` like every researcher response. matplotlib's SVG styles its
elements inline, so chart responses get a Content-Security-Policy of their own that allows
inline style and nothing else: the SVG then renders both in the dashboard's ``<img>`` and
opened on its own.
"""

from __future__ import annotations

import threading

from flask import Blueprint, Response, abort, current_app, request, url_for

from .auth import login_required
from .chart_cache import chart_cache
from .results import intervals_arguments, keyed_rows, level_argument

bp = Blueprint("charts", __name__)


def _drawing():
    """Return survey.core.charts, imported on first use: a worker that only takes responses never loads matplotlib."""
    from ..core import charts

    return charts

# A chart is an image: inline style (matplotlib's), no script, no fetch, no frame.
CHART_CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
MIMETYPES = {"svg": "image/svg+xml", "png": "image/png"}
# The whole survey in one figure can take seconds (about 9 s at 100 x 64): one such drawing at a
# time per process, so requests for it (at several levels, say) cannot hold every worker thread.
_WHOLE_SURVEY = threading.Lock()


def _send(key: tuple, draw, fmt: str, filename: str) -> Response:
    drawn = chart_cache(current_app).get(key, draw)
    response = Response(drawn.body, mimetype=MIMETYPES[fmt])
    response.set_etag(drawn.etag)
    response.headers["Cache-Control"] = "no-store"
    response.headers["Content-Security-Policy"] = CHART_CONTENT_SECURITY_POLICY
    if request.args.get("download") == "1":
        response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response.make_conditional(request)


@bp.get("/surveys/<slug>/charts/<question>.<any(svg, png):fmt>")
@login_required
def question(slug, question, fmt):
    """Send one question's estimates with their intervals as an SVG or PNG chart; ``?download=1`` attaches it."""
    level = level_argument()
    design, rows, key = keyed_rows(slug, level, *intervals_arguments())
    if question not in {q["id"] for q in design["questions"]}:
        abort(404)
    return _send(key + (question, fmt), lambda: _drawing().question_chart(design, question, rows, fmt=fmt), fmt,
                 f"{slug}-{question}.{fmt}")


@bp.get("/surveys/<slug>/chart.svg")
@login_required
def survey(slug):
    """Send every question's chart stacked in one SVG (slow for very large surveys: the dashboard never loads it)."""
    level = level_argument()
    design, rows, key = keyed_rows(slug, level, *intervals_arguments())

    def draw():
        with _WHOLE_SURVEY:
            return _drawing().survey_chart(design, rows, fmt="svg")

    return _send(key + ("", "svg"), draw, "svg", f"{slug}-charts.svg")


@bp.app_template_global()
def question_charts(design: dict, level: float, intervals: str = "fixed", planned: int | None = None) -> list[dict]:
    """Return, per question of the design, the addresses and file names of its SVG and PNG chart (of those intervals)."""
    slug = design["slug"]
    shown = {} if intervals == "fixed" else {"intervals": intervals, "planned": planned}
    charts = []
    for q in design["questions"]:
        chart = {"id": q["id"]}
        # One url_for per question (a survey can have 100): the PNG's address differs only in its extension.
        svg = url_for("charts.question", slug=slug, question=q["id"], fmt="svg", level=level, **shown)
        for fmt in MIMETYPES:
            chart[fmt] = svg.replace(".svg?", f".{fmt}?", 1)
            chart[f"{fmt}_download"] = chart[fmt] + "&download=1"
            chart[f"{fmt}_name"] = f"{slug}-{q['id']}.{fmt}"
        charts.append(chart)
    return charts
