"""Deleting, archiving and dating surveys in the store: a deleted survey leaves no row in any table (both backends)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from werkzeug.security import generate_password_hash

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.store import Store, StoreError, SurveyClosed, SurveyNotFound
from survey.web.secret import link_tokens

from conftest import REPO, is_postgres, table_columns, table_names

pytestmark = pytest.mark.both_backends

ANSWERS = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}


def _definition(slug: str, *, invite: bool = False) -> str:
    """Return examples/smoking.toml under ``slug``, released 2 at a time, invitation only when ``invite``."""
    text = (REPO / "examples" / "smoking.toml").read_text(encoding="utf-8")
    extra = "\nrelease_every = 2" + ('\naccess = "invite"' if invite else "")
    return re.sub(r'^slug = "[^"]*"$', f'slug = "{slug}"{extra}', text, count=1, flags=re.M)


def _create(store, slug: str, **kwargs) -> dict:
    text = _definition(slug, **kwargs)
    design = build_design(parse_definition_toml(text))
    store.create_survey(text, design, owner="owner@example.org")
    return design


@pytest.fixture
def store(db_path):
    store = Store(db_path)
    store.add_user("owner@example.org", generate_password_hash("owner password"))
    store.add_user("helper@example.org", generate_password_hash("helper password"))
    yield store
    store.close()


def _fill(store, design: dict):
    """Give a survey everything a survey can have: released, held, test and simulated responses, invitations
    (used and not), a submission record, a collaborator, a join link and a deletion date."""
    slug = design["slug"]
    answers = ANSWERS
    tokens = store.create_invitations(slug, 3)
    for index, token in enumerate(tokens[:2]):
        assert store.add_submission(slug, design["hash"], answers, submission=f"sub-{slug}-{index}", invite=token)
    store.add_responses(slug, design["hash"], [answers], source="test")
    store.add_responses(slug, design["hash"], [answers] * 3, source="simulated")
    store.share(slug, "helper@example.org")
    owner = store.get_user("owner@example.org")
    store.invite_collaborator(slug, owner["id"], "third@example.org")
    store.set_deletion_date(slug, "2030-01-01")
    token_for = link_tokens("retention test key")
    store.add_addresses(slug, [f"invitee@{slug}.example.org"], token_for)
    (address,) = store.addresses_to_mail(slug, "invitation", token_for)
    store.record_mail(slug, address["id"], "invitation")
    # A third response through the invitation's last token: 2 released, 1 held.
    assert store.add_submission(slug, design["hash"], answers, invite=tokens[2])
    state = store.release_state(slug)
    assert (state["released"], state["held"]) == (2, 1)


def _rows_naming(store, slug: str, design_hash: str) -> dict[str, int]:
    """Return, per table of the schema, how many rows hold the slug in any column, and every table named after
    the design's hash (its reports, held and sandbox tables)."""
    found = {}
    for table in table_names(store):
        if design_hash[:16] in table:
            found[table] = -1
            continue
        columns = table_columns(store, table)
        where = " OR ".join(f'CAST("{column}" AS TEXT) = ?' for column in columns)
        count = store.conn.execute(f'SELECT count(*) FROM "{table}" WHERE {where}', [slug] * len(columns)).fetchone()[0]
        if count:
            found[table] = count
    return found


def test_delete_survey_leaves_no_row_of_it_in_any_table(store):
    kept = _create(store, "kept-survey", invite=True)
    gone = _create(store, "gone-survey", invite=True)
    _fill(store, kept)
    _fill(store, gone)
    before = _rows_naming(store, "gone-survey", gone["hash"])
    # The enumeration finds the rows it must: the survey, its tallies, invitations, sandbox and report tables.
    assert {"surveys", "tallies", "invitations", "collaborators", "sandbox_tallies",
            "collaborator_invitations", "invitation_addresses", "mail_log"} <= set(before), before
    assert sum(1 for count in before.values() if count == -1) >= 2, "its report and sandbox tables"
    kept_before = _rows_naming(store, "kept-survey", kept["hash"])

    store.delete_survey("gone-survey")

    assert _rows_naming(store, "gone-survey", gone["hash"]) == {}
    assert not store.survey_exists("gone-survey")
    assert _rows_naming(store, "kept-survey", kept["hash"]) == kept_before, "another survey loses nothing"
    assert store.release_state("kept-survey")["released"] == 2
    if not is_postgres(store):
        files = [Path(store.path), Path(f"{store.path}-wal")]
        assert not any(b"gone-survey" in path.read_bytes() for path in files if path.exists()), \
            "no byte of the slug or its invitee's address stays in the database file or its write-ahead log"
    if is_postgres(store):
        functions = store.conn.execute("SELECT count(*) FROM pg_proc WHERE proname LIKE ?",
                                       [f"%{gone['hash'][:16]}%"]).fetchone()[0]
        assert functions == 0, "its submission function is dropped"
    with pytest.raises(SurveyNotFound):
        store.delete_survey("gone-survey")
    # The slug can be used again, from nothing.
    _create(store, "gone-survey")
    assert store.received_count("gone-survey") == 0 and store.retention("gone-survey")["delete_after"] is None
    assert store.sandbox_counts("gone-survey") == {"test": 0, "simulated": 0}


def test_archive_blocks_responses_and_edits_and_hides_from_the_default_list(store):
    design = _create(store, "to-archive")
    store.add_responses("to-archive", design["hash"], [ANSWERS] * 2)
    store.archive_survey("to-archive")
    assert store.survey_status("to-archive") == "closed"
    with pytest.raises(SurveyClosed):
        store.add_responses("to-archive", design["hash"], [ANSWERS])
    with pytest.raises(SurveyClosed):
        store.add_submission("to-archive", design["hash"], ANSWERS, submission="late")
    with pytest.raises(StoreError, match="archived and read-only"):
        store.reopen_survey("to-archive")
    with pytest.raises(StoreError):
        store.create_survey(_definition("to-archive"), design, replace=True)
    assert store.received_count("to-archive") == 2
    assert [s["slug"] for s in store.list_surveys(archived=False)] == []
    listed = store.list_surveys()
    assert [(s["slug"], s["status"], s["archived"]) for s in listed] == [("to-archive", "archived", True)]
    with pytest.raises(StoreError, match="already archived"):
        store.archive_survey("to-archive")
    assert store.unarchive_survey("to-archive") == "closed"
    assert store.list_surveys(archived=False)[0]["status"] == "closed"
    assert store.reopen_survey("to-archive") == "open"


def test_a_draft_is_not_archived_and_a_deletion_date_must_be_a_day(store):
    text = _definition("a-draft")
    store.create_survey(text, build_design(parse_definition_toml(text)), status="draft")
    with pytest.raises(StoreError, match="draft"):
        store.archive_survey("a-draft")
    with pytest.raises(StoreError, match="YYYY-MM-DD"):
        store.set_deletion_date("a-draft", "30/06/2027")
    assert store.set_deletion_date("a-draft", "2027-06-30") == "2027-06-30"
    assert store.due_for_deletion(on="2027-06-29") == [] and store.due_for_deletion(on="2027-06-30") == ["a-draft"]
    assert store.set_deletion_date("a-draft", None) is None and store.due_for_deletion(on="2099-01-01") == []


def test_listing_counts_released_held_and_sandbox_from_the_tallies(store):
    design = _create(store, "counted")
    store.add_responses("counted", design["hash"], [ANSWERS] * 5)
    store.add_responses("counted", design["hash"], [ANSWERS] * 2, source="simulated")
    (survey,) = store.list_surveys()
    assert (survey["responses"], survey["held"], survey["sandbox"]) == (4, 1, 2)
    assert survey["owner"] == "owner@example.org" and survey["delete_after"] is None


def test_deleting_a_survey_with_versions_leaves_nothing_of_any_version(store):
    """Versions (SLUG.v1, SLUG.v2), wordings, interviewer sessions and e-mailed addresses all go with the family."""
    kept = _create(store, "kept-survey", invite=True)
    _fill(store, kept)
    first = _create(store, "gone-survey", invite=True)
    _fill(store, first)
    store.start_interview("gone-survey", label="tablet")
    fixed = _definition("gone-survey", invite=True).replace("Do you smoke", "Do you currently smoke", 1)
    store.revise_text("gone-survey", fixed, build_design(parse_definition_toml(fixed)))
    hashes = [first["hash"]]
    for epsilon in ("1", "1.5"):
        text = re.sub(r"^epsilon = .*$", f"epsilon = {epsilon}", fixed, count=1, flags=re.M)
        design = build_design(parse_definition_toml(text))
        store.new_version("gone-survey", text, design)
        store.add_responses("gone-survey", design["hash"], [ANSWERS] * 2, source="simulated")
        store.add_responses("gone-survey", design["hash"], [ANSWERS] * 2)
        hashes.append(design["hash"])
    slugs = ["gone-survey", "gone-survey.v1", "gone-survey.v2"]
    assert [v["slug"] for v in store.versions("gone-survey")] == ["gone-survey.v1", "gone-survey.v2", "gone-survey"]
    assert "wordings" in _rows_naming(store, "gone-survey.v1", hashes[0])
    assert "interview_sessions" in _rows_naming(store, "gone-survey", hashes[2])
    kept_before = _rows_naming(store, "kept-survey", kept["hash"])

    store.delete_survey("gone-survey")

    for slug, design_hash in zip(slugs, hashes):
        assert _rows_naming(store, slug, design_hash) == {}, slug
        assert not store.survey_exists(slug)
    assert _rows_naming(store, "kept-survey", kept["hash"]) == kept_before
    if is_postgres(store):
        for design_hash in hashes:
            assert store.conn.execute("SELECT count(*) FROM pg_proc WHERE proname LIKE ?",
                                      [f"%{design_hash[:16]}%"]).fetchone()[0] == 0
    else:
        files = [Path(store.path), Path(f"{store.path}-wal")]
        assert not any(b"gone-survey" in path.read_bytes() for path in files if path.exists()), \
            "no byte of any version's slug stays in the database file or its write-ahead log"


def test_versions_of_a_survey_due_for_deletion_are_deleted_once_and_archived_with_it(store):
    """purge --due's list names a family once (its versions go with it); archiving a family archives every version."""
    text = _definition("dated")
    first = build_design(parse_definition_toml(text))
    store.create_survey(text, first, owner="owner@example.org")
    store.add_responses("dated", first["hash"], [ANSWERS] * 2)
    store.set_deletion_date("dated", "2020-01-01")
    changed = re.sub(r"^epsilon = .*$", "epsilon = 1", text, count=1, flags=re.M)
    store.new_version("dated", changed, build_design(parse_definition_toml(changed)))
    store.archive_survey("dated")
    assert [(s["slug"], s["archived"]) for s in store.list_surveys()] == [("dated", True), ("dated.v1", True)]
    assert store.list_surveys(archived=False) == [], "no version of an archived survey stays in the list"
    store.unarchive_survey("dated")
    assert [(s["slug"], s["archived"]) for s in store.list_surveys()] == [("dated", False), ("dated.v1", False)]
    assert store.versions("dated")[0]["status"] == "closed"
    due = store.due_for_deletion()
    assert due == ["dated"]
    for slug in due:
        store.delete_survey(slug)
    assert not store.survey_exists("dated") and not store.survey_exists("dated.v1")


def test_a_deletion_date_set_or_cleared_on_a_survey_holds_for_its_earlier_versions(store):
    """A kept version copies its survey's date when made; clearing the survey's date clears it there too."""
    text = _definition("dated")
    first = build_design(parse_definition_toml(text))
    store.create_survey(text, first, owner="owner@example.org")
    store.add_responses("dated", first["hash"], [ANSWERS] * 2)
    store.set_deletion_date("dated", "2030-01-01")
    changed = re.sub(r"^epsilon = .*$", "epsilon = 1", text, count=1, flags=re.M)
    store.new_version("dated", changed, build_design(parse_definition_toml(changed)))
    store.set_deletion_date("dated", None)
    assert store.due_for_deletion(on="2031-01-01") == [], "no version is deleted once the survey's date is cleared"
    store.set_deletion_date("dated", "2029-06-30")
    assert store.retention("dated.v1")["delete_after"] == "2029-06-30"


def test_who_sees_an_earlier_version_follows_who_sees_its_survey(store):
    """A collaborator removed from a survey loses its earlier versions too; a new owner owns them too."""
    text = _definition("shared")
    first = build_design(parse_definition_toml(text))
    store.create_survey(text, first, owner="owner@example.org")
    store.add_responses("shared", first["hash"], [ANSWERS] * 2)
    store.share("shared", "helper@example.org")
    changed = re.sub(r"^epsilon = .*$", "epsilon = 1", text, count=1, flags=re.M)
    store.new_version("shared", changed, build_design(parse_definition_toml(changed)))
    owner, helper = (store.get_user(email)["id"] for email in ("owner@example.org", "helper@example.org"))
    assert store.can_access("shared.v1", helper)
    store.remove_collaborator("shared", owner, "helper@example.org")
    assert not store.can_access("shared", helper)
    assert not store.can_access("shared.v1", helper), "a removed collaborator still read version 1's responses"
    assert [s["slug"] for s in store.list_surveys(user_id=helper)] == []
    store.share("shared", "helper@example.org")
    store.transfer_ownership("shared", owner, "helper@example.org")
    assert store.is_owner("shared.v1", helper) and not store.is_owner("shared.v1", owner)
    store.remove_collaborator("shared", helper, "owner@example.org")
    assert not store.can_access("shared.v1", owner), "the old owner still read version 1 after leaving"
    assert [s["slug"] for s in store.list_surveys(user_id=helper)] == ["shared", "shared.v1"]
