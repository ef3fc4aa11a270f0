"""Store surveys, noisy reports and researcher accounts in SQLite (WAL); the only package that speaks SQL.

Only noisy reports are stored, with the day they arrived: never an IP address, a user
agent or an exact time (docs/explanation/privacy.md). Reports are integers in one table per
survey keyed by a random id (``schema``), and per-indicator tallies are kept current in
the same transaction as every insert, so a survey's aggregates cost a few rows whatever
its size. A Store holds one connection: use one per thread (the web app keeps one per
worker thread). This package does not import Flask.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import re
import secrets
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import sqlite_utils

from ..core import codec
from ..core.design import release_every
from . import admission, flood, joining, schema, signin
from .faults import classify, classify_at
from .location import is_postgres_url
from .admission import AdmissionError, InvitationUnknown, InvitationUsed, SubmissionConflict  # noqa: F401
from .schema import (REPORTS, RESPONSES, SANDBOX_SOURCES, Batch, batch_from_answers, batch_from_columns,
                     column_names, insert_one_sql, migrations, report_columns, row_from_answer,
                     sandbox_table_name, table_name)

BUSY_TIMEOUT_MS = 10_000
# How long a statement waits for another connection's lock before the store is unavailable.
LOCK_TIMEOUT_ENV = "LDP_SURVEY_LOCK_TIMEOUT_MS"
LOCK_FIRST_PAUSE = 20e-6
LOCK_MAX_PAUSE = 2e-3
# WAL with synchronous=NORMAL: a commit is in the WAL (the operating system's hands) before
# the response is acknowledged, so a killed server loses nothing (tests/test_durability.py);
# FULL also survives a power cut, at one fsync per commit (bench/README.md).
SYNCHRONOUS_LEVELS = ("NORMAL", "FULL")
SYNCHRONOUS_ENV = "LDP_SURVEY_SYNCHRONOUS"
ID_ATTEMPTS = 3
# Page cache per connection (KiB): random-key inserts touch pages all over a large table.
CACHE_KIB = 65536
# How long a use of an invitation or a release waits to empty the WAL (``_forget_order``).
FORGET_WAIT = 2.0


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


# The lifecycle's transitions: the action, the statuses it applies to, the status it leads to.
TRANSITIONS = {"publish": (("draft",), "open"), "close": (("open",), "closed"), "reopen": (("closed",), "open")}
# What a researcher may do with a survey in each status (named in every refused transition).
ALLOWED = {"draft": "a draft can be published, replaced, duplicated or deleted",
           "open": "an open survey can be closed or duplicated",
           "closed": "a closed survey can be reopened or duplicated"}


def survey_lock(slug: str) -> str:
    """Return the name of the lock that a change of a survey's status holds alone and its inserts share."""
    return "survey:" + slug


def today() -> str:
    """Return the current UTC day as YYYY-MM-DD, the only time recorded with a response."""
    return dt.datetime.now(dt.timezone.utc).date().isoformat()


def new_ids(n: int) -> list[str]:
    """Return n random 64-bit response ids as 16 hex digits (their order says nothing of arrival)."""
    raw = secrets.token_bytes(8 * n)
    return [raw[i:i + 8].hex() for i in range(0, 8 * n, 8)]


def create_private_file(path: str):
    """Create an empty file readable only by its owner, unless it exists (or is SQLite's ":memory:").

    SQLite gives the -wal and -shm files it makes beside a database the database's permissions.
    """
    if path == ":memory:" or path.startswith("file:"):
        return
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def lock_timeout_ms() -> int:
    """Return how long to wait for a lock, in milliseconds: $LDP_SURVEY_LOCK_TIMEOUT_MS, else BUSY_TIMEOUT_MS."""
    text = os.environ.get(LOCK_TIMEOUT_ENV, "").strip()
    if not text:
        return BUSY_TIMEOUT_MS
    if not text.isdigit():
        raise StoreError(f"{LOCK_TIMEOUT_ENV} must be a whole number of milliseconds, got {text!r}")
    return int(text)


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


def synchronous_level(level: str | None = None) -> str:
    """Return the SQLite synchronous level: ``level``, else $LDP_SURVEY_SYNCHRONOUS, else NORMAL."""
    chosen = (level or os.environ.get(SYNCHRONOUS_ENV) or "NORMAL").strip().upper()
    if chosen not in SYNCHRONOUS_LEVELS:
        raise StoreError(f"{SYNCHRONOUS_ENV} must be one of {', '.join(SYNCHRONOUS_LEVELS)}, got {chosen!r}")
    return chosen


_DESIGNS: dict[str, dict] = {}
_RECENT: dict[tuple[str, str], dict] = {}
_DESIGNS_LOCK = threading.Lock()


class Store:
    """Open the database at ``path``: one connection, its PRAGMAs, and (unless ``migrate=False``) migrations.

    Open with ``migrate=True`` once per process at start-up; connections opened later for
    worker threads pass ``migrate=False`` and only set their PRAGMAs.
    """

    # The functions that lay out and write a survey's tables (PostgreSQL's store has its own).
    _schema = schema
    # The SQL expression of a survey's released responses in list_surveys (``s`` is the surveys row).
    _responses_sql = "s.responses"

    def __new__(cls, path=None, *args, **kwargs):
        """Open a PostgreSQL store for a ``postgresql://`` URL, SQLite's for anything else (a file path)."""
        if cls is Store and is_postgres_url(path):
            from .postgres import PostgresStore

            return super().__new__(PostgresStore)
        return super().__new__(cls)

    def __init__(self, path: str | Path, *, migrate: bool = True, synchronous: str | None = None):
        synchronous = synchronous_level(synchronous)
        self.lock_timeout_ms = lock_timeout_ms()
        self.path = str(path)
        create_private_file(self.path)
        try:
            self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=True)
        except sqlite3.DatabaseError as exc:
            raise unavailable(exc, self.path) or exc
        try:
            self.conn.execute(f"PRAGMA busy_timeout = {self.lock_timeout_ms}")
            self.conn.execute("PRAGMA foreign_keys = ON")
            if self.path != ":memory:":
                self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute(f"PRAGMA synchronous = {synchronous}")
            self.conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            # Deleted rows (a used invitation's unused row, released held responses) are zeroed
            # in the file, not left in free space (docs/explanation/privacy.md).
            self.conn.execute("PRAGMA secure_delete = ON")
            self.db = sqlite_utils.Database(self.conn)
            if migrate:
                migrations.apply(self.db)
            self.conn.execute("PRAGMA busy_timeout = 0")
        except BaseException as exc:
            self.conn.close()
            raise unavailable(exc, self.path) or exc

    def close(self):
        """Close the connection."""
        self.conn.close()

    def _begin_immediate(self):
        """Take the write lock, polling every few microseconds while another connection holds it.

        SQLite's own busy handler sleeps a whole millisecond at its first retry, many times
        longer than a write holds the lock; this waits at most WRITE_LOCK_WAIT seconds.
        """
        self._execute("BEGIN IMMEDIATE")

    def _execute(self, sql: str, parameters=()) -> sqlite3.Cursor:
        """Execute one statement, polling every few microseconds while another connection holds a lock it needs.

        The connection's busy_timeout is 0 once it is open: SQLite's own busy handler
        sleeps a whole millisecond at its first retry, many times longer than a write holds
        the lock. This waits at most ``lock_timeout_ms`` in all. A database fault raises
        StoreUnavailable.
        """
        pause, deadline = LOCK_FIRST_PAUSE, None
        while True:
            try:
                return self.conn.execute(sql, parameters)
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise unavailable(exc, self.path) or exc
                now = time.monotonic()
                deadline = deadline or now + self.lock_timeout_ms / 1000
                if now > deadline:
                    raise unavailable(exc, self.path) or exc
            time.sleep(pause)
            pause = min(pause * 2, LOCK_MAX_PAUSE)

    @contextmanager
    def _snapshot(self):
        """Run the block's reads in one read transaction: one consistent state while others write."""
        self._execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    def _serialize(self, conn, key: str):
        """Make the rest of this write transaction wait for any other holding ``key`` (SQLite's writes already do)."""

    def _hold_open(self, conn, slug: str):
        """Keep the survey's status from changing until this write ends; inserts share it (SQLite's write lock does)."""

    @contextmanager
    def _write(self):
        """Run the block in one write transaction, taken at once (BEGIN IMMEDIATE) so it never deadlocks.

        A database fault in the block or at COMMIT rolls back and raises StoreUnavailable:
        nothing of the block is stored.
        """
        self._begin_immediate()
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException as exc:
            self._rollback()
            raise unavailable(exc, self.path) or exc

    def _rollback(self):
        """Roll back the open transaction, if SQLite has not already done so (it does after some faults)."""
        if not self.conn.in_transaction:
            return
        try:
            self.conn.execute("ROLLBACK")
        except sqlite3.OperationalError:
            if self.conn.in_transaction:
                raise

    # Surveys

    def create_survey(self, definition_text: str, design: dict, *, replace: bool = False,
                      owner: str | None = None, status: str | None = None):
        """Store a new survey, or replace the design of one that has no responses yet.

        ``owner`` is the email of the researcher it belongs to (None: no one sees it until
        ``share`` gives it an owner). ``status`` is "open" (the default: respondents can
        answer at once) or "draft"; a replaced survey keeps its status, and only a draft
        stays a draft. Raises StoreError if the slug exists (and ``replace`` is false), if
        the existing design is frozen because responses arrived (invariant 7) or the survey
        is closed, or if the owner has no account.
        """
        slug = design["slug"]
        if status not in (None, "open", "draft"):
            raise StoreError(f"a new survey is 'open' or 'draft', not {status!r}")
        with self._write() as conn:
            # A replaced design's tables are dropped: wait for the inserts that checked the old one.
            self._serialize(conn, survey_lock(slug))
            owner_id = None
            if owner is not None:
                account = self.get_user(owner)
                if account is None:
                    raise StoreError(f"no researcher account {owner!r}; create it with `ldp-survey user add`")
                owner_id = account["id"]
            row = conn.execute("SELECT status, design_hash FROM surveys WHERE slug = ?", [slug]).fetchone()
            if row is not None:
                if not replace:
                    raise SlugTaken(f"a survey with slug {slug!r} already exists")
                if self._received(slug):
                    raise StoreError(f"survey {slug!r} already has responses; its design is frozen")
                if row[0] == "closed":
                    raise StoreError(f"survey {slug!r} is closed; its design is frozen ({ALLOWED['closed']})")
                if status == "draft" and row[0] != "draft":
                    raise StoreError(f"survey {slug!r} is {row[0]}; a published survey cannot become a draft again")
                conn.execute("UPDATE surveys SET title = ?, definition = ?, design = ?, design_hash = ?, "
                             "owner_id = coalesce(?, owner_id) WHERE slug = ?",
                             [design["title"], definition_text, _design_text(design), design["hash"], owner_id,
                              slug])
            else:
                conn.execute("INSERT INTO surveys (slug, title, definition, design, design_hash, created_day, "
                             "owner_id, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             [slug, design["title"], definition_text, _design_text(design), design["hash"],
                              today(), owner_id, status or "open"])
            self._schema.create_reports(conn, slug, design)
            if row is not None and row[1] != design["hash"]:
                # Test answers and simulated reports of the old design mean nothing under the new one.
                self._schema.drop_sandbox(conn, slug, row[1])
            self._schema.create_sandbox(conn, slug, design)

    # Lifecycle: draft -> open -> closed (-> open again)

    def survey_status(self, slug: str) -> str:
        """Return a survey's status: "draft", "open" or "closed"."""
        row = self._execute("SELECT status FROM surveys WHERE slug = ?", [slug]).fetchone()
        if row is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        return row[0]

    def _transition(self, slug: str, action: str) -> str:
        sources, target = TRANSITIONS[action]
        with self._write() as conn:
            self._serialize(conn, survey_lock(slug))
            row = conn.execute("SELECT status FROM surveys WHERE slug = ?", [slug]).fetchone()
            if row is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            if row[0] not in sources:
                raise StoreError(f"cannot {action} survey {slug!r}: it is {_status_phrase(row[0])} "
                                 f"({ALLOWED[row[0]]})")
            conn.execute("UPDATE surveys SET status = ? WHERE slug = ?", [target, slug])
        return target

    def publish_survey(self, slug: str) -> str:
        """Open a draft to respondents (draft -> open); its design is then frozen once responses arrive."""
        return self._transition(slug, "publish")

    def close_survey(self, slug: str) -> str:
        """Stop taking responses (open -> closed); a submission racing the close is not stored."""
        return self._transition(slug, "close")

    def reopen_survey(self, slug: str) -> str:
        """Take responses again (closed -> open)."""
        return self._transition(slug, "reopen")

    def delete_draft(self, slug: str):
        """Delete a draft with its report table, tallies, sandbox and collaborators; any other survey is refused."""
        with self._write() as conn:
            self._serialize(conn, survey_lock(slug))
            row = conn.execute("SELECT status, design_hash FROM surveys WHERE slug = ?", [slug]).fetchone()
            if row is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            if row[0] != "draft" or self._received(slug):
                raise StoreError(f"cannot delete survey {slug!r}: it is {_status_phrase(row[0])} and only a "
                                 f"draft can be deleted ({ALLOWED[row[0]]})")
            self._schema.drop_reports(conn, slug)
            self._schema.drop_sandbox(conn, slug, row[1])
            conn.execute("DELETE FROM collaborators WHERE survey = ?", [slug])
            conn.execute("DELETE FROM surveys WHERE slug = ?", [slug])

    def duplicate_survey(self, slug: str, definition_text: str, design: dict):
        """Store a copy of a survey as a new draft: ``design`` (its new slug) built from ``definition_text``.

        The copy has the same owner and collaborators, no responses, and status "draft".
        """
        new_slug = design["slug"]
        with self._write() as conn:
            row = conn.execute("SELECT owner_id FROM surveys WHERE slug = ?", [slug]).fetchone()
            if row is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            if conn.execute("SELECT 1 FROM surveys WHERE slug = ?", [new_slug]).fetchone():
                raise SlugTaken(f"a survey with slug {new_slug!r} already exists")
            conn.execute("INSERT INTO surveys (slug, title, definition, design, design_hash, created_day, "
                         "owner_id, status) VALUES (?, ?, ?, ?, ?, ?, ?, 'draft')",
                         [new_slug, design["title"], definition_text, _design_text(design), design["hash"],
                          today(), row[0]])
            conn.execute("INSERT INTO collaborators (survey, user_id) SELECT ?, user_id FROM collaborators "
                         "WHERE survey = ?", [new_slug, slug])
            self._schema.create_reports(conn, new_slug, design)
            self._schema.create_sandbox(conn, new_slug, design)

    def survey_exists(self, slug: str) -> bool:
        """Return whether a survey has this slug."""
        return self._execute("SELECT 1 FROM surveys WHERE slug = ?", [slug]).fetchone() is not None

    def get_design(self, slug: str) -> dict:
        """Return the design of a survey (shared and cached by hash: do not modify it), or raise SurveyNotFound."""
        row = self._execute("SELECT design_hash FROM surveys WHERE slug = ?", [slug]).fetchone()
        if row is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        design = _DESIGNS.get(row[0])
        if design is None:
            text = self._execute("SELECT design FROM surveys WHERE slug = ?", [slug]).fetchone()
            if text is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            design = json.loads(text[0])
            with _DESIGNS_LOCK:
                _DESIGNS[design["hash"]] = design
        _RECENT[self.path, slug] = design
        return design

    def recent_design(self, slug: str) -> dict:
        """Return the design this process last read for a survey, reading it only the first time.

        For the hot path of submissions: a report made with another design hash must be
        checked against ``get_design`` (which refreshes this), and every insert re-checks
        the hash inside its transaction, so a replaced design is never written to.
        """
        design = _RECENT.get((self.path, slug))
        return design if design is not None else self.get_design(slug)

    def get_definition(self, slug: str) -> str:
        """Return the definition text a survey was created from."""
        row = self._execute("SELECT definition FROM surveys WHERE slug = ?", [slug]).fetchone()
        if row is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        return row[0]

    def list_surveys(self, *, user_id: int | None = None) -> list[dict]:
        """Return the slug, title, creation day, design hash, response count, owner and status of surveys, by slug.

        Every survey, or with ``user_id`` only those that researcher owns or collaborates on.
        """
        sql = (f"SELECT s.slug, s.title, s.created_day, s.design_hash, {self._responses_sql}, u.email, s.status "
               "FROM surveys s LEFT JOIN users u ON u.id = s.owner_id")
        parameters: list = []
        if user_id is not None:
            sql += (" WHERE s.owner_id = ? OR EXISTS (SELECT 1 FROM collaborators c "
                    "WHERE c.survey = s.slug AND c.user_id = ?)")
            parameters = [user_id, user_id]
        return [dict(zip(("slug", "title", "created_day", "design_hash", "responses", "owner", "status"), row))
                for row in self._execute(sql + " ORDER BY s.slug", parameters).fetchall()]

    def can_access(self, slug: str, user_id: int) -> bool:
        """Return whether the researcher owns the survey or collaborates on it (False if there is no such survey)."""
        row = self._execute("SELECT 1 FROM surveys s WHERE s.slug = ? AND (s.owner_id = ? OR EXISTS "
                            "(SELECT 1 FROM collaborators c WHERE c.survey = s.slug AND c.user_id = ?))",
                            [slug, user_id, user_id]).fetchone()
        return row is not None

    def share(self, slug: str, email: str) -> str:
        """Give a researcher access to a survey; return "owner" or "collaborator", the role they now have.

        A survey without an owner (from an older database) gets this researcher as its owner.
        """
        with self._write() as conn:
            survey = conn.execute("SELECT owner_id FROM surveys WHERE slug = ?", [slug]).fetchone()
            if survey is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            account = self.get_user(email)
            if account is None:
                raise StoreError(f"no researcher account {email!r}; create it with `ldp-survey user add`")
            if survey[0] is None:
                conn.execute("UPDATE surveys SET owner_id = ? WHERE slug = ?", [account["id"], slug])
                return "owner"
            if survey[0] == account["id"]:
                return "owner"
            conn.execute("INSERT INTO collaborators (survey, user_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                         [slug, account["id"]])
            return "collaborator"

    def is_owner(self, slug: str, user_id: int) -> bool:
        """Return whether the researcher owns the survey (False for a collaborator or no such survey)."""
        return self._execute("SELECT 1 FROM surveys WHERE slug = ? AND owner_id = ?",
                             [slug, user_id]).fetchone() is not None

    def invite_collaborator(self, slug: str, owner_id: int, email: str) -> tuple[str, dict]:
        """Make a single-use join link for ``email`` to collaborate on a survey; return its token (shown once) and record.

        Only the survey's owner may (NotOwner otherwise); an email that already sees the
        survey is refused; a new link for an email replaces its earlier one.
        """
        email = email.strip()
        if not EMAIL_RE.match(email) or len(email) > EMAIL_MAX:
            raise StoreError(f"{email!r} does not look like an email address (name@example.org)")
        with self._write() as conn:
            survey = conn.execute("SELECT owner_id FROM surveys WHERE slug = ?", [slug]).fetchone()
            if survey is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            if survey[0] != owner_id:
                raise NotOwner("only the survey's owner can invite collaborators")
            account = self.get_user(email)
            if account is not None and self.can_access(slug, account["id"]):
                raise StoreError(f"{account['email']} already sees this survey")
            return joining.add(conn, slug, email, owner_id, today())

    def collaborator_invitations(self, slug: str) -> list[dict]:
        """Return the survey's join links that still work (id, email, last day; never a token), by email."""
        return joining.pending(self.conn, slug, today())

    def revoke_collaborator_invitation(self, slug: str, invitation_id: int) -> dict:
        """Delete one of the survey's join links; return its record. Raises StoreError if it has no such link."""
        with self._write() as conn:
            record = joining.revoke(conn, slug, invitation_id)
        if record is None:
            raise StoreError("this survey has no such join link; it may have been used or revoked already")
        return record

    def join_invitation(self, token: str) -> dict | None:
        """Return a working join link's record with its survey's title and owner's email, or None."""
        record = joining.find(self.conn, token, today())
        if record is None:
            return None
        title, owner = self._execute("SELECT s.title, u.email FROM surveys s LEFT JOIN users u ON u.id = s.owner_id "
                                     "WHERE s.slug = ?", [record["survey"]]).fetchone()
        return {**record, "title": title, "owner": owner}

    def accept_invitation(self, token: str, *, user_id: int | None = None,
                          password_hash: str | None = None) -> dict:
        """Use a join link: make its invitee a collaborator and delete the link, in one transaction; return the account.

        With ``password_hash`` the invitee's account is created (StoreError if it exists);
        with ``user_id`` it is that existing account, which must have the invited email.
        Raises JoinLinkInvalid when the link no longer works.
        """
        with self._write() as conn:
            record = joining.find(conn, token, today())
            if record is None:
                raise JoinLinkInvalid("this join link does not work")
            account = self.get_user(record["email"])
            if password_hash is not None:
                if account is not None:
                    raise StoreError(f"an account {account['email']} already exists; sign in with its password")
                _insert_user(conn, record["email"], password_hash)
                account = self.get_user(record["email"])
            elif account is None or account["id"] != user_id:
                raise StoreError(f"this join link is for {record['email']}")
            conn.execute("INSERT INTO collaborators (survey, user_id) SELECT slug, ? FROM surveys "
                         "WHERE slug = ? AND coalesce(owner_id, -1) != ? ON CONFLICT DO NOTHING",
                         [account["id"], record["survey"], account["id"]])
            if not joining.use(conn, record["id"]):
                raise JoinLinkInvalid("this join link does not work")
        return {**account, "survey": record["survey"]}

    def collaborators(self, slug: str) -> list[str]:
        """Return the emails of a survey's collaborators (not its owner), sorted."""
        return [row[0] for row in self._execute(
            "SELECT u.email FROM collaborators c JOIN users u ON u.id = c.user_id WHERE c.survey = ? "
            "ORDER BY lower(u.email)", [slug]).fetchall()]

    # Responses

    def add_response(self, slug: str, design_hash: str, answers: dict, *, day: str | None = None) -> str:
        """Store one validated response and return its random id.

        One INSERT statement, atomic on its own: the tally trigger counts it, and it stores
        nothing unless ``design_hash`` is still the survey's design. The hot path of the server.
        """
        design = self._design_with_hash(slug, design_hash)
        for attempt in range(ID_ATTEMPTS):
            row = row_from_answer(design, new_ids(1)[0], day or today(), answers)
            try:
                stored = self._stored(self._execute, insert_one_sql(design), (*row, slug, design_hash))
            except sqlite3.IntegrityError:
                # Two random 64-bit ids collided: draw a new one (nothing was stored).
                if attempt == ID_ATTEMPTS - 1:
                    raise
                continue
            if not stored:
                self._refuse_insert(self.conn, slug, design_hash)
            self._after_store(slug, design, invited=False)
            return row[0]
        raise AssertionError("unreachable")

    def add_submission(self, slug: str, design_hash: str, answers: dict, *, submission: str | None = None,
                       invite: str | None = None, day: str | None = None) -> bool:
        """Store one validated response admitted by a submission id and/or an invitation; return False for a repeat.

        In one transaction: a submission id already stored with the same answers stores
        nothing and returns False (a safe retry); with other answers it raises
        SubmissionConflict. An unknown or used invitation raises InvitationUnknown or
        InvitationUsed. Otherwise the response is inserted, the invitation marked used and
        the submission id recorded together, or none of them (``admission``).
        """
        design = self._design_with_hash(slug, design_hash)
        # Everything but the statements is computed before the write lock is taken, so the
        # lock is held as briefly as a transaction of three or four statements allows.
        claim = None
        if submission is not None:
            claim = admission.submission_hash(slug, submission), admission.answers_check(submission, answers)
        insert = insert_one_sql(design)
        for attempt in range(ID_ATTEMPTS):
            row = row_from_answer(design, new_ids(1)[0], day or today(), answers)
            try:
                if claim is not None and invite is None:
                    # The browser's submission: one statement (admission.submit), as add_response is.
                    stored = admission.submit(self.conn, self._execute, slug, design, row, *claim)
                    if stored is None:
                        self._refuse_insert(self.conn, slug, design_hash)
                    if stored:
                        self._after_store(slug, design, invited=False)
                    return stored
                with self._write() as conn:
                    if claim is not None and not admission.claim_submission(conn, slug, *claim):
                        return False
                    admission.check_invitation(conn, slug, invite)
                    if not self._stored(conn.execute, insert, (*row, slug, design_hash)):
                        self._refuse_insert(conn, slug, design_hash)
                    admission.use_invitation(conn, slug, invite)
                self._after_store(slug, design, invited=invite is not None)
                return True
            except sqlite3.IntegrityError:
                # Two random 64-bit ids collided: draw a new one (the transaction was rolled back).
                if attempt == ID_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def _after_store(self, slug: str, design: dict, *, invited: bool):
        """Empty the WAL after a response that used an invitation or completed a release (``_forget_order``)."""
        if invited or (release_every(design) > 1 and not self._execute(
                "SELECT pending FROM surveys WHERE slug = ?", [slug]).fetchone()[0]):
            self._forget_order()

    def _forget_order(self) -> bool:
        """Copy the WAL into the database file and truncate it to nothing; return whether it was emptied.

        The WAL holds every page written since it was last emptied, in the order written: the
        page that lost a used invitation's unused row beside the page that gained its response,
        and held responses in their order of arrival. Emptied after each use of an invitation
        and each release, it never holds more than one of either (docs/explanation/privacy.md).
        A reader or writer in the way is waited for, up to FORGET_WAIT seconds.
        """
        if self.path == ":memory:":
            return True
        pause, deadline = LOCK_FIRST_PAUSE, time.monotonic() + FORGET_WAIT
        while True:
            try:
                busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            except sqlite3.OperationalError:
                busy = 1
            if not busy or time.monotonic() > deadline:
                return not busy
            time.sleep(pause)
            pause = min(pause * 2, LOCK_MAX_PAUSE)

    @staticmethod
    def _stored(execute, insert: str, params) -> int:
        """Run a guarded INSERT; return its rowcount, 0 when the design's table is gone (replaced since it was read)."""
        try:
            return execute(insert, params).rowcount
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            return 0

    @staticmethod
    def _refuse_insert(conn: sqlite3.Connection, slug: str, design_hash: str):
        """Raise why an INSERT guarded by the survey's status and design stored nothing."""
        status = conn.execute("SELECT status FROM surveys WHERE slug = ?", [slug]).fetchone()
        if status is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        if status[0] != "open":
            raise SurveyClosed(_closed_message(slug, status[0]))
        raise StoreError(f"design {design_hash!r} is not the current design of {slug!r}")

    def create_invitations(self, slug: str, count: int) -> list[str]:
        """Make ``count`` single-use invitations of an invitation-only survey; return the tokens (shown once).

        Only each token's hash is stored, with the survey, a used flag and today's date.
        Raises StoreError unless the survey's design has access = "invite" and 1 <= count
        <= MAX_INVITATIONS.
        """
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= admission.MAX_INVITATIONS:
            raise StoreError(f"the number of invitations must be from 1 to {admission.MAX_INVITATIONS}, "
                             f"got {count!r}")
        design = self.get_design(slug)
        if design.get("access") != "invite":
            raise StoreError(f"survey {slug!r} is open to anyone with its link; invitations need "
                             "access = \"invite\" in its definition")
        with self._write() as conn:
            return admission.add_invitations(conn, slug, count, today())

    def invitation_status(self, slug: str, token: str) -> str:
        """Return "unused", "used" or "unknown" for an invitation token of a survey, without using it.

        Read-only and unrecorded: the same answer the submission would give (403 unknown,
        409 used), so the respondent page can say it before any answer is given.
        """
        return admission.invitation_status(self.conn, slug, token)

    def invitation_counts(self, slug: str) -> tuple[int, int]:
        """Return (invitations made, invitations used) of a survey."""
        return admission.invitation_counts(self.conn, slug)

    def add_responses(self, slug: str, design_hash: str, answers_list: Iterable[dict], *,
                      day: str | None = None, source: str | None = None) -> list[str]:
        """Store validated responses ``{QID: REPORT}`` in one transaction and return their random ids.

        With ``source`` ("test" or "simulated") they go to the survey's sandbox instead, in
        any status, a draft's included: the reports, their tallies and the response count
        are untouched, so a draft's design stays unfrozen.
        """
        answers_list = list(answers_list)
        design = self._design_with_hash(slug, design_hash)
        days = [day or today()] * len(answers_list)
        return self._insert(slug, design_hash, len(answers_list),
                            lambda ids: batch_from_answers(design, ids, days, answers_list), source=source)

    def add_report_columns(self, slug: str, design_hash: str, columns: Sequence[np.ndarray], *,
                           asked: np.ndarray | None = None, day: str | None = None,
                           source: str | None = None) -> int:
        """Store validated reports given per question as (n, words) arrays (``survey.core.codec``) in one transaction.

        The fast path of simulations: every question answered by all n respondents, or with
        ``asked`` (an (n, k) boolean matrix, sample allocation) only the asked ones, the
        others stored as NULL. With ``source``, into the sandbox (as ``add_responses``). Returns n.
        """
        design = self._design_with_hash(slug, design_hash)
        if len(columns) != len(design["questions"]):
            raise StoreError(f"expected reports to {len(design['questions'])} questions, got {len(columns)}")
        n = len(columns[0]) if columns else 0
        if asked is not None and np.shape(asked) != (n, len(columns)):
            raise StoreError(f"asked must be an ({n}, {len(columns)}) matrix, got shape {np.shape(asked)}")
        days = [day or today()] * n
        self._insert(slug, design_hash, n, lambda ids: batch_from_columns(design, ids, days, columns, asked),
                     source=source)
        return n

    def _design_with_hash(self, slug: str, design_hash: str) -> dict:
        """Return the design with this hash (cached: no query), checking that it is the slug's current one.

        The check is repeated inside the insert's transaction (``_insert``).
        """
        design = _DESIGNS.get(design_hash)
        if design is not None and design["slug"] == slug:
            return design
        design = self.get_design(slug)
        if design["hash"] != design_hash:
            raise StoreError(f"design {design_hash!r} is not the current design of {slug!r}")
        return design

    def clear_sandbox(self, slug: str, source: str) -> int:
        """Delete every sandbox response of a source ("test" or "simulated"); return how many there were."""
        _check_source(source)
        with self._write() as conn:
            row = conn.execute("SELECT design_hash FROM surveys WHERE slug = ?", [slug]).fetchone()
            if row is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            deleted = conn.execute(f'DELETE FROM "{sandbox_table_name(row[0])}" WHERE source = ?',
                                   [source]).rowcount
            conn.execute("DELETE FROM sandbox_tallies WHERE survey = ? AND source = ?", [slug, source])
        return deleted

    def sandbox_counts(self, slug: str) -> dict[str, int]:
        """Return how many test answers and simulated responses a survey's sandbox holds: {"test": n, "simulated": m}."""
        self.get_design(slug)
        counts = dict.fromkeys(SANDBOX_SOURCES, 0)
        for source, count in self._execute("SELECT source, count FROM sandbox_tallies WHERE survey = ? "
                                           "AND question = ? AND option = ?", [slug, RESPONSES, REPORTS]):
            counts[source] = count
        return counts

    def _insert(self, slug: str, design_hash: str, n: int, make_batch, *, source: str | None = None) -> list[str]:
        """Insert a batch into the reports (the survey must be open), or with ``source`` into its sandbox (any status)."""
        if source is not None:
            _check_source(source)
        for attempt in range(ID_ATTEMPTS):
            ids = new_ids(n)
            batch: Batch = make_batch(ids)
            try:
                with self._write() as conn:
                    self._check_current(conn, slug, design_hash, must_be_open=source is None)
                    if source is None:
                        self._schema.insert_batch(conn, slug, _DESIGNS[design_hash], batch)
                    else:
                        self._schema.insert_sandbox(conn, slug, _DESIGNS[design_hash], batch, source)
                return ids
            except self._id_collision():
                # Two random 64-bit ids collided: draw new ones (the transaction was rolled back).
                if attempt == ID_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def _check_current(self, conn, slug: str, design_hash: str, *, must_be_open: bool):
        """Raise unless the survey exists with this design and, when ``must_be_open``, is open (in the write)."""
        self._hold_open(conn, slug)
        current = conn.execute("SELECT design_hash, status FROM surveys WHERE slug = ?", [slug]).fetchone()
        if current is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        if must_be_open and current[1] != "open":
            raise SurveyClosed(_closed_message(slug, current[1]))
        if current[0] != design_hash:
            raise StoreError(f"design {design_hash!r} is not the current design of {slug!r}")

    @staticmethod
    def _id_collision() -> type[Exception]:
        """Return the error an INSERT raises when two random ids collide (the transaction is rolled back)."""
        return sqlite3.IntegrityError

    def release_state(self, slug: str) -> dict:
        """Return a survey's release step and counts: {"every", "released", "held", "smallest_release"}.

        ``released`` responses are the ones every read sees; ``held`` ones wait for the next
        release (fewer than ``every``); ``smallest_release`` is the size of a release made
        early with ``release_held`` (None if none was).
        """
        design = self.get_design(slug)
        row = self._execute("SELECT responses, pending, smallest_release FROM surveys WHERE slug = ?",
                            [slug]).fetchone()
        return {"every": release_every(design), "released": row[0], "held": row[1], "smallest_release": row[2]}

    def release_held(self, slug: str) -> int:
        """Release a survey's held responses now, fewer than its step; return how many (0 when none were held).

        Their respondents are then hidden among fewer than the step's B reports: the size of
        the smallest such release is kept (``release_state``) so that the pages can say so.
        """
        design = self.get_design(slug)
        if release_every(design) == 1:
            return 0
        with self._write() as conn:
            moved = self._schema.release_pending(conn, slug, design, today())
            if moved:
                conn.execute("UPDATE surveys SET smallest_release = CASE WHEN smallest_release IS NULL OR "
                             "smallest_release > ? THEN ? ELSE smallest_release END WHERE slug = ?",
                             [moved, moved, slug])
        self._forget_order()
        return moved

    def received_count(self, slug: str) -> int:
        """Return how many responses a survey has stored: released, and held for the next release."""
        if not self.survey_exists(slug):
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        return self._received(slug)

    def _received(self, slug: str) -> int:
        """Return the released and held responses of a survey (0 when there is no such survey)."""
        row = self._execute("SELECT responses + pending FROM surveys WHERE slug = ?", [slug]).fetchone()
        return 0 if row is None else row[0]

    def response_count(self, slug: str) -> int:
        """Return how many responses a survey has released (kept current at insert: no scan)."""
        row = self._execute("SELECT responses FROM surveys WHERE slug = ?", [slug]).fetchone()
        if row is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        return row[0]

    def tallies(self, slug: str, *, sandbox: bool = False) -> tuple[int, dict[str, tuple[int, list[int]]]]:
        """Return the number of responses and question_counts, read together in one snapshot (of the sandbox with ``sandbox``)."""
        with self._snapshot():
            if sandbox:
                return sum(self.sandbox_counts(slug).values()), self.question_counts(slug, sandbox=True)
            return self.response_count(slug), self.question_counts(slug)

    def responses_per_day(self, slug: str) -> list[tuple[str, int]]:
        """Return (day, responses) for every day a survey received responses, oldest first (kept at insert)."""
        return [tuple(row) for row in self._execute(
            "SELECT day, responses FROM daily_responses WHERE survey = ? ORDER BY day", [slug]).fetchall()]

    def question_counts(self, slug: str, *, sandbox: bool = False) -> dict[str, tuple[int, list[int]]]:
        """Return per question id its number of reports and the 1s of each indicator (from the tallies).

        With ``sandbox``, of the survey's test answers and simulated responses together instead.
        """
        design = self.get_design(slug)
        reports = [0] * len(design["questions"])
        ones = [[0] * codec.tally_count(question) for question in design["questions"]]
        sql = ("SELECT question, option, CAST(sum(count) AS BIGINT) FROM sandbox_tallies WHERE survey = ? AND question >= 0 "
               "GROUP BY question, option" if sandbox else
               "SELECT question, option, count FROM tallies WHERE survey = ?")
        for index, option, count in self._execute(sql, [slug]):
            if option == REPORTS:
                reports[index] = count
            else:
                ones[index][option] = count
        return {question["id"]: (reports[index], ones[index])
                for index, question in enumerate(design["questions"])}

    def recount(self, slug: str, *, sandbox: bool = False) -> dict[str, tuple[int, list[int]]]:
        """Return the same counts as question_counts, recomputed from every stored report (a full scan)."""
        design = self.get_design(slug)
        table = _table(design, sandbox)
        counts = {}
        for question, names in zip(design["questions"], report_columns(design)):
            words = np.array(self._execute(
                f'SELECT {", ".join(names)} FROM "{table}" WHERE {names[0]} IS NOT NULL').fetchall(),
                dtype=np.int64).reshape(-1, len(names))
            counts[question["id"]] = (len(words), [int(x) for x in codec.tally(question, words)])
        return counts

    def joint_reports(self, slug: str, first: str, second: str, *,
                      sandbox: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return the distinct report pairs of two questions among respondents who answered both (in the sandbox with ``sandbox``).

        Returns (words of the first question, words of the second, how many respondents
        gave each pair): ``codec.indicators`` of each side, weighted by the counts, give
        every joint count of their indicators. One GROUP BY in SQL; no report is decoded.
        """
        (words_a, words_b), counts = self.joint_patterns(slug, [first, second], sandbox=sandbox)
        return words_a, words_b, counts

    def joint_patterns(self, slug: str, questions: list[str], *,
                       sandbox: bool = False) -> tuple[list[np.ndarray], np.ndarray]:
        """Return the distinct report patterns of some questions among respondents who answered all of them.

        Returns ([the words of each pattern, per question in the order given], how many respondents sent
        each pattern): one GROUP BY in SQL, so a regression over a million responses reads only their
        patterns. A question may be named twice (a crosstab of a question with itself).
        """
        design = self.get_design(slug)
        index = {question["id"]: i for i, question in enumerate(design["questions"])}
        for qid in questions:
            if qid not in index:
                raise StoreError(f"{qid!r} is not a question of {slug!r}")
        columns = report_columns(design)
        chosen = [columns[index[qid]] for qid in questions]
        selected = ", ".join(name for names in chosen for name in names)
        answered = " AND ".join(f"{names[0]} IS NOT NULL" for names in chosen)
        rows = self._execute(f'SELECT {selected}, count(*) FROM "{_table(design, sandbox)}" '
                             f"WHERE {answered} GROUP BY {selected}").fetchall()
        width = sum(len(names) for names in chosen)
        table = np.array(rows, dtype=np.int64).reshape(-1, width + 1)
        words, start = [], 0
        for names in chosen:
            words.append(table[:, start:start + len(names)])
            start += len(names)
        return words, table[:, -1]

    def iter_responses(self, slug: str, *, sandbox: bool = False, after: str | None = None,
                       limit: int | None = None) -> Iterator[dict]:
        """Yield ``{"id", "received_day", "answers"}`` of every response, ordered by random id.

        ``answers`` maps each answered question id to its wire-format report. With ``sandbox``,
        the sandbox's responses instead, each with its ``source`` ("test" or "simulated").
        ``after`` starts past that id and ``limit`` stops after so many rows (a page of the API).
        """
        design = self.get_design(slug)
        columns = report_columns(design)
        names = ", ".join(column_names(design))
        spans, start = [], 3
        for names_of_question in columns:
            spans.append((start, start + len(names_of_question)))
            start += len(names_of_question)
        source = "source" if sandbox else "NULL"
        where = "" if after is None else " WHERE id > ?"
        tail = "" if limit is None else " LIMIT ?"
        parameters = [value for value in (after, limit) if value is not None]
        sql = f'SELECT id, received_day, {source}, {names} FROM "{_table(design, sandbox)}"{where} ORDER BY id{tail}'
        for row in self._execute(sql, parameters):
            answers = {}
            for question, (lo, hi) in zip(design["questions"], spans):
                if row[lo] is not None:
                    answers[question["id"]] = codec.decode_report(question, row[lo:hi])
            response = {"id": row[0], "received_day": row[1], "answers": answers}
            if sandbox:
                response["source"] = row[2]
            yield response

    def iter_answers(self, slug: str) -> Iterator[dict]:
        """Yield the noisy answers ``{QID: REPORT}`` of every response, ordered by random id."""
        for response in self.iter_responses(slug):
            yield response["answers"]

    # Operations

    def backup(self, destination: str | Path, *, progress=None):
        """Copy the database to a new file with SQLite's online backup API (safe while serving).

        The copy is made in one step, so it is a consistent snapshot even while other
        processes write; it is created readable only by its owner. Refuses to overwrite.
        """
        destination = Path(destination)
        try:
            descriptor = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise StoreError(f"{destination} already exists; choose a new file name") from None
        except OSError as exc:
            raise StoreError(f"cannot create {destination}: {exc.strerror or exc}") from exc
        os.close(descriptor)
        try:
            target = sqlite3.connect(destination)
            try:
                self.conn.backup(target, pages=-1, progress=progress)
                target.execute("PRAGMA journal_mode = DELETE")
            finally:
                target.close()
        except BaseException:
            destination.unlink(missing_ok=True)
            raise

    def integrity_check(self) -> str:
        """Return SQLite's ``PRAGMA integrity_check`` verdict ("ok" when sound)."""
        return "\n".join(row[0] for row in self.conn.execute("PRAGMA integrity_check"))

    # Users

    def add_user(self, email: str, password_hash: str, *, replace: bool = False):
        """Create a researcher account, or set its password when ``replace`` is true (ending its sessions)."""
        with self._write():
            existing = self.get_user(email)
            if existing and not replace:
                raise StoreError(f"a user with email {email!r} already exists")
            if existing:
                self._execute("UPDATE users SET password_hash = ?, session_key = ? WHERE id = ?",
                              [password_hash, new_account_key(), existing["id"]])
            else:
                _insert_user(self.conn, email, password_hash)

    def set_password(self, email: str, password_hash: str):
        """Set an account's password; every earlier session of the account ends."""
        with self._write() as conn:
            if not conn.execute("UPDATE users SET password_hash = ?, session_key = ? WHERE lower(email) = lower(?)",
                                [password_hash, new_account_key(), email]).rowcount:
                raise StoreError(f"no researcher account {email!r}")
            signin.unlock(conn, signin.account_key(email))

    def end_sessions(self, user_id: int):
        """End every session of an account (sign-out ends them all, on every device): a new session key."""
        with self._write() as conn:
            conn.execute("UPDATE users SET session_key = ? WHERE id = ?", [new_account_key(), user_id])

    def remove_user(self, email: str):
        """Delete an account, its API tokens and its sessions; its surveys keep their data but lose their owner.

        Surveys it owned are visible to no one until shared. A later account may get the same
        id on SQLite, but never the same session or token key, so nothing of this one works for it.
        """
        with self._write() as conn:
            account = self.get_user(email)
            if account is None:
                raise StoreError(f"no researcher account {email!r}")
            conn.execute("DELETE FROM collaborators WHERE user_id = ?", [account["id"]])
            conn.execute("DELETE FROM api_tokens WHERE user_id = ?", [account["id"]])
            conn.execute("UPDATE surveys SET owner_id = NULL WHERE owner_id = ?", [account["id"]])
            conn.execute("DELETE FROM users WHERE id = ?", [account["id"]])
            signin.unlock(conn, signin.account_key(email))

    def list_users(self) -> list[dict]:
        """Return every account's email, creation day and number of surveys it owns, by email."""
        return [dict(zip(("email", "created_day", "surveys"), row)) for row in self._execute(
            "SELECT u.email, u.created_day, (SELECT count(*) FROM surveys s WHERE s.owner_id = u.id) "
            "FROM users u ORDER BY lower(u.email)").fetchall()]

    def get_user(self, email: str) -> dict | None:
        """Return the account with this email (case-insensitive), or None."""
        row = self._execute(f"SELECT {_USER_COLUMNS} FROM users WHERE lower(email) = lower(?)", [email]).fetchone()
        return dict(zip(_USER_FIELDS, row)) if row else None

    def get_user_by_id(self, user_id: int) -> dict | None:
        """Return the account with this id, or None."""
        row = self._execute(f"SELECT {_USER_COLUMNS} FROM users WHERE id = ?", [user_id]).fetchone()
        return dict(zip(_USER_FIELDS, row)) if row else None

    # Sign-in failures (``signin``)

    def sign_in_reserve(self, limits, now: float) -> tuple[float, tuple[str, str] | None]:
        """Count one sign-in attempt unless a count of ``limits`` is full (``signin.reserve``), in one write.

        The counts are locked in the order given (an account's before a client's), so
        concurrent attempts on PostgreSQL are counted one by one and never deadlock.
        """
        with self._write() as conn:
            for account, client, _, _ in limits:
                self._serialize(conn, f"sign-in:{account}:{client}" if account == signin.ANY_ACCOUNT
                                else "sign-in:" + account)
            return signin.reserve(conn, limits, now)

    def sign_in_forget(self, account: str, client: str, shared):
        """Forget one client's failures on an account after it signed in (``signin.forget``)."""
        with self._write() as conn:
            signin.forget(conn, account, client, shared)

    def unlock_account(self, email: str) -> int:
        """Clear every sign-in lock and failure count of an account; return how many counts were cleared."""
        with self._write() as conn:
            if self.get_user(email) is None:
                raise StoreError(f"no researcher account {email!r}")
            return signin.unlock(conn, signin.account_key(email))

    # API tokens

    def create_token(self, email: str, label: str | None = None) -> tuple[dict, str]:
        """Make a new API token for a researcher; return its record and the token itself (shown once).

        Only the token's SHA-256 hash is stored, with its owner, label (unique per account;
        ``token-N`` when none is given) and creation day. Raises StoreError for an unknown
        account or a label the account already uses.
        """
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        label = (label or "").strip()
        if len(label) > TOKEN_LABEL_MAX:
            raise StoreError(f"a token label has at most {TOKEN_LABEL_MAX} characters, got {len(label)}")
        with self._write() as conn:
            account = self.get_user(email)
            if account is None:
                raise StoreError(f"no researcher account {email!r}")
            used = {row[0] for row in conn.execute("SELECT label FROM api_tokens WHERE user_id = ?",
                                                   [account["id"]])}
            if label and label in used:
                raise StoreError(f"{account['email']} already has a token labelled {label!r}")
            if not label:
                label = next(f"token-{n}" for n in range(1, len(used) + 2) if f"token-{n}" not in used)
            day = today()
            token_id = conn.execute("INSERT INTO api_tokens (user_id, token_key, token_hash, label, created_day) "
                                    "VALUES (?, ?, ?, ?, ?) RETURNING id",
                                    [account["id"], account["token_key"], token_hash(token), label,
                                     day]).fetchone()[0]
        return {"id": token_id, "label": label, "created_day": day, "email": account["email"]}, token

    def list_tokens(self, user_id: int) -> list[dict]:
        """Return a researcher's tokens (id, label, creation day; never the token), oldest first."""
        return [dict(zip(("id", "label", "created_day"), row)) for row in self._execute(
            "SELECT id, label, created_day FROM api_tokens WHERE user_id = ? ORDER BY id", [user_id]).fetchall()]

    def revoke_token(self, user_id: int, which: str | int) -> dict:
        """Delete one of a researcher's tokens, named by label or by id; return its record.

        A label is tried first, then a number as an id. Raises StoreError if the account
        has no such token.
        """
        with self._write() as conn:
            row = conn.execute("SELECT id, label, created_day FROM api_tokens WHERE user_id = ? AND label = ?",
                               [user_id, str(which)]).fetchone()
            if row is None and str(which).isdigit():
                row = conn.execute("SELECT id, label, created_day FROM api_tokens WHERE user_id = ? AND id = ?",
                                   [user_id, int(which)]).fetchone()
            if row is None:
                raise StoreError(f"no API token {str(which)!r} of this account")
            conn.execute("DELETE FROM api_tokens WHERE id = ?", [row[0]])
        return dict(zip(("id", "label", "created_day"), row))

    def user_for_token(self, token: str) -> dict | None:
        """Return the account an API token belongs to, or None for an unknown (or revoked) token.

        The token is looked up by its SHA-256 hash, never compared as text: the time the
        lookup takes says nothing about how much of a guess was right. A token is bound to
        its account's id and token key, so it never works for another account given that id.
        """
        if not token.startswith(TOKEN_PREFIX) or len(token) > TOKEN_MAX_LENGTH:
            return None
        wanted = token_hash(token)
        row = self._execute("SELECT user_id, token_hash, token_key FROM api_tokens WHERE token_hash = ?",
                            [wanted]).fetchone()
        if row is None or not hmac.compare_digest(row[1], wanted):
            return None
        user = self.get_user_by_id(row[0])
        if user is None or not row[2] or not hmac.compare_digest(row[2], user["token_key"]):
            return None
        return user

    # Settings

    def get_setting(self, key: str, default: str | None = None) -> str | None:
        """Return a stored setting, or ``default``."""
        row = self._execute("SELECT value FROM settings WHERE key = ?", [key]).fetchone()
        return row[0] if row else default

    def set_setting(self, key: str, value: str):
        """Store a setting."""
        with self._write() as conn:
            conn.execute("INSERT INTO settings (key, value) VALUES (?, ?) "
                         "ON CONFLICT (key) DO UPDATE SET value = excluded.value", [key, value])

    # State shared by every server (``flood``, the signing key)

    def flood_take(self, client: str, window: int, previous_client: str, limit: int,
                   previous_weight: float) -> tuple[bool, int, int]:
        """Count one submission of a client unless it goes over the limit (``flood.take``), in one write."""
        with self._write() as conn:
            return flood.take(conn, client, window, previous_client, limit, previous_weight)

    def flood_sweep(self, window: int) -> int:
        """Delete the flood counts that no longer weigh in ``window`` (``flood.sweep``); return how many."""
        with self._write() as conn:
            return flood.sweep(conn, window)

    def shared_setting(self, key: str, candidate: str) -> str:
        """Return a stored setting, storing ``candidate`` first if there is none (never overwriting one).

        Every server that starts at once offers its own candidate; all read back the one
        stored first.
        """
        with self._write() as conn:
            conn.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                         [key, candidate])
            return conn.execute("SELECT value FROM settings WHERE key = ?", [key]).fetchone()[0]

    # Readiness

    def ready(self) -> None:
        """Prove the store can take a write now: count one check in the one-row ``readiness`` table, committed.

        Raises StoreUnavailable (with its ``cause``) when it cannot: the disk is full, the
        database is read-only or locked longer than the lock timeout, or unreachable.
        """
        with self._write() as conn:
            conn.execute("INSERT INTO readiness (id, checks) VALUES (1, 1) "
                         "ON CONFLICT (id) DO UPDATE SET checks = readiness.checks + 1")



TOKEN_PREFIX = "ldps_"
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
EMAIL_MAX = 254
MIN_PASSWORD_LENGTH = 8
TOKEN_LABEL_MAX = 64
TOKEN_MAX_LENGTH = 128


def token_hash(token: str) -> str:
    """Return the SHA-256 hex digest of an API token, the only form in which it is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


_USER_FIELDS = ("id", "email", "password_hash", "session_key", "token_key")
_USER_COLUMNS = ", ".join(_USER_FIELDS)


def new_account_key() -> str:
    """Return a new random key of an account (256 bits as 64 hex digits): its session key or its token key."""
    return secrets.token_hex(32)


def _insert_user(conn, email: str, password_hash: str):
    """Insert a new account with its own random session and token keys, in the caller's transaction."""
    conn.execute("INSERT INTO users (email, password_hash, created_day, session_key, token_key) "
                 "VALUES (?, ?, ?, ?, ?)", [email, password_hash, today(), new_account_key(), new_account_key()])


def _table(design: dict, sandbox: bool) -> str:
    """Return the name of the table of a design's reports, or of its sandbox."""
    return sandbox_table_name(design["hash"]) if sandbox else table_name(design)


def _check_source(source: str):
    if source not in SANDBOX_SOURCES:
        raise StoreError(f"a sandbox source is one of {', '.join(SANDBOX_SOURCES)}, not {source!r}")


def _status_phrase(status: str) -> str:
    return "a draft" if status == "draft" else status


def _closed_message(slug: str, status: str) -> str:
    if status == "draft":
        return f"survey {slug!r} is a draft and takes no responses until it is published"
    return f"survey {slug!r} is closed and takes no more responses"


def _design_text(design: dict) -> str:
    return json.dumps(design, sort_keys=True)
