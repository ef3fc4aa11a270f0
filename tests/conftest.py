"""Shared fixtures (flaskr style): a temporary database, the app, its client, a CLI runner, the example survey."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from survey.definition import parse_definition_toml
from survey.design import build_design
from survey.store import Store

REPO = Path(__file__).resolve().parent.parent


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
