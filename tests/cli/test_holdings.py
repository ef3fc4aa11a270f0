"""`list`, `archive`, `delete-on`, `purge --due` and `delete --with-responses` on the command line."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

import pytest
from werkzeug.security import generate_password_hash

from survey.cli import main
from survey.store import Store

from conftest import smoking_text

FIELDS = {"slug", "title", "status", "owner", "released", "held", "sandbox", "version", "created", "delete_after"}
ANSWERS = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}


@pytest.fixture
def run(cli_runner, db_path):
    def invoke(*args, input=None):
        return cli_runner.invoke(main, ["--db", str(db_path), *map(str, args)], input=input)

    return invoke


def ok(result):
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def _create(run, tmp_path, slug: str, *extra: str):
    path = tmp_path / f"{slug}.toml"
    path.write_text(smoking_text().replace('slug = "smoking-2026"', f'slug = "{slug}"'), encoding="utf-8")
    return ok(run("create", path, *extra))


def _respond(db_path, slug: str, n: int, *, source: str | None = None):
    store = Store(db_path)
    try:
        design = store.get_design(slug)
        store.add_responses(slug, design["hash"], [ANSWERS] * n, source=source)
    finally:
        store.close()


def test_list_json_csv_and_table_name_every_survey_with_its_counts(run, db_path, tmp_path):
    _create(run, tmp_path, "first-survey")
    _create(run, tmp_path, "second-survey", "--draft")
    _respond(db_path, "first-survey", 3)
    _respond(db_path, "first-survey", 2, source="simulated")
    ok(run("delete-on", "second-survey", "2031-01-31"))
    listed = json.loads(ok(run("list", "--format", "json")).stdout)["surveys"]
    assert [row["slug"] for row in listed] == ["first-survey", "second-survey"]
    assert all(set(row) == FIELDS for row in listed)
    first, second = listed
    assert (first["status"], first["released"], first["held"], first["sandbox"], first["version"]) == ("open", 3, 0, 2, 1)
    assert (second["status"], second["released"], second["delete_after"]) == ("draft", 0, "2031-01-31")
    assert first["owner"] is None and first["created"] == dt.datetime.now(dt.timezone.utc).date().isoformat()
    rows = list(csv.DictReader(io.StringIO(ok(run("list", "--format", "csv")).stdout)))
    assert [(row["slug"], row["released"], row["sandbox"]) for row in rows] == [("first-survey", "3", "2"),
                                                                                 ("second-survey", "0", "0")]
    table = ok(run("list")).stdout.splitlines()
    assert table[0].split()[:3] == ["slug", "title", "status"] and table[1].startswith("first-survey")

    assert "Archived first-survey" in ok(run("archive", "first-survey")).stdout
    assert [row["slug"] for row in json.loads(ok(run("list", "--format", "json")).stdout)["surveys"]] == ["second-survey"]
    every = json.loads(ok(run("list", "--all", "--format", "json")).stdout)["surveys"]
    assert [(row["slug"], row["status"]) for row in every] == [("first-survey", "archived"), ("second-survey", "draft")]
    result = run("reopen", "first-survey")
    assert result.exit_code == 1 and "archived and read-only" in result.stderr


def test_purge_due_deletes_only_the_survey_whose_date_has_come(run, db_path, tmp_path):
    today = dt.datetime.now(dt.timezone.utc).date()
    for slug in ("past-due", "not-yet", "undated"):
        _create(run, tmp_path, slug)
        _respond(db_path, slug, 2)
    ok(run("delete-on", "past-due", (today - dt.timedelta(days=1)).isoformat()))
    ok(run("delete-on", "not-yet", (today + dt.timedelta(days=1)).isoformat()))
    assert ok(run("purge", "--due", "--dry-run")).stdout == "Would delete past-due\n"
    assert len(json.loads(ok(run("list", "--format", "json")).stdout)["surveys"]) == 3, "a dry run deletes nothing"
    assert ok(run("purge", "--due")).stdout == "Deleted past-due\n"
    left = json.loads(ok(run("list", "--all", "--format", "json")).stdout)["surveys"]
    assert [(row["slug"], row["released"]) for row in left] == [("not-yet", 2), ("undated", 2)]
    assert ok(run("purge", "--due")).stdout == "No survey is due for deletion\n"
    assert run("purge").exit_code == 2, "--due is required"
    bad = run("delete-on", "not-yet", "next week")
    assert bad.exit_code == 1 and "YYYY-MM-DD" in bad.stderr and "Traceback" not in bad.output
    assert "has no deletion date" in ok(run("delete-on", "not-yet", "--clear")).stdout


def test_delete_with_responses_asks_then_removes_the_survey(run, db_path, tmp_path):
    _create(run, tmp_path, "with-data")
    _respond(db_path, "with-data", 4)
    refused = run("delete", "with-data", "--yes")
    assert refused.exit_code == 1 and "--with-responses" in refused.stderr
    asked = run("delete", "with-data", "--with-responses", input="n\n")
    assert asked.exit_code == 1 and "4 released" in asked.output
    assert json.loads(ok(run("list", "--format", "json")).stdout)["surveys"][0]["released"] == 4
    assert "Deleted the survey with-data" in ok(run("delete", "with-data", "--with-responses", input="y\n")).stdout
    assert json.loads(ok(run("list", "--format", "json")).stdout)["surveys"] == []


def test_create_without_owner_warns_when_accounts_exist(run, db_path, tmp_path):
    quiet = _create(run, tmp_path, "no-accounts")
    assert "Warning: no owner" not in quiet.stderr and "No owner" in quiet.stdout
    store = Store(db_path)
    store.add_user("r@example.org", generate_password_hash("a password"))
    store.close()
    warned = _create(run, tmp_path, "with-accounts")
    assert "Warning: no owner: the survey is invisible in the web" in warned.stderr
    assert "Warning: no owner" not in _create(run, tmp_path, "owned", "--owner", "r@example.org").stderr


def _new_version(db_path, slug: str):
    """Give the survey a version 2 (its ε changed), keeping version 1 as SLUG.v1."""
    import re

    from survey.core.definition import parse_definition_toml
    from survey.core.design import build_design

    store = Store(db_path)
    try:
        text = re.sub(r"^epsilon = .*$", "epsilon = 1", store.get_definition(slug), count=1, flags=re.M)
        store.new_version(slug, text, build_design(parse_definition_toml(text)))
    finally:
        store.close()


def test_delete_and_purge_of_a_survey_with_versions_take_the_whole_family(run, db_path, tmp_path):
    today = dt.datetime.now(dt.timezone.utc).date()
    for slug in ("versioned", "dated"):
        _create(run, tmp_path, slug)
        _respond(db_path, slug, 4)
    ok(run("delete-on", "dated", (today - dt.timedelta(days=1)).isoformat()))
    for slug in ("versioned", "dated"):
        _new_version(db_path, slug)
    asked = run("delete", "versioned", "--with-responses", input="n\n")
    assert asked.exit_code == 1 and "its earlier version versioned.v1 with 4 responses" in asked.output
    assert "Deleted the survey versioned and its earlier version versioned.v1" in ok(
        run("delete", "versioned", "--with-responses", "--yes")).stdout
    assert ok(run("purge", "--due")).stdout == "Deleted dated\n"
    assert json.loads(ok(run("list", "--all", "--format", "json")).stdout)["surveys"] == []
