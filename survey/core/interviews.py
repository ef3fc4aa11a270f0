"""Interviewer (handover) sessions: the rules of a session's label, lifetime and allowance, its link, and its submissions.

A session lets one device be handed from respondent to respondent: its secret link is the
authorization, and its allowance of responses replaces the per-client flood limit for it.
Standard library only: the store, the web app and the CLI all ask this module.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from urllib.parse import quote

# An interviewer session's label, life and allowance live in .defaults, where `--help` reads them.
from .defaults import (DEFAULT_ALLOWANCE, DEFAULT_HOURS, EXPIRY_GRACE_HOURS, LABEL_MAX, MAX_ALLOWANCE,  # noqa: F401
                       MAX_HOURS)
from .invitations import check_base
from .reports import SUBMISSION_ID_RE, ReportError

# A session token: 192 random bits, URL-safe (32 characters), unlike an invitation's 22.
TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{32}")
# The keys a submission through a session may carry: no invitation (the session authorizes it).
SUBMISSION_KEYS = frozenset({"design", "answers", "submission"})
# What a session is: taking answers; past its expiry but still storing late sends (within EXPIRY_GRACE_HOURS and its
# allowance); ended by a researcher or its device; past its expiry and its grace; or its allowance spent.
STATES = ("active", "late-sends", "ended", "expired", "used-up")
# A state in plain words, for the dashboard and `ldp-survey interview --list`.
STATE_WORDS = {"active": "active", "late-sends": "late sends only", "ended": "ended", "expired": "expired",
               "used-up": "used up"}


def check_label(label: str | None) -> str:
    """Return a session's label stripped (may be empty); raise ValueError when it is too long or has control characters."""
    text = (label or "").strip()
    if len(text) > LABEL_MAX:
        raise ValueError(f"the label has at most {LABEL_MAX} characters, got {len(text)}")
    if any(ord(char) < 32 or ord(char) == 127 for char in text):
        raise ValueError("the label cannot hold control characters")
    return text


def check_hours(hours: int) -> int:
    """Return a session's lifetime in hours; raise ValueError unless it is a whole number from 1 to MAX_HOURS."""
    if isinstance(hours, bool) or not isinstance(hours, int) or not 1 <= hours <= MAX_HOURS:
        raise ValueError(f"a session lasts from 1 to {MAX_HOURS} hours, got {hours!r}")
    return hours


def check_allowance(allowance: int) -> int:
    """Return a session's allowance of responses; raise ValueError unless it is a whole number from 1 to MAX_ALLOWANCE."""
    if isinstance(allowance, bool) or not isinstance(allowance, int) or not 1 <= allowance <= MAX_ALLOWANCE:
        raise ValueError(f"a session's allowance is from 1 to {MAX_ALLOWANCE} responses, got {allowance!r}")
    return allowance


def session_state(ended: bool, expires_at: float, answered: int, allowance: int, now: float) -> str:
    """Return a session's state (one of STATES) at time ``now`` (Unix seconds).

    "late-sends": past its expiry, not ended, within EXPIRY_GRACE_HOURS of it and with allowance
    left, so it still stores sends randomized offline before the expiry (but shows no form).
    """
    if ended:
        return "ended"
    if expires_at <= now:
        return "late-sends" if in_grace(expires_at, now) and answered < allowance else "expired"
    return "used-up" if answered >= allowance else "active"


def in_grace(expires_at: float, now: float) -> bool:
    """Return whether a session past its expiry at time ``now`` is still within EXPIRY_GRACE_HOURS of it."""
    return expires_at <= now < late_sends_until(expires_at)


def late_sends_until(expires_at: float) -> float:
    """Return the first second (Unix) at which a session expiring at ``expires_at`` refuses late sends."""
    return expires_at + EXPIRY_GRACE_HOURS * 3600


def utc_minute(seconds: float) -> str:
    """Return a moment as "YYYY-MM-DD HH:MM UTC", rounded up to the minute (never shown earlier than it is)."""
    return datetime.fromtimestamp(math.ceil(seconds / 60) * 60, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def late_sends_text(expires_at: float, now: float) -> str:
    """Return, in plain words, what a session in its grace window at ``now`` still accepts and how to stop it."""
    hours = int((now - expires_at) // 3600)
    ago = "less than an hour ago" if hours < 1 else f"{hours} h ago"
    return (f"Expired {ago} — still accepts answers randomized on the device before the expiry, "
            f"until {utc_minute(late_sends_until(expires_at))}; end it to refuse them.")


def interview_link(base: str, slug: str, token: str) -> str:
    """Return ``<base>/s/<slug>/interview/<token>``, a session's secret link."""
    return f"{check_base(base)}/s/{quote(slug)}/interview/{quote(token)}"


def interview_submission(payload) -> str | None:
    """Return the submission id of a (validated) submission sent through a session, or None; raise ReportError.

    The session is the authorization, so the body carries no invitation, not even on an
    invitation-only survey.
    """
    extra = sorted(set(payload) - SUBMISSION_KEYS)
    if extra:
        raise ReportError(f"unexpected key {extra[0]!r} in a submission through an interviewer session; "
                          "nothing was stored", field=extra[0])
    submission = payload.get("submission")
    if submission is not None and (not isinstance(submission, str) or not SUBMISSION_ID_RE.fullmatch(submission)):
        raise ReportError(f"\"submission\" must be 32 lowercase hexadecimal digits, got {submission!r}",
                          field="submission")
    return submission
