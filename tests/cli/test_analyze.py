"""Re-analysis from files alone: `ldp-survey analyze` gives the dashboard's numbers from responses.csv and the
codebook (the same text, every number equal to its printed precision: the two paths may sum in another order), in an interpreter that never opens a database; codebooks of other designs
(`ldp-survey codebook --binary`) give Warner's estimates and regressions with exact covariates."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import beta

from survey.cli import main
from survey.core.planning import power_one_sample

from conftest import REPO, command_line
from test_analysis_scripts import EVERY_KIND

NO_DATABASE = ("import sqlite3, sys\n"
               "def refuse(*args, **kwargs):\n"
               "    raise SystemExit('analyze tried to open a database')\n"
               "sqlite3.connect = refuse\n"
               "from survey.cli import main\n"
               "sys.argv[0] = 'ldp-survey'\n"
               "main()\n")
SMOKING = (REPO / "examples" / "smoking.toml").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Two surveys with simulated respondents in their sandbox, exported; and a runner of the CLI on the database."""
    directory = tmp_path_factory.mktemp("analyze")
    run = command_line(directory / "surveys.db")
    for slug, text in (("smoking-2026", SMOKING), ("every-mechanism", EVERY_KIND)):
        (directory / f"{slug}.toml").write_text(text, encoding="utf-8")
        run("create", directory / f"{slug}.toml")
    run("simulate", "smoking-2026", "--n", 6000, "--seed", 3, "--truth", "smoker=0.3",
        "--given", "lung_disease|smoker=1:0.4", "--given", "lung_disease|smoker=0:0.1")
    run("simulate", "every-mechanism", "--n", 3000, "--seed", 4)
    for slug in ("smoking-2026", "every-mechanism"):
        run("export", slug, "--responses", "--sandbox", "-o", directory / f"{slug}.csv")
        run("export", slug, "--codebook", "--sandbox", "-o", directory / f"{slug}.json")
    return {"dir": directory, "run": run}


NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def assert_same_output(actual: str, expected: str):
    """Assert two outputs are the same text with every number equal within relative 1e-5 (one unit in the 6th digit).

    The file path and the database path sum the same reports in another order, so a float's last bits
    (and, near a rounding boundary, its last printed digit) may differ between machines.
    """
    actual, expected = actual.replace("\r\n", "\n"), expected.replace("\r\n", "\n")
    assert NUMBER.sub("#", actual) == NUMBER.sub("#", expected)
    for got, want in zip(NUMBER.findall(actual), NUMBER.findall(expected), strict=True):
        assert math.isclose(float(got), float(want), rel_tol=1e-5, abs_tol=1e-9), (got, want)


def analyze(files, slug: str, *args) -> subprocess.CompletedProcess:
    """Run `ldp-survey analyze` on a survey's exported files in a fresh interpreter where opening a database fails."""
    directory = files["dir"]
    return subprocess.run([sys.executable, "-c", NO_DATABASE, "analyze", str(directory / f"{slug}.csv"), *args,
                           "--codebook", str(directory / f"{slug}.json")],
                          capture_output=True, text=True, timeout=300, cwd=directory,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "LDP_SURVEY_DB": "/nonexistent/x.db"})


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["csv", "json", "table"])
@pytest.mark.parametrize("slug", ["smoking-2026", "every-mechanism"])
def test_aggregate_from_the_files_is_the_dashboards_to_printed_precision(files, slug, fmt):
    result = analyze(files, slug, "aggregate", "--format", fmt, "--level", "0.9")
    assert result.returncode == 0, result.stderr
    assert_same_output(result.stdout, files["run"]("aggregate", slug, "--sandbox", "--format", fmt, "--level", "0.9"))


@pytest.mark.slow
@pytest.mark.parametrize("a, b", [("smoker", "lung_disease"), ("cigarettes", "lung_disease"), ("smoker", "age")])
def test_crosstab_from_the_files_is_the_dashboards_to_printed_precision(files, a, b):
    for fmt in ("csv", "json"):
        result = analyze(files, "smoking-2026", "crosstab", a, b, "--format", fmt)
        assert result.returncode == 0, result.stderr
        assert_same_output(result.stdout, files["run"]("crosstab", "smoking-2026", a, b, "--sandbox", "--format", fmt))


def test_regression_from_the_files_is_the_databases_to_printed_precision_and_covers_the_truth(files):
    result = analyze(files, "smoking-2026", "regress", "lung_disease", "smoker", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert_same_output(result.stdout, files["run"]("regress", "smoking-2026", "lung_disease", "smoker", "--sandbox",
                                                   "--format", "json"))
    fit = json.loads(result.stdout)
    smoker = fit["terms"][1]
    truth = (0.4 / 0.6) / (0.1 / 0.9)  # the simulated odds ratio, 6
    assert smoker["term"] == "smoker: yes" and smoker["ci_low"] <= truth <= smoker["ci_high"], smoker
    assert fit["n"] == 6000 and fit["lr_df"] == 1 and 0 <= fit["lr_p_value"] <= 1


@pytest.mark.slow
def test_the_files_must_agree_and_errors_name_the_row_and_column(files, tmp_path):
    directory = files["dir"]
    lines = (directory / "smoking-2026.csv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    cells = lines[1].split(",")
    cells[header.index("smoker")] = "2"
    broken = tmp_path / "broken.csv"
    broken.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "survey", "analyze", str(broken), "aggregate",
                             "--codebook", str(directory / "smoking-2026.json")],
                            capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin"})
    assert result.returncode == 1 and "row 2" in result.stderr and "'smoker'" in result.stderr, result.stderr
    other = subprocess.run([sys.executable, "-m", "survey", "analyze", str(directory / "every-mechanism.csv"),
                            "aggregate", "--codebook", str(directory / "smoking-2026.json")],
                           capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin"})
    assert other.returncode == 1 and "another survey" in other.stderr, other.stderr


def test_an_asymmetric_forced_response_design_by_hand(cli_runner, tmp_path):
    """Forced response: truthful w.p. 0.7, a forced yes w.p. 0.2, a forced no w.p. 0.1, so p = 0.9, q = 0.2 and the
    realised ε is ln max(0.9/0.2, 0.8/0.1) = ln 8. 430 yes among 1,000 reports (and 20 items not answered)."""
    book_path = tmp_path / "forced.json"
    result = cli_runner.invoke(main, ["codebook", "--binary", "cheated", "0.9", "1/5", "-o", str(book_path)])
    assert result.exit_code == 0, result.output
    assert "cheated: realised epsilon 2.08\n" in result.stderr  # ln 8 = 2.0794…, rounded up
    book = json.loads(book_path.read_text(encoding="utf-8"))
    assert book["columns"][0]["epsilon"] == pytest.approx(math.log(8), rel=1e-15)
    assert (book["estimands"][0]["p_exact"], book["estimands"][0]["q_exact"]) == ("9/10", "1/5")
    responses = tmp_path / "survey.csv"
    responses.write_text("id,cheated\n" + "".join(f"{i},{int(i < 430) if i < 1000 else ''}\n" for i in range(1020)),
                         encoding="utf-8")
    result = cli_runner.invoke(main, ["analyze", str(responses), "aggregate", "--codebook", str(book_path),
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)[0]
    share = 0.43
    assert row["n"] == 1000 and row["noisy_share"] == share
    assert row["estimate"] == pytest.approx((0.43 - 0.2) / 0.7, rel=1e-12)  # 0.328571…
    assert row["std_error"] == pytest.approx(math.sqrt(0.43 * 0.57 / 999) / 0.7, rel=1e-12)
    low, high = beta.ppf(0.025, 430, 571), beta.ppf(0.975, 431, 570)
    assert row["ci_low"] == pytest.approx((low - 0.2) / 0.7, rel=1e-9)
    assert row["ci_high"] == pytest.approx((high - 0.2) / 0.7, rel=1e-9)
    # The power the data had to show that the share is not 0.2 if it were 0.3, at its 1,000 reports.
    result = cli_runner.invoke(main, ["analyze", str(responses), "power", "cheated", "0.2", "0.3",
                                      "--codebook", str(book_path), "--format", "json"])
    assert result.exit_code == 0, result.output
    power = json.loads(result.stdout)
    assert power["respondents"] == 1000 and power["p"] == 0.9 and power["q"] == 0.2
    assert power["power"] == pytest.approx(power_one_sample(0.9, 0.2, null=0.2, alternative=0.3, n=1000), rel=1e-12)


def test_a_crosswise_design_coded_same_different_by_hand(cli_runner, tmp_path):
    """GLMMRR's crosswise dice-game design: P(same | cheated) = 0.1971293 < P(same | honest) = 0.8028707, so the
    estimator (ā − q)/(p − q) decreases in ā and the interval's ends swap; ε = ln(0.8028707/0.1971293)."""
    book_path = tmp_path / "crosswise.json"
    result = cli_runner.invoke(main, ["codebook", "--binary", "cheated", "0.1971293", "0.8028707", "-o", str(book_path)])
    assert result.exit_code == 0, result.output
    assert "cheated: realised epsilon 1.405" in result.stderr  # ln(0.8028707/0.1971293) = 1.40433…, rounded up
    responses = tmp_path / "dice.csv"
    responses.write_text("cheated\n" + "1\n" * 344 + "0\n" * 229, encoding="utf-8")
    result = cli_runner.invoke(main, ["analyze", str(responses), "aggregate", "--codebook", str(book_path),
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)[0]
    assert row["epsilon"] == pytest.approx(math.log(0.8028707 / 0.1971293), rel=1e-12)
    assert row["n"] == 573 and row["estimate"] == pytest.approx(0.334337, abs=1e-6)  # (344/573 − q)/(p − q)
    assert row["std_error"] == pytest.approx(0.033811, abs=1e-6)  # sqrt(ā(1 − ā)/572)/|p − q|
    low, high = beta.ppf(0.025, 344, 230), beta.ppf(0.975, 345, 229)
    assert row["ci_low"] == pytest.approx((high - 0.8028707) / (0.1971293 - 0.8028707), rel=1e-9)
    assert row["ci_high"] == pytest.approx((low - 0.8028707) / (0.1971293 - 0.8028707), rel=1e-9)
    power = cli_runner.invoke(main, ["analyze", str(responses), "power", "cheated", "0.2", "0.35",
                                     "--codebook", str(book_path), "--format", "json"])
    assert power.exit_code == 0 and 0 < json.loads(power.stdout)["power"] < 1, power.output


def test_a_regression_on_another_design_with_exact_covariates_recovers_the_truth(cli_runner, tmp_path):
    """Unrelated question (t = 0.7 sensitive, 0.3 an unrelated question with yes-rate 0.5): p = 0.85, q = 0.15;
    sex asked directly; the true odds ratio of women to men is 2.5."""
    rng = np.random.default_rng(11)
    n = 20000
    sex = rng.choice(["f", "m"], size=n)
    truth = np.where(sex == "f", 0.25, 0.25 / (2.5 * 0.75 + 0.25))
    true_ratio = (0.25 / 0.75) / (truth[sex == "m"][0] / (1 - truth[sex == "m"][0]))
    answer = rng.random(n) < truth
    asked = rng.random(n) < 0.7
    report = np.where(asked, answer, rng.random(n) < 0.5).astype(int)
    responses = tmp_path / "survey.csv"
    responses.write_text("sex,used\n" + "".join(f"{s},{r}\n" for s, r in zip(sex, report)), encoding="utf-8")
    book = tmp_path / "unrelated.json"
    assert cli_runner.invoke(main, ["codebook", "--binary", "used", "0.85", "0.15", "--exact", "sex",
                                    "-o", str(book)]).exit_code == 0
    result = cli_runner.invoke(main, ["analyze", str(responses), "regress", "used", "sex", "--codebook", str(book),
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    fit = json.loads(result.stdout)
    term = fit["terms"][1]
    assert term["term"] == "sex: m" and fit["n"] == n
    assert term["ci_low"] <= 1 / true_ratio <= term["ci_high"], (term, 1 / true_ratio)


@pytest.mark.parametrize("args, message", [
    (["--binary", "x", "0.5", "1/2"], "carry no information"),
    (["--binary", "x", "1e-400", "0.5"], "too close to 0"),
    (["--binary", "x", "1.2", "0.1"], "must be in [0, 1]"),
    (["--binary", "x", "abc", "0.1"], "is not a probability"),
    ([], "describe at least one randomized column"),
])
def test_a_bad_design_is_refused_with_the_reason(cli_runner, args, message):
    result = cli_runner.invoke(main, ["codebook", *args])
    assert result.exit_code in (1, 2) and message in result.stderr, result.stderr


def test_a_numbers_mean_model_from_the_files_is_the_databases_to_printed_precision(files):
    result = analyze(files, "smoking-2026", "regress", "age", "smoker", "lung_disease", "--format", "csv")
    assert result.returncode == 0, result.stderr
    assert_same_output(result.stdout, files["run"]("regress", "smoking-2026", "age", "smoker",
                                                   "lung_disease", "--sandbox", "--format", "csv"))
    assert result.stdout.startswith("term,estimate,std_error,z,p_value,ci_low,ci_high,ci_level")


def test_a_large_file_shows_its_progress_on_stderr_and_keeps_stdout_clean(files, cli_runner, monkeypatch):
    from survey.cli import analysis

    directory = files["dir"]
    args = ["analyze", str(directory / "smoking-2026.csv"), "aggregate", "--codebook",
            str(directory / "smoking-2026.json"), "--format", "csv"]
    quiet = cli_runner.invoke(main, args)
    monkeypatch.setattr(analysis, "PROGRESS_FROM", 10)
    shown = cli_runner.invoke(main, args)
    assert quiet.exit_code == shown.exit_code == 0
    assert "Reading smoking-2026.csv" in shown.stderr and "Reading" not in quiet.stderr
    assert shown.stdout == quiet.stdout
