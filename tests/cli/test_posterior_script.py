"""docs/scripts/posterior.py (pandas + scipy) reproduces `aggregate --intervals posterior` from the exports alone."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest

from survey.store import Store

from conftest import command_line

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "scripts" / "posterior.py"
SLUG = "smoking-2026"
GOOD = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}
ANSWERS = [GOOD] * 25 + [{**GOOD, "smoker": 0, "lung_disease": 1, "age": 0, "cigarettes": [1, 0, 0, 0, 0]}] * 15


@pytest.mark.parametrize("prior, arguments", [("jeffreys", []), ("beta(2,3)", ["2", "3"])])
def test_the_script_reproduces_the_posterior_intervals(cli_runner, db_path, smoking_survey, tmp_path, prior, arguments):
    """Every indicator row's ci_low and ci_high agree to 1e-6 (the CSV's 6 decimals), and ci_kind is the same."""
    store = Store(db_path)
    try:
        store.add_responses(SLUG, smoking_survey["hash"], ANSWERS)
    finally:
        store.close()

    run = command_line(db_path, cli_runner)
    (tmp_path / "responses.csv").write_text(run("export", SLUG, "--responses"), encoding="utf-8")
    (tmp_path / "codebook.json").write_text(run("export", SLUG, "--codebook"), encoding="utf-8")
    product = {(row["question"], row["option"]): row for row in csv.DictReader(io.StringIO(
        run("aggregate", SLUG, "--format", "csv", "--intervals", "posterior", "--prior", ",".join(arguments or
                                                                                                   ["0.5", "0.5"]))))}
    done = subprocess.run([sys.executable, str(SCRIPT), "responses.csv", "codebook.json", *arguments],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True)
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert len(rows) >= 7
    for row in rows:
        mine = product[(row["question"], row["option"])]
        assert row["ci_kind"] == mine["ci_kind"] == f"posterior-{prior}"
        assert float(row["ci_low"]) == pytest.approx(float(mine["ci_low"]), abs=1.5e-6)
        assert float(row["ci_high"]) == pytest.approx(float(mine["ci_high"]), abs=1.5e-6)
