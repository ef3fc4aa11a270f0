"""The crosstab and regression views read the report patterns kept at insert: the same bytes as a recount.

On SQLite and PostgreSQL, with a release step of 3: the crosstab CSV, the crosstab API and the
regression API equal what ``survey.core`` makes of a recount from every stored report
(``joint_patterns(..., recount=True)``), before and after a release; held responses change nothing
until they are released, the sandbox never enters, and a view cached under one released count is
computed again once the count moves.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from werkzeug.security import generate_password_hash

from survey.core.crosstab import crosstab, crosstab_to_csv, crosstab_to_json
from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.core.modelling import fit_words
from survey.core.regression_text import regression_to_json
from survey.core.simulate import complete_truth, simulate_answers
from survey.store import Store

from conftest import REPO

pytestmark = pytest.mark.both_backends

SLUG = "smoking-2026"
EMAIL, PASSWORD = "joint@example.org", "joint views password"
STEP = 3


@pytest.fixture
def survey(db_path):
    """The smoking survey released in steps of 3, a researcher who owns it and an API token; return (design, token)."""
    text = (REPO / "examples" / "smoking.toml").read_text(encoding="utf-8")
    text = re.sub(r'^(slug = "[^"]*")$', rf"\1\nrelease_every = {STEP}", text, count=1, flags=re.M)
    design = build_design(parse_definition_toml(text))
    store = Store(db_path)
    try:
        store.create_survey(text, design)
        store.add_user(EMAIL, generate_password_hash(PASSWORD))
        store.share(SLUG, EMAIL)
        token = store.create_token(EMAIL, "joint")[1]
    finally:
        store.close()
    return design, token


def responses(design: dict, n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return simulate_answers(design, complete_truth(design, {}, rng), n, rng)


def recounted(db_path, design: dict):
    """Return what the views must show, from a recount of every stored report: (crosstab CSV, crosstab JSON, model JSON)."""
    questions = {question["id"]: question for question in design["questions"]}
    store = Store(db_path)
    try:
        (wa, wb), counts = store.joint_patterns(SLUG, ["smoker", "lung_disease"], recount=True)
        table_csv = crosstab_to_csv(crosstab(questions["smoker"], questions["lung_disease"], wa, wb, counts))
        (wa, wb), counts = store.joint_patterns(SLUG, ["smoker", "cigarettes"], recount=True)
        table_json = crosstab_to_json(crosstab(questions["smoker"], questions["cigarettes"], wa, wb, counts, level=0.9))
        words, counts = store.joint_patterns(SLUG, ["age", "smoker", "lung_disease"], recount=True)
        model = regression_to_json(fit_words(design, "age", ["smoker", "lung_disease"], words, counts))
    finally:
        store.close()
    return table_csv, table_json, model


def shown(client, token: str):
    """Return what the views show: (crosstab.csv, the crosstab API's table, the regression API's model)."""
    csv = client.get(f"/surveys/{SLUG}/crosstab.csv?a=smoker&b=lung_disease")
    assert csv.status_code == 200, csv.get_data(as_text=True)
    headers = {"Authorization": f"Bearer {token}"}
    table = client.get(f"/api/surveys/{SLUG}/crosstab?a=smoker&b=cigarettes&level=0.9", headers=headers)
    model = client.get(f"/api/surveys/{SLUG}/regression?outcome=age&covariates=smoker,lung_disease", headers=headers)
    assert table.status_code == 200 and model.status_code == 200, (table.json, model.json)
    table_body, model_body = table.json, model.json
    for body in (table_body, model_body):
        body.pop("slug"), body.pop("design_hash")
    return csv.get_data(as_text=True), table_body, model_body


def test_the_views_equal_a_recount_before_and_after_a_release(app, db_path, survey):
    design, token = survey
    client = app.test_client()
    page = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    assert client.post("/login", data={"csrf_token": csrf, "email": EMAIL, "password": PASSWORD}).status_code == 302
    sample = responses(design, 200, seed=5)
    store = Store(db_path)
    try:
        store.add_responses(SLUG, design["hash"], sample[:151])  # 150 released, 1 held
        store.add_responses(SLUG, design["hash"], sample[151:190], source="simulated")
        before = recounted(db_path, design)
        first = shown(client, token)
        assert first[0] == before[0]
        assert {key: first[1][key] for key in before[1]} == before[1]
        assert {key: first[2][key] for key in before[2]} == before[2]
        # A held response changes nothing a researcher reads; the release of the step changes the views.
        store.add_response(SLUG, design["hash"], sample[190])
        assert store.release_state(SLUG)["held"] == 2
        assert shown(client, token) == first
        store.add_response(SLUG, design["hash"], sample[191])
        assert store.release_state(SLUG) | {"smallest_release": None} == {
            "every": STEP, "released": 153, "held": 0, "smallest_release": None}
        after = recounted(db_path, design)
        second = shown(client, token)
        assert after != before and second != first
        assert second[0] == after[0]
        assert {key: second[1][key] for key in after[1]} == after[1]
        assert {key: second[2][key] for key in after[2]} == after[2]
        assert second[1]["n"] == 153
    finally:
        store.close()
