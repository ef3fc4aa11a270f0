"""`ldp-survey analyze … regress` with exact number covariates (`codebook --exact-number`): the product's fit of a
forced-response item on age and sex equals an independent maximum-likelihood fit written here from the plain
likelihood P(report = 1 | x) = q + (p − q)·logistic(xβ) (Blair, Imai & Zhou 2015), maximised by Nelder–Mead and
numerical Newton steps with a numerical Hessian for the standard errors (coefficients 1e-6, standard errors 1e-4)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from survey.cli import main

from conftest import command_line, definition

# Forced response: answer truthfully w.p. 2/3, say yes w.p. 1/6, no w.p. 1/6: p = 5/6, q = 1/6.
P, Q = 5 / 6, 1 / 6
BETA = np.array([-2.0, 0.03, 0.6])  # intercept, per year of age, sex: m


def survey(tmp_path, n=3000, seed=7):
    """Write a simulated forced-response survey (age exact, sex exact) and its codebook; return the two paths and rows."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 81, n)
    sex = rng.choice(["f", "m"], size=n)
    truth = rng.random(n) < expit(BETA[0] + BETA[1] * age + BETA[2] * (sex == "m"))
    report = np.where(truth, rng.random(n) < P, rng.random(n) < Q).astype(int)
    responses = tmp_path / "survey.csv"
    responses.write_text("age,sex,drug_use\n" + "".join(f"{a},{s},{r}\n" for a, s, r in zip(age, sex, report)),
                         encoding="utf-8")
    return responses, age.astype(float), (sex == "m").astype(float), report


def negative_log_likelihood(beta, design, report):
    """The forced-response log-likelihood of every row, negated (no pattern counts: another code path)."""
    share = Q + (P - Q) * expit(design @ beta)
    return -float(np.sum(np.where(report == 1, np.log(share), np.log1p(-share))))


def numerical_hessian(function, point, step=1e-4):
    """Central second differences of a scalar function."""
    size = len(point)
    hessian = np.zeros((size, size))
    for i in range(size):
        for j in range(size):
            shifts = []
            for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                moved = point.copy()
                moved[i] += si * step
                moved[j] += sj * step
                shifts.append(function(moved))
            hessian[i, j] = (shifts[0] - shifts[1] - shifts[2] + shifts[3]) / (4 * step * step)
    return hessian


def independent_fit(age, male, report):
    """Maximum likelihood on centred age (then mapped back): Nelder–Mead, then Newton on numerical derivatives."""
    centre = age.mean()
    design = np.column_stack([np.ones_like(age), age - centre, male])
    objective = lambda beta: negative_log_likelihood(beta, design, report)  # noqa: E731
    beta = minimize(objective, np.zeros(3), method="Nelder-Mead",
                    options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000, "maxfev": 40000}).x
    for _ in range(20):
        gradient = np.array([(objective(beta + h) - objective(beta - h)) / 2e-6 for h in np.eye(3) * 1e-6])
        step = np.linalg.solve(numerical_hessian(objective, beta), gradient)
        beta = beta - step
        if np.max(np.abs(step)) < 1e-12:
            break
    covariance = np.linalg.inv(numerical_hessian(objective, beta))
    # Back to age itself: β0 = β0' − β1·centre; Var(β0) = Var(β0') − 2·centre·Cov + centre²·Var(β1).
    mapping = np.array([[1, -centre, 0], [0, 1, 0], [0, 0, 1]])
    return mapping @ beta, np.sqrt(np.diag(mapping @ covariance @ mapping.T))


def test_exact_number_covariates_reproduce_an_independent_maximum_likelihood_fit(cli_runner, tmp_path):
    responses, age, male, report = survey(tmp_path)
    book = tmp_path / "forced.json"
    made = cli_runner.invoke(main, ["codebook", "--binary", "drug_use", "5/6", "1/6", "--exact-number", "age",
                                    "--exact", "sex", "-o", str(book)])
    assert made.exit_code == 0, made.output
    result = cli_runner.invoke(main, ["analyze", str(responses), "regress", "drug_use", "age", "sex",
                                      "--codebook", str(book), "--format", "json"])
    assert result.exit_code == 0, result.output
    fit = json.loads(result.stdout)
    assert [term["term"] for term in fit["terms"]] == ["(intercept)", "age", "sex: m"]
    assert fit["model"] == "logistic" and fit["n"] == len(report) and "observed information" in fit["method"]
    estimates = np.array([term["estimate"] for term in fit["terms"]])
    errors = np.array([term["std_error"] for term in fit["terms"]])
    expected, expected_errors = independent_fit(age, male, report)
    np.testing.assert_allclose(estimates, expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(errors, expected_errors, rtol=0, atol=1e-4)
    # The likelihood-ratio test against the intercept-only model, from the same independent likelihood.
    null = minimize(lambda b: negative_log_likelihood(b, np.ones((len(age), 1)), report), np.zeros(1),
                    method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12}).fun
    full = negative_log_likelihood(expected, np.column_stack([np.ones_like(age), age, male]),
                                   report)
    assert abs(fit["lr_statistic"] - 2 * (null - full)) < 1e-5


def test_the_table_names_the_method_and_reads_a_number_per_unit(cli_runner, tmp_path):
    responses, *_ = survey(tmp_path, n=800, seed=8)
    book = tmp_path / "forced.json"
    assert cli_runner.invoke(main, ["codebook", "--binary", "drug_use", "5/6", "1/6", "--exact-number", "age",
                                    "-o", str(book)]).exit_code == 0
    result = cli_runner.invoke(main, ["analyze", str(responses), "regress", "drug_use", "age", "--codebook", str(book)])
    assert result.exit_code == 0, result.output
    assert "Method: exact covariates entered as given" in result.stdout
    assert "a number's per unit" in result.stdout and "likelihood-ratio test" in result.stdout


@pytest.mark.parametrize("cell, message", [("forty", "'age' is a number column, but holds 'forty'"),
                                           ("inf", "holds a value that is not finite")])
def test_a_bad_number_is_refused_with_the_reason(cli_runner, tmp_path, cell, message):
    responses = tmp_path / "survey.csv"
    responses.write_text("age,drug_use\n" + "".join(f"{20 + i % 40},{i % 2}\n" for i in range(60)) + f"{cell},1\n",
                         encoding="utf-8")
    book = tmp_path / "forced.json"
    assert cli_runner.invoke(main, ["codebook", "--binary", "drug_use", "5/6", "1/6", "--exact-number", "age",
                                    "-o", str(book)]).exit_code == 0
    result = cli_runner.invoke(main, ["analyze", str(responses), "regress", "drug_use", "age", "--codebook", str(book)])
    assert result.exit_code == 1 and message in result.stderr and "Traceback" not in result.output, result.output


def test_a_constant_number_is_refused_with_the_reason(cli_runner, tmp_path):
    responses = tmp_path / "survey.csv"
    responses.write_text("age,drug_use\n" + "".join(f"30,{i % 2}\n" for i in range(60)), encoding="utf-8")
    book = tmp_path / "forced.json"
    assert cli_runner.invoke(main, ["codebook", "--binary", "drug_use", "5/6", "1/6", "--exact-number", "age",
                                    "-o", str(book)]).exit_code == 0
    result = cli_runner.invoke(main, ["analyze", str(responses), "regress", "drug_use", "age", "--codebook", str(book)])
    assert result.exit_code == 1 and "cannot be told apart" in result.stderr, result.output


SCRIPTS = Path(__file__).resolve().parents[2] / "docs" / "scripts"


@pytest.mark.parametrize("command", ["python", "R"])
def test_the_docs_scripts_reproduce_the_products_numbers(cli_runner, tmp_path, command):
    """docs/scripts/number_covariates.{py,R} (the how-to's): coefficients to 1e-6, standard errors to 1e-4."""
    responses, *_ = survey(tmp_path, n=2000, seed=9)
    book = tmp_path / "forced.json"
    assert cli_runner.invoke(main, ["codebook", "--binary", "drug_use", "5/6", "1/6", "--exact-number", "age",
                                    "--exact", "sex", "-o", str(book)]).exit_code == 0
    product = json.loads(cli_runner.invoke(main, ["analyze", str(responses), "regress", "drug_use", "age", "sex",
                                                  "--codebook", str(book), "--format", "json"]).stdout)
    if command == "R":
        rscript = shutil.which("Rscript")
        assert rscript, "Rscript is missing: install Debian's r-base-core and r-cran-jsonlite (.ci/run does)"
        run = [rscript, "--vanilla", str(SCRIPTS / "number_covariates.R")]
    else:
        run = [sys.executable, "-I", str(SCRIPTS / "number_covariates.py")]
    result = subprocess.run([*run, str(responses), str(book), "drug_use", "age", "sex"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [row["term"] for row in rows] == [term["term"] for term in product["terms"]]
    for row, term in zip(rows, product["terms"]):
        assert abs(float(row["estimate"]) - term["estimate"]) < 1e-6, (row, term)
        assert abs(float(row["std_error"]) - term["std_error"]) < 1e-4, (row, term)


# A yes/no outcome and a randomized number covariate (piecewise); the web's regression tests add a second number.
NUMBERS = "\n" + definition("years_ill")


@pytest.mark.slow
def test_a_randomized_number_covariate_from_the_files_is_the_databases(cli_runner, tmp_path):
    """`analyze` on an exported survey fits the same calibrated model as `regress` on the database."""
    db, definition = tmp_path / "surveys.db", tmp_path / "numbers.toml"
    definition.write_text(NUMBERS, encoding="utf-8")

    run = command_line(db, cli_runner)
    run("create", definition)
    run("simulate", "numbers-2026", "--n", 3000, "--seed", 6, "--truth", "years=5")
    run("export", "numbers-2026", "--responses", "--sandbox", "-o", tmp_path / "responses.csv")
    run("export", "numbers-2026", "--codebook", "--sandbox", "-o", tmp_path / "codebook.json")
    expected = json.loads(run("regress", "numbers-2026", "ill", "years", "--sandbox", "--format", "json"))
    files = json.loads(run("analyze", tmp_path / "responses.csv", "regress", "ill", "years",
                           "--codebook", tmp_path / "codebook.json", "--format", "json"))
    assert files["method"].startswith("regression calibration") and files["per_unit"] == ["years"]
    for mine, theirs in zip(files["terms"], expected["terms"]):
        assert mine["term"] == theirs["term"]
        for key in ("estimate", "std_error", "ci_low", "ci_high"):
            assert abs(mine[key] - theirs[key]) <= 1e-9 * max(1.0, abs(theirs[key])), (key, mine, theirs)
