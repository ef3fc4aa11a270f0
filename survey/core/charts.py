"""Draw debiased estimates with their confidence intervals with matplotlib: one chart per question.

A proportion's chart has one row per option: a dot at the unbiased estimate and a whisker
over its interval, on the axis [0, 100%], with both as text right of the axis (the figures of
``survey.core.readout``, as the dashboard shows them); a number's chart has its mean on the
question's own min..max axis. An unbiased estimate can fall outside its axis (it is deliberately left
unclipped): it is then a triangle at the axis edge, pointing outwards. A row without a
finite estimate (no responses yet) reads "no responses".

Only matplotlib's object-oriented API is used (``matplotlib.figure.Figure`` and the Agg and
SVG canvases, never pyplot's global state), so drawing is safe in threaded workers. Every
text from the definition is drawn as plain text: mathtext and TeX are off (``$``, ``\\`` and
``_`` show literally), SVG text stays ``<text>`` (svg.fonttype "none"), and the bytes are
deterministic (a fixed svg.hashsalt, no date in the metadata). matplotlib's SVG styles its
elements inline, so the web layer serves charts with a Content-Security-Policy of their own.
"""

from __future__ import annotations

import io
import math
import re
import textwrap

import matplotlib
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter
from matplotlib.transforms import blended_transform_factory

from .aggregate import shown_option
from .conditional_shares import is_conditional
from .readout import axis_range
from .readout import line as readout_line
from .words import format_epsilon

# Set once, before any drawing, in every process that imports the charts.
matplotlib.rcParams.update({
    "text.parse_math": False,
    "text.usetex": False,
    "svg.fonttype": "none",
    "svg.hashsalt": "ldp-survey",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"],
    "axes.formatter.use_mathtext": False,
})

FORMATS = ("svg", "png")
PX_PER_INCH = 96          # the SVG is sized in points at 72/inch, which browsers show at 96 px/inch
PNG_SCALE = 2             # the PNG has twice the pixels of the SVG's size, for print and high-DPI screens

WIDTH_IN = 7.5
LEFT_IN = 2.4             # room for the option labels
RIGHT_IN = 1.5            # room for each row's figures: "25% (21% to 29%)"
ROW_IN = 0.27
TITLE_LINE_IN = 0.24
SUBTITLE_IN = 0.42
AXIS_IN = 0.5
GAP_IN = 0.35             # between two questions of the whole-survey chart
TOP_AXIS_ROWS = 12        # a chart of more rows repeats its axis labels above the rows
TOP_AXIS_IN = 0.25

TITLE_CHARS = 70
TITLE_LINES = 3
LABEL_CHARS = 32

TEXT_COLOUR = "#1d2330"
MUTED_COLOUR = "#4a5260"
GRID_COLOUR = "#d9dde3"
ESTIMATE_COLOUR = "#b3261e"
INTERVAL_COLOUR = "#1f5fa8"

_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def plain(text) -> str:
    """Return text with characters no chart can hold (control characters, lone surrogates) as U+FFFD."""
    return _INVALID.sub("\ufffd", str(text))


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def truncate(text: str, limit: int) -> str:
    """Cut text to at most ``limit`` characters ending with "…", at a space when one is near the end."""
    text = " ".join(plain(text).split())
    if len(text) <= limit:
        return text
    cut = text[:max(1, limit - 1)]
    space = cut.rfind(" ")
    if space >= 0.6 * len(cut):
        cut = cut[:space]
    return cut.rstrip() + "…"


def _title_lines(text: str) -> list[str]:
    lines = textwrap.wrap(" ".join(plain(text).split()), TITLE_CHARS, break_long_words=True) or [""]
    if len(lines) > TITLE_LINES:
        lines = lines[:TITLE_LINES - 1] + [truncate(" ".join(lines[TITLE_LINES - 1:]), TITLE_CHARS)]
    return lines


def number_ticks(low: float, high: float) -> list[float]:
    """Return the ends of a number axis and the round values between them not crowding the ends."""
    span = high - low
    inner = [tick for tick in MaxNLocator(nbins=6).tick_values(low, high)
             if low + 0.1 * span <= tick <= high - 0.1 * span]
    return [low, *inner, high]


def _block_height(question: dict, rows: list) -> float:
    """Return the height in inches of one question's chart (without the outer margins)."""
    lines = len(_title_lines(question.get("text") or question["id"]))
    top_axis = TOP_AXIS_IN if len(rows) > TOP_AXIS_ROWS else 0.0
    return lines * TITLE_LINE_IN + SUBTITLE_IN + top_axis + ROW_IN * (max(1, len(rows)) + 0.2) + AXIS_IN


def chart_size(question: dict, rows: list) -> tuple[int, int]:
    """Return the (width, height) in CSS pixels of a question's chart (the PNG has PNG_SCALE times these)."""
    height = _block_height(question, rows)
    return round(WIDTH_IN * PX_PER_INCH), round(height * PX_PER_INCH)


def _level_text(rows: list, default: float = 0.95) -> str:
    level = rows[0].ci_level if rows else default
    anytime = " anytime-valid" if rows and rows[0].ci_kind == "anytime" else ""
    return f"{format(level * 100, 'g')}%{anytime}"


def _draw_question(fig: Figure, top: float, height: float, question: dict, rows: list):
    """Draw one question's chart with its top ``top`` inches below the figure's top edge."""
    qid, kind = question["id"], question.get("kind", "")
    fig_h = fig.get_figheight()
    lines = _title_lines(question.get("text") or qid)
    y = top + 0.1
    for line in lines:
        y += TITLE_LINE_IN
        fig.text(0.12 / WIDTH_IN, 1 - y / fig_h, line, fontsize=11.5, fontweight="bold",
                 color=TEXT_COLOUR, parse_math=False, usetex=False)
    is_number = kind == "number"
    low, high = axis_range(question)
    n = max((row.n for row in rows), default=0)
    epsilon = question.get("epsilon", rows[0].epsilon if rows else float("nan"))
    mechanism = question.get("mechanism", rows[0].mechanism if rows else "")
    unit = f"mean on {low:g}–{high:g}" if is_number else "share"
    subtitle = (f"{qid} · {kind} · {unit} · {mechanism} · ε′ = {format_epsilon(epsilon, 3)} · n = {n:,} · "
                f"dot: unbiased estimate, whisker: {_level_text(rows)} interval")
    y += 0.24
    fig.text(0.12 / WIDTH_IN, 1 - y / fig_h, truncate(subtitle, 110), fontsize=8.5,
             color=MUTED_COLOUR, parse_math=False, usetex=False)

    top_axis = len(rows) > TOP_AXIS_ROWS
    plot_top = top + len(lines) * TITLE_LINE_IN + SUBTITLE_IN + (TOP_AXIS_IN if top_axis else 0.0) + 0.1
    plot_h = height - (plot_top - top) - AXIS_IN + 0.1
    ax = fig.add_axes((LEFT_IN / WIDTH_IN, 1 - (plot_top + plot_h) / fig_h,
                       (WIDTH_IN - LEFT_IN - RIGHT_IN) / WIDTH_IN, plot_h / fig_h))
    count = max(1, len(rows))
    ax.set_xlim(low, high)
    ax.set_ylim(count - 0.4, -0.6)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.spines["bottom"].set_color(MUTED_COLOUR)
    ax.tick_params(axis="y", length=0, pad=9, labelsize=9, labelcolor=TEXT_COLOUR)
    ax.tick_params(axis="x", labelsize=8.5, colors=MUTED_COLOUR, top=top_axis, labeltop=top_axis)
    ax.grid(axis="x", color=GRID_COLOUR, linewidth=0.8)
    ax.set_axisbelow(True)
    if is_number:
        ax.set_xticks(number_ticks(low, high))
        ax.ticklabel_format(axis="x", style="plain", useOffset=False)
    else:
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    labels = [truncate(shown_option(row), LABEL_CHARS) for row in rows]
    ax.set_yticks(range(len(rows)), labels=labels)
    for label in ax.get_yticklabels() + ax.get_xticklabels(which="both"):
        label.set_parse_math(False)
    if not rows:
        ax.set_yticks([])
        ax.text(low + 0.01 * (high - low), 0, "no estimates", fontsize=9, color=MUTED_COLOUR,
                va="center", parse_math=False)

    inside_x, inside_y, left_y, right_y = [], [], [], []
    whisker_y, whisker_low, whisker_high = [], [], []
    for index, row in enumerate(rows):
        if not _finite(row.estimate):
            ax.text(low + 0.01 * (high - low), index, "no responses", fontsize=8.5, color=MUTED_COLOUR,
                    va="center", parse_math=False)
            continue
        if _finite(row.ci_low) and _finite(row.ci_high):
            whisker_y.append(index)
            whisker_low.append(min(max(row.ci_low, low), high))
            whisker_high.append(min(max(row.ci_high, low), high))
        if row.estimate < low:
            left_y.append(index)
        elif row.estimate > high:
            right_y.append(index)
        else:
            inside_x.append(row.estimate)
            inside_y.append(index)
        figures = readout_line(question, row)
        ax.text(1.02, index, f"{figures.estimate_text} ({figures.interval_text})", fontsize=8.5,
                color=TEXT_COLOUR, va="center", transform=blended_transform_factory(ax.transAxes, ax.transData),
                parse_math=False, usetex=False)
    if whisker_y:
        ax.hlines(whisker_y, whisker_low, whisker_high, color=INTERVAL_COLOUR, linewidth=2)
        for ends in (whisker_low, whisker_high):
            ax.plot(ends, whisker_y, linestyle="none", marker="|", markersize=9, markeredgewidth=1.3,
                    color=INTERVAL_COLOUR)
    style = {"linestyle": "none", "color": ESTIMATE_COLOUR, "markeredgecolor": "white",
             "markeredgewidth": 0.8, "clip_on": False, "zorder": 3}
    if inside_y:
        ax.plot(inside_x, inside_y, marker="o", markersize=7, gid="estimates", **style)
    if left_y:
        ax.plot([low] * len(left_y), left_y, marker="<", markersize=9, gid="below-axis", **style)
    if right_y:
        ax.plot([high] * len(right_y), right_y, marker=">", markersize=9, gid="above-axis", **style)


def _render(fig: Figure, fmt: str, title: str) -> bytes:
    buffer = io.BytesIO()
    if fmt == "svg":
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Title": plain(title)})
    elif fmt == "png":
        fig.savefig(buffer, format="png", dpi=PX_PER_INCH * PNG_SCALE, metadata={"Software": None})
    else:
        raise ValueError(f"chart format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return buffer.getvalue()


def _group(design: dict, rows) -> dict[str, list]:
    by_question: dict[str, list] = {question["id"]: [] for question in design.get("questions", [])}
    for row in rows:
        if row.question in by_question and not is_conditional(row.option):
            by_question[row.question].append(row)
    return by_question


def question_chart(design: dict, question_id: str, rows, *, fmt: str = "svg") -> bytes:
    """Return the chart of one question of ``design`` as SVG or PNG bytes.

    ``rows`` are ``AggregateRow``s (``survey.core.aggregate``); those of other questions are ignored.
    """
    if fmt not in FORMATS:
        raise ValueError(f"chart format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    questions = {question["id"]: question for question in design.get("questions", [])}
    if question_id not in questions:
        raise KeyError(f"no question {question_id!r} in the survey")
    question = questions[question_id]
    own = _group(design, rows)[question_id]
    width, height = chart_size(question, own)
    fig = Figure(figsize=(width / PX_PER_INCH, height / PX_PER_INCH), facecolor="white")
    _draw_question(fig, 0.0, _block_height(question, own), question, own)
    return _render(fig, fmt, f"{question.get('text') or question_id}: estimates with {_level_text(own)} "
                             "confidence intervals")


def survey_chart(design: dict, rows, *, fmt: str = "svg") -> bytes:
    """Return every question's chart stacked in one figure, as SVG or PNG bytes."""
    if fmt not in FORMATS:
        raise ValueError(f"chart format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    by_question = _group(design, list(rows))
    questions = list(design.get("questions", []))
    heights = [_block_height(question, by_question[question["id"]]) for question in questions]
    title = design.get("title") or design.get("slug") or "Survey"
    total = 0.55 + sum(heights) + GAP_IN * max(0, len(heights) - 1) + 0.2
    fig = Figure(figsize=(WIDTH_IN, total), facecolor="white")
    fig.text(0.12 / WIDTH_IN, 1 - 0.38 / total, truncate(f"Results: {title}", 80), fontsize=13,
             fontweight="bold", color=TEXT_COLOUR, parse_math=False, usetex=False)
    if not questions:
        fig.text(0.12 / WIDTH_IN, 1 - 0.6 / total, "No questions.", fontsize=10, color=MUTED_COLOUR,
                 parse_math=False)
    top = 0.55
    for question, height in zip(questions, heights):
        _draw_question(fig, top, height, question, by_question[question["id"]])
        top += height + GAP_IN
    return _render(fig, fmt, f"Results: {title}")
