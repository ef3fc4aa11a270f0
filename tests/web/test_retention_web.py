"""Deleting a survey with its data, archiving it and its deletion date on the dashboard: the owner's alone, confirmed."""

from __future__ import annotations

import re

import pytest
from werkzeug.security import generate_password_hash

from survey.store import Store

from conftest import OTHER, OWNER, table_names

SLUG = "smoking-2026"
ANSWERS = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}
TOKEN_RE = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"')


def _sign_in(client, email: str, password: str):
    token = TOKEN_RE.search(client.get("/login").get_data(as_text=True)).group(1)
    assert client.post("/login", data={"csrf_token": token, "email": email, "password": password}).status_code == 302
    return client


def _token(client, path: str = f"/surveys/{SLUG}/results") -> str:
    return TOKEN_RE.search(client.get(path).get_data(as_text=True)).group(1)


@pytest.fixture
def owned(db_path, accounts):
    """The smoking survey owned by OWNER, with OTHER as a collaborator, 3 responses and 2 simulated ones."""
    store = Store(db_path)
    try:
        design = store.get_design(SLUG)
        store.add_responses(SLUG, design["hash"], [ANSWERS] * 3)
        store.add_responses(SLUG, design["hash"], [ANSWERS] * 2, source="simulated")
        store.share(SLUG, OTHER[0])
    finally:
        store.close()


def _exists(db_path) -> bool:
    store = Store(db_path)
    try:
        return store.survey_exists(SLUG)
    finally:
        store.close()


def test_the_owner_deletes_after_the_confirmation_page_and_a_collaborator_cannot(app, db_path, owned):
    other = _sign_in(app.test_client(), *OTHER)
    dashboard = other.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "Only the survey's owner can archive it" in dashboard and "Delete survey and all its data" not in dashboard
    assert other.get(f"/surveys/{SLUG}/delete").status_code == 403
    token = _token(other)
    assert other.post(f"/surveys/{SLUG}/delete", data={"csrf_token": token, "confirm": "yes"}).status_code == 403
    assert _exists(db_path)

    owner = _sign_in(app.test_client(), *OWNER)
    dashboard = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert 'class="button destructive"' in dashboard and f'href="/surveys/{SLUG}/delete"' in dashboard
    page = owner.get(f"/surveys/{SLUG}/delete").get_data(as_text=True)
    assert "3 released responses" in page and "2 test or simulated responses" in page
    assert f'href="/surveys/{SLUG}/package.zip"' in page, "the data package is offered first"
    assert 'class="destructive">Delete survey and all its data</button>' in page
    assert 'class="danger"' not in page, "the delete button does not look like Publish"
    assert owner.post(f"/surveys/{SLUG}/delete", data={"confirm": "yes"}).status_code == 400, "CSRF"
    token = _token(owner, f"/surveys/{SLUG}/delete")
    unconfirmed = owner.post(f"/surveys/{SLUG}/delete", data={"csrf_token": token})
    assert unconfirmed.status_code == 302 and unconfirmed.headers["Location"] == f"/surveys/{SLUG}/delete"
    assert _exists(db_path), "without confirm=yes nothing is deleted"
    done = owner.post(f"/surveys/{SLUG}/delete", data={"csrf_token": token, "confirm": "yes"})
    assert done.status_code == 302 and done.headers["Location"] == "/surveys"
    assert not _exists(db_path)
    assert f"Deleted {SLUG} and all its data." in owner.get("/surveys").get_data(as_text=True)
    assert owner.get(f"/surveys/{SLUG}/results").status_code == 404
    assert owner.get(f"/s/{SLUG}").status_code == 404
    store = Store(db_path)
    try:
        for table in table_names(store):
            if "survey" in [row[1] for row in store.conn.execute(f'PRAGMA table_info("{table}")')]:
                assert store.conn.execute(f'SELECT count(*) FROM "{table}" WHERE survey = ?', [SLUG]).fetchone()[0] == 0
    finally:
        store.close()


def test_archive_and_deletion_date_on_the_dashboard(app, client, db_path, owned):
    owner = _sign_in(app.test_client(), *OWNER)
    token = _token(owner)
    listing = owner.get("/surveys").get_data(as_text=True)
    assert "<th scope=\"col\" class=\"num\">Held</th>" in listing and "Show archived surveys" in listing

    response = owner.post(f"/surveys/{SLUG}/deletion-date", data={"csrf_token": token, "day": "2027-06-30"})
    assert response.status_code == 302
    dashboard = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "Deletion date: <strong>2027-06-30</strong>" in dashboard
    assert owner.get(f"/surveys/{SLUG}/codebook.json").json["deletion_date"]["day"] == "2027-06-30"
    assert "Give the deletion date" in owner.post(f"/surveys/{SLUG}/deletion-date", data={
        "csrf_token": token, "day": "soon"}, follow_redirects=True).get_data(as_text=True)
    owner.post(f"/surveys/{SLUG}/deletion-date", data={"csrf_token": token, "day": ""})
    assert "No deletion date" in owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)

    other = _sign_in(app.test_client(), *OTHER)
    assert other.post(f"/surveys/{SLUG}/archive", data={"csrf_token": _token(other)}).status_code == 403
    assert owner.post(f"/surveys/{SLUG}/archive", data={"csrf_token": token}).status_code == 302
    assert SLUG not in owner.get("/surveys").get_data(as_text=True)
    assert SLUG in owner.get("/surveys?archived=1").get_data(as_text=True)
    dashboard = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "Archived: read-only" in dashboard and "Reopen survey" not in dashboard
    respondent = client.get(f"/s/{SLUG}").get_data(as_text=True)
    assert "closed" in respondent
    store = Store(db_path)
    try:
        before = store.received_count(SLUG)
    finally:
        store.close()
    assert owner.post(f"/surveys/{SLUG}/reopen", data={"csrf_token": token}, follow_redirects=True).status_code == 200
    store = Store(db_path)
    try:
        assert store.survey_status(SLUG) == "closed" and store.received_count(SLUG) == before
    finally:
        store.close()
    owner.post(f"/surveys/{SLUG}/unarchive", data={"csrf_token": token})
    assert SLUG in owner.get("/surveys").get_data(as_text=True)


def test_the_survey_list_shows_held_responses(app, db_path, accounts):
    store = Store(db_path)
    try:
        text = store.get_definition(SLUG).replace('slug = "smoking-2026"\nrelease_every = 1',
                                                  'slug = "smoking-2026"\nrelease_every = 5')
        from survey.core.definition import parse_definition_toml
        from survey.core.design import build_design

        design = build_design(parse_definition_toml(text))
        store.create_survey(text, design, replace=True)
        store.add_responses(SLUG, design["hash"], [ANSWERS])
    finally:
        store.close()
    owner = _sign_in(app.test_client(), *OWNER)
    row = re.search(r"<code>smoking-2026</code>.*?</tr>", owner.get("/surveys").get_data(as_text=True), re.S).group(0)
    assert re.findall(r'<td class="num">([^<]*)</td>', row) == ["0", "1"], "0 released, 1 held"


def test_only_the_owner_deletes_a_draft(app, db_path, accounts):
    store = Store(db_path)
    try:
        text = store.get_definition(SLUG).replace('slug = "smoking-2026"', 'slug = "draft-2026"')
        from survey.core.definition import parse_definition_toml
        from survey.core.design import build_design

        store.create_survey(text, build_design(parse_definition_toml(text)), owner=OWNER[0], status="draft")
        store.share("draft-2026", OTHER[0])
    finally:
        store.close()
    other = _sign_in(app.test_client(), *OTHER)
    dashboard = other.get("/surveys/draft-2026/results").get_data(as_text=True)
    assert "Delete draft…" not in dashboard and "Publish…" in dashboard
    token = _token(other, "/surveys/draft-2026/results")
    assert other.post("/surveys/draft-2026/delete", data={"csrf_token": token, "confirm": "yes"}).status_code == 403
    owner = _sign_in(app.test_client(), *OWNER)
    assert "Delete draft…" in owner.get("/surveys/draft-2026/results").get_data(as_text=True)
    token = _token(owner, "/surveys/draft-2026/results")
    assert owner.post("/surveys/draft-2026/delete", data={"csrf_token": token, "confirm": "yes"}).status_code == 302
    store = Store(db_path)
    try:
        assert not store.survey_exists("draft-2026")
    finally:
        store.close()


def test_the_delete_page_lists_the_earlier_versions_that_go_with_the_survey(app, db_path, owned):
    from survey.core.definition import parse_definition_toml
    from survey.core.design import build_design

    store = Store(db_path)
    try:
        text = re.sub(r"^epsilon = .*$", "epsilon = 1", store.get_definition(SLUG), count=1, flags=re.M)
        store.new_version(SLUG, text, build_design(parse_definition_toml(text)))
    finally:
        store.close()
    owner = _sign_in(app.test_client(), *OWNER)
    page = owner.get(f"/surveys/{SLUG}/delete").get_data(as_text=True)
    assert f"its earlier version <code>{SLUG}.v1</code> with its 3 responses" in page
    assert f'href="/surveys/{SLUG}.v1/package.zip"' in page, "each version's data package is offered first"
    assert owner.get(f"/surveys/{SLUG}.v1/package.zip").status_code == 200
    token = _token(owner, f"/surveys/{SLUG}/delete")
    assert owner.post(f"/surveys/{SLUG}/delete", data={"csrf_token": token, "confirm": "yes"}).status_code == 302
    store = Store(db_path)
    try:
        assert not store.survey_exists(SLUG) and not store.survey_exists(f"{SLUG}.v1")
    finally:
        store.close()
    assert owner.get(f"/surveys/{SLUG}.v1/results").status_code == 404
