"""The weighted estimates as CSV, JSON and a plain-text table, each stating the weighting and its assumption.

Pure: text in memory, no I/O.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import fields

from .aggregate import CSV_LINE_TERMINATOR, aligned_lines, format_decimal, format_epsilon, json_value, table_number
from .weighting import SE_METHOD, WeightedRow, Weighting, assumption

CSV_HEADER = ["question", "option", "kind", "mechanism", "epsilon", "n", "effective_n", "estimate", "std_error",
              "ci_low", "ci_high", "ci_level", "calibrated", "weights", "calibration", "strata", "clusters"]


def calibration_text(weighting: Weighting) -> str:
    """Return the calibration in one cell: ``question=option:value`` joined by ``;`` (empty without one)."""
    return ";".join(f"{m.question}={m.option}:{m.value!r}" if m.option else f"{m.question}={m.value!r}"
                    for m in weighting.margins)


def weighted_to_csv(result: tuple[Weighting, list[WeightedRow]]) -> str:
    """Return the weighted estimates as CSV (CRLF lines): the aggregate columns a weighted estimate has, Kish's
    effective n of the question's respondents, and on every line the weight column, the calibration, the strata
    and the cluster columns used."""
    weighting, rows = result
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=CSV_LINE_TERMINATOR)
    writer.writerow(CSV_HEADER)
    for row in rows:
        writer.writerow([row.question, row.option, row.kind, row.mechanism, _epsilon(row.epsilon), str(row.n),
                         format_decimal(row.effective_n), format_decimal(row.estimate),
                         format_decimal(row.std_error), format_decimal(row.ci_low), format_decimal(row.ci_high),
                         format(row.ci_level, "g"), "yes" if row.calibrated else "no", weighting.column or "",
                         calibration_text(weighting), weighting.strata or "", weighting.clusters or ""])
    return buffer.getvalue()


def _epsilon(value: float) -> str:
    return "" if math.isinf(value) else repr(float(value))


def weighted_to_json(result: tuple[Weighting, list[WeightedRow]]) -> dict:
    """Return {"weighting": how the rows were weighted, "rows": one object per estimate}."""
    weighting, rows = result
    return {"weighting": weighting.as_dict(),
            "rows": [{name.name: _json(getattr(row, name.name)) for name in fields(WeightedRow)} for row in rows]}


def _json(value):
    """Return a value ready for JSON, an unbounded ε as None."""
    return None if isinstance(value, float) and math.isinf(value) else json_value(value)


def weighting_sentences(weighting: Weighting) -> list[str]:
    """Return the weighting in words: the column, Kish's effective sample size, the calibration, the assumption."""
    source = f"the weights in column {weighting.column!r}" if weighting.column else "equal starting weights"
    design = "".join(f", {what} in column {name!r}" for what, name in (("strata", weighting.strata),
                                                                        ("clusters", weighting.clusters)) if name)
    lines = [f"Weighted by {source}{design}: {weighting.rows:,} rows, total weight {weighting.total:.6g}, Kish's "
             f"effective sample size {weighting.effective_n:.1f}."]
    if weighting.margins:
        method = weighting.as_dict()["calibration_method"]
        low, high = weighting.adjustment
        lines.append(f"Calibrated to {calibration_text(weighting).replace(';', ', ')} by {method}; "
                     f"the weights were multiplied by {low:.4g} to {high:.4g}.")
    lines.append(f"Standard errors: {SE_METHOD}; {assumption(weighting.strata, weighting.clusters)}.")
    return lines


_COLUMNS = [("question", "<"), ("option", "<"), ("mechanism", "<"), ("epsilon", ">"), ("n", ">"),
            ("effective_n", ">"), ("estimate", ">"), ("std_error", ">"), ("ci_low", ">"), ("ci_high", ">"),
            ("calibrated", "<")]


def weighted_to_table(result: tuple[Weighting, list[WeightedRow]]) -> str:
    """Return the weighting in words, then an aligned table of the estimates (4 decimals), no final newline."""
    weighting, rows = result
    cells = [[name for name, _ in _COLUMNS]]
    for row in rows:
        option = ("mean" if not row.option else f"mean {row.option}") if row.kind == "number" else row.option
        cells.append([row.question, option, row.mechanism,
                      "unbounded" if math.isinf(row.epsilon) else format_epsilon(row.epsilon), str(row.n),
                      f"{row.effective_n:.1f}"] + [table_number(getattr(row, name)) for name, _ in _COLUMNS[6:10]]
                     + ["yes" if row.calibrated else ""])
    level = format(rows[0].ci_level * 100, "g") if rows else "95"
    title = (f"{level}% intervals: estimate ± z·SE, simultaneous over the options of a choice or multi question "
             "(Bonferroni); where the reports show no spread (no standard error) the interval is the whole "
             "possible range, and one wholly past an end of the range is moved inside it")
    return "\n".join(weighting_sentences(weighting) + [title] + aligned_lines(cells, [a for _, a in _COLUMNS]))


def weights_csv(given, final) -> str:
    """Return weights.csv: each row's number in responses.csv (the header is row 1), given and final weight."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=CSV_LINE_TERMINATOR)
    writer.writerow(["row", "weight", "calibrated_weight"])
    for number, (weight, calibrated) in enumerate(zip(given.tolist(), final.tolist()), start=2):
        writer.writerow([number, repr(weight), repr(calibrated)])
    return buffer.getvalue()
