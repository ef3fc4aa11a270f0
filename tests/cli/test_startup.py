"""The command line starts light: `import survey.cli`, `--version` and every `--help` load no numpy, scipy,
pandas, matplotlib, sqlite_utils, Flask, store or web app, and each command loads only what it uses (an aggregate
of files no scipy.stats or store). Checked in fresh interpreters through sys.modules, never by timing
(bench/startup.py times it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import numpy as np
import pytest

from survey.cli import USER_ERRORS, main
from survey.cli.analysis import DATA_ERRORS
from survey.core.simulate import complete_truth, simulate_answers
from survey.exports.codebook import codebook
from survey.exports.export import responses_csv

from conftest import REPO, create_from_toml, smoking_design, smoking_text

# Libraries and layers no start-up may load; the core's modules are listed apart (its two light ones allowed).
HEAVY = ["numpy", "scipy", "pandas", "matplotlib", "sqlite_utils", "flask", "flask_wtf", "werkzeug", "gunicorn",
         "psycopg", "psycopg_pool", "openpyxl", "pyreadstat", "survey.store", "survey.web", "survey.exports"]
LIGHT_CORE = {"survey.core", "survey.core.defaults", "survey.core.words"}

# Run in a fresh interpreter: import survey.cli, run each command line given (as JSON) in process, then print the
# modules loaded. A command's own exit (click's SystemExit) does not stop the next one.
PROBE = """
import json, sys
from survey.cli import main
for args in json.loads(sys.argv[1]):
    try:
        main(args, prog_name="ldp-survey")
    except SystemExit as exc:
        if exc.code:
            raise
print("\\n@modules " + json.dumps(sorted(sys.modules)))
"""


def loaded(*command_lines: list[str], cwd: Path | None = None) -> set[str]:
    """Return the modules a fresh interpreter holds after importing survey.cli and running the command lines."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(command_lines))], capture_output=True,
                            text=True, env=env, cwd=cwd, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return set(json.loads(result.stdout.rsplit("\n@modules ", 1)[1]))


def among(modules: set[str], names: list[str]) -> list[str]:
    """Return the modules that are, or are inside, one of ``names``."""
    return sorted(module for module in modules if any(module == name or module.startswith(name + ".")
                                                      for name in names))


def every_help() -> list[list[str]]:
    """Return the `--help` command line of the group and of every command and subcommand."""
    lines = []

    def walk(command, path):
        lines.append([*path, "--help"])
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(main, [])
    return lines


def test_the_probe_sees_a_heavy_import():
    """The check can fail: a command line that does load the core's estimates shows numpy and scipy."""
    modules = loaded(["codebook", "--binary", "x", "0.75", "0.25"])
    assert among(modules, ["numpy", "scipy"]), "the probe saw no numpy after a command that needs it"


def test_import_version_and_every_help_load_nothing_heavy():
    modules = loaded(["--version"], *every_help())
    assert not among(modules, HEAVY), among(modules, HEAVY)
    core = {module for module in modules if module.startswith("survey.core")}
    assert core <= LIGHT_CORE, sorted(core - LIGHT_CORE)


def test_import_alone_loads_nothing_heavy():
    modules = loaded()
    assert not among(modules, HEAVY), among(modules, HEAVY)
    assert "survey.cli.analysis" in modules and "click" in modules


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> tuple[Path, Path]:
    """A small responses.csv of the smoking survey (2,000 simulated respondents) and its codebook."""
    folder = tmp_path_factory.mktemp("startup")
    design = smoking_design()
    rng = np.random.default_rng(5)
    answers = simulate_answers(design, complete_truth(design, {}, rng), 2000, rng)
    rows = ({"id": index + 1, "received_day": "2026-11-27", "answers": answer} for index, answer in enumerate(answers))
    (folder / "responses.csv").write_text(responses_csv(design, rows), encoding="utf-8", newline="")
    (folder / "codebook.json").write_text(json.dumps(codebook(design)), encoding="utf-8")
    return folder / "responses.csv", folder / "codebook.json"


@pytest.mark.parametrize("analysis, unused", [
    (["aggregate"], ["scipy.stats", "scipy.optimize", "survey.core.regression", "survey.core.planning"]),
    (["crosstab", "smoker", "lung_disease"], ["scipy.stats", "scipy.optimize", "survey.core.regression"]),
    (["regress", "lung_disease", "smoker"], ["scipy.stats", "survey.core.planning"]),
])
def test_analyze_loads_only_what_its_analysis_uses(files, analysis, unused):
    """No store, web app, pandas or matplotlib for files; no model for an aggregate; scipy.stats for none."""
    responses, book = files
    modules = loaded(["analyze", str(responses), *analysis, "--codebook", str(book), "--format", "csv"])
    assert "survey.core.reanalysis" in modules
    bad = among(modules, ["pandas", "matplotlib", "sqlite_utils", "flask", "werkzeug", "survey.store", "survey.web",
                          *unused])
    assert not bad, bad


def test_a_store_command_loads_neither_pandas_nor_the_web_app(tmp_path):
    """The store's sqlite_utils is imported with pandas hidden; an aggregate needs no scipy.stats."""
    db = tmp_path / "s.db"
    create_from_toml(db, smoking_text())
    modules = loaded(["--db", str(db), "aggregate", "smoking-2026", "--format", "csv"])
    assert "survey.store" in modules and "sqlite_utils" in modules
    bad = among(modules, ["pandas", "matplotlib", "scipy.stats", "scipy.optimize", "flask", "survey.web"])
    assert not bad, bad


def test_an_export_of_the_responses_loads_no_scipy(tmp_path):
    """export --responses is the database's CSV written out: no scipy (its 0.3 s import is a fifth of a 1M export)."""
    db = tmp_path / "s.db"
    create_from_toml(db, smoking_text())
    modules = loaded(["--db", str(db), "export", "smoking-2026", "--responses", "-o", str(tmp_path / "r.csv")])
    assert "survey.store" in modules and "survey.exports.export" in modules
    bad = among(modules, ["scipy", "pandas", "matplotlib", "flask", "survey.web"])
    assert not bad, bad


def test_pandas_still_imports_after_the_store():
    """Hiding pandas from sqlite_utils leaves it importable for the exports that use it."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = ("import sys, survey.store; assert 'pandas' not in sys.modules; import pandas; "
            "from survey.store.sqlite_utils_import import sqlite_utils; print(pandas.DataFrame({'a': [1]}).shape)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "(1, 1)", result.stderr[-2000:]


@pytest.mark.parametrize("names", [USER_ERRORS, DATA_ERRORS])
def test_the_errors_looked_up_by_name_exist(names):
    """Each (module, name) the command line catches without importing names an exception class there."""
    import importlib

    for module, name in names:
        error = getattr(importlib.import_module(module), name)
        assert isinstance(error, type) and issubclass(error, Exception), (module, name)
        assert not issubclass(error, click.ClickException)
