"""The docs' analysis scripts are real clients: docs/scripts/aggregates.py (pandas + scipy) and
docs/scripts/aggregates.R (base R + jsonlite, run by Debian's Rscript) recompute every estimate of the
aggregates from responses.csv and codebook.json alone, to 1e-9, for every mechanism the product has."""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import subprocess
import sys

import pytest

from survey.cli import main
from survey.core.mechanisms.registry import MECHANISMS

from conftest import REPO, command_line, definition

SCRIPTS = REPO / "docs" / "scripts"
EVERY_KIND = """
slug = "every-mechanism"
title = "Every mechanism"
epsilon = 12

""" + definition("smoker_colour") + """
[[questions]]
id = "country"
kind = "choice"
text = "Country of birth?"
options = [{countries}]

[[questions]]
id = "pet"
kind = "choice"
text = "Which pet?"
options = ["cat", "dog", "fish", "bird", "horse", "rabbit", "snake", "lizard", "hamster", "none"]

[[questions]]
id = "drugs"
kind = "multi"
text = "Which have you used?"
options = ["cannabis", "cocaine", "MDMA"]

[[questions]]
id = "sports"
kind = "multi"
text = "Which sports?"
options = ["run", "swim", "cycle"]
weight = 3

[[questions]]
id = "age"
kind = "number"
text = "Age?"
min = 18
max = 90
mechanism = "duchi"

[[questions]]
id = "income"
kind = "number"
text = "Income in thousands?"
min = 0
max = 250
mechanism = "piecewise"

[[questions]]
id = "hours"
kind = "number"
text = "Hours of sleep?"
min = 0
max = 14
mechanism = "hybrid"
weight = 2

[[questions]]
id = "commute"
kind = "number"
text = "Minutes of commute?"
min = 0
max = 120
mechanism = "opm"
weight = 2
""".replace("{countries}", ", ".join(f'"country {number}"' for number in range(64)))

SAMPLED = """
slug = "sampled"
title = "Sampled questions"
epsilon = 3
allocation = "sample"
sample = 2

""" + definition("smoker_colour") + """
[[questions]]
id = "age"
kind = "number"
text = "Age?"
min = 18
max = 90
"""
LEVEL = "0.9"


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Per survey: its responses.csv and codebook.json (of simulated respondents) and its estimates as JSON."""
    directory = tmp_path_factory.mktemp("scripts")
    run = command_line(directory / "surveys.db")
    out = {}
    for slug, text in (("every-mechanism", EVERY_KIND), ("sampled", SAMPLED)):
        definition = directory / f"{slug}.toml"
        definition.write_text(text, encoding="utf-8")
        run("create", definition)
        run("simulate", slug, "--n", 3000, "--seed", 11)
        files = {name: directory / f"{slug}-{name}" for name in ("responses.csv", "codebook.json")}
        run("export", slug, "--responses", "--sandbox", "-o", files["responses.csv"])
        run("export", slug, "--codebook", "--sandbox", "-o", files["codebook.json"])
        rows = json.loads(run("aggregate", slug, "--sandbox", "--format", "json", "--level", LEVEL))
        header = next(csv.reader(io.StringIO(run("aggregate", slug, "--sandbox", "--format", "csv"))))
        out[slug] = {**files, "rows": rows, "header": header}
    return out


@pytest.mark.slow
def test_the_surveys_use_every_mechanism(exports):
    used = {(column["kind"], column["mechanism"])
            for survey in exports.values()
            for column in json.loads(survey["codebook.json"].read_text(encoding="utf-8"))["columns"]}
    assert used == {(mechanism.kind, mechanism.name) for mechanism in MECHANISMS}


def check_recomputed(output: str, survey: dict) -> int:
    """Assert the script's CSV has the aggregates' per-estimand columns and every number within 1e-9; return how many.

    The consistent view of a single choice (consistent, consistent_low, consistent_high) is a post-processing
    of a question's estimates together, which the codebook's method states and the scripts leave out.
    """
    rows = list(csv.DictReader(io.StringIO(output)))
    header = [name for name in survey["header"] if not name.startswith("consistent")]
    assert list(rows[0]) == header and len(header) == len(survey["header"]) - 3
    assert len(rows) == len(survey["rows"])
    checked = 0
    for mine, theirs in zip(rows, survey["rows"]):
        for name in header:
            expected = theirs[name]
            if isinstance(expected, str):
                assert mine[name] == expected, (name, mine, theirs)
            elif expected is None or (isinstance(expected, float) and math.isnan(expected)):
                assert mine[name] == "", (name, mine, theirs)
            else:
                assert abs(float(mine[name]) - expected) <= 1e-9, (theirs["question"], theirs["option"], name,
                                                                  mine[name], expected)
                checked += 1
    return checked


@pytest.mark.slow
@pytest.mark.parametrize("slug", ["every-mechanism", "sampled"])
def test_the_pandas_script_recomputes_every_estimate(exports, slug):
    survey = exports[slug]
    result = subprocess.run([sys.executable, "-I", str(SCRIPTS / "aggregates.py"), str(survey["responses.csv"]),
                             str(survey["codebook.json"]), LEVEL], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert check_recomputed(result.stdout, survey) >= 8 * len(survey["rows"]) - 4


@pytest.mark.parametrize("slug", ["every-mechanism", "sampled"])
def test_the_r_script_recomputes_every_estimate(exports, slug):
    rscript = shutil.which("Rscript")
    assert rscript, "Rscript is missing: install Debian's r-base-core and r-cran-jsonlite (.ci/run does)"
    survey = exports[slug]
    result = subprocess.run([rscript, "--vanilla", str(SCRIPTS / "aggregates.R"), str(survey["responses.csv"]),
                             str(survey["codebook.json"]), LEVEL], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert check_recomputed(result.stdout, survey) >= 8 * len(survey["rows"]) - 4


EXTREME_N = 40


@pytest.fixture(scope="module")
def extreme(exports, tmp_path_factory):
    """The every-mechanism survey's codebook with EXTREME_N equal responses: each scalar report its column's largest.

    At ε′ < 1 per weight so many equal reports put intervals wholly beyond an end of the feasible range
    (the moved-inside rule) and the level numbers' betting intervals near their range's edge; the
    expected numbers are `ldp-survey analyze`'s, from the same two files.
    """
    survey = exports["every-mechanism"]
    with survey["responses.csv"].open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        fields, rows = reader.fieldnames, list(reader)
    book = json.loads(survey["codebook.json"].read_text(encoding="utf-8"))
    # A scalar column's largest value; a bit vector (several columns) is the first response's, kept whole so
    # that a subset-selection report keeps its k ones.
    questions = [column["question"] for column in book["columns"]]
    top = {column["name"]: rows[0][column["name"]] if questions.count(column["question"]) > 1
           else str(max(int(row[column["name"]]) for row in rows)) for column in book["columns"]}
    path = tmp_path_factory.mktemp("extreme") / "responses.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows({**row, **top} for row in rows[:EXTREME_N])
    from click.testing import CliRunner

    result = CliRunner().invoke(main, ["analyze", str(path), "aggregate", "--codebook", str(survey["codebook.json"]),
                                       "--format", "json", "--level", LEVEL])
    assert result.exit_code == 0, (result.output, result.exception)
    return {**survey, "responses.csv": path, "rows": json.loads(result.stdout)}


def test_the_extreme_reports_put_an_interval_wholly_beyond_an_end(extreme):
    from scipy.stats import beta

    book = json.loads(extreme["codebook.json"].read_text(encoding="utf-8"))
    smoker = next(estimand for estimand in book["estimands"] if estimand["question"] == "smoker")
    # Every report is 1: Clopper-Pearson's lower end (alpha/2)^(1/n), mapped, lies above 1.
    share_low = beta.ppf((1 - float(LEVEL)) / 2, EXTREME_N, 1)
    assert (share_low - smoker["q"]) / (smoker["p"] - smoker["q"]) > 1
    row = next(row for row in extreme["rows"] if row["question"] == "smoker")
    assert row["ci_high"] == 1.0 and 0.0 < row["ci_low"] < 1.0  # moved inside, not the point [1, 1]


@pytest.mark.parametrize("command", ["python", "R"])
def test_the_scripts_recompute_extreme_reports(extreme, command):
    if command == "python":
        arguments = [sys.executable, "-I", str(SCRIPTS / "aggregates.py")]
    else:
        arguments = [shutil.which("Rscript") or "Rscript", "--vanilla", str(SCRIPTS / "aggregates.R")]
    result = subprocess.run([*arguments, str(extreme["responses.csv"]), str(extreme["codebook.json"]), LEVEL],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert check_recomputed(result.stdout, extreme) >= 8 * len(extreme["rows"]) - 4
