"""Shared fixtures (flaskr style): a temporary database, the app, its client, a CLI runner, the example survey.

The browser tests also share a live server (`ldp-survey serve` on 127.0.0.1) and headless Chromium.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from survey.definition import parse_definition_toml
from survey.design import build_design
from survey.store import Store

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("LDP_SURVEY_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


@pytest.fixture
def db_path(tmp_path) -> Path:
    """Return the path of a fresh, not yet created, SQLite database."""
    return tmp_path / "test.db"


@pytest.fixture
def app(db_path):
    """Return the web app on the temporary database (CSRF protection on)."""
    from survey.web import create_app

    return create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "test"})


@pytest.fixture
def client(app):
    """Return a Flask test client of the app."""
    return app.test_client()


@pytest.fixture
def cli_runner() -> CliRunner:
    """Return a click CliRunner (result.stdout and result.stderr are kept apart)."""
    return CliRunner()


@pytest.fixture
def smoking_toml() -> Path:
    """Return the path of the repository's examples/smoking.toml."""
    return REPO / "examples" / "smoking.toml"


@pytest.fixture
def smoking_survey(db_path, smoking_toml) -> dict:
    """Create the smoking survey in the temporary database and return its design."""
    text = smoking_toml.read_text(encoding="utf-8")
    design = build_design(parse_definition_toml(text, source=str(smoking_toml)))
    store = Store(db_path)
    try:
        store.create_survey(text, design)
    finally:
        store.close()
    return design


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    """Start `ldp-survey serve` (waitress) on 127.0.0.1 with the smoking survey; yield {"origin", "db"}.

    One server per test module; the survey is examples/smoking.toml, slug smoking-2026.
    """
    db_path = tmp_path_factory.mktemp("browser") / "browser.db"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "survey", "--db", str(db_path), "create",
                    str(REPO / "examples" / "smoking.toml")], check=True, env=env, capture_output=True)
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "survey", "--db", str(db_path), "serve",
                                "--host", "127.0.0.1", "--port", str(port)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"server did not start: {process.stdout.read().decode()}")
            time.sleep(0.1)
    yield {"origin": f"http://127.0.0.1:{port}", "db": db_path}
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    process.stdout.close()


@pytest.fixture(scope="module")
def browser():
    """Launch headless Chromium (Debian's, or $LDP_SURVEY_CHROMIUM) through Playwright; one per test module."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's chromium (apt-get install -y chromium)")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()
