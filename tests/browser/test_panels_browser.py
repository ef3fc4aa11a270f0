"""Panel recruiting in Chromium against the real server (issue 26, items 3 and 5).

A Prolific-style link (``?PROLIFIC_PID=planted123&STUDY_ID=s1&SESSION_ID=x9``) ends, after the
server acknowledged the answers, at the completion redirect with the code and the participant id,
served here by the test (Playwright's routing answers for the panel's https host); an MTurk-style
survey shows its code and its own thank-you text. Then the planted ids are searched for in every
table and byte of the SQLite files, every line the server process logged, and every export (CSV,
codebook, data package, XLSX, SPSS, Stata): none may hold them. The progress line and the pages'
accessibility (axe, 360 px) are checked on the way; screenshots at 360 px go to /tmp/shots-panels/.
"""

from __future__ import annotations

import json
import re
import sqlite3
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

from conftest import create_from_toml, signed_in_page, start_server, stored_count
from test_accessibility import axe, violations  # noqa: F401 (the axe fixture)

from werkzeug.security import generate_password_hash

from survey.cli import main
from survey.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PLANTED = ("planted123", "plantedW0rker", "plantedT3st")
OWNER = ("panels@example.org", "panel owner password")
PROLIFIC_TOML = """
slug = "prolific-study"
title = "Habits and health"
epsilon = 4
release_every = 1

[panel]
parameters = ["PROLIFIC_PID", "STUDY_ID", "SESSION_ID"]
code = "C1A2B3C4"
redirect = "https://app.prolific.example/submissions/complete?cc={code}&pid={PROLIFIC_PID}&study={STUDY_ID}"

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"

[[questions]]
id = "drinks"
kind = "yes_no"
text = "Do you drink alcohol every week?"

[[questions]]
id = "transport"
kind = "choice"
text = "How do you get to work?"
options = ["Walking", "Cycling", "Bus", "Car"]

[[questions]]
id = "sports"
kind = "multi"
text = "Which of these do you do?"
options = ["Running", "Swimming"]

[[questions]]
id = "age"
kind = "number"
text = "How old are you?"
min = 18
max = 99
"""
MTURK_TOML = """
slug = "mturk-study"
title = "A short poll"
epsilon = 2
release_every = 1
thank_you = "Thanks <b>a lot</b>!\\nWe will approve your HIT within a day."

[panel]
parameters = ["workerId", "assignmentId", "hitId"]
code = "MT-7Q2X"

[[questions]]
id = "remote"
kind = "yes_no"
text = "Do you work remotely?"
"""
PROLIFIC_LINK = "/s/prolific-study?PROLIFIC_PID=planted123&STUDY_ID=s1&SESSION_ID=x9"
MTURK_LINK = "/s/mturk-study?workerId=plantedW0rker&assignmentId=A1&hitId=H1"
TARGET = "https://app.prolific.example/submissions/complete"
SHOTS = Path("/tmp/shots-panels")


@pytest.fixture(scope="module")
def panel_server(tmp_path_factory):
    """Start the real server (gunicorn) on a database with the two panel surveys; yield it, stop it gracefully."""
    directory = tmp_path_factory.mktemp("panels")
    db_path = directory / "panels.db"
    for text in (PROLIFIC_TOML, MTURK_TOML):
        create_from_toml(db_path, text)
    store = Store(db_path)
    try:
        store.add_user(OWNER[0], generate_password_hash(OWNER[1]))
        store.share("prolific-study", OWNER[0])
    finally:
        store.close()
    server = start_server(db_path, directory / "server.log", "--workers", "2", "--max-submissions-per-minute", "0")
    server.db = db_path
    yield server
    assert server.stop() == 0, server.log_text()[-3000:]


def new_page(browser, width: int = 360):
    """Return (context, page, seen, errors): a page recording every request it makes and every script error."""
    context = browser.new_context(viewport={"width": width, "height": 800})
    page = context.new_page()
    seen, errors = [], []
    page.on("request", lambda request: seen.append(
        {"url": request.url, "body": request.post_data or "", "headers": request.headers,
         "document": request.resource_type == "document"}))
    page.on("pageerror", lambda error: errors.append(str(error)))
    return context, page, seen, errors


def ready(page):
    """Wait until the page's script has set the form up (its send button is enabled)."""
    page.locator("#survey-form button[type=submit]:not([disabled])").wait_for()


def progress(page) -> tuple[str, str | None]:
    return page.locator("#progress-text").text_content(), page.locator("#progress-bar").get_attribute("value")


def answer_prolific(page):
    """Answer the five questions (the multiple choice left blank: its answer is "none"), checking the progress line."""
    page.locator("#q-smoker-yes").check()
    assert progress(page) == ("Question 1 of 5 · 1 answered", "1")
    page.locator("#q-drinks-no").check()
    assert progress(page) == ("Question 2 of 5 · 2 answered", "2")
    page.locator("#q-transport-2").check()
    page.locator("#q-age-value").fill("42")
    assert progress(page) == ("Question 5 of 5 · 4 answered", "4")


@pytest.fixture(scope="module")
def prolific_run(browser, panel_server, axe):
    """Answer the Prolific survey from its link at 360 px, reloading once on the way; return what was seen."""
    context, page, seen, errors = new_page(browser)
    target = []

    def serve_target(route):
        target.append({"url": route.request.url, "headers": route.request.headers})
        route.fulfill(status=200, content_type="text/html",
                      body="<!doctype html><html lang=en><title>Done</title><h1>Submission complete</h1></html>")

    context.route(re.compile(r"^https://app\.prolific\.example/"), serve_target)
    page.goto(panel_server.origin + PROLIFIC_LINK)
    ready(page)
    run = {"address": page.url, "progress": progress(page), "progress_role": page.locator("#progress-text")
           .get_attribute("role"), "axe": violations(axe, page)}
    page.locator("#q-smoker-yes").check()
    # A reload takes the ids from this tab's sessionStorage: the address no longer has them.
    page.reload()
    ready(page)
    run["after_reload"] = page.url
    answer_prolific(page)
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SHOTS / "progress-360.png")
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.wait_for_url(re.compile(r"^https://app\.prolific\.example/"))
    page.get_by_role("heading", name="Submission complete").wait_for()
    run.update(final=page.url, target=target, seen=seen, errors=errors,
               kept=page.evaluate("Object.keys(sessionStorage).filter((k) => k.startsWith('ldp-survey:panel:'))"))
    context.close()
    return run


def test_a_prolific_link_ends_at_the_redirect_with_the_code_after_the_acknowledgment(prolific_run, panel_server):
    run = prolific_run
    assert run["errors"] == []
    origin = panel_server.origin
    assert run["address"] == f"{origin}/s/prolific-study" and run["after_reload"] == run["address"], \
        "the ids leave the address bar as the page loads"
    assert run["final"] == f"{TARGET}?cc=C1A2B3C4&pid=planted123&study=s1"
    [arrival] = run["target"]
    assert "referer" not in {name.lower() for name in arrival["headers"]}, "the survey's address is not sent on"
    posts = [request for request in run["seen"] if request["url"].startswith(origin) and request["body"]]
    assert len(posts) == 1 and posts[0]["url"] == f"{origin}/s/prolific-study/responses"
    assert set(json.loads(posts[0]["body"])["answers"]) == {"smoker", "drinks", "transport", "sports", "age"}
    to_server = [request for request in run["seen"] if request["url"].startswith(origin)]
    carrying = [request["url"] for request in to_server if any(
        value in json.dumps(request) for value in ("planted123", "x9", "SESSION_ID"))]
    assert carrying == [origin + PROLIFIC_LINK], "only the link itself carries the ids to the server"
    assert stored_count(panel_server.db, "prolific-study") == 1
    assert run["kept"] == [], "the tab forgets the ids once the completion is shown"


def test_the_progress_line_is_a_polite_status_and_the_page_passes_axe_at_360px(prolific_run):
    assert prolific_run["progress"] == ("Question 1 of 5 · 0 answered", "0")
    assert prolific_run["progress_role"] == "status"
    assert prolific_run["axe"] == []


@pytest.fixture(scope="module")
def mturk_run(browser, panel_server, axe):
    """Answer the MTurk-style survey (a code, no redirect) at 360 px; return what the thanks and a revisit show."""
    context, page, seen, errors = new_page(browser)
    page.goto(panel_server.origin + MTURK_LINK)
    ready(page)
    run = {"address": page.url, "progress_hidden": page.locator("#progress").is_hidden()}
    page.locator("#q-remote-no").check()
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.locator("#completion").wait_for()
    run.update(thanks=page.locator("#thanks-custom").inner_text(), bold=page.locator("#thanks b").count(),
               code=page.locator("#completion-code").inner_text(), links=page.locator("#completion-link").count(),
               focused=page.evaluate("document.activeElement.id"), axe=violations(axe, page))
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SHOTS / "completion-code-360.png", full_page=True)
    page.goto(panel_server.origin + MTURK_LINK)
    page.locator("#already-answered").wait_for()
    run.update(revisit_code=page.locator("#completion-code").inner_text(), errors=errors, seen=seen,
               revisit_address=page.url, revisit_axe=violations(axe, page))
    page.screenshot(path=SHOTS / "revisit-360.png", full_page=True)
    context.close()
    return run


def test_a_code_and_the_surveys_own_thank_you_are_shown_escaped_after_the_acknowledgment(mturk_run, panel_server):
    run = mturk_run
    assert run["errors"] == [] and run["progress_hidden"], "one question needs no progress line"
    assert run["address"] == f"{panel_server.origin}/s/mturk-study" == run["revisit_address"]
    assert run["thanks"] == "Thanks <b>a lot</b>!\nWe will approve your HIT within a day." and run["bold"] == 0
    assert run["code"] == "MT-7Q2X" and run["links"] == 0 and run["focused"] == "thanks"
    assert run["axe"] == [] and run["revisit_axe"] == []
    assert run["revisit_code"] == "MT-7Q2X", "a participant who answered on this device can still read the code"
    assert stored_count(panel_server.db, "mturk-study") == 1


@pytest.fixture(scope="module")
def test_mode_run(browser, panel_server):
    """Answer the Prolific survey in the owner's test mode with a planted id; return what the completion shows."""
    context, page, errors = signed_in_page(browser, panel_server.origin, *OWNER, width=360)
    page.goto(f"{panel_server.origin}/surveys/prolific-study/test?PROLIFIC_PID=plantedT3st&STUDY_ID=s2")
    ready(page)
    run = {"address": page.url}
    answer_prolific(page)
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.locator("#completion-test").wait_for()
    page.wait_for_timeout(300)
    run.update(after=page.url, href=page.locator("#completion-link").get_attribute("href"), errors=errors,
               kept=page.evaluate("sessionStorage.length"))
    context.close()
    return run


def test_test_mode_shows_the_completion_link_without_following_it(test_mode_run, panel_server):
    run = test_mode_run
    page_address = f"{panel_server.origin}/surveys/prolific-study/test"
    assert run["errors"] == [] and run["address"] == page_address == run["after"]
    assert run["href"] == f"{TARGET}?cc=C1A2B3C4&pid=plantedT3st&study=s2"
    assert run["kept"] == 0, "test mode keeps nothing on the device"


def planted_in(text: str) -> list[str]:
    return [value for value in PLANTED if value in text]


def exported_files(db_path: Path, directory: Path) -> list[Path]:
    """Export every format of both surveys through the CLI into ``directory``; return the files written."""
    from click.testing import CliRunner

    runner = CliRunner()
    for slug in ("prolific-study", "mturk-study"):
        commands = [["--responses", "-o", f"{slug}-responses.csv"], ["--aggregates", "-o", f"{slug}-results.csv"],
                    ["--codebook", "-o", f"{slug}-codebook.json"], ["--aggregates", "-o", f"{slug}-results.xlsx"],
                    ["--responses", "-o", f"{slug}-responses.sav"], ["--responses", "-o", f"{slug}-responses.dta"],
                    ["--aggregates", "-o", f"{slug}-results.dta"], ["--package", f"{slug}-package"],
                    ["--responses", "--sandbox", "-o", f"{slug}-sandbox.csv"]]
        for command in commands:
            command = [part if not part.startswith(slug) else str(directory / part) for part in command]
            result = runner.invoke(main, ["--db", str(db_path), "export", slug, *command])
            assert result.exit_code == 0, result.output
    return sorted(path for path in directory.rglob("*") if path.is_file())


def file_text(path: Path) -> str:
    """Return a file's bytes as text, and for a zip (XLSX) the text of each member."""
    data = path.read_bytes()
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            data += b"".join(archive.read(name) for name in archive.namelist())
    return data.decode("latin-1")


def test_the_planted_ids_are_in_no_table_file_log_line_export_or_page(prolific_run, mturk_run, test_mode_run,
                                                                     panel_server, tmp_path):
    db_path = panel_server.db
    assert stored_count(db_path, "prolific-study") == 1 and stored_count(db_path, "mturk-study") == 1
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as connection:
        tables = [name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = {table: connection.execute(f'SELECT * FROM "{table}"').fetchall() for table in tables}
    assert "surveys" in tables and "submissions" in tables
    reports = [table for table in tables if table.startswith("reports_")]
    assert sorted(len(rows[table]) for table in reports) == [1, 1], "the search reads both surveys' report tables"
    # The sandbox's reports (not its tallies, nor the report patterns counted beside them: store/patterns.py).
    sandboxes = [table for table in tables if table.startswith("sandbox_")
                 and table != "sandbox_tallies" and not table.startswith("sandbox_patterns_")]
    assert sum(len(rows[table]) for table in sandboxes) == 1, "and the test answer"
    cells = " ".join(str(cell) if not isinstance(cell, bytes) else cell.decode("latin-1")
                     for table_rows in rows.values() for row in table_rows for cell in row)
    assert "C1A2B3C4" in cells, "the search reads the tables (the definition's code is there)"
    assert planted_in(cells) == []
    for path in db_path.parent.glob(db_path.name + "*"):
        assert planted_in(path.read_bytes().decode("latin-1")) == [], path.name

    log = panel_server.log_text()
    assert "Booting worker" in log, "the search reads the server's log"
    assert planted_in(log) == []

    files = exported_files(db_path, tmp_path)
    assert {path.suffix for path in files} >= {".csv", ".json", ".xlsx", ".sav", ".dta"}
    assert "received_day" in (tmp_path / "prolific-study-responses.csv").read_text(), "the exports hold the responses"
    for path in files:
        assert planted_in(file_text(path)) == [], path.name

    # The service never echoes them: the page, a missing survey's page and the design hold none.
    for link in (PROLIFIC_LINK, MTURK_LINK, "/s/no-such-survey?PROLIFIC_PID=planted123",
                 "/s/prolific-study/design.json?PROLIFIC_PID=planted123"):
        try:
            with urllib.request.urlopen(panel_server.origin + link) as response:
                body = response.read().decode()
        except urllib.error.HTTPError as error:
            body = error.read().decode()
        assert body and planted_in(body) == [], link
    assert planted_in(panel_server.log_text()) == []
