"""``ldp-survey interview``: start a session and print its link, list the active ones, end one; mistakes end cleanly."""

from __future__ import annotations

import re

from survey.cli import main
from survey.store import Store

SLUG = "smoking-2026"


def run(cli_runner, db_path, *args):
    return cli_runner.invoke(main, ["--db", str(db_path), "interview", *args])


def test_interview_prints_a_working_link_lists_and_ends_the_session(cli_runner, db_path, smoking_survey):
    result = run(cli_runner, db_path, SLUG, "--label", "Tablet 3", "--hours", "8", "--allowance", "40",
                 "--base", "https://surveys.example.org/")
    assert result.exit_code == 0, result.output
    link = result.stdout.strip()
    found = re.fullmatch(r"https://surveys\.example\.org/s/smoking-2026/interview/([A-Za-z0-9_-]{32})", link)
    assert found, link
    assert "Tablet 3" in result.stderr and "40 responses" in result.stderr
    store = Store(db_path)
    try:
        session = store.interview_session(SLUG, found.group(1))
        assert session["state"] == "active" and session["label"] == "Tablet 3" and session["allowance"] == 40
    finally:
        store.close()
    listing = run(cli_runner, db_path, SLUG, "--list")
    assert listing.exit_code == 0 and listing.stdout.startswith(f"{session['id']}\tTablet 3\t0 of 40 answered")
    ended = run(cli_runner, db_path, SLUG, "--end", str(session["id"]))
    assert ended.exit_code == 0 and "no longer takes answers" in ended.stdout
    assert run(cli_runner, db_path, SLUG, "--list").stdout.strip() == "No active interviewer session."
    again = run(cli_runner, db_path, SLUG, "--end", str(session["id"]))
    assert again.exit_code == 1 and "no active interviewer session" in again.stderr


def test_interview_mistakes_are_one_line_errors(cli_runner, db_path, smoking_survey):
    for args, words in (((SLUG, "--hours", "0"), "0"), (("no-such-survey",), "no survey"),
                        ((SLUG, "--base", "ftp://x"), "http"), ((SLUG, "--label", "x" * 61), "at most 60"),
                        ((SLUG, "--list", "--end", "1"), "not both")):
        result = run(cli_runner, db_path, *args)
        assert result.exit_code in (1, 2) and words in result.stderr and "Traceback" not in result.output, args
    store = Store(db_path)
    store.close_survey(SLUG)
    store.close()
    closed = run(cli_runner, db_path, SLUG)
    assert closed.exit_code == 1 and "not open" in closed.stderr
