"""The weighted re-analysis of `ldp-survey analyze aggregate`: --weights, --calibrate and --out.

Kept apart from ``analysis`` so that the unweighted path stays as it was: ``analyze`` hands over here
only when one of these options is given.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import click

from .common import echo_formatted

WEIGHT_OPTIONS = [
    click.option("--weights", "weight_column", metavar="COLUMN",
                 help="With aggregate: a column of responses.csv holding each row's design weight (positive "
                      "numbers): weighted estimates with linearised standard errors."),
    click.option("--calibrate", "calibrations", multiple=True, metavar="QUESTION=MARGINS",
                 help="With aggregate: rake the weights so that QUESTION's debiased estimate equals known "
                      "population margins: QUESTION=0.23 (a yes/no share or a number's mean), "
                      "QUESTION=OPTION:SHARE,OPTION:SHARE,... or QUESTION=margins.csv (columns option,share). "
                      "Repeatable: all margins are met together."),
    click.option("--calibration-method", type=click.Choice(["raking", "linear"]), default="raking",
                 show_default=True, help="Generalized raking (weights stay positive) or linear calibration "
                                         "(refused when a weight would turn negative)."),
    click.option("--strata", metavar="COLUMN",
                 help="With aggregate: a column naming each row's stratum, for the standard errors."),
    click.option("--clusters", metavar="COLUMN",
                 help="With aggregate: a column naming each row's cluster (primary sampling unit, nested in its "
                      "stratum), for the standard errors."),
    click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
                 help="With --weights or --calibrate: also write estimates.csv, weights.csv (each row's weight "
                      "and calibrated weight) and codebook.json (the codebook with the weighting) to this "
                      "directory."),
]


def weight_options(command):
    """Add the weighting options to a command."""
    for option in reversed(WEIGHT_OPTIONS):
        command = option(command)
    return command


def parse_margins(spec: str) -> list:
    """Return the margins of one --calibrate QUESTION=MARGINS, reading a .csv file of option,share lines."""
    from ..core.weighting import Margin

    question, sep, rest = spec.partition("=")
    if not sep or not question or not rest:
        raise click.UsageError(f"--calibrate takes QUESTION=MARGINS (e.g. smoker=0.23), got {spec!r}")
    if rest.lower().endswith(".csv"):
        pairs = _margins_file(Path(rest))
    elif ":" not in rest:
        return [Margin(question, None, _share(rest, spec))]
    else:
        pairs = []
        for piece in rest.split(","):
            option, colon, value = piece.rpartition(":")
            if not colon or not option:
                raise click.UsageError(f"--calibrate {spec!r}: write each margin as OPTION:SHARE, got {piece!r}")
            pairs.append((option, value))
    return [Margin(question, option, _share(value, spec)) for option, value in pairs]


def _share(text: str, spec: str) -> float:
    """Return a margin's value, refusing what is not a finite number."""
    try:
        value = float(text)
    except ValueError:
        raise click.UsageError(f"--calibrate {spec!r}: {text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise click.UsageError(f"--calibrate {spec!r}: {text!r} is not a finite number")
    return value


def _margins_file(path: Path) -> list[tuple[str, str]]:
    """Return the (option, share) lines of a margins file with a header naming the columns option and share."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError) as exc:
        raise click.ClickException(f"cannot read the margins file {path}: {exc}") from exc
    if not rows or [cell.strip().lower() for cell in rows[0][:2]] != ["option", "share"]:
        raise click.ClickException(f"{path}: the first line must name the columns: option,share")
    bad = next((number for number, row in enumerate(rows[1:], start=2) if row and len(row) < 2), None)
    if bad is not None:
        raise click.ClickException(f"{path}: line {bad} needs an option and a share")
    pairs = [(row[0], row[1].strip()) for row in rows[1:] if row]
    if not pairs:
        raise click.ClickException(f"{path}: it gives no margins")
    return pairs


def is_weighted(analysis: str, *, weight_column, calibrations, strata, clusters, out_dir, **_) -> bool:
    """Return whether the options ask for the weighted analysis, refusing them with another analysis."""
    weighted = weight_column is not None or bool(calibrations) or strata is not None or clusters is not None
    if (weighted or out_dir is not None) and analysis != "aggregate":
        raise click.UsageError("--weights, --calibrate, --strata, --clusters and --out go with aggregate only")
    if out_dir is not None and not weighted:
        raise click.UsageError("--out writes weighted files: give --weights or --calibrate")
    return weighted


def run_weighted(files, fmt: str, level: float, *, weight_column, calibrations, calibration_method, strata,
                 clusters, out_dir) -> None:
    """Print the weighted estimates of the files (and write them with --out)."""
    from ..core.weighted_rows import weighted_files
    from ..core.weighted_text import weighted_to_csv, weighted_to_json, weighted_to_table

    margins = [margin for spec in calibrations for margin in parse_margins(spec)]
    weighting, rows, given, weights = files.run(weighted_files, column=weight_column, margins=margins,
                                                method=calibration_method, level=level, strata=strata,
                                                clusters=clusters)
    result = (weighting, rows)
    echo_formatted(fmt, result, to_csv=weighted_to_csv, to_json=weighted_to_json, to_table=weighted_to_table)
    if out_dir is not None:
        _write_out(out_dir, files, result, given, weights)


def _write_out(out_dir: Path, files, result, given, weights) -> None:
    """Write estimates.csv, weights.csv and codebook.json (the codebook with its weighting) to a directory."""
    from ..core.weighted_text import weighted_to_csv, weights_csv

    weighting, _ = result
    book = dict(files.book)
    book["weighting"] = weighting.as_dict() | {"files": {
        "estimates": "estimates.csv: the weighted estimates",
        "weights": "weights.csv: row (the row number of responses.csv, its header row 1), weight (the given "
                   "weight, 1 without a weight column), calibrated_weight (the weight the estimates used)"}}
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "estimates.csv").write_text(weighted_to_csv(result), encoding="utf-8", newline="")
        (out_dir / "weights.csv").write_text(weights_csv(given, weights), encoding="utf-8",
                                             newline="")
        (out_dir / "codebook.json").write_text(json.dumps(book, indent=2, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot write to {out_dir}: {exc.strerror or exc}") from exc
    click.echo(f"Wrote estimates.csv, weights.csv and codebook.json to {out_dir}", err=True)
