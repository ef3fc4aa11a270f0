"""The API's OpenAPI 3.1 description: valid, in step with the routes both ways, and obeyed by the
real server under a schema-based fuzzer (schemathesis) with a real token."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
import schemathesis
from schemathesis.specs.openapi.checks import positive_data_acceptance
from hypothesis import HealthCheck, settings
from openapi_spec_validator import validate

from survey.store import Store
from survey.web import create_app
from survey.web.api.openapi import openapi_document

from conftest import OTHER, OWNER, PANEL_TOML, create_from_toml, create_smoking_db, start_server

pytestmark = pytest.mark.serial

SLUG = "smoking-2026"
CONTEXT_DEPENDENT = ("/crosstab", "/responses", "/regression")
SEEN: dict[str, set[int]] = defaultdict(set)  # statuses the fuzzer got, per path
REPORTS = [{"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1},
           {"smoker": 0, "lung_disease": 1, "cigarettes": [1, 0, 0, 0, 1], "age": 0}]


def openapi_path(rule: str) -> str:
    """Return a Flask rule as OpenAPI writes it: ``/api/surveys/<slug>/results`` → ``/api/surveys/{slug}/results``."""
    return rule.replace("<", "{").replace(">", "}")


def test_the_document_is_valid_openapi_3_1():
    document = openapi_document()
    validate(document)
    assert document["openapi"].startswith("3.1")


def test_every_api_route_is_described_and_every_described_path_is_a_route(tmp_path):
    app = create_app({"TESTING": True, "DATABASE": str(tmp_path / "x.db"), "SECRET_KEY": "test"})
    routes = {openapi_path(rule.rule) for rule in app.url_map.iter_rules()
              if rule.rule.startswith("/api/") and rule.endpoint != "api.unknown"}
    described = set(openapi_document()["paths"])
    assert routes == described


def test_the_document_is_served_without_a_token(tmp_path):
    client = create_app({"TESTING": True, "DATABASE": str(tmp_path / "x.db"), "SECRET_KEY": "test"}).test_client()
    response = client.get("/api/openapi.json")
    assert response.status_code == 200 and response.is_json
    assert response.json == json.loads(json.dumps(openapi_document()))
    assert client.get("/api/surveys").status_code == 401


@pytest.fixture(scope="module")
def live_api(tmp_path_factory):
    """The real server with the smoking survey (owned by OWNER, with responses), OTHER's survey, and OWNER's token."""
    from werkzeug.security import generate_password_hash

    directory = tmp_path_factory.mktemp("openapi")
    db_path = directory / "api.db"
    create_smoking_db(db_path)
    create_from_toml(db_path, PANEL_TOML)
    store = Store(db_path)
    try:
        for email, password in (OWNER, OTHER):
            store.add_user(email, generate_password_hash(password))
        store.share(SLUG, OWNER[0])
        store.share("panel", OTHER[0])
        store.add_responses(SLUG, store.get_design(SLUG)["hash"], REPORTS * 40)
        token = store.create_token(OWNER[0], "fuzzer")[1]
    finally:
        store.close()
    server = start_server(db_path, directory / "server.log", "--max-submissions-per-minute", "0")
    yield {"origin": server.origin, "token": token}
    status = server.stop()
    assert status == 0, server.log_text()[-3000:]


# The document the server serves (test_the_document_is_served_without_a_token checks they are equal),
# loaded at collection so that every operation becomes a test of its own.
schema = schemathesis.openapi.from_dict(openapi_document())
FUZZ = settings(max_examples=40, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@pytest.mark.slow
@schema.parametrize()
@FUZZ
def test_every_response_conforms_to_the_document(case, live_api):
    # Where validity depends on more than each parameter alone, a well-formed request may rightly answer
    # 400 (documented, with the reason): a crosstab's ?a= and ?b= and a regression's questions must name
    # questions of the survey, which no schema can list; the responses' limit and cursor page JSON only.
    excluded = [positive_data_acceptance] if case.operation.path.endswith(CONTEXT_DEPENDENT) else []
    response = case.call_and_validate(base_url=live_api["origin"], excluded_checks=excluded,
                                      headers={"Authorization": f"Bearer {live_api['token']}"})
    SEEN[case.operation.path].add(response.status_code)


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=5, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_without_a_token_every_response_conforms_too(case, live_api):
    response = case.call_and_validate(base_url=live_api["origin"])
    if case.method.upper() == "GET":
        public = case.operation.path == "/api/openapi.json"
        assert response.status_code == 200 if public else response.status_code in (400, 401)


@pytest.mark.slow
def test_the_fuzzer_reached_every_operation_with_real_data():
    """The slug examples lead the fuzzer to the real survey: every operation answered 200 at least once."""
    assert set(SEEN) == set(openapi_document()["paths"])
    assert {path for path, statuses in SEEN.items() if 200 not in statuses} == set()
