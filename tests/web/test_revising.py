"""Correcting a published survey in the web (issue 27): the builder and the TOML editor say first what a save
changes; a text correction keeps one data set with a dated wording history; a design change makes version 2,
shown apart, with the version in every export."""

from __future__ import annotations

import csv
import html
import io
import json
import re
import subprocess
import sys
import zipfile

import pytest

from survey.store import Store
from survey.store.ids import today

from conftest import OTHER
from test_builder import fields, owner, page  # noqa: F401  (the fixture, signed in as the survey's owner)

pytestmark = pytest.mark.both_backends

SLUG = "smoking-2026"
ANSWERS = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}
RESPONSES = 7


@pytest.fixture
def answered(db_path, smoking_survey, accounts):
    """The smoking survey (open, released at once, owned by OWNER) with RESPONSES responses."""
    store = Store(db_path)
    try:
        store.add_responses(SLUG, smoking_survey["hash"], [ANSWERS] * RESPONSES)
    finally:
        store.close()
    return smoking_survey


def _confirm(client, response):
    """Press the confirmation page's button: post its form (CSRF token and the definition carried as it is)."""
    values = fields(response, "revise")
    return client.post(f"/surveys/{SLUG}/revise", data=values)


def _with_store(db_path, read):
    store = Store(db_path)
    try:
        return read(store)
    finally:
        store.close()


def test_builder_edit_of_an_open_survey_is_a_text_correction_after_a_confirmation(owner, db_path, answered):
    start = owner.get(f"/surveys/build?edit={SLUG}")
    assert f"<h1>Edit survey {SLUG}</h1>" in page(start) and "Review and save changes" in page(start)
    values = fields(start)
    assert values["editing"] == SLUG
    typo = values["questions-0-text"]
    values.update({"questions-0-text": typo.replace("smoke", "smoke cigarettes or"), "action": "save"})
    confirmation = owner.post("/surveys/build", data=values)
    assert confirmation.status_code == 200, page(confirmation)[:2000]
    text = page(confirmation)
    assert f"Text only: the {RESPONSES} responses stay one data set" in text
    assert "Question smoker: wording" in text and "Design changes" not in text
    assert re.search(r"<th scope=\"row\">Question smoker</th><td>[^<]*smoke tobacco[^<]*</td><td>[^<]*smoke cigarettes or "
                     r"tobacco", confirmation.get_data(as_text=True))
    assert "already exists" not in text
    # Nothing is stored before the confirmation.
    assert _with_store(db_path, lambda s: s.wordings(SLUG)) == []
    done = _confirm(owner, confirmation)
    assert done.status_code == 302 and done.headers["Location"].endswith(f"/surveys/{SLUG}/results")
    assert "Wording corrected" in page(owner.get(f"/surveys/{SLUG}/results"))
    assert _with_store(db_path, lambda s: s.received_count(SLUG)) == RESPONSES
    book = json.loads(owner.get(f"/surveys/{SLUG}/codebook.json").get_data(as_text=True))
    history = book["wording_history"]["questions"]["smoker"]
    assert [entry["text"] for entry in history] == [typo, typo.replace("smoke", "smoke cigarettes or")]
    assert history[1]["from"] == today() and "known by date" in book["wording_history"]["note"]
    assert book["design"]["hash"] == answered["hash"] == book["design_hash"]
    rows = list(csv.reader(io.StringIO(owner.get(f"/surveys/{SLUG}/responses.csv").get_data(as_text=True))))
    assert len(rows) == RESPONSES + 1 and "version" not in rows[0]
    from openpyxl import load_workbook

    sheets = load_workbook(io.BytesIO(owner.get(f"/surveys/{SLUG}/results.xlsx").get_data()))
    wordings = [[cell.value for cell in row] for row in sheets["wordings"].iter_rows()]
    assert ["smoker", history[0]["from"], typo, None] in wordings and ["smoker", today(), history[1]["text"], None] in wordings


def test_editor_design_change_makes_version_two_shown_apart_with_the_version_in_exports(owner, db_path, answered):
    definition = _with_store(db_path, lambda s: s.get_definition(SLUG))
    changed = re.sub(r"^epsilon = .*$", "epsilon = 1.5", definition, count=1, flags=re.M)
    start = owner.get(f"/surveys/new?edit={SLUG}")
    assert f"<h1>Edit survey {SLUG}</h1>" in page(start)
    token = fields(start, "new-survey")["csrf_token"]
    confirmation = owner.post(f"/surveys/new?edit={SLUG}", data={"csrf_token": token, "definition": changed,
                                                                  "create": "Create survey"})
    assert confirmation.status_code == 200
    text = page(confirmation)
    assert "(ε 2 → 1.5)" in text and "version 2, shown apart from version 1" in text
    assert "Survey privacy budget ε" in text and "Start version 2" in text
    assert _confirm(owner, confirmation).status_code == 302
    versions = _with_store(db_path, lambda s: s.versions(SLUG))
    assert [(v["slug"], v["version"], v["responses"]) for v in versions] == [
        (f"{SLUG}.v1", 1, RESPONSES), (SLUG, 2, 0)]
    current, first = page(owner.get(f"/surveys/{SLUG}/results")), page(owner.get(f"/surveys/{SLUG}.v1/results"))
    for shown in (current, first):
        assert "Versions: each shown apart, never pooled" in shown
        assert f"Version 1: ε = 2, {RESPONSES} responses" in shown and "Version 2 (current): ε = 1.5, 0 responses" in shown
    assert "These results are of version 2 only" in current and "These results are of version 1 only" in first
    listing = page(owner.get("/surveys"))
    assert "(version 1, earlier)" in listing and "(version 2)" in listing
    assert f'href="/s/{SLUG}.v1"' not in listing and f'href="/s/{SLUG}"' in listing
    # A kept version is never a respondent's address: its pages are 404, the survey's link serves version 2.
    respondent = owner.application.test_client()
    for path in ("", "/design.json", "/manifest.webmanifest"):
        assert respondent.get(f"/s/{SLUG}.v1{path}").status_code == 404, path
        assert respondent.get(f"/s/{SLUG}{path}").status_code == 200, path
    assert f"{RESPONSES} responses" in first.split("Versions:")[0] or f"{RESPONSES} response" in first
    rows = list(csv.reader(io.StringIO(owner.get(f"/surveys/{SLUG}.v1/responses.csv").get_data(as_text=True))))
    assert rows[0][-1] == "version" and len(rows) == RESPONSES + 1 and {row[-1] for row in rows[1:]} == {"1"}
    header = next(csv.reader(io.StringIO(owner.get(f"/surveys/{SLUG}/responses.csv").get_data(as_text=True))))
    assert header[-1] == "version"
    book = json.loads(owner.get(f"/surveys/{SLUG}.v1/codebook.json").get_data(as_text=True))
    assert book["version"]["number"] == 1 and book["version"]["of"] == 2 and book["design"]["slug"] == SLUG
    package = zipfile.ZipFile(io.BytesIO(owner.get(f"/surveys/{SLUG}.v1/package.zip").get_data()))
    names = {name.split("/", 1)[1]: name for name in package.namelist()}
    data = list(csv.reader(io.StringIO(package.read(names["responses.csv"]).decode())))
    assert data[0][-1] == "version" and len(data) == RESPONSES + 1
    schema = json.loads(package.read(names["datapackage.json"]))["resources"][0]["schema"]
    assert [field["name"] for field in schema["fields"]] == data[0]
    # The respondent address serves version 2; an earlier version cannot be corrected.
    assert owner.get(f"/s/{SLUG}/design.json").get_json()["epsilon"] == 1.5
    refused = owner.post(f"/surveys/{SLUG}.v1/revise", data=fields(confirmation, "revise"))
    assert refused.status_code == 409


def test_no_change_and_no_responses(owner, db_path, smoking_survey, accounts):
    definition = _with_store(db_path, lambda s: s.get_definition(SLUG))
    token = fields(owner.get(f"/surveys/new?edit={SLUG}"), "new-survey")["csrf_token"]
    same = owner.post(f"/surveys/new?edit={SLUG}", data={"csrf_token": token, "definition": definition,
                                                          "create": "Create survey"})
    assert "Nothing changes" in page(same) and "revise-confirm" not in page(same)
    changed = re.sub(r"^epsilon = .*$", "epsilon = 1", definition, count=1, flags=re.M)
    replaced = owner.post(f"/surveys/new?edit={SLUG}", data={"csrf_token": token, "definition": changed,
                                                              "create": "Create survey"})
    assert "simply replaces" in page(replaced) and "Replace the design" in page(replaced)
    assert _confirm(owner, replaced).status_code == 302
    assert _with_store(db_path, lambda s: (len(s.versions(SLUG)), s.get_design(SLUG)["epsilon"])) == (1, 1.0)


def test_only_people_of_the_survey_may_revise(app, db_path, answered):
    from test_ownership import signed_in

    other = signed_in(app, *OTHER)
    assert other.get(f"/surveys/build?edit={SLUG}").status_code == 404
    assert other.post(f"/surveys/{SLUG}/revise", data={"definition": "x"}).status_code in (400, 404)
    assert _with_store(db_path, lambda s: s.wordings(SLUG)) == []


def _back_to_editing(client, confirmation):
    """Press the confirmation's "Back to editing": post its form (CSRF token, the unsaved definition) to its action."""
    from test_builder import FormFields

    body = confirmation.get_data(as_text=True)
    action = html.unescape(re.search(r'<form method="post" action="([^"]+)" class="inline" id="back-to-editing">',
                                     body).group(1))
    parser = FormFields("back-to-editing")
    parser.feed(body)
    assert parser.buttons == ["edit"] and parser.fields["csrf_token"]
    assert re.search(r'<button type="submit" class="secondary" name="action" value="edit"\s+'
                     r'id="back-to-editing-button">Back to editing</button>', body)
    return client.post(action, data={**parser.fields, "action": "edit"})


def test_back_to_editing_keeps_the_unsaved_edit_in_the_builder_and_stores_nothing(app, owner, db_path, answered):
    stored = _with_store(db_path, lambda s: s.get_definition(SLUG))
    values = fields(owner.get(f"/surveys/build?edit={SLUG}"))
    edited = values["questions-0-text"].replace("smoke", "smoke cigarettes or")
    values.update({"questions-0-text": edited, "access": "invite", "action": "save"})
    confirmation = owner.post("/surveys/build", data=values)
    assert "Text and settings:" in page(confirmation) and "Discard the changes" in page(confirmation)
    back = _back_to_editing(owner, confirmation)
    assert back.status_code == 200, page(back)[:2000]
    assert f"<h1>Edit survey {SLUG}</h1>" in page(back) and "not saved yet" in page(back)
    again = fields(back)
    assert again["questions-0-text"] == edited and again["access"] == "invite" and again["editing"] == SLUG
    assert _with_store(db_path, lambda s: (s.get_definition(SLUG), s.wordings(SLUG))) == (stored, [])
    # The form brought back saves as the same edit: the round trip adds no change of its own.
    resaved = page(owner.post("/surveys/build", data={**again, "action": "save"}))
    assert "Text and settings:" in resaved and "Question smoker: wording" in resaved and "Design changes" not in resaved
    # Without the CSRF token, or for a survey one may not see, nothing is shown.
    assert owner.post(f"/surveys/build?edit={SLUG}", data={"definition": stored, "editing": SLUG,
                                                            "action": "edit"}).status_code == 400
    from test_ownership import signed_in

    other = signed_in(app, *OTHER)
    token = fields(other.get("/surveys/build"))["csrf_token"]
    for address in (f"/surveys/build?edit={SLUG}", f"/surveys/new?edit={SLUG}"):
        refused = other.post(address, data={"csrf_token": token, "definition": stored, "editing": SLUG,
                                            "action": "edit"})
        assert refused.status_code == 404, address
    assert _with_store(db_path, lambda s: s.get_definition(SLUG)) == stored


def test_back_to_editing_keeps_the_unsaved_edit_in_the_toml_editor(owner, db_path, answered):
    stored = _with_store(db_path, lambda s: s.get_definition(SLUG))
    changed = re.sub(r"^epsilon = .*$", "epsilon = 1.5", stored, count=1, flags=re.M) + "\n# keep this comment\n"
    token = fields(owner.get(f"/surveys/new?edit={SLUG}"), "new-survey")["csrf_token"]
    confirmation = owner.post(f"/surveys/new?edit={SLUG}", data={"csrf_token": token, "definition": changed,
                                                                  "create": "Create survey"})
    assert "Start version 2" in page(confirmation)
    back = _back_to_editing(owner, confirmation)
    assert back.status_code == 200 and "not saved yet" in page(back) and f"<h1>Edit survey {SLUG}</h1>" in page(back)
    assert fields(back, "new-survey")["definition"].replace("\r\n", "\n").strip() == changed.strip()
    assert _with_store(db_path, lambda s: (s.get_definition(SLUG), len(s.versions(SLUG)))) == (stored, 1)


def test_an_access_change_is_a_settings_change_kept_as_one_data_set(owner, db_path, answered):
    stored = _with_store(db_path, lambda s: s.get_definition(SLUG))
    assert not re.search(r"^access = ", stored, flags=re.M)  # open, the default
    changed = re.sub(r"^(epsilon = .*)$", r'\1\naccess = "invite"', stored, count=1, flags=re.M)
    token = fields(owner.get(f"/surveys/new?edit={SLUG}"), "new-survey")["csrf_token"]
    confirmation = owner.post(f"/surveys/new?edit={SLUG}", data={"csrf_token": token, "definition": changed,
                                                                  "create": "Create survey"})
    text = page(confirmation)
    assert (f"Settings only: no change to how answers are randomized, so the {RESPONSES} responses stay one data set."
            in text)
    assert "Text only" not in text and "Text changes" not in text and "Design changes" not in text
    assert "Access: anyone with the link → invitation only" in text and "Save the settings" in text
    done = _confirm(owner, confirmation)
    assert done.status_code == 302
    assert "Settings changed: the 7 responses stay one data set." in page(owner.get(f"/surveys/{SLUG}/results"))
    design, versions, received = _with_store(db_path, lambda s: (s.get_design(SLUG), s.versions(SLUG),
                                                                  s.received_count(SLUG)))
    assert design["access"] == "invite" and design["hash"] == answered["hash"]
    assert len(versions) == 1 and received == RESPONSES


def test_an_access_change_made_by_another_process_holds_for_the_next_submission_here(owner, db_path, answered,
                                                                                     tmp_path):
    """Every submission reads the survey's current design: a worker that kept the open design must not let a
    submission without an invitation through once another process made the survey invitation-only."""
    respondent = owner.application.test_client()
    body = json.dumps({"design": answered["hash"], "answers": ANSWERS})

    def submit():
        return respondent.post(f"/s/{SLUG}/responses", data=body, content_type="application/json")

    assert submit().status_code == 201  # this process has now read (and kept) the open design
    stored = _with_store(db_path, lambda s: s.get_definition(SLUG))
    changed = tmp_path / "invite.toml"
    changed.write_text(re.sub(r"^(epsilon = .*)$", r'\1\naccess = "invite"', stored, count=1, flags=re.M),
                       encoding="utf-8")
    revised = subprocess.run([sys.executable, "-m", "survey", "--db", str(db_path), "revise", SLUG, str(changed)],
                             capture_output=True, text=True, timeout=120)
    assert revised.returncode == 0, revised.stderr
    refused = submit()
    assert refused.status_code == 403 and refused.get_json()["field"] == "invite", refused.get_data(as_text=True)
    assert _with_store(db_path, lambda s: s.received_count(SLUG)) == RESPONSES + 1
