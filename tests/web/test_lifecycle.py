"""A survey's lifecycle, draft -> open -> closed: the store's transitions, the respondent side and the dashboard."""

from __future__ import annotations

import json
import re

import pytest
from werkzeug.security import generate_password_hash

from survey.core.definition import parse_definition_toml
from survey.core.definition_toml import definition_with_slug
from survey.core.design import build_design
from survey.store import Store, StoreError, SurveyClosed

from conftest import table_names

pytestmark = pytest.mark.both_backends

SLUG = "smoking-2026"
GOOD = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}
TOKEN_RE = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"')


@pytest.fixture
def store(db_path):
    store = Store(db_path)
    yield store
    store.close()


def smoking(smoking_toml):
    text = smoking_toml.read_text(encoding="utf-8")
    return text, build_design(parse_definition_toml(text, source="smoking.toml"))


def test_new_surveys_are_open_unless_drafts_and_old_ones_stay_open(store, smoking_toml):
    text, design = smoking(smoking_toml)
    store.create_survey(text, design)
    assert store.survey_status(SLUG) == "open"
    assert store.list_surveys()[0]["status"] == "open"
    with pytest.raises(Exception, match="(?i)check constraint"):
        store.conn.execute("UPDATE surveys SET status = 'archived' WHERE slug = ?", [SLUG])
    other_text, other = definition_with_slug(text, "draft-copy")
    store.create_survey(other_text, other, status="draft")
    assert store.survey_status("draft-copy") == "draft"


def test_every_transition_is_checked(store, smoking_toml):
    text, design = smoking(smoking_toml)
    store.create_survey(text, design, status="draft")
    with pytest.raises(StoreError, match=r"cannot close survey 'smoking-2026': it is a draft \(a draft can be "
                                         r"published"):
        store.close_survey(SLUG)
    with pytest.raises(StoreError, match="cannot reopen"):
        store.reopen_survey(SLUG)
    assert store.publish_survey(SLUG) == "open"
    with pytest.raises(StoreError, match=r"cannot publish survey 'smoking-2026': it is open \(an open survey "
                                         r"can be closed"):
        store.publish_survey(SLUG)
    with pytest.raises(StoreError, match="only a draft can be deleted"):
        store.delete_draft(SLUG)
    assert store.close_survey(SLUG) == "closed"
    with pytest.raises(StoreError, match="it is closed"):
        store.close_survey(SLUG)
    with pytest.raises(StoreError, match="closed; its design is frozen"):
        store.create_survey(text, design, replace=True)
    assert store.reopen_survey(SLUG) == "open"


def test_a_draft_can_be_replaced_and_deleted_with_everything_it_had(store, smoking_toml):
    text, design = smoking(smoking_toml)
    store.add_user("a@example.org", "x")
    store.add_user("b@example.org", "x")
    store.create_survey(text, design, status="draft", owner="a@example.org")
    store.share(SLUG, "b@example.org")
    resaved = text.replace("Smoking and", "Smoking, and")
    store.create_survey(resaved, build_design(parse_definition_toml(resaved)), replace=True)
    assert store.survey_status(SLUG) == "draft" and store.get_definition(SLUG) == resaved
    table = store.conn.execute("SELECT reports_table FROM surveys WHERE slug = ?", [SLUG]).fetchone()[0]
    store.delete_draft(SLUG)
    assert not store.survey_exists(SLUG)
    assert not [name for name in table_names(store) if name.startswith(table)]
    for sql in ("SELECT count(*) FROM tallies WHERE survey = ?", "SELECT count(*) FROM collaborators WHERE survey = ?"):
        assert store.conn.execute(sql, [SLUG]).fetchone()[0] == 0


def test_duplicate_is_a_draft_with_the_same_definition_and_owner(store, smoking_toml):
    text, design = smoking(smoking_toml)
    store.add_user("a@example.org", "x")
    store.create_survey(text, design, owner="a@example.org")
    store.add_response(SLUG, design["hash"], GOOD)
    new_text, new_design = definition_with_slug(text, "smoking-2027")
    assert new_text == text.replace('slug = "smoking-2026"', 'slug = "smoking-2027"')
    assert new_design["hash"] != design["hash"]
    store.duplicate_survey(SLUG, new_text, new_design)
    copy = {s["slug"]: s for s in store.list_surveys()}["smoking-2027"]
    assert copy["status"] == "draft" and copy["owner"] == "a@example.org" and copy["responses"] == 0
    assert store.get_definition("smoking-2027") == new_text
    with pytest.raises(StoreError, match="already exists"):
        store.duplicate_survey(SLUG, new_text, new_design)


def test_closed_and_draft_surveys_store_nothing_in_either_insert_path(store, smoking_toml):
    text, design = smoking(smoking_toml)
    store.create_survey(text, design, status="draft")
    for path in (lambda: store.add_response(SLUG, design["hash"], GOOD),
                 lambda: store.add_responses(SLUG, design["hash"], [GOOD, GOOD])):
        with pytest.raises(SurveyClosed, match="draft"):
            path()
    store.publish_survey(SLUG)
    store.add_response(SLUG, design["hash"], GOOD)
    store.close_survey(SLUG)
    before = store.tallies(SLUG)
    for path in (lambda: store.add_response(SLUG, design["hash"], GOOD),
                 lambda: store.add_responses(SLUG, design["hash"], [GOOD, GOOD])):
        with pytest.raises(SurveyClosed, match="closed"):
            path()
    assert store.tallies(SLUG) == before and before[0] == 1
    assert store.recount(SLUG) == before[1]



@pytest.mark.parametrize("insert", ["response", "submission"])
def test_a_draft_replaced_after_its_design_was_read_refuses_the_old_design_cleanly(store, smoking_toml, insert):
    """The old design's report table is gone: both insert paths explain the refusal, neither fails on SQL."""
    text, design = smoking(smoking_toml)
    store.create_survey(text, design, status="draft")
    add = {"response": lambda: store.add_response(SLUG, design["hash"], GOOD),
           "submission": lambda: store.add_submission(SLUG, design["hash"], GOOD, submission="0" * 32)}[insert]
    with pytest.raises(SurveyClosed, match="draft"):
        add()
    resaved = text.replace("Smoking and", "Smoking, and")
    store.create_survey(resaved, build_design(parse_definition_toml(resaved)), replace=True)
    with pytest.raises(SurveyClosed, match="draft"):
        add()
    assert store.response_count(SLUG) == 0

# The respondent side


def submit(client, design):
    """POST a submission as the respondent page does: JSON, no cookie, no token."""
    return client.post(f"/s/{SLUG}/responses", data=json.dumps({"design": design["hash"], "answers": GOOD}),
                       content_type="application/json")


def test_a_submission_after_close_is_410_and_changes_nothing_and_reopen_accepts(client, db_path, smoking_survey):
    assert submit(client, smoking_survey).status_code == 201
    store = Store(db_path)
    try:
        store.close_survey(SLUG)
        before = store.tallies(SLUG)
    finally:
        store.close()
    response = submit(client, smoking_survey)
    assert response.status_code == 410 and response.is_json
    assert response.json["field"] is None and "closed" in response.json["error"]
    stale = client.post(f"/s/{SLUG}/responses", data=json.dumps({"design": "old", "answers": GOOD}),
                        content_type="application/json")
    assert stale.status_code == 410
    page = client.get(f"/s/{SLUG}")
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and "This survey has closed" in html
    assert "survey-form" not in html
    store = Store(db_path)
    try:
        assert store.tallies(SLUG) == before and before[0] == 1
        store.reopen_survey(SLUG)
    finally:
        store.close()
    assert submit(client, smoking_survey).status_code == 201


def test_a_draft_is_invisible_to_respondents(client, db_path, smoking_toml):
    text, design = smoking(smoking_toml)
    store = Store(db_path)
    try:
        store.create_survey(text, design, status="draft")
    finally:
        store.close()
    assert client.get(f"/s/{SLUG}").status_code == 404
    missing = client.get(f"/s/{SLUG}/design.json")
    assert missing.status_code == 404 and missing.is_json
    response = submit(client, design)
    assert response.status_code == 410 and response.json["field"] is None


# The dashboard


@pytest.fixture
def researcher(client, db_path, smoking_survey):
    store = Store(db_path)
    store.add_user("r@example.org", generate_password_hash("correct horse"))
    store.share(SLUG, "r@example.org")
    store.close()
    token = TOKEN_RE.search(client.get("/login").get_data(as_text=True)).group(1)
    assert client.post("/login", data={"csrf_token": token, "email": "r@example.org",
                                       "password": "correct horse"}).status_code == 302
    return client


def dashboard_token(client, slug=SLUG) -> str:
    return TOKEN_RE.search(client.get(f"/surveys/{slug}/results").get_data(as_text=True)).group(1)


def status(db_path, slug=SLUG) -> str | None:
    store = Store(db_path)
    try:
        return store.survey_status(slug) if store.survey_exists(slug) else None
    finally:
        store.close()


def test_dashboard_closes_reopens_duplicates_publishes_and_deletes(researcher, db_path):
    page = researcher.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "Status: <span class=\"status status-open\">open</span>" in page and "Close survey" in page
    assert researcher.post(f"/surveys/{SLUG}/close").status_code == 400, "a CSRF token is required"
    assert status(db_path) == "open"
    response = researcher.post(f"/surveys/{SLUG}/close", data={"csrf_token": dashboard_token(researcher)})
    assert response.status_code == 302 and "confirm=close" in response.headers["Location"]
    assert status(db_path) == "open", "the first press only asks for confirmation"
    page = researcher.get(response.headers["Location"]).get_data(as_text=True)
    assert 'id="confirm"' in page and 'class="danger">Yes, close the survey</button>' in page
    assert 'name="confirm" value="yes"' in page and "Close survey…" not in page, "the question replaces the button"
    response = researcher.post(f"/surveys/{SLUG}/close", data={"csrf_token": dashboard_token(researcher), "confirm": "yes"})
    assert response.status_code == 302 and response.headers["Location"] == f"/surveys/{SLUG}/results"
    assert status(db_path) == "closed"
    page = researcher.get(f"/surveys/{SLUG}/results?confirm=close").get_data(as_text=True)
    assert "Reopen survey" in page and 'id="confirm"' not in page, "no question for an action the status forbids"
    response = researcher.post(f"/surveys/{SLUG}/close", data={"csrf_token": dashboard_token(researcher), "confirm": "yes"},
                               follow_redirects=True)
    assert "it is closed" in response.get_data(as_text=True)
    researcher.post(f"/surveys/{SLUG}/reopen", data={"csrf_token": dashboard_token(researcher)})
    assert status(db_path) == "open"

    response = researcher.post(f"/surveys/{SLUG}/duplicate",
                               data={"csrf_token": dashboard_token(researcher), "new_slug": "Bad Slug"},
                               follow_redirects=True)
    assert "Cannot duplicate" in response.get_data(as_text=True) and status(db_path, "bad-slug") is None
    response = researcher.post(f"/surveys/{SLUG}/duplicate",
                               data={"csrf_token": dashboard_token(researcher), "new_slug": "smoking-copy"})
    assert response.headers["Location"] == "/surveys/smoking-copy/results"
    assert status(db_path, "smoking-copy") == "draft"
    listing = researcher.get("/surveys").get_data(as_text=True)
    assert "status-draft" in listing and "status-open" in listing
    assert researcher.get("/s/smoking-copy").status_code == 404

    token = dashboard_token(researcher, "smoking-copy")
    draft = researcher.get("/surveys/smoking-copy/results").get_data(as_text=True)
    # Publish is filled, Delete draft the dashed red warning of the dashboard's other delete (issue 27).
    assert 'class="button-primary">Publish…</button>' in draft and 'class="destructive">Delete draft…</button>' in draft
    assert draft.index('id="results-title"') < draft.index('id="manage"'), "the results come before the actions"
    response = researcher.post("/surveys/smoking-copy/publish", data={"csrf_token": token})
    assert response.status_code == 302 and "confirm=publish" in response.headers["Location"]
    assert status(db_path, "smoking-copy") == "draft", "the first press only asks for confirmation"
    assert "Yes, publish the survey" in researcher.get(response.headers["Location"]).get_data(as_text=True)
    response = researcher.post("/surveys/smoking-copy/delete", data={"csrf_token": token})
    assert response.status_code == 302 and "confirm=delete" in response.headers["Location"]
    assert status(db_path, "smoking-copy") == "draft", "the first press only asks for confirmation"
    page = researcher.get(response.headers["Location"]).get_data(as_text=True)
    assert "Yes, delete the draft" in page
    response = researcher.post("/surveys/smoking-copy/delete", data={"csrf_token": token, "confirm": "yes"})
    assert response.status_code == 302 and response.headers["Location"] == "/surveys"
    assert status(db_path, "smoking-copy") is None
    response = researcher.post(f"/surveys/{SLUG}/delete", data={"csrf_token": token})
    assert response.status_code == 302 and response.headers["Location"] == f"/surveys/{SLUG}/delete"
    assert status(db_path) == "open", "a published survey is deleted only from its own confirmation page"


def test_the_editor_makes_drafts_that_are_resaved_then_published(researcher, db_path, smoking_toml):
    text, _ = smoking(smoking_toml)
    draft = text.replace('slug = "smoking-2026"', 'slug = "from-editor"')

    def save(definition):
        token = TOKEN_RE.search(researcher.get("/surveys/new").get_data(as_text=True)).group(1)
        return researcher.post("/surveys/new", data={"csrf_token": token, "definition": definition, "create": "x"})

    assert save(draft).headers["Location"] == "/surveys/from-editor/results"
    assert status(db_path, "from-editor") == "draft"
    assert researcher.get("/s/from-editor/design.json").status_code == 404
    edit = researcher.get("/surveys/new?edit=from-editor").get_data(as_text=True)
    assert "from-editor" in edit
    assert save(draft.replace("Smoking and", "Resaved:")).status_code == 302, "a draft is re-saved in place"
    response = researcher.post("/surveys/from-editor/publish",
                               data={"csrf_token": dashboard_token(researcher, "from-editor"), "confirm": "yes"})
    assert response.status_code == 302 and status(db_path, "from-editor") == "open"
    assert researcher.get("/s/from-editor/design.json").json["title"].startswith("Resaved:")
    assert save(draft).status_code == 422, "an open survey is not replaced from the editor"


def test_a_slow_response_sent_with_an_older_cookie_cannot_drop_the_next_pages_message(researcher, db_path):
    """Only a changed session sends a cookie: a chart drawn while Close is pressed keeps "Closed" for the next page."""
    researcher.get(f"/surveys/{SLUG}/results")
    older = researcher.get_cookie("session").value
    response = researcher.post(f"/surveys/{SLUG}/close", data={"csrf_token": dashboard_token(researcher), "confirm": "yes"})
    assert response.status_code == 302 and "Set-Cookie" in response.headers, "the message rides in the session"
    chart = researcher.application.test_client()
    chart.set_cookie("session", older)
    for path in (f"/surveys/{SLUG}/charts/smoker.svg", f"/surveys/{SLUG}/results", "/surveys"):
        reply = chart.get(path)
        assert reply.status_code == 200 and "Set-Cookie" not in reply.headers, path
    page = researcher.get(response.headers["Location"]).get_data(as_text=True)
    assert "Closed: the survey takes no more responses" in page
