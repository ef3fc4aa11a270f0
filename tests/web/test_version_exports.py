"""Red team: each version's results, CSV, API and data package count its own responses only, never the sandbox."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.store import Store

from conftest import OWNER
from test_retention_web import _sign_in

SLUG = "smoking-2026"
ANSWERS = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}


def _versions_with_sandbox(db_path) -> str:
    """Give version 1 five responses and version 2 two, each beside three simulated ones; return an API token."""
    store = Store(db_path)
    try:
        first = store.get_design(SLUG)
        store.add_responses(SLUG, first["hash"], [ANSWERS] * 5)
        store.add_responses(SLUG, first["hash"], [ANSWERS] * 3, source="simulated")
        text = re.sub(r"^epsilon = .*$", "epsilon = 1", store.get_definition(SLUG), count=1, flags=re.M)
        second = build_design(parse_definition_toml(text))
        store.new_version(SLUG, text, second)
        store.add_responses(SLUG, second["hash"], [ANSWERS] * 2)
        store.add_responses(SLUG, second["hash"], [ANSWERS] * 3, source="simulated")
        return store.create_token(OWNER[0], "red team")[1]
    finally:
        store.close()


def _ns(csv_text: str) -> set[int]:
    """Return the distinct n of an aggregates CSV's rows."""
    return {int(row["n"]) for row in csv.DictReader(io.StringIO(csv_text)) if row["question"] == "smoker"}


def test_each_version_exports_its_own_responses_and_no_sandbox(app, db_path, accounts):
    token = _versions_with_sandbox(db_path)
    owner = _sign_in(app.test_client(), *OWNER)
    bearer = {"Authorization": f"Bearer {token}"}
    for slug, n in ((SLUG, 2), (f"{SLUG}.v1", 5)):
        assert _ns(owner.get(f"/surveys/{slug}/results.csv").get_data(as_text=True)) == {n}, slug
        rows = list(csv.DictReader(io.StringIO(owner.get(f"/surveys/{slug}/responses.csv").get_data(as_text=True))))
        assert len(rows) == n, slug
        api = json.loads(owner.get(f"/api/surveys/{slug}/results", headers=bearer).get_data(as_text=True))
        assert api["responses"] == n and {row["n"] for row in api["rows"] if row["question"] == "smoker"} == {n}, slug
        api_rows = owner.get(f"/api/surveys/{slug}/responses.csv", headers=bearer).get_data(as_text=True)
        assert len(list(csv.DictReader(io.StringIO(api_rows)))) == n, slug
        with zipfile.ZipFile(io.BytesIO(owner.get(f"/surveys/{slug}/package.zip").data)) as package:
            names = package.namelist()
            responses = next(name for name in names if name.endswith("responses.csv"))
            assert len(list(csv.DictReader(io.StringIO(package.read(responses).decode())))) == n, (slug, names)
            results = next(name for name in names if name.endswith("results.csv") or name.endswith("aggregates.csv"))
            assert _ns(package.read(results).decode()) == {n}, (slug, names)


def test_a_collaborator_removed_from_the_survey_gets_404_from_every_version(app, db_path, accounts):
    from conftest import OTHER

    store = Store(db_path)
    try:
        store.share(SLUG, OTHER[0])
    finally:
        store.close()
    _versions_with_sandbox(db_path)
    other = _sign_in(app.test_client(), *OTHER)
    pages = [f"/surveys/{slug}/{page}" for slug in (SLUG, f"{SLUG}.v1")
             for page in ("results", "results.csv", "responses.csv", "package.zip")]
    assert {path: other.get(path).status_code for path in pages} == dict.fromkeys(pages, 200)
    store = Store(db_path)
    try:
        store.remove_collaborator(SLUG, store.get_user(OWNER[0])["id"], OTHER[0])
    finally:
        store.close()
    assert {path: other.get(path).status_code for path in pages} == dict.fromkeys(pages, 404)
