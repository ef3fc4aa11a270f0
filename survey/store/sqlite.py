"""The store in an SQLite file (WAL): one connection per Store, polled locks, and one statement per response.

A Store holds one connection: use one per thread (the web app keeps one per worker thread).
A response is one guarded INSERT, and the browser's submission one INSERT into a view whose
trigger records its id too (``admission``); after a use of an invitation or a release the WAL
is emptied, so it never holds the order of more than one (docs/explanation/privacy.md).
"""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path

from ..core.design import release_every
from . import admission, schema
from .base import ID_ATTEMPTS, Store, closed_message, lock_timeout_ms
from .errors import StoreError, StoreUnavailable, SurveyClosed, SurveyNotFound, unavailable
from .ids import new_ids, today
from .batches import row_from_answer
from .group_commit import group_for
from .schema import insert_one_sql, migrations
from .sqlite_utils_import import sqlite_utils  # without pandas

LOCK_FIRST_PAUSE = 20e-6
LOCK_MAX_PAUSE = 2e-3
# WAL with synchronous=NORMAL: a commit is in the WAL (the operating system's hands) before
# the response is acknowledged, so a killed server loses nothing (tests/test_durability.py);
# FULL also survives a power cut, at one fsync per commit (bench/README.md).
SYNCHRONOUS_LEVELS = ("NORMAL", "FULL")
SYNCHRONOUS_ENV = "LDP_SURVEY_SYNCHRONOUS"
# Page cache per connection (KiB): random-key inserts touch pages all over a large table.
CACHE_KIB = 65536
# Page cache while an export reads every report once, in key order (``iter_response_lines``): a
# bigger one would only fill with pages read once.
EXPORT_CACHE_KIB = 2048
# How long a use of an invitation or a release waits to empty the WAL (``_forget_order``).
FORGET_WAIT = 2.0


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
    except OSError as exc:  # its directory does not exist, or may not be written
        raise StoreError(f"cannot create the database {path}: {exc.strerror or exc}") from exc


def synchronous_level(level: str | None = None) -> str:
    """Return the SQLite synchronous level: ``level``, else $LDP_SURVEY_SYNCHRONOUS, else NORMAL."""
    chosen = (level or os.environ.get(SYNCHRONOUS_ENV) or "NORMAL").strip().upper()
    if chosen not in SYNCHRONOUS_LEVELS:
        raise StoreError(f"{SYNCHRONOUS_ENV} must be one of {', '.join(SYNCHRONOUS_LEVELS)}, got {chosen!r}")
    return chosen


class SqliteStore(Store, backend="sqlite"):
    """Open the database at ``path``: one connection, its PRAGMAs, and (unless ``migrate=False``) migrations.

    Open with ``migrate=True`` once per process at start-up; connections opened later for
    worker threads pass ``migrate=False`` and only set their PRAGMAs.
    """

    # The functions that lay out and write a survey's tables (PostgreSQL's store has its own).
    _schema = schema
    # The SQL expression of a survey's released responses in list_surveys (``s`` is the surveys row).
    _responses_sql = "s.responses"
    _held_sql = "s.pending"

    def __init__(self, path: str | Path, *, migrate: bool = True, synchronous: str | None = None):
        synchronous = synchronous_level(synchronous)
        self.lock_timeout_ms = lock_timeout_ms()
        self.path = str(path)
        self._group = group_for(self.path)
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
        longer than a write holds the lock; this waits at most ``lock_timeout_ms`` in all (``_execute``).
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

    # Responses

    def iter_response_lines(self, slug: str, cells, *, sandbox: bool = False, page: int | None = None):
        """Yield the responses as CSV lines (``Store.iter_response_lines``) with a small page cache while they are read."""
        yield from self._with_export_cache(super().iter_response_lines(slug, cells, sandbox=sandbox, page=page))

    def iter_response_chunks(self, slug: str, cells, *, sandbox: bool = False, page: int | None = None):
        """Yield the responses as CSV text (``Store.iter_response_chunks``) with a small page cache while they are read."""
        yield from self._with_export_cache(super().iter_response_chunks(slug, cells, sandbox=sandbox, page=page))

    def _with_export_cache(self, pages):
        """Yield from ``pages`` with the page cache at EXPORT_CACHE_KIB, restored afterwards."""
        self.conn.execute(f"PRAGMA cache_size = -{EXPORT_CACHE_KIB}")
        try:
            yield from pages
        finally:
            try:
                self.conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            except sqlite3.ProgrammingError:  # closed before the export was read to its end
                pass

    def add_response(self, slug: str, design_hash: str, answers: dict, *, day: str | None = None) -> str:
        """Store one validated response and return its random id.

        One INSERT statement, atomic on its own: the tally trigger counts it, and it stores
        nothing unless ``design_hash`` is still the survey's design. The hot path of the server:
        committed together with the statements other threads of the process run at the same
        moment (``group_commit``), and returned once that COMMIT is done.
        """
        design = self._design_with_hash(slug, design_hash)
        # The row is made before the write lock is taken; only the statement runs under it.
        row = row_from_answer(design, new_ids(1)[0], day or today(), answers)
        return self._group.run(self, lambda store: store._insert_one(slug, design_hash, design, answers, day, row))

    def _insert_one(self, slug: str, design_hash: str, design: dict, answers: dict, day: str | None, row: tuple):
        """Run add_response's INSERT of ``row`` in the open transaction; return (its id, whether it completed a
        release). A collision of its random id draws another."""
        for attempt in range(ID_ATTEMPTS):
            if attempt:
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
            return row[0], self._released(slug, design)
        raise AssertionError("unreachable")

    def _submit_one(self, slug: str, design_hash: str, design: dict, answers: dict, claim: tuple, day: str | None,
                    row: tuple):
        """Run the browser's submission statement for ``row`` in the open transaction; return (stored, whether it
        completed a release): False for a repeat of a stored submission id. A collision of its random id draws another."""
        for attempt in range(ID_ATTEMPTS):
            if attempt:
                row = row_from_answer(design, new_ids(1)[0], day or today(), answers)
            try:
                stored = admission.submit(self.conn, self._execute, slug, design, row, *claim)
            except sqlite3.IntegrityError:
                if attempt == ID_ATTEMPTS - 1:
                    raise
                continue
            if stored is None:
                self._refuse_insert(self.conn, slug, design_hash)
            return stored, bool(stored) and self._released(slug, design)
        raise AssertionError("unreachable")

    def _released(self, slug: str, design: dict) -> bool:
        """Return whether the response just inserted completed a release (its survey then holds none back)."""
        return release_every(design) > 1 and not self._execute(
            "SELECT pending FROM surveys WHERE slug = ?", [slug]).fetchone()[0]

    def after_group_commit(self):
        """After a group's COMMIT that completed a release: empty the WAL (``_forget_order``)."""
        self._forget_order()

    def transaction_lost(self) -> StoreUnavailable:
        """Return the error of a group whose transaction SQLite rolled back after a fault: nothing was stored."""
        return StoreUnavailable("the database rolled the transaction back after a fault; nothing was stored",
                                cause="transaction rolled back")

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
        if claim is not None and invite is None:
            # The browser's submission: one statement (admission.submit), grouped as add_response's is.
            row = row_from_answer(design, new_ids(1)[0], day or today(), answers)
            return self._group.run(self, lambda store: store._submit_one(slug, design_hash, design, answers, claim,
                                                                         day, row))
        insert = insert_one_sql(design)
        for attempt in range(ID_ATTEMPTS):
            row = row_from_answer(design, new_ids(1)[0], day or today(), answers)
            try:
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
            raise SurveyClosed(closed_message(slug, status[0]))
        raise StoreError(f"design {design_hash!r} is not the current design of {slug!r}")

    @staticmethod
    def _id_collision() -> type[Exception]:
        """Return the error an INSERT raises when two random ids collide (the transaction is rolled back)."""
        return sqlite3.IntegrityError

    def release_held(self, slug: str) -> int:
        """Release a survey's held responses now, fewer than its step; return how many (0 when none were held).

        Their respondents are then hidden among fewer than the step's B reports: the size of
        the smallest such release is kept (``release_state``) so that the pages can say so.
        """
        with self._write() as conn:
            # Read in the write: a revision that moved the held responses to a kept version, or an archive, is seen.
            design = self._design_in_write(conn, slug, "release held responses")
            if release_every(design) == 1:
                return 0
            moved = self._schema.release_pending(conn, slug, design, today())
            if moved:
                conn.execute("UPDATE surveys SET smallest_release = CASE WHEN smallest_release IS NULL OR "
                             "smallest_release > ? THEN ? ELSE smallest_release END WHERE slug = ?",
                             [moved, moved, slug])
        self._forget_order()
        return moved

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

    # Readiness

    def ready(self) -> None:
        """Prove the store can take a write now: count one check in the one-row ``readiness`` table, committed.

        Raises StoreUnavailable (with its ``cause``) when it cannot: the disk is full, the
        database is read-only or locked longer than the lock timeout, or unreachable.
        """
        with self._write() as conn:
            conn.execute("INSERT INTO readiness (id, checks) VALUES (1, 1) "
                         "ON CONFLICT (id) DO UPDATE SET checks = readiness.checks + 1")
