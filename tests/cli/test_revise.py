"""`ldp-survey revise SLUG FILE [--dry-run]`: say which kind of change a new definition is, then store it (issue 27)."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from survey.cli import main
from survey.store import Store

from conftest import smoking_text

SLUG = "smoking-2026"
ANSWERS = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}


@pytest.fixture
def run(cli_runner, db_path):
    def invoke(*args):
        return cli_runner.invoke(main, ["--db", str(db_path), *map(str, args)])

    return invoke


def ok(result):
    assert result.exit_code == 0, (result.output, result.exception)
    return result


@pytest.fixture
def answered(run, db_path, tmp_path):
    """The smoking survey, open, with 4 responses."""
    path = tmp_path / "smoking.toml"
    path.write_text(smoking_text(), encoding="utf-8")
    ok(run("create", path))
    store = Store(db_path)
    try:
        store.add_responses(SLUG, store.get_design(SLUG)["hash"], [ANSWERS] * 4)
    finally:
        store.close()
    return path


def _file(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_dry_run_says_the_kind_and_stores_nothing_then_revise_corrects_the_text(run, db_path, tmp_path, answered):
    fixed = _file(tmp_path, "fixed.toml", smoking_text().replace("Do you smoke", "Do you currently smoke", 1))
    dry = ok(run("revise", SLUG, fixed, "--dry-run")).stdout
    assert "Text only: the 4 responses stay one data set" in dry and "  - Question smoker: wording" in dry
    assert "Question smoker:\n  now:          Do you smoke tobacco" in dry
    assert "  after saving: Do you currently smoke tobacco" in dry
    assert "Nothing was stored (--dry-run)." in dry
    store = Store(db_path)
    try:
        assert store.wordings(SLUG) == []
    finally:
        store.close()
    done = ok(run("revise", SLUG, fixed)).stdout
    assert "Wording corrected: the 4 responses stay one data set" in done
    book = json.loads(ok(run("export", SLUG, "--codebook")).stdout)
    assert [entry["text"][:22] for entry in book["wording_history"]["questions"]["smoker"]] == [
        "Do you smoke tobacco a", "Do you currently smoke"]


def test_a_panel_and_access_change_is_settings_kept_as_one_data_set(run, db_path, tmp_path, answered):
    text = re.sub(r"^(epsilon = .*)$", r'\1\naccess = "invite"', smoking_text(), count=1, flags=re.M)
    changed = _file(tmp_path, "settings.toml", text + '\n[panel]\ncode = "C1A2B3C4"\n')
    dry = ok(run("revise", SLUG, changed, "--dry-run")).stdout
    assert dry.startswith("Settings only: no change to how answers are randomized, so the 4 responses stay one "
                          "data set.\nSettings changes:\n  - Access: anyone with the link → invitation only\n"
                          "  - Panel: none → completion code C1A2B3C4\n"), dry
    assert "Text" not in dry and "Design changes" not in dry
    done = ok(run("revise", SLUG, changed)).stdout
    assert "Settings changed: the 4 responses stay one data set." in done
    store = Store(db_path)
    try:
        design = store.get_design(SLUG)
        assert (design["access"], design["panel"]["code"], len(store.versions(SLUG)), store.received_count(SLUG)) \
            == ("invite", "C1A2B3C4", 1, 4)
    finally:
        store.close()


def test_a_design_change_makes_version_two_and_list_shows_it(run, db_path, tmp_path, answered):
    changed = _file(tmp_path, "changed.toml", re.sub(r"^epsilon = .*$", "epsilon = 1", smoking_text(), count=1,
                                                      flags=re.M))
    dry = ok(run("revise", SLUG, changed, "--dry-run")).stdout
    assert "(ε 2 → 1): responses from now on form version 2, shown apart from version 1" in dry
    assert "Design changes:\n  - Survey privacy budget ε" in dry
    assert "Version 2 started" in ok(run("revise", SLUG, changed)).stdout
    listed = {row["slug"]: row for row in json.loads(ok(run("list", "--format", "json")).stdout)["surveys"]}
    assert (listed[SLUG]["version"], listed[SLUG]["released"]) == (2, 0)
    assert (listed[f"{SLUG}.v1"]["version"], listed[f"{SLUG}.v1"]["released"], listed[f"{SLUG}.v1"]["status"]) == (
        1, 4, "closed")
    rows = list(csv.reader(io.StringIO(ok(run("export", f"{SLUG}.v1", "--responses")).stdout)))
    assert rows[0][-1] == "version" and len(rows) == 5 and {row[-1] for row in rows[1:]} == {"1"}


def test_mistakes_are_clean_errors(run, tmp_path, answered):
    other = _file(tmp_path, "other.toml", smoking_text().replace(f'slug = "{SLUG}"', 'slug = "another"'))
    result = run("revise", SLUG, other)
    assert result.exit_code == 1 and "a correction keeps the slug" in result.stderr
    missing = run("revise", "another", other)
    assert missing.exit_code == 1 and "no survey with slug 'another'" in missing.stderr
    assert "Traceback" not in result.output + missing.output
    help_text = ok(run("revise", "--help")).stdout
    assert "Examples:" in help_text and "--dry-run" in help_text


def test_exported_files_of_a_corrected_earlier_version_reanalyse_to_its_dashboard(run, tmp_path, answered):
    fixed = _file(tmp_path, "fixed.toml", smoking_text().replace("Do you smoke", "Do you currently smoke", 1))
    ok(run("revise", SLUG, fixed))
    changed = _file(tmp_path, "changed.toml", re.sub(r"^epsilon = .*$", "epsilon = 1", fixed.read_text(), count=1,
                                                      flags=re.M))
    ok(run("revise", SLUG, changed))
    responses, codebook = tmp_path / "v1.csv", tmp_path / "v1.json"
    ok(run("export", f"{SLUG}.v1", "--responses", "-o", responses))
    ok(run("export", f"{SLUG}.v1", "--codebook", "-o", codebook))
    book = json.loads(codebook.read_text())
    assert book["version"]["number"] == 1 and len(book["wording_history"]["questions"]["smoker"]) == 2
    again = ok(run("analyze", responses, "aggregate", "--codebook", codebook, "--format", "csv")).stdout
    assert again == ok(run("aggregate", f"{SLUG}.v1", "--format", "csv")).stdout
