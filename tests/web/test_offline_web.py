"""Offline field mode's server side (survey/web/offline.py, templates/respond.html): the service worker is
served with a scope over the survey pages and revalidated, each visible survey has a web app manifest
(none for a draft), the open and the closed page carry the offline status regions, a blocked page
for another reason and test mode carry none."""

from __future__ import annotations

import json

import pytest

from conftest import OWNER
from survey.core.definition_toml import definition_with_slug
from survey.store import Store
from test_ownership import signed_in

SLUG = "smoking-2026"


@pytest.fixture
def store(db_path, smoking_survey):
    store = Store(db_path)
    yield store
    store.close()


def test_the_worker_is_served_under_s_revalidated_and_only_answers_gets(client):
    response = client.get("/s/offline-worker.js")
    assert response.status_code == 200
    assert response.mimetype == "text/javascript"
    assert response.headers["Cache-Control"] == "no-cache"
    assert "Service-Worker-Allowed" not in response.headers, "its own folder, /s/, is the scope it needs"
    text = response.get_data(as_text=True)
    assert "request.method === 'GET'" in text and "cache.put(request" in text
    assert "importScripts" not in text


def test_a_visible_survey_has_a_manifest_whose_start_and_scope_are_its_page(client, store):
    response = client.get(f"/s/{SLUG}/manifest.webmanifest")
    assert response.status_code == 200 and response.mimetype == "application/manifest+json"
    manifest = json.loads(response.get_data(as_text=True))
    assert manifest["start_url"] == manifest["scope"] == f"/s/{SLUG}"
    assert manifest["name"] == "Smoking and lung health" and manifest["display"] == "standalone"
    icon = client.get(manifest["icons"][0]["src"])
    assert icon.status_code == 200 and icon.mimetype == "image/svg+xml"
    assert client.get("/s/no-such-survey/manifest.webmanifest").status_code == 404


def test_a_draft_has_no_manifest(client, store, smoking_toml):
    text, design = definition_with_slug(smoking_toml.read_text(encoding="utf-8"), "draft-copy")
    store.create_survey(text, design, status="draft")
    assert client.get("/s/draft-copy/manifest.webmanifest").status_code == 404


def test_the_open_and_the_closed_page_carry_the_offline_regions(client, store):
    page = client.get(f"/s/{SLUG}").get_data(as_text=True)
    assert 'id="offline-status" role="status" aria-live="polite"' in page
    assert 'data-worker="/s/offline-worker.js"' in page and f'data-action="/s/{SLUG}/responses"' in page
    assert f'<link rel="manifest" href="/s/{SLUG}/manifest.webmanifest">' in page
    store.close_survey(SLUG)
    closed = client.get(f"/s/{SLUG}").get_data(as_text=True)
    assert 'id="survey-closed"' in closed and 'id="offline-refused"' in closed
    assert "/static/js/page/respond.js" in closed, "the closed page still sends, and reports, what waits"
    assert 'id="survey-form"' not in closed


def test_an_invitation_page_without_a_usable_link_and_test_mode_keep_nothing_offline(app, client, store, accounts,
                                                                                    smoking_toml):
    text = smoking_toml.read_text(encoding="utf-8").replace("epsilon = 2.0", 'epsilon = 2.0\naccess = "invite"')
    text, design = definition_with_slug(text, "invited")
    store.create_survey(text, design)
    page = client.get("/s/invited").get_data(as_text=True)
    assert 'id="invite-needed"' in page and "offline-status" not in page
    test_page = signed_in(app, *OWNER).get(f"/surveys/{SLUG}/test").get_data(as_text=True)
    assert 'id="survey-form"' in test_page and 'data-test="yes"' in test_page
    assert "offline-status" not in test_page and 'rel="manifest"' not in test_page
