"""``ldp-survey interview``: start a session and print its link, list the active ones, end one; mistakes end cleanly."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

import pytest

from survey.cli import main
from survey.core.interviews import EXPIRY_GRACE_HOURS
from survey.store import InterviewRefused, Store

SLUG = "smoking-2026"


def utc(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


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
    header, line = listing.stdout.splitlines()
    assert listing.exit_code == 0 and header == "ID\tLABEL\tANSWERED\tSTATE\tEXPIRES\tLATE SENDS UNTIL"
    assert line.startswith(f"{session['id']}\tTablet 3\t0 of 40 answered\tactive\t")
    ended = run(cli_runner, db_path, SLUG, "--end", str(session["id"]))
    assert ended.exit_code == 0 and "no longer takes answers" in ended.stdout
    assert run(cli_runner, db_path, SLUG, "--list").stdout.startswith("No active interviewer session")
    again = run(cli_runner, db_path, SLUG, "--end", str(session["id"]))
    assert again.exit_code == 1 and "no interviewer session" in again.stderr and "ended already" in again.stderr


def test_interview_lists_an_expired_session_still_taking_late_sends_and_ends_it(cli_runner, db_path, smoking_survey):
    store = Store(db_path)
    try:
        expiry = int(time.time() // 60 * 60) - 3600  # a whole minute, an hour ago
        late, session = store.start_interview(SLUG, label="Tablet 9", hours=1, allowance=5, now=expiry - 3600)
        store.start_interview(SLUG, label="Gone", hours=1, now=time.time() - 3601 - EXPIRY_GRACE_HOURS * 3600)
    finally:
        store.close()
    listing = run(cli_runner, db_path, SLUG, "--list")
    assert listing.exit_code == 0, listing.output
    lines = listing.stdout.splitlines()
    assert lines[1:] == [f"{session['id']}\tTablet 9\t0 of 5 answered\tlate sends only\t{utc(expiry)}\t"
                         f"{utc(expiry + EXPIRY_GRACE_HOURS * 3600)}"], "past its grace a session is not listed"
    ended = run(cli_runner, db_path, SLUG, "--end", str(session["id"]))
    assert ended.exit_code == 0 and "not even late sends" in ended.stdout
    store = Store(db_path)
    try:
        with pytest.raises(InterviewRefused, match="ended"):
            store.take_interview(SLUG, late)
    finally:
        store.close()
    assert "Tablet 9" not in run(cli_runner, db_path, SLUG, "--list").stdout


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
