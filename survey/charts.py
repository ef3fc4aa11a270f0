"""Draw debiased estimates with their confidence intervals as an SVG chart (hand-written, stdlib only).

One panel per question: a dot at the unbiased estimate and a line with whiskers over the
clipped interval. Proportions share the axis [0, 100%]; a number question's mean uses its
own min..max axis. An unbiased estimate can fall outside its axis (it is deliberately left
unclipped): it is then drawn as a triangle at the axis edge, pointing outwards.

The document uses only SVG presentation attributes (``fill=``, ``stroke=``, ``font-size=``…),
never a ``style`` attribute or ``<style>`` element, so it renders under the app's
``style-src 'self'`` both inside the dashboard and opened on its own. Every piece of text
from the definition is XML-escaped; long texts are truncated with the full text in a
``<title>``. The output is deterministic: the same design and rows give the same bytes.
"""

from __future__ import annotations

import math
import re

WIDTH = 720
MARGIN = 16
PLOT_LEFT = 232.0
PLOT_RIGHT = WIDTH - 28.0
ROW_HEIGHT = 22
FONT_FAMILY = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"

TEXT_COLOUR = "#1d2330"
MUTED_COLOUR = "#4a5260"
GRID_COLOUR = "#d9dde3"
AXIS_COLOUR = "#8a93a3"
ESTIMATE_COLOUR = "#b3261e"
INTERVAL_COLOUR = "#1f5fa8"

SHARE_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)

# Rough advance widths (in em) used to truncate and wrap text without font metrics.
_CHAR_EM = 0.56
_BOLD_CHAR_EM = 0.6
_LABEL_CHARS = int((PLOT_LEFT - MARGIN - 10) / (12 * _CHAR_EM))
_HEADING_CHARS = int((WIDTH - 2 * MARGIN) / (13 * _BOLD_CHAR_EM))
_HEADING_LINES = 2

_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def escape(text) -> str:
    """Return text safe inside an XML element or a double-quoted attribute.

    Characters XML 1.0 cannot hold (most control characters, lone surrogates) become U+FFFD.
    """
    text = _INVALID_XML.sub("\ufffd", str(text))
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _num(value: float) -> str:
    """Format a coordinate with one decimal, never "-0"."""
    text = f"{value:.1f}"
    if text.endswith(".0"):
        text = text[:-2]
    return "0" if text == "-0" else text


def axis_range(question: dict) -> tuple[float, float]:
    """Return the axis (low, high) of a question: its min..max for a number, else (0, 1)."""
    if question.get("kind") == "number":
        return float(question["min"]), float(question["max"])
    return 0.0, 1.0


def axis_x(value: float, low: float, high: float) -> float:
    """Map a value on the axis [low, high] to its x coordinate in the plot area."""
    return PLOT_LEFT + (value - low) / (high - low) * (PLOT_RIGHT - PLOT_LEFT)


def _truncate(text: str, limit: int) -> str:
    """Cut text to at most ``limit`` characters ending with "…", at a space when one is near the end."""
    if len(text) <= limit:
        return text
    cut = text[:max(1, limit - 1)]
    space = cut.rfind(" ")
    if space >= 0.6 * len(cut):
        cut = cut[:space]
    return cut.rstrip() + "…"


def _wrap(text: str, width: int, lines: int) -> list[str]:
    """Greedily wrap text at spaces into at most ``lines`` lines, the last one truncated with "…"."""
    words = text.split()
    out: list[str] = []
    current = ""
    for word in words:
        while len(word) > width:  # a word longer than a line is cut
            if current:
                out.append(current)
                current = ""
            out.append(word[:width])
            word = word[width:]
        candidate = f"{current} {word}" if current else word
        if len(candidate) <= width:
            current = candidate
        else:
            out.append(current)
            current = word
    if current:
        out.append(current)
    if len(out) > lines:
        out = out[:lines - 1] + [_truncate(" ".join(out[lines - 1:]), width)]
    return out or [""]


def _share(value: float) -> str:
    return f"{value * 100:.1f}%"


def _decimals(low: float, high: float) -> int:
    span = high - low
    return min(4, max(0, 2 - math.floor(math.log10(span)))) if span > 0 else 2


def _number(value: float, decimals: int) -> str:
    text = f"{value:,.{decimals}f}"
    return text[1:] if text.lstrip("-0.,") == "" and text.startswith("-") else text


def _number_ticks(low: float, high: float) -> tuple[list[float], int]:
    """Return the ends of a number axis and the round values between them (1, 2 or 5 × 10^k apart),
    and the decimals their labels need."""
    span = high - low
    raw = span / 4
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    ticks = [low]
    first = math.ceil(low / step)
    for index in range(first, math.floor(high / step) + 1):
        value = index * step
        if value - low >= 0.15 * span and high - value >= 0.15 * span:
            ticks.append(value)
    ticks.append(high)
    integral = all(float(tick).is_integer() for tick in ticks)
    return ticks, 0 if integral else max(0, -math.floor(math.log10(step)))


class _Svg:
    def __init__(self):
        self.parts: list[str] = []

    def add(self, text: str):
        self.parts.append(text)

    def text(self, x, y, content, *, size=12, fill=TEXT_COLOUR, anchor=None, weight=None, full=None):
        attrs = f'x="{_num(x)}" y="{_num(y)}"'
        if size != 12:
            attrs += f' font-size="{size}"'
        if fill != TEXT_COLOUR:
            attrs += f' fill="{fill}"'
        if anchor:
            attrs += f' text-anchor="{anchor}"'
        if weight:
            attrs += f' font-weight="{weight}"'
        title = f"<title>{escape(full)}</title>" if full is not None else ""
        self.add(f"<text {attrs}>{title}{escape(content)}</text>")

    def line(self, x1, y1, x2, y2, stroke, width=1):
        self.add(f'<line x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}" '
                 f'stroke="{stroke}" stroke-width="{width}"/>')


def results_chart_svg(design: dict, rows) -> str:
    """Return an SVG document charting every aggregate row of a design's questions.

    ``rows`` are ``AggregateRow``s (``survey.aggregate``) in any order; they are drawn in
    the design's question order. A row without a finite estimate (no responses) is shown
    as "no responses".
    """
    questions = list(design.get("questions", []))
    by_question: dict[str, list] = {question["id"]: [] for question in questions}
    rows = list(rows)
    for row in rows:
        if row.question in by_question:
            by_question[row.question].append(row)
    level = rows[0].ci_level if rows else 0.95
    level_text = f"{format(level * 100, 'g')}%"

    svg = _Svg()
    y = MARGIN + 16
    title = design.get("title") or design.get("slug") or "Survey"
    heading = f"Results: {title}"
    shown = _truncate(heading, _HEADING_CHARS - 4)
    svg.text(MARGIN, y, shown, size=15, weight="bold", full=heading if shown != heading else None)
    y += 22
    _legend(svg, y, level_text)
    y += 14

    finite = sum(1 for qrows in by_question.values() for row in qrows if _finite(row.estimate))
    if not questions:
        y += 24
        svg.text(MARGIN, y, "No questions.", fill=MUTED_COLOUR)
        y += 8
    for question in questions:
        y = _panel(svg, y + 24, question, by_question[question["id"]], level_text)
    height = int(math.ceil(y + MARGIN))

    count = len(questions)
    estimates = sum(len(qrows) for qrows in by_question.values())
    desc = (f"Debiased estimates of the survey {title} with {level_text} confidence intervals: "
            f"{count} question{'' if count == 1 else 's'}, {estimates} estimate{'' if estimates == 1 else 's'}, "
            f"{finite} with responses. One panel per question; a dot marks each unbiased estimate and a "
            "line its interval, clipped to the feasible range. Shares use a shared axis from 0 to 100%, "
            "a number question's mean its own axis from min to max; an estimate outside its axis is a "
            "triangle at the axis edge. The dashboard's table holds the same figures.")
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-labelledby="chart-title chart-desc" '
        f'font-family="{escape(FONT_FAMILY)}" font-size="12" fill="{TEXT_COLOUR}">\n'
        f'<title id="chart-title">{escape(f"Estimates and {level_text} confidence intervals: {title}")}</title>\n'
        f'<desc id="chart-desc">{escape(desc)}</desc>\n'
        f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>\n'
    )
    return head + "\n".join(svg.parts) + "\n</svg>\n"


def _legend(svg: _Svg, y: float, level_text: str):
    x = MARGIN + 6
    svg.add(f'<circle cx="{_num(x)}" cy="{_num(y - 4)}" r="4.5" fill="{ESTIMATE_COLOUR}"/>')
    svg.text(x + 10, y, "unbiased estimate", size=11, fill=MUTED_COLOUR)
    x += 130
    svg.line(x, y - 4, x + 28, y - 4, INTERVAL_COLOUR, 2)
    svg.line(x, y - 9, x, y + 1, INTERVAL_COLOUR, 1.2)
    svg.line(x + 28, y - 9, x + 28, y + 1, INTERVAL_COLOUR, 1.2)
    svg.text(x + 36, y, f"{level_text} confidence interval (clipped)", size=11, fill=MUTED_COLOUR)


def _panel(svg: _Svg, y: float, question: dict, rows: list, level_text: str) -> float:
    """Draw one question's panel with its top at y; return the y of its bottom."""
    qid, kind = question["id"], question.get("kind", "")
    text = question.get("text") or (rows[0].text if rows else "") or qid
    is_number = kind == "number"
    low, high = axis_range(question)
    decimals = _decimals(low, high)

    def fmt(value):
        return _number(value, decimals) if is_number else _share(value)

    svg.add(f'<g id="q-{escape(qid)}">')
    lines = _wrap(" ".join(text.split()), _HEADING_CHARS, _HEADING_LINES)
    truncated = " ".join(lines) != " ".join(text.split())
    if truncated:
        svg.add(f"<g><title>{escape(text)}</title>")
    for index, line in enumerate(lines):
        y += 17 if index else 13
        svg.text(MARGIN, y, line, size=13, weight="bold")
    if truncated:
        svg.add("</g>")
    n = max((row.n for row in rows), default=0)
    unit = f"mean on {_number(low, 0)}–{_number(high, 0)}" if is_number else "share"
    epsilon = question.get("epsilon", rows[0].epsilon if rows else float("nan"))
    mechanism = question.get("mechanism", rows[0].mechanism if rows else "")
    y += 17
    svg.text(MARGIN, y, f"{qid} · {kind} · {unit} · {mechanism} · ε′ = {epsilon:.3g} · n = {n:,}",
             size=11, fill=MUTED_COLOUR)
    y += 8

    top = y
    bottom = top + ROW_HEIGHT * max(1, len(rows))
    if is_number:
        ticks, tick_decimals = _number_ticks(low, high)
    else:
        ticks, tick_decimals = SHARE_TICKS, 0

    def tick_label(value):
        return _number(value, tick_decimals) if is_number else f"{value * 100:g}%"

    for tick in ticks:
        x = axis_x(tick, low, high)
        svg.line(x, top, x, bottom, GRID_COLOUR)
    svg.line(PLOT_LEFT, bottom, PLOT_RIGHT, bottom, AXIS_COLOUR)
    for tick in ticks:
        x = axis_x(tick, low, high)
        svg.line(x, bottom, x, bottom + 4, AXIS_COLOUR)
        anchor = "start" if tick == low and is_number else "end" if tick == high and is_number else "middle"
        svg.text(x, bottom + 16, tick_label(tick), size=11, fill=MUTED_COLOUR, anchor=anchor)

    if not rows:
        svg.text(PLOT_LEFT + 6, top + ROW_HEIGHT / 2 + 4, "no estimates", size=11, fill=MUTED_COLOUR)
    for index, row in enumerate(rows):
        cy = top + ROW_HEIGHT * index + ROW_HEIGHT / 2
        label = row.option if row.option else "mean"
        short = _truncate(label, _LABEL_CHARS)
        svg.text(PLOT_LEFT - 10, cy + 4, short, anchor="end", full=label if short != label else None)
        if not _finite(row.estimate):
            svg.text(PLOT_LEFT + 6, cy + 4, "no responses", size=11, fill=MUTED_COLOUR)
            continue
        summary = f"{label}: {fmt(row.estimate)}"
        if _finite(row.ci_low) and _finite(row.ci_high):
            x1 = axis_x(min(max(row.ci_low, low), high), low, high)
            x2 = axis_x(min(max(row.ci_high, low), high), low, high)
            svg.line(x1, cy, x2, cy, INTERVAL_COLOUR, 2)
            svg.line(x1, cy - 5, x1, cy + 5, INTERVAL_COLOUR, 1.2)
            svg.line(x2, cy - 5, x2, cy + 5, INTERVAL_COLOUR, 1.2)
            summary += f" ({level_text} CI {fmt(row.ci_low)} to {fmt(row.ci_high)})"
        tooltip = f"<title>{escape(summary)}</title>"
        if row.estimate < low or row.estimate > high:
            edge, direction = (PLOT_LEFT, -1) if row.estimate < low else (PLOT_RIGHT, 1)
            tip = edge + 7 * direction
            points = f"{_num(tip)},{_num(cy)} {_num(edge)},{_num(cy - 5.5)} {_num(edge)},{_num(cy + 5.5)}"
            svg.add(f'<polygon class="estimate" points="{points}" fill="{ESTIMATE_COLOUR}" '
                    f'stroke="#ffffff" stroke-width="1">{tooltip}</polygon>')
        else:
            cx = axis_x(row.estimate, low, high)
            svg.add(f'<circle class="estimate" cx="{_num(cx)}" cy="{_num(cy)}" r="4.5" '
                    f'fill="{ESTIMATE_COLOUR}" stroke="#ffffff" stroke-width="1">{tooltip}</circle>')
    svg.add("</g>")
    return bottom + 18
