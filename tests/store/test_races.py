"""Races of a design revision, an archive and a deletion with releases and deletions (both backends).

Each test makes a change commit at the one moment that matters: just before the store's next
write transaction begins, after what the racing request read outside it (``_before_next_write``),
on a second connection, as another worker or process would. No sleeps, no timing.
"""

from __future__ import annotations

import re
import threading
from contextlib import contextmanager

import pytest

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.store import Store, StoreError, SurveyClosed, SurveyNotFound
from survey.store.batches import row_from_answer
from survey.store.checks import check_counts
from survey.store.schema import pending_table_name, table_name

from conftest import REPO, table_names

pytestmark = pytest.mark.both_backends

ANSWERS = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}


def _text(*, every: int, epsilon: str | None = None) -> str:
    """Return examples/smoking.toml as the survey "habits" releasing every ``every`` responses, its ε replaced."""
    text = (REPO / "examples" / "smoking.toml").read_text(encoding="utf-8")
    text = re.sub(r'^slug = "[^"]*"$', f'slug = "habits"\nrelease_every = {every}', text, count=1, flags=re.M)
    if epsilon is not None:
        text = re.sub(r"^epsilon = .*$", f"epsilon = {epsilon}", text, count=1, flags=re.M)
    return text


def _design(text: str) -> dict:
    return build_design(parse_definition_toml(text))


def _created(store, *, every: int) -> tuple[str, dict]:
    """Create the survey "habits" releasing every ``every`` responses; return its definition text and design."""
    text = _text(every=every)
    design = _design(text)
    store.create_survey(text, design)
    return text, design


@pytest.fixture
def stores(db_path):
    """Two stores of one database: the racing request's and the other worker's."""
    first, second = Store(db_path), Store(db_path)
    yield first, second
    first.close()
    second.close()


def _before_next_write(store, action):
    """Run ``action`` once, just before ``store``'s next write transaction begins."""
    real, fired = store._write, []

    @contextmanager
    def write():
        if not fired:
            fired.append(True)
            action()
        with real() as conn:
            yield conn

    store._write = write
    return fired


def _revise(store):
    """Give "habits" a new design (ε = 1, releases of 3): version 1 moves to "habits.v1"."""
    changed = _text(every=3, epsilon="1")
    return lambda: store.new_version("habits", changed, _design(changed))


def _open_with_held(store, *, every: int = 4, responses: int = 6) -> dict:
    text, design = _created(store, every=every)
    store.add_responses("habits", design["hash"], [ANSWERS] * responses)
    return design


def _consistent(store, slug: str):
    """Assert that a survey's kept counts equal a recount and that it holds fewer responses than its step."""
    assert check_counts(store, slug)[1] == []
    state = store.release_state(slug)
    assert state["held"] < state["every"], state


def test_a_release_racing_a_revision_releases_the_kept_version_or_nothing(stores):
    store, other = stores
    _open_with_held(store)
    assert store.release_state("habits")["held"] == 2
    fired = _before_next_write(store, _revise(other))
    moved = store.release_held("habits")
    assert fired and moved == 0  # the survey's new version holds nothing; version 1 keeps its held responses
    _consistent(other, "habits")
    assert other.release_state("habits.v1") == {"every": 4, "released": 4, "held": 2, "smallest_release": None}
    _consistent(other, "habits.v1")
    assert other.release_held("habits.v1") == 2
    assert other.release_state("habits.v1")["released"] == 6 and other.received_count("habits") == 0
    _consistent(other, "habits.v1")


def test_a_release_racing_an_archive_is_refused(stores):
    store, other = stores
    _open_with_held(store)
    _before_next_write(store, lambda: other.archive_survey("habits"))
    with pytest.raises(StoreError, match="archived"):
        store.release_held("habits")
    assert other.release_state("habits") == {"every": 4, "released": 4, "held": 2, "smallest_release": None}
    _consistent(other, "habits")


def test_a_submission_completing_a_release_racing_a_revision_counts_in_its_own_version(stores):
    store, other = stores
    design = _open_with_held(store, every=4, responses=3)
    fired = _before_next_write(store, _revise(other))
    try:
        store.add_response("habits", design["hash"], ANSWERS)
    except StoreError as refused:  # the revision came first: refused, nothing stored
        assert "not the current design" in str(refused)
        assert other.received_count("habits.v1") == 3
    else:  # stored first: in version 1, released with the three held before it
        assert other.release_state("habits.v1")["released"] == 4
    assert fired
    assert other.received_count("habits") == 0
    _consistent(other, "habits.v1")
    _consistent(other, "habits")


def test_a_submission_completing_a_release_racing_a_deletion_is_answered_cleanly(stores):
    store, other = stores
    design = _open_with_held(store, every=4, responses=3)
    fired = _before_next_write(store, lambda: other.delete_survey("habits"))
    try:
        store.add_response("habits", design["hash"], ANSWERS)  # stored, then deleted with its survey
    except SurveyNotFound:
        pass  # the deletion came first: refused, nothing stored
    assert fired and not other.survey_exists("habits")
    assert not {table_name(design), pending_table_name(design)} & set(table_names(other))


def test_a_deletion_racing_a_revision_leaves_no_version_behind(stores):
    store, other = stores
    _open_with_held(store)
    fired = _before_next_write(store, _revise(other))
    store.delete_survey("habits")
    assert fired
    assert not other.survey_exists("habits") and not other.survey_exists("habits.v1")
    assert [s["slug"] for s in other.list_surveys()] == []


def test_a_revision_back_to_an_earlier_versions_design_is_refused_cleanly(stores):
    store, other = stores
    text, design = _created(store, every=1)
    store.add_responses("habits", design["hash"], [ANSWERS] * 3)
    changed = _text(every=1, epsilon="1")
    assert store.apply_revision("habits", changed, _design(changed), "design") == ("version", 2)
    store.add_responses("habits", _design(changed)["hash"], [ANSWERS] * 2)
    # Version 1's tables are named by its design's hash: the same design again cannot be a new version.
    with pytest.raises(StoreError, match="habits.v1"):
        store.apply_revision("habits", text, design, "design")
    assert [(v["slug"], v["responses"]) for v in other.versions("habits")] == [("habits.v1", 3), ("habits", 2)]
    _consistent(other, "habits")
    _consistent(other, "habits.v1")


def test_a_design_change_racing_the_first_response_makes_a_version_not_an_error(stores):
    store, other = stores
    text, design = _created(store, every=1)
    changed = _text(every=1, epsilon="1")
    # The first response commits after the revision saw none, before it replaces the design.
    _before_next_write(store, lambda: other.add_response("habits", design["hash"], ANSWERS))
    assert store.apply_revision("habits", changed, _design(changed), "design") == ("version", 2)
    assert [(v["slug"], v["responses"]) for v in other.versions("habits")] == [("habits.v1", 1), ("habits", 0)]
    assert other.get_design("habits")["hash"] == _design(changed)["hash"]
    _consistent(other, "habits.v1")


def _fail_wording_updates(store):
    """Make the database refuse any change of a survey's definition (a fault midway through a text revision)."""
    if type(store).__module__.endswith("postgres"):
        with store._write() as conn:
            conn.execute("CREATE FUNCTION refuse_wording() RETURNS trigger LANGUAGE plpgsql AS "
                         "$$ BEGIN RAISE EXCEPTION 'injected fault'; END $$")
            conn.execute("CREATE TRIGGER refuse_wording BEFORE UPDATE OF definition ON surveys "
                         "FOR EACH ROW EXECUTE FUNCTION refuse_wording()")
        return lambda: store._execute("DROP TRIGGER refuse_wording ON surveys")
    store._execute("CREATE TRIGGER refuse_wording BEFORE UPDATE OF definition ON surveys "
                   "BEGIN SELECT RAISE(ABORT, 'injected fault'); END")
    return lambda: store._execute("DROP TRIGGER refuse_wording")


def test_a_text_revision_interrupted_midway_leaves_the_old_wording_whole(stores):
    store, other = stores
    text, design = _created(store, every=1)
    store.add_responses("habits", design["hash"], [ANSWERS] * 2)
    fixed = text.replace("Do you smoke", "Do you currently smoke", 1)
    assert fixed != text
    heal = _fail_wording_updates(other)
    # The wordings are inserted before the survey row is updated: the fault comes after a write of the revision.
    with pytest.raises(Exception, match="injected fault"):
        store.revise_text("habits", fixed, _design(fixed))
    for reader in (store, other):
        assert reader.wordings("habits") == [] and reader.get_definition("habits") == text
        assert reader.get_design("habits")["questions"][0]["text"] == design["questions"][0]["text"]
    heal()
    assert store.revise_text("habits", fixed, _design(fixed)) == 1
    assert other.get_design("habits")["questions"][0]["text"].startswith("Do you currently smoke")
    assert [w["revision"] for w in other.wordings("habits")] == [0, 1] and other.received_count("habits") == 2
    _consistent(other, "habits")


def _stream_through(db_path, design: dict, change) -> tuple[list[str], list[StoreError]]:
    """Store responses from four threads until each is refused; ``change`` runs once twenty are acknowledged.

    Return the ids acknowledged and the refusals (one per thread).
    """
    acknowledged, refusals, lock, enough = [], [], threading.Lock(), threading.Event()

    def submit():
        mine = Store(db_path)
        try:
            while True:
                try:
                    stored = mine.add_response("habits", design["hash"], ANSWERS)
                except StoreError as refused:  # the change committed: refused, nothing stored
                    refusals.append(refused)
                    return
                with lock:
                    acknowledged.append(stored)
                    if len(acknowledged) >= 20:
                        enough.set()
        finally:
            mine.close()

    threads = [threading.Thread(target=submit) for _ in range(4)]
    for thread in threads:
        thread.start()
    assert enough.wait(timeout=120)
    change()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert len(refusals) == 4
    return acknowledged, refusals


def _stored_ids(store, design: dict) -> set[str]:
    return {row[0] for table in (table_name(design), pending_table_name(design))
            for row in store._execute(f'SELECT id FROM "{table}"').fetchall()}


def test_submissions_streaming_through_a_revision_are_each_stored_in_version_one_or_refused(db_path, stores):
    store, other = stores
    design = _open_with_held(store, every=3, responses=0)
    acknowledged, refusals = _stream_through(db_path, design, _revise(other))
    assert all("not the current design" in str(refused) for refused in refusals)
    assert _stored_ids(other, design) == set(acknowledged), "each acknowledged response is in version 1, once"
    assert other.received_count("habits.v1") == len(acknowledged) and other.received_count("habits") == 0
    _consistent(other, "habits.v1")
    _consistent(other, "habits")


@pytest.mark.parametrize("stop", ["close", "archive"])
def test_submissions_streaming_through_a_close_or_an_archive_are_each_stored_or_refused(db_path, stores, stop):
    store, other = stores
    design = _open_with_held(store, every=3, responses=0)
    change = {"close": lambda: other.close_survey("habits"), "archive": lambda: other.archive_survey("habits")}[stop]
    acknowledged, refusals = _stream_through(db_path, design, change)
    assert all(isinstance(refused, SurveyClosed) for refused in refusals), refusals
    assert _stored_ids(other, design) == set(acknowledged), "nothing stored after the close, nothing acknowledged lost"
    assert other.received_count("habits") == len(acknowledged)
    _consistent(other, "habits")


def test_submissions_streaming_through_a_deletion_leave_nothing(db_path, stores):
    store, other = stores
    design = _open_with_held(store, every=3, responses=0)
    _, refusals = _stream_through(db_path, design, lambda: other.delete_survey("habits"))
    assert all(isinstance(refused, SurveyNotFound) for refused in refusals), refusals
    assert not other.survey_exists("habits")
    assert not {table_name(design), pending_table_name(design)} & set(table_names(other))


@pytest.mark.parametrize("stop", ["close", "archive", "revise"])
def test_a_survey_that_stops_taking_responses_keeps_no_whole_step_held(stores, stop):
    store, other = stores
    design = _open_with_held(store, every=4, responses=2)
    # What inserts racing each other can leave on PostgreSQL: more held responses than a step, none releasing them.
    batch = [row_from_answer(design, f"{0xf0 + index:016x}", "2026-01-01", ANSWERS) for index in range(5)]
    with store._write() as conn:
        store._schema.load_held(conn, "habits", design, batch)
    {"close": lambda: store.close_survey("habits"), "archive": lambda: store.archive_survey("habits"),
     "revise": _revise(store)}[stop]()
    slug = "habits.v1" if stop == "revise" else "habits"
    assert other.received_count(slug) == 7
    _consistent(other, slug)


def test_a_retry_of_a_response_stored_before_a_revision_is_a_repeat_not_a_refusal(stores):
    store, other = stores
    design = _open_with_held(store, every=1, responses=0)
    assert store.add_submission("habits", design["hash"], ANSWERS, submission="e" * 32) is True
    _revise(other)()
    # Its 201 was lost: the browser sends the same body again, with version 1's design.
    assert store.add_submission("habits", design["hash"], ANSWERS, submission="e" * 32) is False
    assert other.received_count("habits.v1") == 1 and other.received_count("habits") == 0
    with pytest.raises(StoreError, match="not the current design"):
        store.add_submission("habits", design["hash"], ANSWERS, submission="f" * 32)


def test_a_text_revision_racing_a_design_change_is_refused_not_stored_under_the_new_hash(stores):
    store, other = stores
    design = _open_with_held(store, every=1, responses=2)
    fixed = _text(every=1).replace("Do you smoke", "Do you currently smoke", 1)
    changed = _text(every=1, epsilon="1")
    # A text correction of version 1 is confirmed just as a collaborator's design change commits.
    _before_next_write(store, lambda: other.new_version("habits", changed, _design(changed)))
    with pytest.raises(StoreError, match="changed"):
        store.apply_revision("habits", fixed, _design(fixed), "text")
    current = other.get_design("habits")
    assert current == _design(changed) and other.get_definition("habits") == changed
    assert other.get_design("habits.v1")["hash"] == design["hash"] and other.wordings("habits") == []
