"""Draw debiased estimates with their confidence intervals as an SVG chart (matplotlib).

One panel per question: a point at the unbiased estimate and a line over the clipped
interval. Proportions share the axis [0, 1]; a number question uses its own min..max.
"""

from __future__ import annotations

import io
import math
from itertools import groupby


def _finite(value) -> bool:
    return value is not None and isinstance(value, (int, float)) and math.isfinite(value)


def results_chart_svg(design: dict, rows) -> str:
    """Return an SVG document charting every aggregate row of a design's questions."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    questions = {q["id"]: q for q in design["questions"]}
    groups = [(qid, list(group)) for qid, group in groupby(rows, key=lambda row: row.question)]
    heights = [max(1, len(group)) * 0.38 + 0.9 for _, group in groups] or [1.0]
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "ldp-survey", "font.size": 9}):
        figure = Figure(figsize=(7.5, sum(heights)), layout="constrained")
        axes = figure.subplots(len(heights), 1, gridspec_kw={"height_ratios": heights}, squeeze=False)[:, 0]
        for ax, (qid, group) in zip(axes, groups):
            _draw_question(ax, questions[qid], group)
        if not groups:
            axes[0].text(0.5, 0.5, "No questions", ha="center", va="center")
            axes[0].set_axis_off()
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def _draw_question(ax, question: dict, rows: list):
    labels = [row.option if row.option else "mean" for row in rows]
    positions = list(range(len(rows)))[::-1]
    is_number = question["kind"] == "number"
    low, high = (question["min"], question["max"]) if is_number else (0.0, 1.0)
    for y, row in zip(positions, rows):
        if _finite(row.ci_low) and _finite(row.ci_high):
            ax.hlines(y, row.ci_low, row.ci_high, color="#1f5fa8", linewidth=2.2)
            ax.vlines([row.ci_low, row.ci_high], y - 0.18, y + 0.18, color="#1f5fa8", linewidth=1.2)
        if _finite(row.estimate):
            ax.plot([row.estimate], [y], marker="o", color="#b3261e", markersize=5, linestyle="none")
    estimates = [row.estimate for row in rows if _finite(row.estimate)]
    span = high - low
    left = min([low] + estimates) - 0.02 * span
    right = max([high] + estimates) + 0.02 * span
    ax.set_xlim(left, right)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_yticks(positions, labels)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    n = rows[0].n if rows else 0
    unit = "mean" if is_number else "share"
    ax.set_title(f"{question['id']} ({unit}, ε′={question['epsilon']:.3g}, n={n})", loc="left", fontsize=9)
    if not is_number:
        ax.xaxis.set_major_formatter(lambda value, _: f"{value:.0%}")
