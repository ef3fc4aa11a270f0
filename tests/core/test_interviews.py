"""The rules of an interviewer (handover) session: its state, its link, its settings and what a submission through it may carry."""

from __future__ import annotations

import pytest

from survey.core import interviews as rules
from survey.core.reports import ReportError


def test_a_session_state_follows_end_expiry_and_allowance_in_that_order():
    assert rules.session_state(False, 100.0, 0, 5, 99.0) == "active"
    assert rules.session_state(False, 100.0, 5, 5, 99.0) == "used-up"
    assert rules.session_state(False, 100.0, 5, 5, 100.0) == "expired"
    assert rules.session_state(True, 100.0, 0, 5, 0.0) == "ended"


def test_the_link_is_the_session_path_under_a_checked_base():
    token = "a" * 32
    assert rules.interview_link("https://x.org/", "s-1", token) == f"https://x.org/s/s-1/interview/{token}"
    with pytest.raises(ValueError):
        rules.interview_link("ftp://x.org", "s-1", token)


@pytest.mark.parametrize("check, good, bad", [
    (rules.check_label, [None, " Tablet 3 ", "x" * rules.LABEL_MAX], ["x" * (rules.LABEL_MAX + 1), "a\tb"]),
    (rules.check_hours, [1, rules.MAX_HOURS], [0, rules.MAX_HOURS + 1, 1.5, True, "2"]),
    (rules.check_allowance, [1, rules.MAX_ALLOWANCE], [0, rules.MAX_ALLOWANCE + 1, False]),
])
def test_settings_out_of_bounds_are_refused(check, good, bad):
    for value in good:
        check(value)
    for value in bad:
        with pytest.raises(ValueError):
            check(value)


def test_a_submission_through_a_session_carries_no_invitation_and_a_well_formed_id():
    assert rules.interview_submission({"design": "h", "answers": {}}) is None
    assert rules.interview_submission({"design": "h", "answers": {}, "submission": "f" * 32}) == "f" * 32
    for payload, field in (({"invite": "x" * 22}, "invite"), ({"submission": "F" * 32}, "submission"),
                           ({"submission": 7}, "submission"), ({"extra": 1}, "extra")):
        with pytest.raises(ReportError) as refused:
            rules.interview_submission({"design": "h", "answers": {}, **payload})
        assert refused.value.field == field and refused.value.status == 400


def test_the_grace_after_expiry_is_a_half_open_window_of_its_hours():
    hours = rules.EXPIRY_GRACE_HOURS
    assert not rules.in_grace(100.0, 99.0), "before the expiry the session is simply active"
    assert rules.in_grace(100.0, 100.0) and rules.in_grace(100.0, 100.0 + hours * 3600 - 1)
    assert not rules.in_grace(100.0, 100.0 + hours * 3600)


def test_a_session_past_its_expiry_takes_late_sends_only_within_its_grace_and_allowance():
    grace = rules.EXPIRY_GRACE_HOURS * 3600
    assert rules.session_state(False, 100.0, 4, 5, 100.0) == "late-sends"
    assert rules.session_state(False, 100.0, 4, 5, 100.0 + grace - 1) == "late-sends"
    assert rules.session_state(False, 100.0, 4, 5, 100.0 + grace) == "expired"
    assert rules.session_state(True, 100.0, 4, 5, 101.0) == "ended", "an ended session has no grace"
    assert set(rules.STATE_WORDS) == set(rules.STATES)
    assert rules.late_sends_until(100.0) == 100.0 + grace


def test_the_late_sends_words_say_how_long_ago_until_when_rounded_up_and_how_to_stop_them():
    expiry = 1_796_047_200  # 2026-11-30 14:00:00 UTC
    text = rules.late_sends_text(expiry, expiry + 3 * 3600 + 59 * 60)
    assert text.startswith("Expired 3 h ago — still accepts answers randomized on the device before the expiry")
    assert "until 2026-12-03 14:00 UTC" in text and text.endswith("end it to refuse them.")
    assert "less than an hour ago" in rules.late_sends_text(expiry, expiry + 59 * 60)
    assert rules.utc_minute(expiry + 1) == "2026-11-30 14:01 UTC", "a moment is never shown earlier than it is"
    assert rules.utc_minute(expiry) == "2026-11-30 14:00 UTC"
