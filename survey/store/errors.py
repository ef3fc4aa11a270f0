"""The store's errors: what a storage request cannot do, and faults that make the database unavailable now."""

from __future__ import annotations

from .admission import AdmissionError, InvitationUnknown, InvitationUsed, SubmissionConflict  # noqa: F401
from .faults import classify, classify_at


class StoreError(Exception):
    """A storage request cannot be honoured (unknown survey, frozen design, duplicate)."""


class SurveyNotFound(StoreError):
    """No survey has this slug."""


class SlugTaken(StoreError):
    """Another survey has this slug (the web app answers only SLUG_TAKEN: it says nothing of whose survey it is)."""


# What the web app says of any taken slug, the researcher's own or another's (docs/explanation/privacy.md).
SLUG_TAKEN = "This address is not available; choose another slug."


class NotOwner(StoreError):
    """Only the survey's owner may do this (its collaborators may not)."""


class JoinLinkInvalid(StoreError):
    """The join link is unknown, used, revoked or expired (one answer for all four)."""


class SurveyClosed(StoreError):
    """The survey takes no responses: it is closed, or still a draft (nothing was stored)."""


class StoreUnavailable(StoreError):
    """The database cannot take the request now (disk full, read-only, locked, unreachable); nothing was stored.

    ``cause`` names the fault in a few words for the operator's log ("disk full", …). The
    web app answers 503 with Retry-After; the request can be sent again unchanged.
    """

    def __init__(self, message: str, *, cause: str):
        super().__init__(message)
        self.cause = cause


def unavailable(exc: BaseException, path: str | None = None) -> StoreUnavailable | None:
    """Return the StoreUnavailable a database fault means (``faults``), or None for any other error.

    ``path``, the database file, lets its filesystem name a fault SQLite leaves vague.
    """
    cause = classify(exc) if path in (None, ":memory:") else classify_at(exc, path)
    if cause is None:
        return None
    error = StoreUnavailable(f"the database cannot take requests now ({cause}): {exc}", cause=cause)
    error.__cause__ = exc
    return error
