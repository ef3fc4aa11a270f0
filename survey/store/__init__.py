"""Store surveys, noisy reports and researcher accounts in SQLite (WAL) or PostgreSQL; the only package that speaks SQL.

``Store(location)`` opens the backend a location names: ``sqlite.SqliteStore`` for a file path,
``postgres.PostgresStore`` for a ``postgresql://`` URL. The package is laid out as:

* ``base``: the face, ``Store``, and the SQL both backends share (surveys, their lifecycle,
  responses, sandbox, releases, counts and reads);
* ``accounts``: researchers' accounts, API tokens, sign-in, access to surveys and settings;
* ``sqlite`` and ``postgres``: each backend's connection, transactions and write of a response;
* ``errors``: what a request cannot do (``StoreError`` and its kinds) and ``StoreUnavailable``;
* ``schema`` and ``pg_schema``: the tables, migrations and the SQL that writes reports;
* ``interviews``: interviewer (handover) sessions, their allowance and count (``Interviews``);
* ``admission``, ``joining``, ``signin``, ``flood``: invitations and submission ids, join
  links, sign-in failures and flood counts, each on a connection in the caller's transaction.

Only noisy reports are stored, with the day they arrived: never an IP address, a user
agent or an exact time (docs/explanation/privacy.md). This package does not import Flask.
"""

from __future__ import annotations

from .accounts import (EMAIL_MAX, EMAIL_RE, MIN_PASSWORD_LENGTH, TOKEN_LABEL_MAX, TOKEN_MAX_LENGTH, TOKEN_PREFIX,
                       new_account_key, token_hash)
from .base import (ALLOWED, BUSY_TIMEOUT_MS, ID_ATTEMPTS, LOCK_TIMEOUT_ENV, TRANSITIONS, Store, lock_timeout_ms,
                   survey_lock)
from .errors import (SLUG_TAKEN, AdmissionError, InvitationUnknown, InvitationUsed, JoinLinkInvalid, NotOwner,
                     SlugTaken, StoreError, StoreUnavailable, SubmissionConflict, SurveyClosed, SurveyNotFound,
                     unavailable)
from .ids import new_ids, today
from .interviews import InterviewRefused
from .postgres import PostgresStore
from .schema import SANDBOX_SOURCES
from .sqlite import SqliteStore, create_private_file, synchronous_level

__all__ = [
    "ALLOWED", "BUSY_TIMEOUT_MS", "EMAIL_MAX", "EMAIL_RE", "ID_ATTEMPTS", "LOCK_TIMEOUT_ENV", "MIN_PASSWORD_LENGTH",
    "SANDBOX_SOURCES", "SLUG_TAKEN", "TOKEN_LABEL_MAX", "TOKEN_MAX_LENGTH", "TOKEN_PREFIX", "TRANSITIONS",
    "AdmissionError", "InterviewRefused", "InvitationUnknown", "InvitationUsed", "JoinLinkInvalid", "NotOwner", "PostgresStore",
    "SlugTaken", "SqliteStore", "Store", "StoreError", "StoreUnavailable", "SubmissionConflict", "SurveyClosed",
    "SurveyNotFound", "create_private_file", "lock_timeout_ms", "new_account_key", "new_ids", "survey_lock",
    "synchronous_level", "today", "token_hash", "unavailable",
]
