"""`analyze aggregate --weights/--calibrate/--out`: weighted estimates from the files, through the chunked reader and
row by row alike, stated with their weighting; clean errors naming the row; the written codebook reads back."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from survey.cli import files as files_module
from survey.cli import main
from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.core.reanalysis import aggregate_files
from survey.core.simulate import complete_truth, simulate_answers
from survey.core.weighted_rows import weighted_files
from survey.core.weighting import Margin
from survey.exports.codebook import codebook
from survey.exports.export import responses_csv

from test_analysis_scripts import EVERY_KIND, SAMPLED

REPORTS = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1]
WEIGHTS = [1.0, 2.0, 0.5, 3.0, 1.5, 2.5, 1.0, 4.0, 0.25, 2.0]


def _run(*args):
    result = CliRunner().invoke(main, ["analyze", *map(str, args)], catch_exceptions=False)
    return result


@pytest.fixture()
def forced(tmp_path):
    """A forced-response yes/no item (p = 5/6, q = 1/6), a second one, and design weights."""
    book = tmp_path / "forced.json"
    assert CliRunner().invoke(main, ["codebook", "--binary", "cheated", "5/6", "1/6", "--binary", "lied", "3/4",
                                     "1/4", "-o", str(book)]).exit_code == 0
    lines = ["cheated,lied,w"] + [f"{r},{1 - r if i % 3 else r},{w!r}"
                                  for i, (r, w) in enumerate(zip(REPORTS, WEIGHTS))]
    responses = tmp_path / "survey.csv"
    responses.write_text("\n".join(lines) + "\n")
    return responses, book


def test_a_weighted_estimate_and_its_linearised_se_match_a_hand_computation(forced):
    responses, book = forced
    result = _run(responses, "aggregate", "--codebook", book, "--weights", "w", "--format", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    row = next(row for row in out["rows"] if row["question"] == "cheated")
    p, q = 5 / 6, 1 / 6
    z = [(r - q) / (p - q) for r in REPORTS]
    total = sum(WEIGHTS)
    theta = sum(w * v for w, v in zip(WEIGHTS, z)) / total
    u = [w * (v - theta) / total for w, v in zip(WEIGHTS, z)]
    n = len(u)
    se = math.sqrt(n / (n - 1) * sum((x - sum(u) / n) ** 2 for x in u))
    assert row["estimate"] == pytest.approx(theta, abs=1e-9)
    assert row["std_error"] == pytest.approx(se, abs=1e-9)
    assert row["effective_n"] == pytest.approx(total ** 2 / sum(w * w for w in WEIGHTS), abs=1e-9)
    weighting = out["weighting"]
    assert weighting["weights"] == "w" and weighting["rows"] == 10 and weighting["calibration"] == []
    assert "Wolter 2007" in weighting["std_error"] and "assume the stated design" in weighting["assumption"]


def test_the_table_and_csv_state_the_weighting(forced):
    responses, book = forced
    table = _run(responses, "aggregate", "--codebook", book, "--weights", "w").output
    assert "Weighted by the weights in column 'w': 10 rows" in table and "Kish's effective sample size" in table
    assert "assume the stated design" in table
    text = _run(responses, "aggregate", "--codebook", book, "--weights", "w", "--calibrate", "lied=0.4",
                "--format", "csv").output
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [row["question"] for row in rows] == ["cheated", "lied"]
    assert rows[1]["estimate"] == "0.400000" and rows[1]["calibrated"] == "yes" and rows[1]["std_error"] == "0.000000"
    assert {row["weights"] for row in rows} == {"w"} and {row["calibration"] for row in rows} == {"lied=yes:0.4"}


@pytest.mark.parametrize("cell, words", [("", "the weight is missing"), ("-1.5", "'-1.5' is negative"),
                                         ("heavy", "'heavy' is not a number"), ("0", "'0' is zero")])
def test_a_bad_weight_is_refused_naming_its_row(forced, cell, words):
    responses, book = forced
    lines = responses.read_text().splitlines()
    cells = lines[4].split(",")
    cells[2] = cell
    lines[4] = ",".join(cells)
    responses.write_text("\n".join(lines) + "\n")
    result = _run(responses, "aggregate", "--codebook", book, "--weights", "w")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"row 5, column 'w': {words}" in result.output.replace("the weight '", "'")


@pytest.mark.parametrize("args, words", [
    (["--weights", "weight"], "no weight column 'weight'; their columns are cheated, lied, w"),
    (["--weights", "lied"], "'lied' is a column of the codebook's questions, not a weight"),
    (["--calibrate", "cheated=1.5"], "the value must lie in [0, 1]"),
    (["--calibrate", "nobody=0.5"], "calibrate to 'nobody': it is not a question of the codebook"),
    (["--calibrate", "cheated"], "--calibrate takes QUESTION=MARGINS"),
    (["--calibrate", "cheated=yes:much"], "'much' is not a number"),
    (["--calibrate", "cheated=0.2", "--calibrate", "cheated=0.3"], "is given twice"),
])
def test_weighting_mistakes_are_clean_errors(forced, args, words):
    responses, book = forced
    result = _run(responses, "aggregate", "--codebook", book, *args)
    assert result.exit_code in (1, 2) and "Traceback" not in result.output
    assert words in result.output


def test_the_weights_go_with_aggregate_and_out_with_weights(forced, tmp_path):
    responses, book = forced
    result = _run(responses, "power", "cheated", "0.1", "0.2", "--codebook", book, "--weights", "w")
    assert result.exit_code == 2 and "go with aggregate only" in result.output
    result = _run(responses, "aggregate", "--codebook", book, "--out", tmp_path / "out")
    assert result.exit_code == 2 and "give --weights or --calibrate" in result.output


def _design_files(text: str, rows: int = 1200, seed: int = 11):
    design = build_design(parse_definition_toml(text, source="test"))
    rng = np.random.default_rng(seed)
    answers = simulate_answers(design, complete_truth(design, {}, rng), rows, rng)
    data = responses_csv(design, [{"id": index, "received_day": "2026-11-27", "answers": answer}
                                  for index, answer in enumerate(answers, start=1)])
    table = [row for row in csv.reader(io.StringIO(data)) if row]
    table[0] += ["w", "region", "school"]
    for number, row in enumerate(table[1:]):
        row += [repr(round(float(rng.uniform(0.5, 3.0)), 4)), "north" if number % 3 else "south",
                f"school {number % 40}"]
    return design, codebook(design), table


@pytest.mark.parametrize("text", [EVERY_KIND, SAMPLED], ids=["every-mechanism", "sampled"])
def test_equal_weights_give_the_unweighted_estimates_of_every_mechanism(text):
    _, book, table = _design_files(text)
    header, rows = table[0], table[1:]
    plain = {(row.question, row.option): row for row in aggregate_files(book, header, rows, level=0.95)}
    _, weighted, _, _ = weighted_files(book, header, rows, column=None, level=0.95)
    checked = 0
    for row in weighted:
        reference = plain[(row.question, row.option)]
        assert row.n == reference.n
        assert row.estimate == pytest.approx(reference.estimate, abs=1e-9), (row.question, row.option)
        # A share's unweighted error is the sample one where its estimate is feasible (and all rows answered).
        if row.kind != "number" and 0 <= row.estimate <= 1 and row.n == len(rows):
            assert row.std_error == pytest.approx(reference.std_error, abs=1e-12), (row.question, row.option)
            checked += 1
    assert checked >= (20 if text == EVERY_KIND else 0)


def _write(tmp_path, table, crlf=False):
    path = tmp_path / "responses.csv"
    path.write_bytes(("\r\n" if crlf else "\n").join(",".join(row) for row in table).encode() + b"\n")
    return path


def test_the_chunked_reading_gives_the_row_by_row_weighted_numbers(tmp_path, monkeypatch):
    _, book, table = _design_files(SAMPLED)
    table[300][0] = '"' + table[300][0] + '"'  # a quoted cell: that chunk is read row by row
    table[400][-3] = "2e0"
    path = _write(tmp_path, table, crlf=True)
    monkeypatch.setattr(files_module, "CHUNK", 2000)
    margins = [Margin("colour", "red", 0.3), Margin("colour", "green", 0.3), Margin("smoker", None, 0.2)]
    results = []
    for slow in (False, True):
        with path.open("rb") as handle:
            header, rows = files_module.open_responses(handle, path)
            results.append(weighted_files(book, header, iter(rows) if slow else rows, column="w", margins=margins,
                                          strata="region", clusters="school"))
    (weighting, chunked, given, final), (_, by_row, given_slow, final_slow) = results
    assert chunked == by_row and (given == given_slow).all() and (final == final_slow).all()
    assert given[399] == 2.0 and weighting.adjustment[0] < 1 < weighting.adjustment[1]
    assert weighting.strata == "region" and weighting.clusters == "school"
    estimates = {(row.question, row.option): row.estimate for row in chunked}
    assert estimates[("colour", "red")] == pytest.approx(0.3, abs=1e-9)
    assert estimates[("colour", "green")] == pytest.approx(0.3, abs=1e-9)
    assert estimates[("smoker", "yes")] == pytest.approx(0.2, abs=1e-9)


def test_a_bad_weight_deep_in_a_chunked_file_is_refused_as_row_by_row(tmp_path, monkeypatch):
    _, book, table = _design_files(SAMPLED)
    table[1000][-3] = "-3"
    path = _write(tmp_path, table)
    monkeypatch.setattr(files_module, "CHUNK", 2048)
    codebook_path = tmp_path / "codebook.json"
    codebook_path.write_text(json.dumps(book))
    result = _run(path, "aggregate", "--codebook", codebook_path, "--weights", "w")
    assert result.exit_code == 1
    assert "row 1001, column 'w': the weight '-3' is negative" in result.output


def test_calibration_margins_from_a_file_and_the_out_files_read_back(tmp_path):
    design, book, table = _design_files(SAMPLED)
    path = _write(tmp_path, table)
    codebook_path = tmp_path / "codebook.json"
    codebook_path.write_text(json.dumps(book))
    margins = tmp_path / "margins.csv"
    margins.write_text("option,share\nred,0.25\ngreen,0.5\nblue,0.25\n")
    out = tmp_path / "weighted"
    result = _run(path, "aggregate", "--codebook", codebook_path, "--weights", "w", "--calibrate",
                  f"colour={margins}", "--out", out, "--format", "json")
    assert result.exit_code == 0, result.output
    rows = {(row["question"], row["option"]): row for row in json.loads(result.stdout)["rows"]}
    assert rows[("colour", "green")]["estimate"] == pytest.approx(0.5, abs=1e-9)
    written = json.loads((out / "codebook.json").read_text())
    assert written["weighting"]["weights"] == "w"
    assert written["weighting"]["calibration"][1] == {"question": "colour", "option": "green", "value": 0.5}
    assert "raking" in written["weighting"]["calibration_method"]
    weights = list(csv.DictReader(io.StringIO((out / "weights.csv").read_text())))
    assert len(weights) == 1200 and weights[0]["row"] == "2" and float(weights[0]["weight"]) == float(table[1][-3])
    assert (out / "estimates.csv").read_text().startswith("question,option,kind,mechanism,epsilon,n,effective_n")
    again = _run(path, "aggregate", "--codebook", out / "codebook.json", "--format", "csv")
    assert again.exit_code == 0, again.output


def test_a_choice_needs_option_shares_that_sum_to_one(tmp_path):
    _, book, table = _design_files(SAMPLED, rows=200)
    path = _write(tmp_path, table)
    codebook_path = tmp_path / "codebook.json"
    codebook_path.write_text(json.dumps(book))
    result = _run(path, "aggregate", "--codebook", codebook_path, "--calibrate", "colour=0.3")
    assert result.exit_code == 1 and "give each share as OPTION:SHARE" in result.output
    result = _run(path, "aggregate", "--codebook", codebook_path, "--calibrate", "colour=red:0.5,green:0.3,blue:0.3")
    assert result.exit_code == 1 and "sum to 1.1, not 1" in result.output


def test_the_other_designs_codebook_with_its_weighting_reads_back(forced, tmp_path):
    responses, book = forced
    out = tmp_path / "out"
    result = _run(responses, "aggregate", "--codebook", book, "--weights", "w", "--out", out)
    assert result.exit_code == 0, result.output
    again = _run(responses, "aggregate", "--codebook", out / "codebook.json", "--weights", "w", "--format", "csv")
    assert again.exit_code == 0, again.output
    assert again.stdout_bytes == (out / "estimates.csv").read_bytes()


@pytest.mark.slow
def test_the_docs_pandas_script_reproduces_the_weighted_estimates(tmp_path):
    """docs/scripts/weighted.py (pandas alone) gives every weighted estimate, standard error and effective n."""
    import subprocess
    import sys

    from conftest import REPO

    _, book, table = _design_files(EVERY_KIND, rows=600)
    path = _write(tmp_path, table)
    codebook_path = tmp_path / "codebook.json"
    codebook_path.write_text(json.dumps(book))
    script = REPO / "docs" / "scripts" / "weighted.py"
    done = subprocess.run([sys.executable, str(script), str(path), str(codebook_path), "w"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    theirs = {(row["question"], row["option"]): row for row in csv.DictReader(io.StringIO(done.stdout))}
    result = _run(path, "aggregate", "--codebook", codebook_path, "--weights", "w", "--format", "json")
    ours = json.loads(result.stdout)["rows"]
    assert len(ours) == len(theirs) > 80
    for row in ours:
        other = theirs[(row["question"], row["option"])]
        assert int(other["n"]) == row["n"]
        for key in ("estimate", "std_error", "effective_n"):
            assert float(other[key]) == pytest.approx(row[key], abs=1e-9), (row["question"], row["option"], key)


def test_strata_and_clusters_change_only_the_standard_errors(tmp_path):
    """The schools here are only labels (the answers do not depend on them), so the clustered standard
    errors differ from the simple ones but stay of their size; the table and the CSV name the design."""
    _, book, table = _design_files(SAMPLED)
    path = _write(tmp_path, table)
    codebook_path = tmp_path / "codebook.json"
    codebook_path.write_text(json.dumps(book))
    simple = _run(path, "aggregate", "--codebook", codebook_path, "--weights", "w", "--format", "json")
    design = _run(path, "aggregate", "--codebook", codebook_path, "--weights", "w", "--strata", "region",
                  "--clusters", "school", "--format", "json")
    for plain, clustered in zip(json.loads(simple.stdout)["rows"], json.loads(design.stdout)["rows"]):
        assert clustered["estimate"] == plain["estimate"]
        assert 0.5 < clustered["std_error"] / plain["std_error"] < 2
    table_text = _run(path, "aggregate", "--codebook", codebook_path, "--strata", "region", "--clusters",
                      "school").output
    assert "strata in column 'region', clusters in column 'school'" in table_text
    assert "clusters (column 'school') drawn independently" in table_text
    result = _run(path, "aggregate", "--codebook", codebook_path, "--strata", "w", "--weights", "w")
    assert result.exit_code == 1 and "must be different columns" in result.output


def test_rows_among_those_a_branched_question_applies_to_are_weighted_too():
    """With equal weights the estimates among those a question applies to are the unweighted ones; their
    linearised standard errors lie below the unweighted rows' Cauchy–Schwarz bounds; weights move them."""
    from conftest import REPO

    _, book, table = _design_files((REPO / "examples" / "smoking-branched.toml").read_text(), rows=3000)
    header, rows = table[0], table[1:]
    plain = {(row.question, row.option): row for row in aggregate_files(book, header, rows, level=0.95)}
    _, equal, _, _ = weighted_files(book, header, rows, column=None)
    assert [(row.question, row.option) for row in equal] == list(plain)
    applied = [row for row in equal if row.option.endswith("(among those it applies to)")]
    assert {row.question for row in applied} == {"cigarettes", "quit"}
    for row in applied:
        reference = plain[(row.question, row.option)]
        assert row.estimate == pytest.approx(reference.estimate, abs=1e-9)
        assert row.std_error <= reference.std_error
    _, weighted, _, _ = weighted_files(book, header, rows, column="w")
    assert [row.estimate for row in weighted] != [row.estimate for row in equal]


@pytest.mark.parametrize("text, words", [("option,share\nyes\n", "line 2 needs an option and a share"),
                                         ("option,share\n", "it gives no margins"),
                                         ("label,value\nyes,0.2\n", "the first line must name the columns"),
                                         ("option,share\nyes,lots\n", "'lots' is not a number")])
def test_a_bad_margins_file_is_a_clean_error(forced, tmp_path, text, words):
    responses, book = forced
    margins = tmp_path / "margins.csv"
    margins.write_text(text)
    result = _run(responses, "aggregate", "--codebook", book, "--calibrate", f"cheated={margins}")
    assert result.exit_code in (1, 2) and "Traceback" not in result.output
    assert words in result.output
    missing = _run(responses, "aggregate", "--codebook", book, "--calibrate", f"cheated={tmp_path / 'none.csv'}")
    assert missing.exit_code == 1 and "cannot read the margins file" in missing.output


def test_identical_reports_give_the_whole_range_not_a_point(tmp_path):
    """Every report 1: the weighted share has no standard error and the interval [0, 1] (before: 1.5 ± 0, [1, 1])."""
    book = tmp_path / "same.json"
    assert CliRunner().invoke(main, ["codebook", "--binary", "cheated", "3/4", "1/4", "-o", str(book)]).exit_code == 0
    responses = tmp_path / "same.csv"
    responses.write_text("cheated,w\n" + "".join(f"1,{w!r}\n" for w in WEIGHTS))
    result = _run(responses, "aggregate", "--codebook", book, "--weights", "w", "--format", "json")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)["rows"]
    assert row["std_error"] is None and (row["ci_low"], row["ci_high"]) == (0.0, 1.0), row
    table = _run(responses, "aggregate", "--codebook", book, "--weights", "w").output
    assert "whole possible range" in table and "nan" not in table.lower()
