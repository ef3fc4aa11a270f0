"""Charts: time matplotlib drawing one question's chart (2 and 64 options, SVG and PNG) in process.

Draws with ``survey.core.charts.question_chart`` from made-up aggregate rows (no database, no
server), each --repeat times, and prints the median and the worst:

  2 options and 64 options (the definition limit), as SVG and as PNG
  a number question (its mean on its min..max axis), as SVG and as PNG
  the whole survey at the definition limits (100 questions x 64 options) in one SVG
  (``survey_chart``, served as chart.svg, which the dashboard never loads), --whole-repeat times

  reference: saving an empty matplotlib Figure of the same size (no axes, no text) in the
  same format: the floor of any matplotlib chart; ratio = chart time / reference time

    python bench/charts.py
    python bench/charts.py --repeat 21 --whole-repeat 3
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

from matplotlib.figure import Figure  # noqa: E402

from survey.core.aggregate import AggregateRow  # noqa: E402
from survey.core.charts import PNG_SCALE, PX_PER_INCH, chart_size, question_chart, survey_chart  # noqa: E402


def rows_for(qid: str, options: int) -> list[AggregateRow]:
    """Rows with estimates spread over [-0.1, 1.1], so some fall outside the axis."""
    return [AggregateRow(question=qid, option=f"option {j:02d}", kind="choice", mechanism="grr", epsilon=0.2,
                         n=10_000, noisy_share=0.5, estimate=(j % 13) / 10 - 0.1, std_error=0.05,
                         ci_low=max(0.0, (j % 13) / 10 - 0.2), ci_high=min(1.0, (j % 13) / 10), ci_level=0.95)
            for j in range(options)]


def choice(qid: str, options: int) -> dict:
    return {"id": qid, "kind": "choice", "text": f"Question {qid}: which option?", "mechanism": "grr",
            "epsilon": 0.2, "options": [f"option {j:02d}" for j in range(options)]}


def timed(repeat: int, work) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return times


def empty_figure(width: int, height: int, fmt: str) -> bytes:
    fig = Figure(figsize=(width / PX_PER_INCH, height / PX_PER_INCH), facecolor="white")
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, dpi=PX_PER_INCH * PNG_SCALE if fmt == "png" else None)
    return buffer.getvalue()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--repeat", type=int, default=11, help="timings per chart (default 11)")
    parser.add_argument("--whole-repeat", type=int, default=1,
                        help="timings of the 100 x 64 survey in one SVG, after one untimed (default 1)")
    args = parser.parse_args(argv)
    common.header("charts: matplotlib drawing one question's chart, in process", args)

    number = {"id": "age", "kind": "number", "text": "How old are you?", "mechanism": "duchi", "epsilon": 0.5,
              "min": 18, "max": 90}
    number_rows = [AggregateRow(question="age", option="", kind="number", mechanism="duchi", epsilon=0.5,
                                n=10_000, noisy_share=0.5, estimate=41.3, std_error=1.2, ci_low=38.9,
                                ci_high=43.7, ci_level=0.95)]
    cases = [("2 options", choice("q2", 2), rows_for("q2", 2)),
             ("64 options", choice("q64", 64), rows_for("q64", 64)),
             ("number", number, number_rows)]
    question_chart({"questions": [cases[0][1]]}, "q2", cases[0][2], fmt="png")  # load the fonts once
    print(f"{'chart':<22} {'bytes':>9}   {'median':>11} {'max':>11}   {'reference':>11}   ratio")
    for name, question, rows in cases:
        design = {"questions": [question]}
        width, height = chart_size(question, rows)
        for fmt in ("svg", "png"):
            body = question_chart(design, question["id"], rows, fmt=fmt)
            times = timed(args.repeat, lambda: question_chart(design, question["id"], rows, fmt=fmt))
            reference = common.median(timed(args.repeat, lambda: empty_figure(width, height, fmt)))
            med = common.median(times)
            print(f"{name + ' ' + fmt.upper():<22} {len(body):>9,}   {common.ms(med)} {common.ms(max(times))}   "
                  f"{common.ms(reference)}   {med / reference:5.1f} x  ({width} x {height} px"
                  f"{f', PNG {width * PNG_SCALE} x {height * PNG_SCALE}' if fmt == 'png' else ''})")

    limits = {"title": "A survey at the definition limits",
              "questions": [choice(f"q{i:03d}", 64) for i in range(100)]}
    rows = [row for i in range(100) for row in rows_for(f"q{i:03d}", 64)]
    body = survey_chart(limits, rows)
    times = timed(args.whole_repeat, lambda: survey_chart(limits, rows))
    print(f"{'100 x 64 in one SVG':<22} {len(body):>9,}   {common.ms(common.median(times))} "
          f"{common.ms(max(times))}   (whole survey, chart.svg; 100 one-question charts drawn one by one "
          "take about 100 x the 64-option SVG)")


if __name__ == "__main__":
    try:
        main()
    finally:
        common.footer()
