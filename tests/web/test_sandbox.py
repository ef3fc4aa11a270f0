"""The sandbox: test answers and simulated respondents live apart from a survey's real responses.

Store, migration, CLI (simulate, --alongside-real, --clear, --sandbox reads) and the test-mode
endpoint without a browser (tests/browser/test_testmode_browser.py drives the real page).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import sqlite_utils

from survey.cli import main
from survey.core.simulate import complete_truth, simulate_answers
from survey.store import Store

from conftest import OWNER, PANEL_TOML, create_from_toml, domain_answers, table_names
from test_ownership import signed_in

pytestmark = pytest.mark.both_backends

SLUG = "smoking-2026"


def run(db_path, *args):
    from click.testing import CliRunner

    return CliRunner().invoke(main, ["--db", str(db_path), *map(str, args)])


def add_real(db_path, n=1, slug=SLUG):
    store = Store(db_path)
    try:
        design = store.get_design(slug)
        rng = np.random.default_rng(1)
        store.add_responses(slug, design["hash"], simulate_answers(design, complete_truth(design, {}, rng), n, rng))
    finally:
        store.close()


def reads(db_path) -> dict:
    """Return every CLI read of the real responses."""
    return {what: run(db_path, "export", SLUG, f"--{what}").stdout for what in ("aggregates", "responses")} | {
        "crosstab": run(db_path, "crosstab", SLUG, "smoker", "lung_disease", "--format", "csv").stdout}


def test_simulate_refuses_a_survey_with_real_responses_unless_told(db_path, smoking_survey):
    add_real(db_path)
    before = reads(db_path)
    refused = run(db_path, "simulate", SLUG, "--n", 5, "--seed", 1)
    assert refused.exit_code == 1 and "1 real response" in refused.stderr and "--alongside-real" in refused.stderr
    store = Store(db_path)
    try:
        assert store.sandbox_counts(SLUG) == {"test": 0, "simulated": 0} and store.response_count(SLUG) == 1
    finally:
        store.close()
    added = run(db_path, "simulate", SLUG, "--n", 50, "--seed", 1, "--alongside-real")
    assert added.exit_code == 0 and "now 50 simulated" in added.stdout
    assert reads(db_path) == before  # excluded from every real read
    codebook = run(db_path, "export", SLUG, "--codebook")
    assert json.loads(codebook.stdout)["simulated_kept_apart"]["responses"] == 50
    assert "50 simulated responses" in codebook.stderr
    sandbox = run(db_path, "aggregate", SLUG, "--sandbox", "--format", "json")
    assert {row["n"] for row in json.loads(sandbox.stdout)} == {50}
    cleared = run(db_path, "simulate", "--clear", SLUG)
    assert cleared.exit_code == 0 and "Deleted 50 simulated responses" in cleared.stdout
    assert reads(db_path) == before
    assert "simulated_kept_apart" not in json.loads(run(db_path, "export", SLUG, "--codebook").stdout)
    assert run(db_path, "simulate", "--clear", SLUG, "--n", 3).exit_code == 2
    assert run(db_path, "simulate", SLUG).exit_code == 2


def test_the_dashboard_says_how_many_responses_are_simulated(app, db_path, accounts):
    add_real(db_path)
    assert run(db_path, "simulate", SLUG, "--n", 7, "--seed", 2, "--alongside-real").exit_code == 0
    page = signed_in(app, *OWNER).get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "1 response." in page
    assert re.search(r"simulated responses: 7", page)


def test_a_simulated_draft_stays_a_draft_with_its_design_unfrozen(db_path, smoking_toml):
    assert run(db_path, "create", smoking_toml, "--draft").exit_code == 0
    assert run(db_path, "simulate", SLUG, "--n", 20, "--seed", 3).exit_code == 0
    assert run(db_path, "create", smoking_toml, "--replace", "--draft").exit_code == 0
    store = Store(db_path)
    try:
        assert store.survey_status(SLUG) == "draft" and store.response_count(SLUG) == 0
        assert store.sandbox_counts(SLUG)["simulated"] == 20  # the same design: the sandbox is kept
        assert store.question_counts(SLUG, sandbox=True) == store.recount(SLUG, sandbox=True)
        store.delete_draft(SLUG)
        assert not [name for name in table_names(store) if name.startswith("sandbox_") and name != "sandbox_tallies"]
    finally:
        store.close()


@pytest.mark.sqlite_only
def test_an_older_database_gains_a_sandbox_with_nothing_lost(db_path, smoking_survey):
    add_real(db_path, n=30)
    store = Store(db_path)
    try:
        before = [*store.iter_responses(SLUG)]
        design = store.get_design(SLUG)
    finally:
        store.close()
    db = sqlite_utils.Database(db_path)
    db.execute(f'DROP TABLE "sandbox_{design["hash"][:16]}"')
    db.execute("DROP TABLE sandbox_tallies")
    db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm008_sandbox'")
    db.conn.commit()
    db.close()
    store = Store(db_path)
    try:
        assert [*store.iter_responses(SLUG)] == before and store.response_count(SLUG) == 30
        assert store.sandbox_counts(SLUG) == {"test": 0, "simulated": 0}
        store.add_responses(SLUG, design["hash"], [domain_answers(design)], source="test")
        assert store.sandbox_counts(SLUG)["test"] == 1 and store.response_count(SLUG) == 30
    finally:
        store.close()


def _test_token(client, slug):
    page = client.get(f"/surveys/{slug}/test").get_data(as_text=True)
    return re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)


def test_test_mode_needs_no_invitation_and_validates_as_a_real_answer(app, db_path, accounts):
    create_from_toml(db_path, PANEL_TOML)
    store = Store(db_path)
    try:
        store.share("panel", OWNER[0])
        design = store.get_design("panel")
    finally:
        store.close()
    owner = signed_in(app, *OWNER)
    page = owner.get("/surveys/panel/test").get_data(as_text=True)
    assert "Test mode: nothing you send here counts" in page and "invite-needed" not in page
    token = _test_token(owner, "panel")
    url = "/surveys/panel/test/responses"
    body = {"design": design["hash"], "answers": domain_answers(design)}
    assert owner.post(url, json=body).status_code == 400  # no CSRF token
    assert owner.post(url, json={**body, "answers": {"remote": 7}}, headers={"X-CSRFToken": token}).status_code == 400
    assert owner.post(url, json={**body, "design": "stale"}, headers={"X-CSRFToken": token}).status_code == 409
    stored = owner.post(url, json={**body, "submission": "0" * 32}, headers={"X-CSRFToken": token})
    assert stored.status_code == 201 and stored.json == {"stored": True, "test": True}
    store = Store(db_path)
    try:
        assert store.sandbox_counts("panel") == {"test": 1, "simulated": 0}
        assert store.response_count("panel") == 0 and store.invitation_counts("panel") == (0, 0)
        assert list(store.iter_responses("panel")) == []
    finally:
        store.close()
    clear_page = owner.get("/surveys/panel/sandbox").get_data(as_text=True)
    clear_token = re.search(r'id="clear-test-csrf" name="csrf_token" type="hidden" value="([^"]+)"',
                            clear_page).group(1)
    assert owner.post("/surveys/panel/sandbox/clear", data={"csrf_token": clear_token, "source": "real"}).status_code == 400
    done = owner.post("/surveys/panel/sandbox/clear", data={"csrf_token": clear_token, "source": "test"},
                      follow_redirects=True)
    assert "Cleared the test answers (1 deleted)" in done.get_data(as_text=True)
