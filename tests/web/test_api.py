"""The JSON API under /api/: per-researcher tokens (stored only as hashes), ownership, errors and headers."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from survey.cli import main
from survey.core.crosstab import crosstab, crosstab_to_json
from survey.store import Store, StoreError

from conftest import OTHER, OWNER, free_port

SLUG = "smoking-2026"
GOOD = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}


@pytest.fixture
def accounts(accounts, db_path, smoking_survey):
    """The two researchers of conftest; the smoking survey has a few responses."""
    store = Store(db_path)
    try:
        store.add_responses(SLUG, smoking_survey["hash"], [GOOD] * 30)
    finally:
        store.close()


def make_token(db_path, email, label=None) -> str:
    store = Store(db_path)
    try:
        return store.create_token(email, label)[1]
    finally:
        store.close()


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_token_create_prints_it_once_and_stores_only_its_hash(cli_runner, db_path, accounts, app):
    run = lambda *args: cli_runner.invoke(main, ["--db", str(db_path), "token", *args])  # noqa: E731
    created = run("create", OWNER[0], "--name", "notebook")
    assert created.exit_code == 0, created.output
    token = created.stdout.strip()
    assert re.fullmatch(r"ldps_[A-Za-z0-9_-]{43}", token)
    assert "shown only this once" in created.stderr
    # Neither the list nor the database holds the token; the database holds its SHA-256 hash.
    listing = run("list", OWNER[0])
    assert listing.exit_code == 0 and "notebook" in listing.stdout and token not in listing.stdout
    assert re.search(r"created \d{4}-\d{2}-\d{2}$", listing.stdout.strip())
    app.extensions["ldp_stores"].close_all()
    raw = b"".join(path.read_bytes() for path in db_path.parent.glob(db_path.name + "*"))
    assert token.encode() not in raw and token[5:].encode() not in raw
    digest = hashlib.sha256(token.encode()).hexdigest()
    store = Store(db_path)
    try:
        assert store.conn.execute("SELECT token_hash, label FROM api_tokens").fetchall() == [(digest, "notebook")]
        assert store.user_for_token(token)["email"] == OWNER[0]
        assert store.user_for_token(token + "x") is None and store.user_for_token("") is None
    finally:
        store.close()
    assert app.test_client().get("/api/surveys", headers=bearer(token)).status_code == 200
    duplicate = run("create", OWNER[0], "--name", "notebook")
    assert duplicate.exit_code == 1 and "already has a token labelled 'notebook'" in duplicate.stderr
    assert run("create", "ghost@example.org").exit_code == 1
    unnamed = run("create", OWNER[0])
    assert unnamed.exit_code == 0 and "'token-1'" in unnamed.stderr
    # Revoke by label, then by id.
    revoked = run("revoke", OWNER[0], "notebook")
    assert revoked.exit_code == 0 and "Revoked API token 'notebook'" in revoked.stdout
    assert app.test_client().get("/api/surveys", headers=bearer(token)).status_code == 401
    token_id = re.search(r"(\d+)\s+token-1", run("list", OWNER[0]).stdout).group(1)
    assert run("revoke", OWNER[0], token_id).exit_code == 0
    assert "No API tokens" in run("list", OWNER[0]).stdout
    missing = run("revoke", OWNER[0], "notebook")
    assert missing.exit_code == 1 and "no API token 'notebook'" in missing.stderr


def test_removing_an_account_deletes_its_tokens(db_path, accounts, app, cli_runner):
    token = make_token(db_path, OTHER[0])
    result = cli_runner.invoke(main, ["--db", str(db_path), "user", "remove", OTHER[0], "--yes"])
    assert result.exit_code == 0, result.output
    store = Store(db_path)
    try:
        assert store.conn.execute("SELECT count(*) FROM api_tokens").fetchone()[0] == 0
    finally:
        store.close()
    assert app.test_client().get("/api/surveys", headers=bearer(token)).status_code == 401


def test_a_new_password_keeps_tokens(db_path, accounts, app, cli_runner):
    token = make_token(db_path, OWNER[0])
    result = cli_runner.invoke(main, ["--db", str(db_path), "user", "passwd", OWNER[0]], input="a new password\n")
    assert result.exit_code == 0, result.output
    assert app.test_client().get("/api/surveys", headers=bearer(token)).status_code == 200


def test_store_refuses_bad_labels(db_path, accounts):
    store = Store(db_path)
    try:
        with pytest.raises(StoreError, match="at most 64"):
            store.create_token(OWNER[0], "x" * 65)
        with pytest.raises(StoreError, match="no researcher account"):
            store.create_token("ghost@example.org")
        with pytest.raises(StoreError, match="no API token"):
            store.revoke_token(store.get_user(OWNER[0])["id"], "nothing")
    finally:
        store.close()


def test_endpoints_with_a_token(app, db_path, accounts, smoking_survey):
    client = app.test_client()
    headers = bearer(make_token(db_path, OWNER[0]))
    listing = client.get("/api/surveys", headers=headers)
    assert listing.status_code == 200 and listing.is_json
    assert listing.json["surveys"] == [{"slug": SLUG, "title": smoking_survey["title"], "owner": OWNER[0],
                                        "responses": 30, "created_day": listing.json["surveys"][0]["created_day"],
                                        "design_hash": smoking_survey["hash"], "status": "open"}]
    results = client.get(f"/api/surveys/{SLUG}/results?level=0.9", headers=headers)
    assert results.status_code == 200
    body = results.json
    assert body["design_hash"] == smoking_survey["hash"] and body["responses"] == 30 and body["level"] == 0.9
    assert {row["question"] for row in body["rows"]} == {q["id"] for q in smoking_survey["questions"]}
    assert all(row["ci_level"] == 0.9 and row["n"] == 30 for row in body["rows"])
    default = client.get(f"/api/surveys/{SLUG}/results", headers=headers).json
    assert default["level"] == 0.95
    bad_level = client.get(f"/api/surveys/{SLUG}/results?level=2", headers=headers)
    assert bad_level.status_code == 400 and "level" in bad_level.json["error"]


def test_codebook_endpoint(app, db_path, accounts, smoking_survey):
    from survey.exports.codebook import codebook

    client = app.test_client()
    response = client.get(f"/api/surveys/{SLUG}/codebook", headers=bearer(make_token(db_path, OWNER[0])))
    assert response.status_code == 200 and response.is_json
    assert response.json == json.loads(json.dumps(codebook(smoking_survey)))


def test_crosstab_endpoint(app, db_path, accounts, smoking_survey):
    client = app.test_client()
    headers = bearer(make_token(db_path, OWNER[0]))
    response = client.get(f"/api/surveys/{SLUG}/crosstab?a=smoker&b=age&level=0.9", headers=headers)
    assert response.status_code == 200, response.get_data(as_text=True)
    body = response.json
    assert body["a"] == "smoker" and body["b"] == "age" and body["n"] == 30 and body["level"] == 0.9
    assert body["design_hash"] == smoking_survey["hash"]
    store = Store(db_path)
    try:
        words_a, words_b, counts = store.joint_reports(SLUG, "smoker", "age")
    finally:
        store.close()
    questions = {question["id"]: question for question in smoking_survey["questions"]}
    expected = crosstab_to_json(crosstab(questions["smoker"], questions["age"], words_a, words_b, counts, level=0.9))
    assert body["rows"] and {key: body[key] for key in expected} == expected
    for query, fragment in (("a=smoker", "missing: b"), ("", "missing: a and b"),
                            ("a=smoker&b=nope", "'nope' is not a question"),
                            ("a=smoker&b=smoker", "two different questions"),
                            ("a=age&b=smoker", "number question")):
        bad = client.get(f"/api/surveys/{SLUG}/crosstab?{query}", headers=headers)
        assert bad.status_code == 400 and bad.is_json and fragment in bad.json["error"], (query, bad.json)


def test_401_without_or_with_a_bad_or_revoked_token(app, db_path, accounts):
    client = app.test_client()
    token = make_token(db_path, OWNER[0], "script")
    for headers in ({}, {"Authorization": "Basic b3duZXI6cGFzcw=="}, {"Authorization": "Bearer "},
                    bearer("ldps_" + "A" * 43), bearer(token + "A"), bearer("not-a-token")):
        for path in ("/api/surveys", f"/api/surveys/{SLUG}/results", "/api/nothing"):
            response = client.get(path, headers=headers)
            assert response.status_code == 401, (headers, path)
            assert response.is_json and "error" in response.json
            assert response.headers["WWW-Authenticate"].startswith("Bearer")
    store = Store(db_path)
    try:
        store.revoke_token(store.get_user(OWNER[0])["id"], "script")
    finally:
        store.close()
    response = client.get("/api/surveys", headers=bearer(token))
    assert response.status_code == 401 and "revoked" in response.json["error"]


def test_the_session_cookie_is_not_an_api_credential(app, accounts):
    client = app.test_client()
    page = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    assert client.post("/login", data={"csrf_token": csrf, "email": OWNER[0], "password": OWNER[1]}).status_code == 302
    assert client.get("/surveys").status_code == 200
    response = client.get("/api/surveys")
    assert response.status_code == 401 and "Set-Cookie" not in response.headers
    assert "Cookie" not in response.headers.get("Vary", "")


def test_another_researchers_survey_is_404_like_a_missing_one(app, db_path, accounts):
    client = app.test_client()
    other = bearer(make_token(db_path, OTHER[0]))
    assert client.get("/api/surveys", headers=other).json == {"surveys": []}
    for path in (f"/api/surveys/{SLUG}/results", f"/api/surveys/{SLUG}/crosstab?a=smoker&b=age",
                 f"/api/surveys/{SLUG}/codebook",
                 f"/api/surveys/{SLUG}/crosstab", f"/api/surveys/{SLUG}/results?level=7"):
        theirs, missing = client.get(path, headers=other), client.get(path.replace(SLUG, "nope"), headers=other)
        assert theirs.status_code == missing.status_code == 404, path
        assert theirs.json == missing.json == {"error": "not found"}


def test_errors_are_json_and_the_api_is_read_only(app, db_path, accounts):
    client = app.test_client()
    headers = bearer(make_token(db_path, OWNER[0]))
    unknown = client.get("/api/nothing/here", headers=headers)
    assert unknown.status_code == 404 and unknown.json == {"error": "not found"}
    for method in ("POST", "PUT", "DELETE"):
        response = client.open("/api/surveys", method=method, headers=headers)
        assert response.status_code == 405 and response.is_json and "read-only" in response.json["error"]
        assert "GET" in response.headers["Allow"]
    # A POST needs no CSRF token to be refused as JSON (the blueprint is exempt; nothing is written).
    response = client.post(f"/api/surveys/{SLUG}/results", headers=headers)
    assert response.status_code == 405 and response.is_json


def test_no_store_on_researcher_pages_and_the_api_and_hsts_when_https(app, db_path, accounts, tmp_path):
    from survey.web import create_app

    client = app.test_client()
    headers = bearer(make_token(db_path, OWNER[0]))
    for path in ("/api/surveys", f"/api/surveys/{SLUG}/results", "/api/nothing"):
        assert client.get(path, headers=headers).headers["Cache-Control"] == "no-store", path
    assert client.get("/api/surveys").headers["Cache-Control"] == "no-store"
    page = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    client.post("/login", data={"csrf_token": csrf, "email": OWNER[0], "password": OWNER[1]})
    for path in ("/surveys", f"/surveys/{SLUG}/results", f"/surveys/{SLUG}/results.csv",
                 f"/surveys/{SLUG}/responses.csv", "/account/tokens"):
        response = client.get(path)
        assert response.status_code == 200 and response.headers["Cache-Control"] == "no-store", path
    chart = client.get(f"/surveys/{SLUG}/charts/smoker.svg")
    assert chart.headers["Cache-Control"] == "no-store" and chart.headers["ETag"]
    assert "Strict-Transport-Security" not in chart.headers
    secure = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "test", "HSTS": True})
    try:
        for path in ("/healthz", f"/s/{SLUG}", "/api/surveys"):
            assert secure.test_client().get(path).headers["Strict-Transport-Security"] == "max-age=31536000"
    finally:
        secure.extensions["ldp_stores"].close_all()


def test_serve_https_sets_the_hsts_flag(monkeypatch, cli_runner, db_path, accounts):
    from survey.web import server

    seen = []

    def fake_serve(app, listener, **kwargs):
        seen.append((app.config["HSTS"], app.config["SESSION_COOKIE_SECURE"]))
        listener.close()
        app.extensions["ldp_stores"].close_all()

    monkeypatch.setattr(server, "serve", fake_serve)
    for flags in (["--https"], []):
        result = cli_runner.invoke(main, ["--db", str(db_path), "serve", "--port", str(free_port()), *flags])
        assert result.exit_code == 0, result.output
    assert seen == [(True, True), (False, False)]


def token_page_form(client, url="/account/tokens"):
    page = client.get(url).get_data(as_text=True)
    return page, re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)


def test_the_token_page_creates_shows_once_and_revokes(app, accounts):
    client = app.test_client()
    assert client.get("/account/tokens").headers["Location"].startswith("/login")
    page = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    client.post("/login", data={"csrf_token": csrf, "email": OWNER[0], "password": OWNER[1]})
    page, csrf = token_page_form(client)
    assert "You have no API tokens" in page and "API tokens" in client.get("/surveys").get_data(as_text=True)
    assert client.post("/account/tokens", data={"label": "laptop"}).status_code == 400  # no CSRF token
    created = client.post("/account/tokens", data={"csrf_token": csrf, "label": "laptop"})
    assert created.status_code == 200 and created.headers["Cache-Control"] == "no-store"
    token = re.search(r'<code class="token" id="new-token">(ldps_[^<]+)</code>', created.get_data(as_text=True)).group(1)
    api = app.test_client()
    assert api.get(f"/api/surveys/{SLUG}/results", headers=bearer(token)).status_code == 200
    again, csrf = token_page_form(client)
    assert token not in again and "laptop" in again
    duplicate = client.post("/account/tokens", data={"csrf_token": csrf, "label": "laptop"})
    assert duplicate.status_code == 400 and "already has a token labelled" in duplicate.get_data(as_text=True)
    token_id = re.search(r'name="token_id" value="(\d+)"', again).group(1)
    assert client.post("/account/tokens/revoke", data={"token_id": token_id}).status_code == 400  # no CSRF token
    assert api.get("/api/surveys", headers=bearer(token)).status_code == 200
    revoked = client.post("/account/tokens/revoke", data={"csrf_token": csrf, "token_id": token_id})
    assert revoked.status_code == 302
    assert "Revoked the token laptop" in client.get("/account/tokens").get_data(as_text=True)
    assert api.get("/api/surveys", headers=bearer(token)).status_code == 401
    # Another researcher cannot revoke someone else's token by its id.
    store_token = make_token_for(app, OWNER[0])
    other = app.test_client()
    page = other.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    other.post("/login", data={"csrf_token": csrf, "email": OTHER[0], "password": OTHER[1]})
    _, csrf = token_page_form(other)
    other.post("/account/tokens/revoke", data={"csrf_token": csrf, "token_id": str(store_token[0]["id"])})
    assert "There is no such token" in other.get("/account/tokens").get_data(as_text=True)
    assert api.get("/api/surveys", headers=bearer(store_token[1])).status_code == 200


def make_token_for(app, email):
    store = Store(app.config["DATABASE"])
    try:
        return store.create_token(email)
    finally:
        store.close()
