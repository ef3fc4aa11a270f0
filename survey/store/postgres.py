"""The store on PostgreSQL (psycopg 3, a connection pool per process): the same interface and guarantees as SQLite's.

``Store("postgresql://user@host/dbname")`` opens it. Every method of ``Store`` runs here with
the same SQL (``?`` placeholders become psycopg's); what differs is how a survey's counts are
kept (sharded, ``pg_schema``) and how a response is written:

* A write transaction takes a connection from the pool (``_write``); a read outside one
  borrows a connection for that statement only, so a server restart costs the requests in
  flight and no more (a connection the server closed is replaced when its first statement fails).
* A submission holds its survey's advisory lock shared while it checks the status and design,
  and a change of status holds it alone: submissions do not wait for each other (nor write
  to the survey's row, which would make it a hot row), but closing the survey waits for
  those already checked, so nothing is stored after a close returns (as SQLite's single
  guarded INSERT).
* Counts go to one random shard of each count (``pg_schema``), in the same transaction.

Rows of a PostgreSQL table sit in the order they were written, and every row carries the
id of the transaction that wrote it (``xmin``): a database administrator can order reports
by arrival within their release (docs/explanation/privacy.md). The product never reads
either; every read orders by the random id.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Sequence

from ..core.design import release_every
from . import admission, lines, pg_schema
from .base import ID_ATTEMPTS, Store, lock_timeout_ms, survey_lock
from .errors import StoreError, StoreUnavailable, SurveyNotFound, unavailable
from .faults import UNREACHABLE
from .ids import new_ids, today
from .location import display_location
from ..core import codec
from .batches import row_from_answer
from .schema import REPORTS, table_name

POOL_SIZE_ENV = "LDP_SURVEY_PG_POOL"
DEFAULT_POOL_SIZE = 10
PAGE_ROWS = 10_000
# Seconds a request waits at least for a pooled connection (a new one takes a few milliseconds).
MIN_POOL_WAIT = 2.0


@lru_cache(maxsize=512)
def _pg_sql(sql: str) -> str:
    """Return SQL written with ``?`` placeholders in psycopg's ``%s`` style (the store's SQL has no ``?`` in literals)."""
    return sql.replace("%", "%%").replace("?", "%s")


class Connection:
    """A psycopg connection that takes the store's SQL (``?`` placeholders), as sqlite3's does."""

    dialect = "postgresql"

    def __init__(self, raw):
        self.raw = raw

    def execute(self, sql: str, parameters: Sequence = ()):
        if not parameters:
            return self.raw.execute(sql)
        return self.raw.execute(_pg_sql(sql), list(parameters))

    def executemany(self, sql: str, rows):
        cursor = self.raw.cursor()
        cursor.executemany(_pg_sql(sql), [list(row) for row in rows])
        return cursor

    def copy_rows(self, table: str, columns: Sequence[str], rows):
        """Write many rows at once with COPY."""
        cursor = self.raw.cursor()
        with cursor.copy(f'COPY "{table}" ({", ".join(columns)}) FROM STDIN') as copy:
            for row in rows:
                copy.write_row(row)
        return cursor


class Rows:
    """The rows of a statement already run, read like a cursor (its connection is back in the pool)."""

    def __init__(self, cursor):
        self.rowcount = cursor.rowcount
        self._rows = cursor.fetchall() if cursor.description is not None else []
        self._next = 0

    def fetchone(self):
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self):
        rows, self._next = self._rows[self._next:], len(self._rows)
        return rows

    def __iter__(self):
        return iter(self.fetchall())


class Borrowing:
    """Run each statement on a connection borrowed from the pool for that statement only (autocommit)."""

    dialect = "postgresql"

    def __init__(self, url: str):
        self.url = url

    @property
    def pool(self):
        return pool_for(self.url)

    def execute(self, sql: str, parameters: Sequence = ()):
        with faults_as_unavailable(self.url), lent(self.pool, first=sql if _reads(sql) else None,
                                                   parameters=parameters) as (raw, cursor):
            return Rows(cursor if cursor is not None else Connection(raw).execute(sql, parameters))


def _reads(sql: str) -> bool:
    return sql.lstrip()[:6].upper() == "SELECT"


@contextmanager
def lent(pool, *, first: str | None, parameters: Sequence = ()):
    """Lend a pooled connection, running ``first`` on it; yield (connection, the cursor of ``first``).

    Connections are not checked before they are lent (a round trip per request): one the server
    closed since (a restart) fails its first statement, and is then replaced once by a new one.
    Only a statement that changes nothing is sent again: BEGIN, or a read.
    """
    import psycopg

    raw = pool.getconn()
    try:
        try:
            cursor = Connection(raw).execute(first, parameters) if first is not None else None
        except psycopg.OperationalError:
            # Closed by the server (restart, administrator) or lost: never lend it again, and
            # check the idle ones, likely closed with it, before lending another.
            raw.close()
            pool.putconn(raw)
            pool.check()
            raw = pool.getconn()
            cursor = Connection(raw).execute(first, parameters)
        yield raw, cursor
    finally:
        pool.putconn(raw)


@contextmanager
def faults_as_unavailable(url: str):
    """Raise StoreUnavailable for a database fault (PostgreSQL down, restarting, full, read-only; ``faults``).

    When the server cannot be reached, the database's pool is dropped: the next request
    makes a new one that connects at once, instead of waiting out the old pool's growing
    reconnection delays (seconds, then minutes) once the server is back.
    """
    try:
        yield
    except Exception as exc:
        error = unavailable(exc)
        if error is None:
            raise
        if error.cause == UNREACHABLE:
            discard_pool(url)
        raise error from exc


def discard_pool(url: str):
    """Forget this process's pool of a database and close it (requests using it finish on their connection)."""
    with _POOLS_LOCK:
        pool = _POOLS.pop((url, os.getpid()), None)
    if pool is not None:
        threading.Thread(target=pool.close, kwargs={"timeout": 5.0}, daemon=True).start()


_POOLS: dict[tuple[str, int], object] = {}
_POOLS_LOCK = threading.Lock()


def pool_for(url: str):
    """Return this process's connection pool of a database, made on first use (a forked worker makes its own)."""
    key = (url, os.getpid())
    pool = _POOLS.get(key)
    if pool is None:
        import psycopg
        from psycopg_pool import ConnectionPool

        # One direct connection first: while the server is down this fails at once (a 503 in
        # milliseconds) instead of after the pool's wait for its first connection.
        psycopg.connect(url, connect_timeout=max(2, lock_timeout_ms() // 1000)).close()
        with _POOLS_LOCK:
            pool = _POOLS.get(key)
            if pool is None:
                size = int(os.environ.get(POOL_SIZE_ENV) or DEFAULT_POOL_SIZE)
                # A request waits for a connection, and a statement for a lock, as long as SQLite's
                # store waits for its write lock ($LDP_SURVEY_LOCK_TIMEOUT_MS); then it is a 503.
                wait = lock_timeout_ms()
                pool = ConnectionPool(url, min_size=1, max_size=max(1, size), open=True,
                                      timeout=max(wait / 1000, MIN_POOL_WAIT),
                                      kwargs={"autocommit": True, "options": f"-c lock_timeout={wait}",
                                              "connect_timeout": max(2, wait // 1000)},
                                      name="ldp-survey")
                _POOLS[key] = pool
    return pool


def close_pools(url: str | None = None):
    """Close this process's pools (of one database with ``url``): when done with a database, and at exit."""
    with _POOLS_LOCK:
        keys = [key for key in _POOLS if key[1] == os.getpid() and url in (None, key[0])]
        pools = [_POOLS.pop(key) for key in keys]
    for pool in pools:
        pool.close()


class PostgresStore(Store, backend="postgresql"):
    """The store in a PostgreSQL database: ``Store(url)`` with a ``postgresql://`` URL returns one."""

    _schema = pg_schema
    _responses_sql = pg_schema.RESPONSES_SQL
    _held_sql = pg_schema.HELD_SQL
    LINE_CONCAT = lines.POSTGRES_CONCAT

    def __init__(self, url: str, *, migrate: bool = True, synchronous: str | None = None):
        self.path = str(url)
        self._tx: Connection | None = None
        if migrate:
            import psycopg

            try:
                with psycopg.connect(self.path, autocommit=True, connect_timeout=10) as raw:
                    pg_schema.migrate(Connection(raw))
            except psycopg.ProgrammingError as exc:  # a URL psycopg cannot parse
                raise StoreError(f"cannot open the PostgreSQL database {display_location(self.path)}: "
                                 f"{' '.join(str(exc).split())}") from exc
            except psycopg.OperationalError as exc:
                cause = unavailable(exc)
                # One line: libpq's message continues on a tab-indented second line.
                message = (f"cannot open the PostgreSQL database {display_location(self.path)}: "
                           f"{' '.join(str(exc).split())}")
                if cause is not None:
                    raise StoreUnavailable(message, cause=cause.cause) from exc
                raise StoreError(message) from exc

    def close(self):
        """Nothing to close: the connections belong to the process's pool."""

    @property
    def conn(self):
        """The connection of the current write transaction, else one that borrows a connection per statement."""
        return self._tx if self._tx is not None else Borrowing(self.path)

    def _execute(self, sql: str, parameters=()):
        return self.conn.execute(sql, parameters)

    @contextmanager
    def _transaction(self, begin: str):
        if self._tx is not None:
            yield self._tx
            return
        with faults_as_unavailable(self.path), lent(pool_for(self.path), first=begin) as (raw, _):
            self._tx = Connection(raw)
            try:
                yield self._tx
            except BaseException:
                self._tx = None
                if not raw.closed and not raw.broken:
                    raw.execute("ROLLBACK")
                raise
            self._tx = None
            raw.execute("COMMIT")

    def _serialize(self, conn, key: str):
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", [key])

    def _hold_open(self, conn, slug: str):
        # Shared: inserts do not wait for each other, but close waits for those that checked.
        conn.execute("SELECT pg_advisory_xact_lock_shared(hashtextextended(?, 0))", [survey_lock(slug)])

    @contextmanager
    def _snapshot(self):
        """Run the block's reads in one snapshot (REPEATABLE READ), as SQLite's read transaction does."""
        with self._transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"):
            yield

    @contextmanager
    def _write(self):
        """Run the block in one transaction on one pooled connection (READ COMMITTED)."""
        with self._transaction("BEGIN") as conn:
            yield conn

    # Counts: sums of shards

    def _count(self, slug: str, question: int) -> int:
        return pg_schema.count_of(self.conn, slug, question)

    def _received(self, slug: str) -> int:
        return self._count(slug, pg_schema.COUNT_QUESTION) + self._count(slug, pg_schema.HELD_QUESTION)

    def response_count(self, slug: str) -> int:
        """Return how many responses a survey has released (the sum of its shards: no scan)."""
        if not self.survey_exists(slug):
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        return self._count(slug, pg_schema.COUNT_QUESTION)

    def release_state(self, slug: str) -> dict:
        design = self.get_design(slug)
        with self._snapshot():
            smallest = self._execute("SELECT smallest_release FROM surveys WHERE slug = ?", [slug]).fetchone()[0]
            return {"every": release_every(design), "released": self._count(slug, pg_schema.COUNT_QUESTION),
                    "held": self._count(slug, pg_schema.HELD_QUESTION), "smallest_release": smallest}

    def question_counts(self, slug: str, *, sandbox: bool = False):
        if sandbox:
            return super().question_counts(slug, sandbox=True)
        design = self.get_design(slug)
        reports = [0] * len(design["questions"])
        ones = [[0] * codec.tally_count(question) for question in design["questions"]]
        for index, option, count in self._execute(
                "SELECT question, option, CAST(sum(count) AS BIGINT) FROM tallies WHERE survey = ? "
                "AND question >= 0 GROUP BY question, option", [slug]):
            if option == REPORTS:
                reports[index] = count
            else:
                ones[index][option] = count
        return {question["id"]: (reports[index], ones[index]) for index, question in enumerate(design["questions"])}

    def responses_per_day(self, slug: str) -> list[tuple[str, int]]:
        return [tuple(row) for row in self._execute(
            "SELECT day, CAST(sum(responses) AS BIGINT) FROM daily_responses WHERE survey = ? GROUP BY day "
            "ORDER BY day", [slug]).fetchall()]

    # Writing responses


    def add_response(self, slug: str, design_hash: str, answers: dict, *, day: str | None = None) -> str:
        design = self._design_with_hash(slug, design_hash)
        return self._submit_one(slug, design, answers, claim=None, invite=None, day=day)

    def add_submission(self, slug: str, design_hash: str, answers: dict, *, submission: str | None = None,
                       invite: str | None = None, day: str | None = None) -> bool:
        design = self._design_with_hash(slug, design_hash)
        claim = None
        if submission is not None:
            claim = admission.submission_hash(slug, submission), admission.answers_check(submission, answers)
        return self._submit_one(slug, design, answers, claim=claim, invite=invite, day=day) is not None

    def _submit_one(self, slug: str, design: dict, answers: dict, *, claim, invite: str | None,
                    day: str | None) -> str | None:
        """Store one response in one call of its design's function (``pg_schema.create_submit_function``).

        Returns its id, or None for a repeat of a stored submission id with the same answers
        (even once the survey is closed, as on SQLite). Releases held responses when due.
        """
        invite_key = None if invite is None else admission.invite_hash(invite)
        for attempt in range(ID_ATTEMPTS):
            row = row_from_answer(design, new_ids(1)[0], day or today(), answers)
            try:
                outcome = self._call_submit(slug, design, pg_schema.submit_parameters(design, row, claim, invite_key))
            except pg_schema.Refused as refused:
                # Nothing was stored; say why as SQLite's store does.
                self._check_current(self.conn, slug, design["hash"], must_be_open=True)
                if refused.reason == "invitation":
                    admission.check_invitation(self.conn, slug, invite)
                continue  # what refused it changed back since: send it again
            except self._id_collision():
                # Two random 64-bit ids collided: draw a new one (nothing was stored).
                if attempt == ID_ATTEMPTS - 1:
                    raise
                continue
            if outcome == "repeat":
                # The id is stored: a repeat with the same answers answers as one.
                admission.stored_with_same_answers(self._execute, *claim)
                return None
            if outcome == "release":
                with self._write() as conn:
                    owner = self._holder_of(conn, slug, design)
                    if owner is not None:
                        pg_schema.release_due(conn, owner, design, row[1])
                self._forget_order(None if owner is None else pg_schema.pending_table_name(design))
            elif invite is not None:
                self._forget_order()
            return row[0]
        raise StoreError("the response could not be stored; send it again")

    def _holder_of(self, conn, slug: str, design: dict) -> str | None:
        """Return the survey that holds a design's responses now, in ``conn``'s write: ``slug``, or the kept version
        a revision committed since the response moved them to (None when the survey was deleted)."""
        self._hold_open(conn, slug)  # a revision in progress is waited for
        row = conn.execute("SELECT slug FROM surveys WHERE design_hash = ? AND (slug = ? OR family = ?) "
                           "ORDER BY version DESC", [design["hash"], slug, slug]).fetchone()
        return None if row is None else row[0]

    def _call_submit(self, slug: str, design: dict, parameters: list) -> str:
        """Call the design's submission function on its own (one transaction); make the function if it is missing."""
        import psycopg

        for attempt in range(2):
            try:
                with faults_as_unavailable(self.path), lent(pool_for(self.path), first=None) as (raw, _):
                    return Connection(raw).execute(pg_schema.submit_sql(design), parameters).fetchone()[0]
            except psycopg.errors.UndefinedFunction:
                # A database made before submissions were one call, or the design was replaced.
                if attempt:
                    raise
                with self._write() as conn:
                    self._check_current(conn, slug, design["hash"], must_be_open=True)
                    pg_schema.create_submit_function(conn, slug, design)
            except psycopg.errors.RaiseException as exc:
                raise pg_schema.Refused(exc.diag.message_primary or "closed") from None
        raise AssertionError("unreachable")

    @staticmethod
    def _id_collision() -> type[Exception]:
        import psycopg

        return psycopg.errors.UniqueViolation

    def release_held(self, slug: str) -> int:
        with self._write() as conn:
            # Read in the write: a revision that moved the held responses to a kept version, or an archive, is seen.
            design = self._design_in_write(conn, slug, "release held responses")
            if release_every(design) == 1:
                return 0
            moved = pg_schema.release_pending(conn, slug, design, today())
            if moved:
                conn.execute("UPDATE surveys SET smallest_release = CASE WHEN smallest_release IS NULL OR "
                             "smallest_release > ? THEN ? ELSE smallest_release END WHERE slug = ?",
                             [moved, moved, slug])
        self._forget_order(pg_schema.pending_table_name(design))
        return moved

    def _settle_held(self, conn, slug: str) -> int:
        """Release the whole steps of held responses that inserts racing each other left held; return how many.

        An insert's release is skipped while another runs (``pg_schema.release_due``), and inserts at the
        same moment each count the held responses without the other's: the next insert releases what they
        left. A survey that stops taking responses (close, archive, a new version) has no next insert, so
        this runs in that write, which holds the survey alone: no whole step stays held, as on SQLite.
        """
        return pg_schema.release_whole_steps(conn, slug, self.get_design(slug), today())

    def _forget_order(self, held: str | None = None) -> bool:
        """Vacuum the unused invitations (and the held responses' table): their deleted rows' old versions go.

        A deleted row stays in its page, with the number of the transaction that deleted it,
        until a vacuum removes it; a superuser can read it there (pageinspect). Best effort:
        a vacuum already running is not waited for (SKIP_LOCKED), and a version some open
        transaction may still see is kept for autovacuum (docs/explanation/privacy.md).
        """
        import psycopg

        tables = "unused_invitations" + ("" if held is None else f', "{held}"')
        try:
            self._execute(f"VACUUM (SKIP_LOCKED) {tables}")
        except StoreUnavailable:
            return False
        except psycopg.errors.UndefinedTable:
            # The survey was deleted meanwhile, its held table with it: vacuum what is left.
            return held is not None and self._forget_order()
        return True

    # Reading responses

    def iter_responses(self, slug: str, *, sandbox: bool = False, after: str | None = None,
                       limit: int | None = None) -> Iterator[dict]:
        """Yield responses as SQLite's store does, read a page of PAGE_ROWS at a time (by random id)."""
        remaining = limit
        while remaining is None or remaining > 0:
            page = PAGE_ROWS if remaining is None else min(PAGE_ROWS, remaining)
            rows = list(super().iter_responses(slug, sandbox=sandbox, after=after, limit=page))
            yield from rows
            if len(rows) < page:
                return
            after = rows[-1]["id"]
            if remaining is not None:
                remaining -= len(rows)

    # Operations

    def ready(self) -> None:
        """Prove the store can take a submission now: lock the tables every submission writes, count one check.

        Raises StoreUnavailable when the server is down or restarting, read-only (a standby),
        out of disk, or those tables are locked longer than the lock timeout.
        """
        with self._write() as conn:
            conn.execute("LOCK TABLE surveys, tallies, daily_responses IN ROW EXCLUSIVE MODE")
            conn.execute("INSERT INTO readiness (id, checks) VALUES (1, 1) "
                         "ON CONFLICT (id) DO UPDATE SET checks = readiness.checks + 1")

    def integrity_check(self) -> str:
        """Return "ok" when every survey's counts equal its stored rows, else one line per difference."""
        problems = []
        for survey in self.list_surveys():
            slug = survey["slug"]
            design = self.get_design(slug)
            with self._snapshot():
                stored = self._execute(f'SELECT count(*) FROM "{table_name(design)}"').fetchone()[0]
                released = self._count(slug, pg_schema.COUNT_QUESTION)
                held = self._count(slug, pg_schema.HELD_QUESTION)
                rows_held = 0
                if release_every(design) > 1:
                    rows_held = self._execute(
                        f'SELECT count(*) FROM "{pg_schema.pending_table_name(design)}"').fetchone()[0]
                if stored != released or rows_held != held:
                    problems.append(f"{slug}: {stored} stored and {rows_held} held rows, counts say {released} "
                                    f"and {held}")
                elif self.recount(slug) != self.question_counts(slug):
                    problems.append(f"{slug}: the tallies differ from a recount of the stored reports")
        return "\n".join(problems) or "ok"

    def backup(self, destination: str | Path, *, progress=None):
        """Copy the database into a new SQLite file (``copying``), which ``migrate --to`` can load back."""
        from .copying import copy_database

        copy_database(self, destination, progress=progress)
