"""`ldp-survey analyze … aggregate --intervals posterior --prior P`: the credible intervals of `ldp-survey aggregate
--intervals posterior --prior P` from the exported files alone (to 1e-12), the exact posterior of an item of another
design, clean refusals of what is not defined; and docs/scripts/posterior.R (the how-to's base-R script, reading the
codebook with jsonlite as aggregates.R does) reproduces the product's intervals."""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import subprocess

import pytest
from scipy.stats import beta

from survey.cli import main
from survey.core.posterior import Prior, binomial_interval

from conftest import REPO

SLUG = "posterior-files"
# Every posterior path: a yes/no share and a multiple choice's options (binomial through (p, q)), a single choice's
# options (the Dirichlet's Beta marginal), a number rounded to an end (Duchi: exact) and a number reported as a
# level (piecewise: the normal likelihood).
DESIGN = f"""
slug = "{SLUG}"
title = "Posterior intervals from files"
epsilon = 4

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"

[[questions]]
id = "colour"
kind = "choice"
text = "Favourite colour?"
options = ["red", "green", "blue", "other"]

[[questions]]
id = "drugs"
kind = "multi"
text = "Which have you used?"
options = ["cannabis", "cocaine", "MDMA"]

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
"""
ROWS = 1 + 4 + 3 + 1 + 1
TOLERANCE = 1e-12


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The survey with simulated respondents in its sandbox, its two exports, and a runner of the CLI on the database."""
    from click.testing import CliRunner

    directory = tmp_path_factory.mktemp("posterior")
    db = directory / "surveys.db"
    runner = CliRunner()

    def run(*args, code=0):
        result = runner.invoke(main, ["--db", str(db), *map(str, args)])
        assert result.exit_code == code, (result.output, result.exception)
        return result

    (directory / "design.toml").write_text(DESIGN, encoding="utf-8")
    run("create", directory / "design.toml")
    run("simulate", SLUG, "--n", 700, "--seed", 21)
    files = {"responses": directory / "responses.csv", "codebook": directory / "codebook.json"}
    run("export", SLUG, "--responses", "--sandbox", "-o", files["responses"])
    run("export", SLUG, "--codebook", "--sandbox", "-o", files["codebook"])
    return {**files, "run": run}


def analyze(exported, *options, code=0):
    """Run `ldp-survey analyze responses.csv aggregate` on the exported files (no --db: none is opened)."""
    return exported["run"]("analyze", exported["responses"], "aggregate", "--codebook", exported["codebook"], *options,
                           code=code)


def assert_same_rows(mine: list[dict], theirs: list[dict]) -> None:
    """Assert the rows have the same keys and text, and every number agrees within TOLERANCE (relative for a mean)."""
    assert len(mine) == len(theirs) == ROWS
    for got, want in zip(mine, theirs):
        assert got.keys() == want.keys()
        for key, value in want.items():
            if isinstance(value, float):
                assert math.isclose(got[key], value, rel_tol=TOLERANCE, abs_tol=TOLERANCE), (want["question"], key)
            else:
                assert got[key] == value, (want["question"], key)


@pytest.mark.parametrize("prior, level, kind", [("jeffreys", "0.95", "posterior-jeffreys"),
                                                ("uniform", "0.9", "posterior-uniform"),
                                                ("2,3", "0.95", "posterior-beta(2,3)")])
def test_the_files_give_the_databases_posterior_intervals(exported, prior, level, kind):
    options = ["--format", "json", "--level", level, "--intervals", "posterior", "--prior", prior]
    theirs = json.loads(exported["run"]("aggregate", SLUG, "--sandbox", *options).stdout)
    mine = json.loads(analyze(exported, *options).stdout)
    assert_same_rows(mine, theirs)
    assert {row["ci_kind"] for row in mine} == {kind}
    # Credible intervals, not the confidence intervals under another name: every row's ends move.
    fixed = json.loads(analyze(exported, "--format", "json", "--level", level).stdout)
    assert {row["ci_kind"] for row in fixed} == {"fixed"}
    assert all(abs(a["ci_low"] - b["ci_low"]) + abs(a["ci_high"] - b["ci_high"]) > 1e-6
               for a, b in zip(mine, fixed))


def test_the_table_and_csv_name_the_prior(exported):
    table = analyze(exported, "--intervals", "posterior", "--prior", "uniform").stdout
    assert table.startswith("95% equal-tailed credible intervals under a uniform prior")
    rows = list(csv.DictReader(io.StringIO(analyze(exported, "--format", "csv", "--intervals", "posterior").stdout)))
    assert {row["ci_kind"] for row in rows} == {"posterior-jeffreys"} and len(rows) == ROWS


@pytest.mark.parametrize("options, code, words", [
    (["--intervals", "posterior", "--prior", "0,1"], 1, "a Beta(A, B) prior needs A > 0 and B > 0, got '0,1'"),
    (["--intervals", "posterior", "--prior", "jefreys"], 1, "prior must be jeffreys, uniform or two positive numbers"),
    (["--intervals", "posterior", "--prior", "1,2,3"], 1, "prior must be jeffreys, uniform or two positive numbers"),
    (["--prior", "uniform"], 1, "--prior applies only with --intervals posterior"),
    (["--intervals", "posterior", "--weights", "w"], 1,
     "--intervals posterior cannot go with --weights, --calibrate, --strata or --clusters: posterior intervals are "
     "not defined for weighted estimates here"),
    (["--intervals", "posterior", "--calibrate", "smoker=0.3"], 1, "not defined for weighted estimates here"),
])
def test_what_is_not_defined_is_refused_cleanly(exported, options, code, words):
    result = analyze(exported, *options, code=code)
    assert words in result.stderr and result.stdout == ""
    assert "Traceback" not in result.output and not isinstance(result.exception, (ValueError, TypeError))


def test_posterior_intervals_go_with_aggregate_only(exported):
    result = exported["run"]("analyze", exported["responses"], "crosstab", "smoker", "colour", "--codebook",
                             exported["codebook"], "--intervals", "posterior", code=2)
    assert "--intervals posterior goes with aggregate only, not crosstab" in result.stderr


def test_help_shows_posterior_intervals_with_an_example(exported):
    text = exported["run"]("analyze", "--help").stdout
    assert "ldp-survey analyze responses.csv aggregate --codebook codebook.json --intervals posterior" in text
    assert "--prior PRIOR" in text and "Not with the weighting options" in text


def test_another_designs_items_get_the_exact_posterior(tmp_path, cli_runner):
    """A codebook of another design: each item's posterior through its (p, q). Asked directly (p = 1, q = 0) the
    posterior is Beta(a + k, b + n − k) exactly; an item no report of which says yes under q = 0 (once a failure
    of the integration) gets an interval inside [0, 1]; a Warner item's is binomial_interval's on its counts."""
    direct = [1] * 9 + [0] * 21 + [""] * 4
    never = [0] * 30 + [""] * 4
    warner = [1] * 14 + [0] * 18 + [""] * 2
    responses = tmp_path / "survey.csv"
    responses.write_text("direct,never,drug_use\n" + "".join(f"{a},{b},{c}\n" for a, b, c in zip(direct, never, warner)),
                         encoding="utf-8")
    book = tmp_path / "codebook.json"
    made = cli_runner.invoke(main, ["codebook", "--binary", "direct", "1", "0", "--binary", "never", "1/2", "0",
                                    "--binary", "drug_use", "3/4", "1/4", "-o", str(book)])
    assert made.exit_code == 0, made.output
    result = cli_runner.invoke(main, ["analyze", str(responses), "aggregate", "--codebook", str(book), "--format",
                                      "json", "--intervals", "posterior", "--prior", "2,3"])
    assert result.exit_code == 0, (result.output, result.exception)
    rows = {row["question"]: row for row in json.loads(result.stdout)}
    assert {row["ci_kind"] for row in rows.values()} == {"posterior-beta(2,3)"}
    assert [rows["direct"]["ci_low"], rows["direct"]["ci_high"]] == pytest.approx(
        beta.ppf([0.025, 0.975], 2 + 9, 3 + 21), abs=1e-9)
    assert rows["never"]["n"] == 30 and 0 <= rows["never"]["ci_low"] < rows["never"]["ci_high"] < 1
    assert (rows["drug_use"]["ci_low"], rows["drug_use"]["ci_high"]) == binomial_interval(14, 32, 0.75, 0.25,
                                                                                           Prior(2, 3), 0.95)
    # The estimate and its standard error stay the unbiased ones.
    fixed = {row["question"]: row for row in json.loads(cli_runner.invoke(main, [
        "analyze", str(responses), "aggregate", "--codebook", str(book), "--format", "json"]).stdout)}
    for name, row in rows.items():
        assert (row["estimate"], row["std_error"], row["n"]) == (fixed[name]["estimate"], fixed[name]["std_error"],
                                                                 fixed[name]["n"])


R_TOLERANCE = 1e-8


@pytest.mark.parametrize("prior, arguments", [("jeffreys", []), ("beta(2,3)", ["2", "3", "0.9"])])
def test_the_r_script_reproduces_the_posterior_intervals(exported, prior, arguments):
    """docs/scripts/posterior.R, by base R's integrate() and uniroot(), gives every indicator row's ends within
    R_TOLERANCE of the product's (they agree to about 4e-12 over random designs up to ten million reports)."""
    rscript = shutil.which("Rscript")
    assert rscript, "Rscript is missing: install Debian's r-base-core and r-cran-jsonlite (.ci/run does)"
    level = arguments[2] if len(arguments) == 3 else "0.95"
    product = {(row["question"], row["option"]): row for row in json.loads(analyze(
        exported, "--format", "json", "--level", level, "--intervals", "posterior", "--prior",
        ",".join(arguments[:2]) or "jeffreys").stdout)}
    done = subprocess.run([rscript, "--vanilla", str(REPO / "docs" / "scripts" / "posterior.R"),
                           str(exported["responses"]), str(exported["codebook"]), *arguments],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    # Every row but the level-report number's (piecewise: a normal approximation the script leaves out).
    assert [(row["question"], row["option"]) for row in rows] == [key for key in product if key[0] != "income"]
    for row in rows:
        mine = product[(row["question"], row["option"])]
        assert row["ci_kind"] == mine["ci_kind"] == f"posterior-{prior}" and row["ci_level"] == level
        scale = 72 if row["question"] == "age" else 1  # a mean's ends are on its range [18, 90]
        assert abs(float(row["ci_low"]) - mine["ci_low"]) <= R_TOLERANCE * scale, row
        assert abs(float(row["ci_high"]) - mine["ci_high"]) <= R_TOLERANCE * scale, row
