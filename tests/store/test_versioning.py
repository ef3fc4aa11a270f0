"""Correcting a live survey in the store: text revisions keep one data set, design changes make versions (both backends)."""

from __future__ import annotations

import re

import pytest
from werkzeug.security import generate_password_hash

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.store import AdmissionError, Store, StoreError, SurveyClosed
from survey.store.ids import today

from conftest import REPO

pytestmark = pytest.mark.both_backends

ANSWERS = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}


def _text(slug: str = "habits", *, epsilon: str | None = None, typo: bool = False) -> str:
    """Return examples/smoking.toml under ``slug``, its first question misspelt when ``typo``, its ε replaced."""
    text = (REPO / "examples" / "smoking.toml").read_text(encoding="utf-8")
    text = re.sub(r'^slug = "[^"]*"$', f'slug = "{slug}"\naccess = "invite"', text, count=1, flags=re.M)
    if epsilon is not None:
        text = re.sub(r"^epsilon = .*$", f"epsilon = {epsilon}", text, count=1, flags=re.M)
    if typo:
        text = text.replace("Do you smoke", "Do you smok", 1)
    return text


def _design(text: str) -> dict:
    return build_design(parse_definition_toml(text))


@pytest.fixture
def store(db_path):
    store = Store(db_path)
    store.add_user("owner@example.org", generate_password_hash("owner password"))
    yield store
    store.close()


def _open_with_responses(store, n: int = 5) -> tuple[dict, list[str]]:
    text = _text(typo=True)
    design = _design(text)
    store.create_survey(text, design, owner="owner@example.org")
    tokens = store.create_invitations("habits", n + 2)
    for token in tokens[:n]:
        assert store.add_submission("habits", design["hash"], ANSWERS, invite=token)
    return design, tokens


def test_text_revision_keeps_the_data_set_and_records_each_wording_by_day(store):
    design, tokens = _open_with_responses(store)
    assert store.get_design("habits")["questions"][0]["text"].startswith("Do you smok tobacco")
    fixed = _text()
    assert store.revise_text("habits", fixed, _design(fixed)) == 1
    current = store.get_design("habits")
    assert current["hash"] == design["hash"] and current["questions"][0]["text"].startswith("Do you smoke ")
    assert store.received_count("habits") == 5
    # A respondent who loaded the page before the fix still sends to the same data set.
    assert store.add_submission("habits", design["hash"], ANSWERS, invite=tokens[5])
    assert store.received_count("habits") == 6
    wordings = store.wordings("habits")
    assert [w["revision"] for w in wordings] == [0, 1]
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", w["from_day"]) for w in wordings)
    assert wordings[1]["from_day"] == today()
    assert "Do you smok" in wordings[0]["definition"] and wordings[1]["definition"] == fixed
    assert store.get_definition("habits") == fixed


def test_design_change_makes_version_two_under_the_same_slug(store):
    design, tokens = _open_with_responses(store)
    store.add_responses("habits", design["hash"], [ANSWERS] * 2, source="simulated")
    changed = _text(epsilon="1")
    new = _design(changed)
    assert store.new_version("habits", changed, new) == 2
    versions = store.versions("habits")
    assert [(v["slug"], v["version"], v["status"], v["responses"], v["current"]) for v in versions] == [
        ("habits.v1", 1, "closed", 5, False), ("habits", 2, "open", 0, True)]
    assert versions[0]["epsilon"] != versions[1]["epsilon"]
    assert store.versions("habits.v1") == versions and store.family("habits.v1") == "habits"
    # The old version keeps its design, reports, sandbox and people; the slug serves the new design.
    assert store.get_design("habits.v1")["hash"] == design["hash"]
    assert store.get_design("habits")["hash"] == new["hash"]
    assert store.sandbox_counts("habits.v1")["simulated"] == 2 and store.sandbox_counts("habits")["simulated"] == 0
    assert store.can_access("habits.v1", store.get_user("owner@example.org")["id"])
    # Invitations stay with the address: an unused one works for version 2, a used one stays used.
    assert store.invitation_status("habits", tokens[5]) == "unused"
    assert store.invitation_status("habits", tokens[0]) == "used"
    with pytest.raises(StoreError, match="not the current design"):
        store.add_submission("habits", design["hash"], ANSWERS, invite=tokens[5])
    assert store.add_submission("habits", new["hash"], ANSWERS, invite=tokens[5])
    assert store.received_count("habits") == 1 and store.received_count("habits.v1") == 5
    with pytest.raises((AdmissionError, StoreError, SurveyClosed)):
        store.add_submission("habits.v1", design["hash"], ANSWERS, invite=tokens[6])
    # An interviewer session started before the change keeps taking answers for the address.
    token, _ = store.start_interview("habits", label="tablet")
    assert store.interview_session("habits", token) is not None
    # A third version keeps version 2 apart too.
    third = _text(epsilon="1.5")
    assert store.new_version("habits", third, _design(third)) == 3
    assert [(v["slug"], v["responses"]) for v in store.versions("habits")] == [
        ("habits.v1", 5), ("habits.v2", 1), ("habits", 0)]
    assert store.interview_session("habits", token) is not None and store.interview_session("habits.v2", token) is None


def test_kept_version_releases_its_held_responses_into_its_own_counts(store):
    text = _text().replace('access = "invite"', "release_every = 2")
    design = _design(text)
    store.create_survey(text, design, owner="owner@example.org")
    store.add_responses("habits", design["hash"], [ANSWERS] * 3)
    assert store.release_state("habits")["held"] == 1
    changed = text.replace("release_every = 2", "release_every = 3")
    store.new_version("habits", changed, _design(changed))
    assert store.release_state("habits.v1") == {"every": 2, "released": 2, "held": 1, "smallest_release": None}
    store.release_held("habits.v1")
    assert store.response_count("habits.v1") == 3 and store.received_count("habits") == 0


def test_same_design_is_no_version(store):
    design, _ = _open_with_responses(store)
    with pytest.raises(StoreError, match="nothing to version"):
        store.new_version("habits", _text(typo=True), design)


def test_revision_record_holds_the_history_and_the_design_its_hash_is_of(store):
    design, _ = _open_with_responses(store)
    assert store.revision_record("habits") == {"version": 1, "of": 1, "public_slug": "habits"}
    fixed = _text()
    store.revise_text("habits", fixed, _design(fixed))
    record = store.revision_record("habits")
    assert record["hashed_design"] == design
    smoker = record["wording_history"]["questions"]["smoker"]
    assert [entry["text"][:19] for entry in smoker] == ["Do you smok tobacco", "Do you smoke tobacc"]
    assert smoker[1]["from"] == today()
    changed = _text(epsilon="1")
    store.new_version("habits", changed, _design(changed))
    assert store.revision_record("habits.v1")["of"] == 2 and "wording_history" in store.revision_record("habits.v1")
    assert store.revision_record("habits") == {"version": 2, "of": 2, "public_slug": "habits"}


def test_deleting_a_survey_deletes_its_earlier_versions_and_leaves_no_row(store):
    from conftest import table_columns, table_names

    design, _ = _open_with_responses(store)
    fixed = _text()
    store.revise_text("habits", fixed, _design(fixed))
    changed = _text(epsilon="1")
    store.new_version("habits", changed, _design(changed))
    assert store.kept_versions("habits") == ["habits.v1"] and store.kept_versions("habits.v1") == []
    store.delete_survey("habits")
    assert store.list_surveys() == []
    for table in table_names(store):
        if "survey" in table_columns(store, table):
            assert store._execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] == 0, table
    assert not [t for t in table_names(store) if t.startswith(("reports_", "pending_", "sandbox_", "patterns_",
                                                               "sandbox_patterns_")) and t != "sandbox_tallies"]


def test_a_copy_keeps_versions_and_wordings(store, tmp_path):
    from survey.store.copying import copy_database

    design, _ = _open_with_responses(store)
    fixed = _text()
    store.revise_text("habits", fixed, _design(fixed))
    changed = _text(epsilon="1")
    store.new_version("habits", changed, _design(changed))
    assert copy_database(store, tmp_path / "copy.db")["surveys"] == 2
    copy = Store(tmp_path / "copy.db")
    try:
        assert copy.versions("habits") == store.versions("habits")
        assert copy.wordings("habits.v1") == store.wordings("habits.v1")
        assert copy.get_design("habits.v1") == store.get_design("habits.v1")
    finally:
        copy.close()


def test_an_earlier_version_cannot_be_reopened_or_corrected(store):
    _open_with_responses(store)
    changed = _text(epsilon="1")
    store.new_version("habits", changed, _design(changed))
    with pytest.raises(StoreError, match="an earlier version of 'habits', kept as it was"):
        store.reopen_survey("habits.v1")
    with pytest.raises(StoreError, match="earlier version"):
        store.apply_revision("habits.v1", changed, _design(changed), "text")


def test_a_kept_versions_people_follow_the_survey_removed_transferred_and_added(store):
    """Access to SLUG.vN is the access to SLUG now: a removed collaborator loses the old data too, a new owner owns it."""
    _open_with_responses(store)
    for email in ("colleague@example.org", "later@example.org"):
        store.add_user(email, generate_password_hash("a password"))
    owner, colleague, later = (store.get_user(e)["id"] for e in
                               ("owner@example.org", "colleague@example.org", "later@example.org"))
    store.share("habits", "colleague@example.org")
    changed = _text(epsilon="1")
    store.new_version("habits", changed, _design(changed))
    assert store.can_access("habits.v1", colleague) and not store.is_owner("habits.v1", colleague)
    store.remove_collaborator("habits", owner, "colleague@example.org")
    assert not store.can_access("habits", colleague)
    assert not store.can_access("habits.v1", colleague)  # the kept version's data went with the survey's access
    assert store.list_surveys(user_id=colleague) == []
    store.share("habits", "later@example.org")
    assert store.can_access("habits.v1", later)
    assert [item["slug"] for item in store.list_surveys(user_id=later)] == ["habits", "habits.v1"]
    store.transfer_ownership("habits", owner, "later@example.org")
    assert store.is_owner("habits.v1", later) and not store.is_owner("habits.v1", owner)
    assert store.can_access("habits.v1", owner)
    assert not store.can_access("habits.v1", colleague)


def _people_rows(store) -> dict:
    """Return every stored row that says who sees a survey: owners, collaborators and join links."""
    return {"owners": store._execute("SELECT slug, owner_id FROM surveys ORDER BY slug").fetchall(),
            "collaborators": store._execute("SELECT survey, user_id FROM collaborators "
                                            "ORDER BY survey, user_id").fetchall(),
            "join_links": store._execute("SELECT id, survey, email FROM collaborator_invitations ORDER BY id").fetchall()}


def _version_two_with_a_colleague(store) -> int:
    """Open "habits" with responses, share it with colleague@example.org (later@example.org has an account too),
    make version 2; return the owner's user id."""
    _open_with_responses(store)
    for email in ("colleague@example.org", "later@example.org"):
        store.add_user(email, generate_password_hash("a password"))
    owner = store.get_user("owner@example.org")["id"]
    store.share("habits", "colleague@example.org")
    changed = _text(epsilon="1")
    store.new_version("habits", changed, _design(changed))
    return owner


def test_people_actions_on_a_kept_version_are_refused_naming_the_survey_and_change_nothing(store):
    """SLUG.v1 has no people of its own: sharing, inviting, revoking, removing and transferring on it are refused."""
    owner = _version_two_with_a_colleague(store)
    link = store.invite_collaborator("habits", owner, "later@example.org")[1]
    before = _people_rows(store)
    refusal = re.escape("'habits.v1' is an earlier version of 'habits', and who sees it follows 'habits': ")
    actions = {"share it": lambda: store.share("habits.v1", "later@example.org"),
               "invite collaborators": lambda: store.invite_collaborator("habits.v1", owner, "later@example.org"),
               "revoke join links": lambda: store.revoke_collaborator_invitation("habits.v1", link["id"]),
               "remove collaborators": lambda: store.remove_collaborator("habits.v1", owner, "colleague@example.org"),
               "hand ownership over": lambda: store.transfer_ownership("habits.v1", owner, "colleague@example.org")}
    for what, action in actions.items():
        with pytest.raises(StoreError, match=refusal + re.escape(f"{what} on 'habits' instead")):
            action()
    assert _people_rows(store) == before
    assert store.people("habits") == {"survey": "habits", "owner": "owner@example.org",
                                      "collaborators": ["colleague@example.org"]}


def test_a_kept_version_keeps_no_people_of_its_own_and_shows_its_surveys(store):
    """A version is made without copied owner or collaborators; its people, list owner and copies follow SLUG now."""
    owner = _version_two_with_a_colleague(store)
    assert store._execute("SELECT owner_id FROM surveys WHERE slug = 'habits.v1'").fetchone()[0] is None
    assert store._execute("SELECT count(*) FROM collaborators WHERE survey = 'habits.v1'").fetchone()[0] == 0
    store.share("habits", "later@example.org")
    store.transfer_ownership("habits", owner, "colleague@example.org")
    expected = {"survey": "habits", "owner": "colleague@example.org",
                "collaborators": ["later@example.org", "owner@example.org"]}
    assert store.people("habits.v1") == expected
    assert store.collaborators("habits.v1") == expected["collaborators"]
    assert {item["slug"]: item["owner"] for item in store.list_surveys()} == {
        "habits": "colleague@example.org", "habits.v1": "colleague@example.org"}
    assert [user["surveys"] for user in store.list_users()] == [1, 0, 0]  # colleague, later, owner: SLUG only
    copy = _text("habits-copy", epsilon="1")
    store.duplicate_survey("habits.v1", copy, _design(copy))
    assert store.people("habits-copy") == {**expected, "survey": "habits-copy"}


def test_migration_drops_the_people_copied_to_versions_made_before(store):
    """m021 leaves no stale owner or collaborator on a version made by the code before, and nothing else changes."""
    from types import SimpleNamespace

    from survey.store.versioning import m021_kept_versions_follow_their_survey

    _open_with_responses(store)
    store.add_user("colleague@example.org", generate_password_hash("a password"))
    owner = store.get_user("owner@example.org")["id"]
    store.share("habits", "colleague@example.org")
    changed = _text(epsilon="1")
    store.new_version("habits", changed, _design(changed))
    current = _people_rows(store)
    with store._write() as conn:  # the rows the code before m021 copied to a kept version
        conn.execute("UPDATE surveys SET owner_id = ? WHERE slug = 'habits.v1'", [owner])
        conn.execute("INSERT INTO collaborators (survey, user_id) SELECT 'habits.v1', user_id FROM collaborators "
                     "WHERE survey = 'habits'")
    assert _people_rows(store) != current
    with store._write() as conn:
        m021_kept_versions_follow_their_survey(SimpleNamespace(conn=conn))
    assert _people_rows(store) == current
