"""Interviewer sessions in the store (both backends): hashed tokens, expiry, ending, the allowance, and no tie to responses."""

from __future__ import annotations

import pytest

from survey.core import interviews as rules
from survey.core.interviews import TOKEN_RE
from survey.store import InterviewRefused, Store, StoreError
from survey.store.interviews import interview_hash

from conftest import table_columns

pytestmark = pytest.mark.both_backends

ANSWERS = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}
NOW = 2_000_000_000.0


@pytest.fixture
def store(db_path, smoking_survey):
    store = Store(db_path)
    if store.survey_status(smoking_survey["slug"]) == "draft":
        store.publish_survey(smoking_survey["slug"])
    yield store
    store.close()


def test_a_session_keeps_only_its_token_hash_and_reports_its_state(store, smoking_survey):
    slug = smoking_survey["slug"]
    token, session = store.start_interview(slug, label="Tablet 3", hours=2, allowance=5, now=NOW)
    assert TOKEN_RE.fullmatch(token)
    assert session["label"] == "Tablet 3" and session["allowance"] == 5 and session["answered"] == 0
    assert session["state"] == "active" and session["expires_at"] == int(NOW + 2 * 3600)
    stored = [row[0] for row in store._execute("SELECT token_hash FROM interview_sessions").fetchall()]
    assert stored == [interview_hash(token)] and token not in stored[0]
    assert store.interview_session(slug, token, now=NOW + 2 * 3600)["state"] == "late-sends"
    assert store.interview_session(slug, token, now=NOW + 2 * 3600 + rules.EXPIRY_GRACE_HOURS * 3600)["state"] == "expired"
    assert store.interview_session(slug, "x" * 32, now=NOW) is None
    assert store.interview_session("other-survey", token, now=NOW) is None
    assert [s["id"] for s in store.interview_sessions(slug, now=NOW)] == [session["id"]]
    assert store.interview_sessions(slug, now=NOW + 2 * 3600) == []


def test_the_allowance_is_counted_and_given_back(store, smoking_survey):
    slug = smoking_survey["slug"]
    token, _ = store.start_interview(slug, allowance=2, now=NOW)
    assert store.take_interview(slug, token, now=NOW) == 1
    assert store.give_back_interview(slug, token) == 0
    assert [store.take_interview(slug, token, now=NOW) for _ in range(2)] == [1, 2]
    with pytest.raises(InterviewRefused) as refused:
        store.take_interview(slug, token, now=NOW)
    assert refused.value.state == "used-up" and refused.value.status == 410 and refused.value.field == "interview"
    assert store.interview_session(slug, token, now=NOW)["answered"] == 2
    with pytest.raises(InterviewRefused) as unknown:
        store.take_interview(slug, "y" * 32, now=NOW)
    assert unknown.value.status == 403


def test_ending_and_expiry_refuse_the_link(store, smoking_survey):
    slug = smoking_survey["slug"]
    first, session = store.start_interview(slug, now=NOW)
    second, _ = store.start_interview(slug, hours=1, now=NOW)
    assert store.end_interview(slug, session["id"]) and not store.end_interview(slug, session["id"])
    assert not store.end_interview("no-such-survey", session["id"])
    with pytest.raises(InterviewRefused, match="ended") as ended:
        store.take_interview(slug, first, now=NOW)
    assert ended.value.status == 410
    # Past its expiry a session still counts late sends (queued offline) for EXPIRY_GRACE_HOURS, then refuses.
    assert store.take_interview(slug, second, now=NOW + 3600) == 1
    assert store.take_interview(slug, second, now=NOW + 3600 + rules.EXPIRY_GRACE_HOURS * 3600 - 1) == 2
    with pytest.raises(InterviewRefused, match="expired"):
        store.take_interview(slug, second, now=NOW + 3600 + rules.EXPIRY_GRACE_HOURS * 3600)
    assert store.end_interview_token(slug, second) and not store.end_interview_token(slug, second)
    assert store.interview_sessions(slug, now=NOW) == []


def test_only_an_open_survey_with_sane_settings_gets_a_session(store, smoking_survey):
    slug = smoking_survey["slug"]
    for bad in ({"hours": 0}, {"allowance": 0}, {"label": "x" * 61}, {"label": "a\nb"}, {"hours": True}):
        with pytest.raises(StoreError):
            store.start_interview(slug, **bad)
    store.close_survey(slug)
    with pytest.raises(StoreError, match="not open"):
        store.start_interview(slug)


def test_responses_carry_nothing_of_the_session_and_a_deleted_survey_leaves_none(store, smoking_survey):
    slug = smoking_survey["slug"]
    token, _ = store.start_interview(slug, label="Clinic", now=NOW)
    store.take_interview(slug, token, now=NOW)
    assert store.add_submission(slug, smoking_survey["hash"], ANSWERS, submission="a" * 32)
    assert set(table_columns(store, "interview_sessions")).isdisjoint({"response", "response_id", "submission"})
    table = store._execute("SELECT reports_table FROM surveys WHERE slug = ?", [slug]).fetchone()[0]
    assert not any("interview" in column or "session" in column for column in table_columns(store, table))
    store.close_survey(slug)
    store.delete_survey(slug)
    assert store._execute("SELECT count(*) FROM interview_sessions").fetchone()[0] == 0


def test_the_listing_with_late_sends_adds_the_expired_sessions_in_their_grace_and_ending_one_refuses_them(
        store, smoking_survey):
    slug, grace = smoking_survey["slug"], rules.EXPIRY_GRACE_HOURS * 3600
    live, live_session = store.start_interview(slug, label="Live", hours=10, now=NOW)
    late, late_session = store.start_interview(slug, label="Late", hours=1, allowance=3, now=NOW)
    spent, _ = store.start_interview(slug, hours=1, allowance=1, now=NOW)
    store.take_interview(slug, spent, now=NOW)
    ended, ended_session = store.start_interview(slug, hours=1, now=NOW)
    store.end_interview(slug, ended_session["id"])
    now = NOW + 2 * 3600  # "Late" expired an hour ago
    assert [s["id"] for s in store.interview_sessions(slug, now=now)] == [live_session["id"]], "new respondents only"
    listed = store.interview_sessions(slug, now=now, late_sends=True)
    assert [(s["label"], s["state"]) for s in listed] == [("Late", "late-sends"), ("Live", "active")]
    assert listed[0]["late_sends_until"] == late_session["expires_at"] + grace
    assert listed[1]["late_sends_until"] == live_session["expires_at"] + grace
    assert store.take_interview(slug, late, now=now) == 1, "listing changes nothing of what a session admits"
    beyond = late_session["expires_at"] + grace
    assert [s["label"] for s in store.interview_sessions(slug, now=beyond - 1, late_sends=True)] == ["Late", "Live"]
    assert [s["label"] for s in store.interview_sessions(slug, now=beyond, late_sends=True)] == ["Live"]
    assert store.end_interview(slug, late_session["id"])
    with pytest.raises(InterviewRefused, match="ended") as refused:
        store.take_interview(slug, late, now=now)
    assert refused.value.status == 410
    assert store.interview_session(slug, late, now=now)["answered"] == 1
    assert [s["label"] for s in store.interview_sessions(slug, now=now, late_sends=True)] == ["Live"]
    assert store.take_interview(slug, live, now=now) == 1
