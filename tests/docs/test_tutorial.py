"""The tutorial, run as written on a fresh database with the defaults, shows what it says.

Its shell commands are read from the markdown's code blocks and run in a temporary folder
(``ldp-survey`` in process through click; ``serve`` as a real server, started and stopped);
its browser steps go through the Flask test client. Each phrase the tutorial quotes from a page
or a command is checked twice: that the tutorial still says it, and that the product shows it.
"""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import urllib.request

import pytest
from click.testing import CliRunner
from conftest import REPO, domain_answers, free_port, wait_for_line
from test_builder import press

from survey.cli import main
from survey.store import Store

pytestmark = pytest.mark.slow

TUTORIAL = REPO / "docs" / "tutorial" / "first-survey.md"
EMAIL, PASSWORD = "you@example.org", "tutorial password"
# Setting up Python and the checkout; tests/cli/test_install.py installs the package the same way.
SETUP = {"python3 --version", "python3 -m venv .venv", ".venv/bin/pip install .", ". .venv/bin/activate"}


def sections() -> dict[int, str]:
    """Return the tutorial's numbered sections by number."""
    parts = re.split(r"^## (\d+)\. ", TUTORIAL.read_text(encoding="utf-8"), flags=re.M)
    return {int(number): body for number, body in zip(parts[1::2], parts[2::2])}


def commands(section: str) -> list[str]:
    """Return the shell commands of a section's bash code blocks, without their trailing comments."""
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    lines = (line.split("  #")[0].strip() for block in blocks for line in block.splitlines())
    return [line for line in lines if line]


def text(markup: str) -> str:
    """Return a page's words: no tags, unescaped, one space between words."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup)))


def flat(section: str) -> str:
    """Return a section's prose on one line, as the phrases it quotes are compared."""
    return re.sub(r"\s+", " ", section.replace("**", ""))


def shows(section: str, shown: str, phrase: str):
    """Check that the tutorial says ``phrase`` and the product shows it."""
    assert phrase in flat(section), f"the tutorial no longer says {phrase!r}"
    assert phrase in shown, f"the tutorial says {phrase!r}, the product shows: {shown[:3000]}"


class Terminal:
    """Run the tutorial's `ldp-survey` lines in a folder, in process; `serve` as a real server."""

    def __init__(self, folder):
        self.folder = folder
        self.runner = CliRunner()

    def run(self, line: str, input: str | None = None) -> str:
        """Run one command line of the tutorial and return its output (exit status 0 required)."""
        words = shlex.split(line)
        assert words[0] == "ldp-survey", line
        if "serve" in words:
            return self.serve(words[1:])
        result = self.runner.invoke(main, words[1:], input=input, catch_exceptions=False)
        assert result.exit_code == 0, f"{line}\n{result.output}"
        return result.output

    def serve(self, args: list[str]) -> str:
        """Start the server as the tutorial does (on a free port), check it answers, stop it; return its line."""
        port = free_port()
        process = subprocess.Popen([sys.executable, "-m", "survey", *args, "--port", str(port)], cwd=self.folder,
                                   env={**os.environ, "PYTHONPATH": str(REPO)},
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        try:
            line = wait_for_line(process, b"Serving ", 60).decode()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=30) as response:
                assert response.status == 200
            return line.replace(f":{port}/", ":5000/")
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()


def test_the_tutorial_as_written(tmp_path, monkeypatch):
    steps = sections()
    assert sorted(steps) == list(range(1, 11))
    every = [line for number in sorted(steps) for line in commands(steps[number])]
    assert set(every) >= SETUP
    folder = tmp_path / "first-survey"
    terminal = Terminal(folder)

    # 1. Install (the environment is the suite's); the version line.
    assert [line for line in commands(steps[1]) if line not in SETUP] == ["ldp-survey --version"]
    assert re.search(r"It prints `ldp-survey, version [\d.]+` \(or a later version\)", flat(steps[1]))
    assert re.fullmatch(r"ldp-survey, version \d+\.\d+\.\d+\S*", terminal.run("ldp-survey --version").strip())

    # 2. The folder and the account (the password read from stdin, as when it is not a terminal).
    make, add = commands(steps[2])
    assert make == "mkdir -p ~/first-survey && cd ~/first-survey"
    folder.mkdir()
    monkeypatch.chdir(folder)
    assert "Saved researcher account you@example.org" in terminal.run(add.replace("you@example.org", EMAIL),
                                                                       input=f"{PASSWORD}\n")
    assert (folder / "first.db").exists()

    # 3. The server prints what the tutorial says and serves the sign-in page; a secret key appears.
    [serve] = commands(steps[3])
    said = re.search(r"It prints `(Serving [^`]+)`", steps[3]).group(1)
    assert terminal.run(serve) == said
    assert (folder / "first.db.secret-key").exists(), "the tutorial says the key file appears"
    from survey.web import create_app

    app = create_app({"DATABASE": str(folder / "first.db"), "SECRET_KEY": "tutorial"})
    browser = app.test_client()
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', browser.get("/login").get_data(as_text=True))
    assert browser.post("/login", data={"csrf_token": token.group(1), "email": EMAIL,
                                        "password": PASSWORD}).status_code == 302
    assert "No surveys yet" in text(browser.get("/surveys").get_data(as_text=True)), "the Surveys page, empty"

    # 4. The survey built in the builder with the fields the tutorial gives; its preview and its draft.
    step = steps[4]
    for value in ("Campus life", "campus-life", "A short anonymous survey about student life.", "cheated", "housing",
                  "hours_work", "`with parents`, `student residence`, `shared flat`, `other`"):
        assert value in step
    page = press(browser, browser.get("/surveys/build"), "add:choice", **{
        "title": "Campus life", "slug": "campus-life", "description": "A short anonymous survey about student life.",
        "questions-0-id": "cheated", "questions-0-text": "Have you ever cheated in an exam?"})
    page = press(browser, page, "add:number", **{
        "questions-1-id": "housing", "questions-1-text": "Where do you live during term?",
        "questions-1-options": "with parents\nstudent residence\nshared flat\nother"})
    page = press(browser, page, "preview", **{
        "questions-2-id": "hours_work", "questions-2-text": "How many hours a week do you work for pay?",
        "questions-2-min": "0", "questions-2-max": "40"})
    markup = page.get_data(as_text=True)
    yes_no, choice = (text(re.search(rf'id="questions-{index}-preview"[^>]*>(.*?)</div>', markup, re.S).group(1))
                      for index in (0, 1))
    shows(step, yes_no, "A true answer is reported as itself with probability 66.1%.")
    shows(step, yes_no, "Someone who thought an answer 50/50 can be at most 66.1% sure of it after seeing the report.")
    shows(step, yes_no, "±9.6 percentage points")
    shows(step, yes_no, "3,717")
    shows(step, choice, "±20.1 points")
    assert "ε′ = 0.667" in yes_no and "each one gets about 0.67" in flat(step)
    summary = text(re.search(r'id="builder-summary"[^>]*>(.*?)</div>', markup, re.S).group(1))
    assert "Recommended allocation" in summary, "the summary recommends another way to spend the budget"
    shows(step, summary, "Releases: every 370 responses, so readers of the results get central ε = 0.992 (δ = 10⁻⁶) "
                         "instead of the local ε′ = 2")
    saved = press(browser, page, "save")
    assert saved.headers["Location"] == "/surveys/campus-life/results"
    shows(step, text(browser.get(saved.headers["Location"]).get_data(as_text=True)),
          "Draft created: respondents cannot see it until you publish it here")

    # 5. Test mode, then simulated respondents in the sandbox.
    step = steps[5]
    test_mode = text(browser.get("/surveys/campus-life/test").get_data(as_text=True))
    shows(step, test_mode, "Test mode: nothing you send here counts")
    simulate, aggregate = commands(step)
    assert "Added 5000 simulated responses to the sandbox of campus-life" in terminal.run(simulate)
    table = terminal.run(aggregate)
    for question, option in (("cheated", "yes"), ("housing", "with parents"), ("housing", "other"),
                             ("hours_work", "mean")):
        assert re.search(rf"^{question}\s+{option}\s+\S+\s+[\d.]+\s+5000\s", table, re.M), table
    assert "`ldp-survey --db first.db simulate --clear campus-life`" in step

    # 6. Publish (the tutorial's command line for the same step).
    step = steps[6]
    publish = re.search(r"`(ldp-survey --db first\.db publish campus-life)`", step).group(1)
    assert "Published campus-life" in terminal.run(publish)

    # 7. The respondent page's protection box, then the phone's one answer.
    step = steps[7]
    respondent = text(browser.get("/s/campus-life").get_data(as_text=True))
    shows(step, respondent, "Your answers are scrambled on this device before they leave it")
    sure = re.search(r"after seeing all that this page sends they can be at most (\d+%) sure", flat(step)).group(1)
    assert f"After seeing all that this page sends, they can be at most {sure} sure" in respondent
    assert "You have already answered this survey on this device" in respondent, "the notice shown on reload"
    store = Store(str(folder / "first.db"))
    try:
        design = store.get_design("campus-life")
    finally:
        store.close()
    phone = app.test_client()
    sent = phone.post("/s/campus-life/responses", content_type="application/json",
                      data=json.dumps({"design": design["hash"], "answers": domain_answers(design)}))
    assert sent.status_code == 201

    # 8. The held response, the meter and the early release; then the estimates of one response.
    step = steps[8]
    dashboard = browser.get("/surveys/campus-life/results").get_data(as_text=True)
    shown = text(dashboard)
    for phrase in ("0 responses released", "No estimate: nobody has answered this question yet",
                   "Released results: every 370 responses",
                   "These results hold the 0 responses released so far; 1 more have arrived and will be added "
                   "when 370 have (369 to go)", "1 of 370 responses received", "Release the 1 held response now…"):
        shows(step, shown, phrase)
    assert re.search(r'<meter id="release-meter" min="0" max="370" value="1">', dashboard)
    csrf = re.search(r'id="release-csrf" name="csrf_token" type="hidden" value="([^"]+)"', dashboard).group(1)
    asked = browser.post("/surveys/campus-life/release", data={"csrf_token": csrf})
    confirm = text(browser.get(asked.headers["Location"]).get_data(as_text=True))
    shows(step, confirm, "Releasing the 1 held response now, fewer than 370, protects its respondent only at "
                         "central ε = 2 (a batch of one response: no amplification")
    shows(step, confirm, "Yes, release 1 response now")
    assert browser.post("/surveys/campus-life/release", data={"csrf_token": csrf, "confirm": "yes"}).status_code == 302
    assert "`ldp-survey --db first.db release campus-life --now`" in step
    released = text(browser.get("/surveys/campus-life/results").get_data(as_text=True))
    shows(step, released, "1 response released")
    shows(step, released, "One release was made early with a batch of one response: no amplification; the central "
                          "ε equals each report's ε = 2.")
    assert "No estimate" not in released
    assert "Between 0% and 100% of respondents answered yes to “Have you ever cheated in an exam?”" in released
    assert re.search(r"the best single estimate is (206|-106)%", released), "one report: 206% or −106% for yes"
    assert "206% or −106% for \"yes\"" in flat(step)
    assert "past the possible range" in released, "the page says so beside such an estimate"

    # 9. The exports as the tutorial runs them, and its pandas lines.
    step = steps[9]
    for line in commands(step):
        terminal.run(line)
    for name in ("estimates.csv", "reports.csv", "codebook.json", "reports.sav"):
        assert (folder / name).stat().st_size > 0, name
    snippet = re.search(r"```python\n(.*?)```", step, re.S).group(1)
    shown = subprocess.run([sys.executable, "-c", snippet], cwd=folder, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert {"question", "option", "n", "estimate", "ci_low", "ci_high"} <= set(shown.stdout.split())
    assert "cheated" in shown.stdout and "hours_work" in shown.stdout

    # 10. Close: the respondent page says the survey has closed.
    step = steps[10]
    close = re.search(r"`(ldp-survey --db first\.db close campus-life)`", step).group(1)
    terminal.run(close)
    assert "closed" in text(browser.get("/s/campus-life").get_data(as_text=True))
