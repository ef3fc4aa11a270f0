"""The database schema, its migrations and the SQL that writes reports (used by Store and migrations).

Reports live in one table per survey, ``reports_<hex>``, a ``WITHOUT ROWID`` table keyed
by a random id, so rows sit in random-key order whatever order they arrived in. Each
question has one INTEGER column per word of its report (``survey.core.codec``): the column
``q<i>_<w>`` holds word w of question i (design order); NULL when the respondent was
not asked it. ``tallies`` keeps, per survey and question, the number of reports (in the
row whose option is REPORTS, -1) and the 1s of each indicator (one row per option; for a
level report the sum of its levels' integer scores in row 0 and of their squares in row 1), and
``daily_responses`` the responses of each day, updated in the same transaction as every
insert, so aggregates and the dashboard never scan responses.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from typing import Sequence

from ..core import codec
from ..core.design import release_every
from ..core.mechanisms import mechanism_for
from . import patterns
from .batches import Batch, batch_from_answers, batch_from_rows
from .tables import survey_tables  # noqa: F401  (the rows a deletion removes; Store asks its schema)
from .sqlite_utils_import import sqlite_utils  # without pandas


class _Migrations(sqlite_utils.Migrations):
    """sqlite_utils' migrations that also keep ``ordered``: (name, function) in order, for PostgreSQL's store."""

    def __init__(self, name: str):
        super().__init__(name)
        self.ordered: list[tuple[str, object]] = []

    def __call__(self, *, name: str | None = None, transactional: bool = True):
        register = super().__call__(name=name, transactional=transactional)

        def inner(function):
            self.ordered.append((name or function.__name__, function))
            return register(function)

        return inner


migrations = _Migrations("ldp-survey")
MIGRATION_BATCH = 10_000
# The option of the tallies row that counts a question's reports (the others count 1s).
REPORTS = -1


@migrations()
def m001_initial(db):
    """Create the surveys, responses, users and settings tables."""
    db["surveys"].create({"slug": str, "title": str, "definition": str, "design": str,
                          "design_hash": str, "created_day": str}, pk="slug")
    db["responses"].create({"id": str, "survey": str, "design_hash": str, "received_day": str,
                            "answers": str}, pk="id", foreign_keys=[("survey", "surveys", "slug")])
    db["responses"].create_index(["survey"])
    db["users"].create({"id": int, "email": str, "password_hash": str, "created_day": str}, pk="id")
    db["users"].create_index(["email"], unique=True)
    db["settings"].create({"key": str, "value": str}, pk="key")


@migrations()
def m002_counting(db):
    """Move every response from JSON text into its survey's integer report table, with tallies."""
    conn = db.conn
    conn.execute("ALTER TABLE surveys ADD COLUMN reports_table TEXT")
    conn.execute("ALTER TABLE surveys ADD COLUMN responses INTEGER NOT NULL DEFAULT 0")
    conn.execute("""CREATE TABLE tallies (
                        survey TEXT NOT NULL REFERENCES surveys(slug), question INTEGER NOT NULL,
                        option INTEGER NOT NULL, count INTEGER NOT NULL,
                        PRIMARY KEY (survey, question, option)) WITHOUT ROWID""")
    conn.execute("""CREATE TABLE daily_responses (
                        survey TEXT NOT NULL REFERENCES surveys(slug), day TEXT NOT NULL,
                        responses INTEGER NOT NULL, PRIMARY KEY (survey, day)) WITHOUT ROWID""")
    for slug, design_text, current_hash in conn.execute(
            "SELECT slug, design, design_hash FROM surveys").fetchall():
        design = json.loads(design_text)
        stale = conn.execute("SELECT count(*) FROM responses WHERE survey = ? AND design_hash != ?",
                             [slug, current_hash]).fetchone()[0]
        if stale:
            raise RuntimeError(f"survey {slug!r} has {stale} responses made with another design; "
                               "refusing to migrate them")
        create_reports(conn, slug, design)
        cursor = conn.execute("SELECT id, received_day, answers FROM responses WHERE survey = ? ORDER BY id",
                              [slug])
        while batch := cursor.fetchmany(MIGRATION_BATCH):
            insert_batch(conn, slug, design, batch_from_answers(
                design, [row[0] for row in batch], [row[1] for row in batch],
                [json.loads(text) for _, _, text in batch]))
    conn.execute("DROP TABLE responses")


@migrations()
def m003_ownership(db):
    """Give surveys an owner and collaborators, and accounts a session epoch.

    Surveys from before have no owner: they are visible to no one until ``share`` gives
    them one. The session-signing key moves out of the database (``survey.keyfile``).
    """
    conn = db.conn
    conn.execute("ALTER TABLE surveys ADD COLUMN owner_id INTEGER REFERENCES users(id) ON DELETE SET NULL")
    conn.execute("ALTER TABLE users ADD COLUMN session_epoch INTEGER NOT NULL DEFAULT 0")
    conn.execute("""CREATE TABLE collaborators (
                        survey TEXT NOT NULL REFERENCES surveys(slug) ON DELETE CASCADE,
                        user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                        PRIMARY KEY (survey, user_id)) WITHOUT ROWID""")
    conn.execute("DELETE FROM settings WHERE key = 'secret_key'")


# A survey's lifecycle: a draft can be edited and is invisible to respondents; an open survey
# takes responses; a closed one takes none (until reopened).
STATUSES = ("draft", "open", "closed")


@migrations()
def m004_lifecycle(db):
    """Give surveys a status, draft -> open -> closed; every survey from before stays open."""
    db.conn.execute("ALTER TABLE surveys ADD COLUMN status TEXT NOT NULL DEFAULT 'open' "
                    "CHECK (status IN ('draft', 'open', 'closed'))")


@migrations()
def m005_api_tokens(db):
    """Add researchers' API tokens: only a SHA-256 hash of each, its owner, label and creation day."""
    db.conn.execute("""CREATE TABLE api_tokens (
                        id INTEGER PRIMARY KEY,
                        user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                        token_hash TEXT NOT NULL UNIQUE, label TEXT NOT NULL, created_day TEXT NOT NULL,
                        UNIQUE (user_id, label))""")


def reports_table(conn: sqlite3.Connection, slug: str) -> str | None:
    """Return the name of a survey's report table as recorded, or None if the survey does not exist."""
    row = conn.execute("SELECT reports_table FROM surveys WHERE slug = ?", [slug]).fetchone()
    return None if row is None else row[0]


def table_name(design: dict) -> str:
    """Return the name of the report table of a design: it follows from the design's hash (which covers the slug)."""
    return f"reports_{design['hash'][:16]}"


_INSERT_SQL: dict[str, str] = {}


def insert_sql(design: dict, table: str | None = None) -> str:
    """Return the INSERT statement of a design's report table, or of ``table`` with the same columns (built once)."""
    table = table or table_name(design)
    sql = _INSERT_SQL.get(table)
    if sql is None:
        names = column_names(design)
        sql = (f'INSERT INTO "{table}" (id, received_day{"".join(", " + c for c in names)}) '
               f'VALUES ({", ".join("?" * (2 + len(names)))})')
        _INSERT_SQL[table] = sql
    return sql


def report_columns(design: dict) -> list[list[str]]:
    """Return, per question in design order, the names of its word columns."""
    return [[f"q{index}_{word}" for word in range(codec.word_count(question))]
            for index, question in enumerate(design["questions"])]


def column_names(design: dict) -> list[str]:
    """Return every word column of a design's report table, in design order."""
    return [name for names in report_columns(design) for name in names]


def create_reports(conn: sqlite3.Connection, slug: str, design: dict):
    """Give a survey a new, empty report table and zeroed tallies, dropping any old ones."""
    drop_reports(conn, slug)
    table = table_name(design)
    columns = "".join(f", {name} INTEGER" for name in column_names(design))
    conn.execute(f'CREATE TABLE "{table}" (id TEXT PRIMARY KEY NOT NULL, received_day TEXT NOT NULL'
                 f"{columns}) WITHOUT ROWID")
    patterns.create_released(conn, design)
    conn.executemany("INSERT INTO tallies (survey, question, option, count) VALUES (?, ?, ?, 0)",
                     [(slug, index, option) for index, question in enumerate(design["questions"])
                      for option in range(REPORTS, codec.tally_count(question))])
    conn.execute("UPDATE surveys SET reports_table = ?, responses = 0 WHERE slug = ?", [table, slug])
    conn.execute(tally_trigger_sql(slug, design))
    if release_every(design) > 1:
        create_pending(conn, slug, design)


def drop_reports(conn: sqlite3.Connection, slug: str):
    """Drop a survey's report and held tables and delete its counts (before new ones are made)."""
    old = reports_table(conn, slug)
    if old:
        conn.execute(f'DROP TABLE IF EXISTS "{old}"')
        conn.execute(f'DROP TABLE IF EXISTS "{_pending_of(old)}"')
        patterns.drop_released(conn, old)
    conn.execute("DELETE FROM tallies WHERE survey = ?", [slug])
    conn.execute("DELETE FROM daily_responses WHERE survey = ?", [slug])


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _indicator_sql(question: dict, names: list[str]) -> str:
    """Return the SQL condition that option ``option`` of a question is 1 in the new row ``NEW``."""
    if codec.is_bit_vector(question):
        if len(names) == 1:
            word = f"NEW.{names[0]}"
        else:
            word = ("CASE option / " + str(codec.WORD_BITS)
                    + "".join(f" WHEN {index} THEN NEW.{name}" for index, name in enumerate(names)) + " END")
        return f"(option >= 0 AND (({word}) >> (option % {codec.WORD_BITS})) & 1)"
    if codec.is_index(question):
        return f"option = NEW.{names[0]}"
    return f"(option = 0 AND NEW.{names[0]} = 1)"


def _score_sql(question: dict, column: str) -> str:
    """Return the SQL expression of a level report's integer score from its column, piece by piece (``score_pieces``)."""
    pieces = mechanism_for(question).score_pieces()
    terms = [column if (slope, offset) == (1, 0) else
             str(offset) if slope == 0 else f"({slope} * {column} + {offset})"
             for _, _, slope, offset in pieces]
    if len(pieces) == 1:
        return terms[0]
    cases = "".join(f" WHEN {column} <= {last} THEN {term}" for (_, last, _, _), term in zip(pieces[:-1], terms))
    return f"(CASE{cases} ELSE {terms[-1]} END)"


def trigger_name(design: dict) -> str:
    """Return the name of the trigger that keeps a design's tallies current."""
    return f"{table_name(design)}_tally"


def tally_trigger_sql(slug: str, design: dict) -> str:
    """Return the CREATE TRIGGER that counts every row inserted into the report table in the tallies.

    One INSERT is then one statement that SQLite runs whole, tallies included, so a
    single response holds the write lock only for that statement.
    """
    survey = _sql_text(slug)
    updates = [f"UPDATE surveys SET responses = responses + 1 WHERE slug = {survey};",
               f"INSERT INTO daily_responses (survey, day, responses) VALUES ({survey}, NEW.received_day, 1) "
               "ON CONFLICT (survey, day) DO UPDATE SET responses = responses + 1;"]
    for index, (question, names) in enumerate(zip(design["questions"], report_columns(design))):
        if codec.is_level(question):
            # A level report adds 1 to the reports, its integer score s to tally 0 and s² to tally 1.
            level = _score_sql(question, f"NEW.{names[0]}")
            updates.append(f"UPDATE tallies SET count = count + CASE option WHEN {REPORTS} THEN 1 "
                           f"WHEN 0 THEN {level} ELSE {level} * {level} END WHERE survey = {survey} "
                           f"AND question = {index} AND NEW.{names[0]} IS NOT NULL;")
            continue
        updates.append(f"UPDATE tallies SET count = count + 1 WHERE survey = {survey} AND question = {index} "
                       f"AND NEW.{names[0]} IS NOT NULL AND (option = {REPORTS} OR {_indicator_sql(question, names)});")
    if patterns.trigger_statement(design):
        updates.append(patterns.trigger_statement(design))
    body = "\n  ".join(updates)
    return (f'CREATE TRIGGER "{trigger_name(design)}" AFTER INSERT ON "{table_name(design)}" FOR EACH ROW\n'
            f"BEGIN\n  {body}\nEND")


def insert_batch(conn: sqlite3.Connection, slug: str, design: dict, batch: Batch):
    """Insert a batch's rows, in the caller's transaction: into the reports, or held until they complete a release.

    With a release step B > 1 the held responses and the batch are released together in
    whole multiples of B (those released first are the held ones, then the batch's rows in
    random-id order); the rest is held.
    """
    step = release_every(design)
    if step == 1:
        _insert_reports(conn, slug, design, batch)
        return
    held = conn.execute("SELECT pending FROM surveys WHERE slug = ?", [slug]).fetchone()[0]
    released = (held + len(batch.rows)) // step * step
    rows = sorted(batch.rows)
    if released:
        release_pending(conn, slug, design, max(row[1] for row in rows))
        kept = batch_from_rows(design, rows[released - held:])
        _insert_reports(conn, slug, design, batch.minus(kept, rows[:released - held]))
        rows = kept.rows
    conn.executemany(insert_sql(design, pending_table_name(design)), rows)


def _insert_reports(conn: sqlite3.Connection, slug: str, design: dict, batch: Batch):
    """Insert a batch's rows into the survey's report table and add its tallies, in the caller's transaction.

    For many rows at once: the tally trigger is dropped for the batch and made again
    before the transaction commits (no other connection can see the gap), and the
    tallies are added from the batch's own counts.
    """
    conn.execute(f'DROP TRIGGER IF EXISTS "{trigger_name(design)}"')
    conn.executemany(insert_sql(design), batch.rows)
    patterns.add_rows(conn, design, batch.rows)
    increments = [(count, slug, index, REPORTS) for index, count in enumerate(batch.reports) if count]
    increments.extend((count, slug, index, option) for (index, option), count in batch.ones.items())
    conn.executemany("UPDATE tallies SET count = count + ? WHERE survey = ? AND question = ? AND option = ?",
                     increments)
    conn.execute("UPDATE surveys SET responses = responses + ? WHERE slug = ?", [len(batch.rows), slug])
    days: dict[str, int] = {}
    for row in batch.rows:
        days[row[1]] = days.get(row[1], 0) + 1
    conn.executemany("INSERT INTO daily_responses (survey, day, responses) VALUES (?, ?, ?) "
                     "ON CONFLICT (survey, day) DO UPDATE SET responses = daily_responses.responses + excluded.responses",
                     [(slug, day, count) for day, count in days.items()])
    conn.execute(tally_trigger_sql(slug, design))


_INSERT_ONE_SQL: dict[str, str] = {}


def pending_table_name(design: dict) -> str:
    """Return the name of the table that holds a design's responses until they complete a release."""
    return _pending_of(table_name(design))


def _pending_of(reports: str) -> str:
    return "pending_" + reports.removeprefix("reports_")


def create_pending(conn: sqlite3.Connection, slug: str, design: dict):
    """Give a survey whose design releases results in steps of B > 1 its empty table of held responses and trigger.

    The trigger makes the step happen inside the INSERT that completes it: when the held
    responses reach B, all of them move into the report table (whose own trigger tallies
    them), dated the day of that INSERT, and the held table is emptied. Held rows carry
    no tallies, so nothing a researcher reads counts them.
    """
    table, reports = pending_table_name(design), table_name(design)
    columns = "".join(f", {name} INTEGER" for name in column_names(design))
    conn.execute(f'CREATE TABLE "{table}" (id TEXT PRIMARY KEY NOT NULL, received_day TEXT NOT NULL'
                 f"{columns}) WITHOUT ROWID")
    conn.execute("UPDATE surveys SET pending = 0, smallest_release = NULL WHERE slug = ?", [slug])
    survey, step = _sql_text(slug), release_every(design)
    names = "".join(", " + name for name in column_names(design))
    full = f"(SELECT pending FROM surveys WHERE slug = {survey}) >= {step}"
    conn.execute(f'CREATE TRIGGER "{table}_release" AFTER INSERT ON "{table}" FOR EACH ROW\n'
                 f"BEGIN\n"
                 f"  UPDATE surveys SET pending = pending + 1 WHERE slug = {survey};\n"
                 f'  INSERT INTO "{reports}" (id, received_day{names}) '
                 f'SELECT id, NEW.received_day{names} FROM "{table}" WHERE {full};\n'
                 f'  DELETE FROM "{table}" WHERE {full};\n'
                 f"  UPDATE surveys SET pending = 0 WHERE slug = {survey} AND pending >= {step};\n"
                 f"END")


def release_pending(conn: sqlite3.Connection, slug: str, design: dict, day: str) -> int:
    """Move every held response of a survey into its report table, dated ``day``, in the caller's transaction; return how many."""
    table, reports = pending_table_name(design), table_name(design)
    names = "".join(", " + name for name in column_names(design))
    moved = conn.execute(f'INSERT INTO "{reports}" (id, received_day{names}) '
                         f'SELECT id, ?{names} FROM "{table}"', [day]).rowcount
    conn.execute(f'DELETE FROM "{table}"')
    conn.execute("UPDATE surveys SET pending = 0 WHERE slug = ?", [slug])
    return moved


def insert_one_sql(design: dict) -> str:
    """Return the INSERT of one response that stores nothing unless the design is still the survey's current one
    and the survey is open (a submission racing a close is not stored).

    Parameters: the id, the day, every word column, then the slug and the design hash.
    """
    sql = _INSERT_ONE_SQL.get(design["hash"])
    if sql is None:
        names = column_names(design)
        table = table_name(design) if release_every(design) == 1 else pending_table_name(design)
        sql = (f'INSERT INTO "{table}" (id, received_day{"".join(", " + c for c in names)}) '
               f'SELECT {", ".join("?" * (2 + len(names)))} '
               "WHERE EXISTS (SELECT 1 FROM surveys WHERE slug = ? AND design_hash = ? AND status = 'open')")
        _INSERT_ONE_SQL[design["hash"]] = sql
    return sql


@migrations()
def m006_admission(db):
    """Add single-use invitations and the record of acknowledged submissions, both apart from responses.

    Both tables are keyed by a SHA-256 hash (WITHOUT ROWID), so their rows sit in random
    order whatever order they were made or used in; neither holds a response id or a time
    finer than the day an invitation was made (docs/explanation/privacy.md).
    """
    db.conn.execute("""CREATE TABLE invitations (
                        token_hash TEXT PRIMARY KEY,
                        survey TEXT NOT NULL REFERENCES surveys(slug) ON DELETE CASCADE,
                        used INTEGER NOT NULL DEFAULT 0 CHECK (used IN (0, 1)),
                        created_day TEXT NOT NULL) WITHOUT ROWID""")
    db.conn.execute("CREATE INDEX invitations_survey ON invitations (survey, used)")
    db.conn.execute("""CREATE TABLE submissions (
                        id_hash TEXT PRIMARY KEY,
                        survey TEXT NOT NULL REFERENCES surveys(slug) ON DELETE CASCADE,
                        answers_check TEXT NOT NULL) WITHOUT ROWID""")


@migrations()
def m007_accounts(db):
    """Add shared sign-in failure counts and single-use collaborator join links.

    ``sign_in_failures`` counts wrong passwords per account (a SHA-256 of the lower-cased
    email) and client (a keyed hash of its address, whose key lives only in the server's
    memory; '' for the account-wide count) until ``expires`` (Unix seconds); rows are
    deleted once expired. ``collaborator_invitations`` holds only the SHA-256 of each join
    link's token, the survey, the invited email, who made it and the last day it works.
    """
    db.conn.execute("""CREATE TABLE sign_in_failures (
                        account TEXT NOT NULL, client TEXT NOT NULL, failures INTEGER NOT NULL,
                        expires REAL NOT NULL, PRIMARY KEY (account, client)) WITHOUT ROWID""")
    db.conn.execute("CREATE INDEX sign_in_failures_expires ON sign_in_failures (expires)")
    db.conn.execute("""CREATE TABLE collaborator_invitations (
                        id INTEGER PRIMARY KEY,
                        token_hash TEXT NOT NULL UNIQUE,
                        survey TEXT NOT NULL REFERENCES surveys(slug) ON DELETE CASCADE,
                        email TEXT NOT NULL,
                        invited_by INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                        expires_day TEXT NOT NULL)""")
    db.conn.execute("CREATE INDEX collaborator_invitations_survey ON collaborator_invitations (survey)")


# The sandbox: a survey's test answers (its owner answering in test mode) and simulated
# respondents, kept in a table and tallies of their own so that the reports table, its tallies,
# the response count and every export of them are untouched by construction.
SANDBOX_SOURCES = ("test", "simulated")
# The question of the sandbox_tallies row that counts a source's responses (option REPORTS too).
RESPONSES = -1


@migrations()
def m008_sandbox(db):
    """Give every survey an empty sandbox: a table for its test answers and simulated respondents, and their tallies."""
    db.conn.execute("""CREATE TABLE sandbox_tallies (
                        survey TEXT NOT NULL REFERENCES surveys(slug) ON DELETE CASCADE,
                        source TEXT NOT NULL CHECK (source IN ('test', 'simulated')),
                        question INTEGER NOT NULL, option INTEGER NOT NULL, count INTEGER NOT NULL,
                        PRIMARY KEY (survey, source, question, option)) WITHOUT ROWID""")
    for slug, design_text in db.conn.execute("SELECT slug, design FROM surveys").fetchall():
        create_sandbox(db.conn, slug, json.loads(design_text))


@migrations()
def m009_releases(db):
    """Count each survey's responses held until they complete a release, and the smallest release made early.

    Designs from before have no release step: they release after every response, as before.
    """
    db.conn.execute("ALTER TABLE surveys ADD COLUMN pending INTEGER NOT NULL DEFAULT 0")
    db.conn.execute("ALTER TABLE surveys ADD COLUMN smallest_release INTEGER")


def sandbox_table_name(design_hash: str) -> str:
    """Return the name of the sandbox table of a design, from its hash (as the report table's)."""
    return f"sandbox_{design_hash[:16]}"


def drop_sandbox(conn: sqlite3.Connection, slug: str, design_hash: str):
    """Drop a survey's sandbox table of the design with this hash and its tallies."""
    conn.execute(f'DROP TABLE IF EXISTS "{sandbox_table_name(design_hash)}"')
    patterns.drop_sandbox(conn, design_hash)
    conn.execute("DELETE FROM sandbox_tallies WHERE survey = ?", [slug])


def create_sandbox(conn: sqlite3.Connection, slug: str, design: dict):
    """Give a survey an empty sandbox table for its design (report columns plus the source of each row)."""
    columns = "".join(f", {name} INTEGER" for name in column_names(design))
    conn.execute(f'CREATE TABLE IF NOT EXISTS "{sandbox_table_name(design["hash"])}" '
                 "(id TEXT PRIMARY KEY NOT NULL, received_day TEXT NOT NULL, "
                 f"source TEXT NOT NULL CHECK (source IN ('test', 'simulated')){columns}) WITHOUT ROWID")
    patterns.create_sandbox(conn, design)


def insert_sandbox(conn: sqlite3.Connection, slug: str, design: dict, batch: Batch, source: str):
    """Insert a batch into the survey's sandbox as ``source`` and add it to the sandbox tallies, in the caller's transaction."""
    names = column_names(design)
    conn.executemany(f'INSERT INTO "{sandbox_table_name(design["hash"])}" (id, received_day, source'
                     f'{"".join(", " + c for c in names)}) VALUES ({", ".join("?" * (3 + len(names)))})',
                     [(row[0], row[1], source, *row[2:]) for row in batch.rows])
    patterns.add_rows(conn, design, batch.rows, source=source)
    increments = [(slug, source, RESPONSES, REPORTS, len(batch.rows))]
    increments.extend((slug, source, index, REPORTS, count) for index, count in enumerate(batch.reports) if count)
    increments.extend((slug, source, index, option, count) for (index, option), count in batch.ones.items())
    conn.executemany("INSERT INTO sandbox_tallies (survey, source, question, option, count) VALUES (?, ?, ?, ?, ?) "
                     "ON CONFLICT (survey, source, question, option) DO UPDATE SET count = sandbox_tallies.count + excluded.count",
                     increments)


insert_reports = _insert_reports


def load_held(conn: sqlite3.Connection, slug: str, design: dict, rows: Sequence[tuple]):
    """Add rows to a survey's held responses as they are (a copy of another database's), fewer than its step."""
    conn.executemany(insert_sql(design, pending_table_name(design)), rows)


@migrations()
def m010_flood(db):
    """Add the flood limit's shared submission counts (``flood``): per row a client's keyed hash (its key changes
    every window, never an address), the window's number and the count; deleted two windows after their own."""
    db.conn.execute("""CREATE TABLE flood_counts (
                        client TEXT NOT NULL, window_number BIGINT NOT NULL, count BIGINT NOT NULL,
                        PRIMARY KEY (client, window_number))""")
    db.conn.execute("CREATE INDEX flood_counts_window ON flood_counts (window_number)")


@migrations()
def m011_readiness(db):
    """Create the one-row table that ``Store.ready`` writes to prove the store takes writes (a counter only)."""
    db.conn.execute("CREATE TABLE readiness (id BIGINT PRIMARY KEY NOT NULL CHECK (id = 1), "
                    "checks BIGINT NOT NULL DEFAULT 0)")


@migrations()
def m012_unused_invitations(db):
    """Record an invitation's use by deleting its row of ``unused_invitations``, never by writing (``admission``).

    The invitations are copied into a new table without the used flag, in hash order, so that
    no row keeps the transaction that marked it used; the unused ones get their unused row.
    """
    db.conn.execute("""CREATE TABLE unused_invitations (
                        token_hash TEXT PRIMARY KEY,
                        survey TEXT NOT NULL REFERENCES surveys(slug) ON DELETE CASCADE) WITHOUT ROWID""")
    db.conn.execute("CREATE INDEX unused_invitations_survey ON unused_invitations (survey)")
    db.conn.execute("INSERT INTO unused_invitations (token_hash, survey) SELECT token_hash, survey FROM invitations "
                    "WHERE used = 0 ORDER BY token_hash")
    db.conn.execute("""CREATE TABLE issued_invitations (
                        token_hash TEXT PRIMARY KEY,
                        survey TEXT NOT NULL REFERENCES surveys(slug) ON DELETE CASCADE,
                        created_day TEXT NOT NULL) WITHOUT ROWID""")
    db.conn.execute("INSERT INTO issued_invitations (token_hash, survey, created_day) "
                    "SELECT token_hash, survey, created_day FROM invitations ORDER BY token_hash")
    db.conn.execute("DROP TABLE invitations")
    db.conn.execute("ALTER TABLE issued_invitations RENAME TO invitations")
    db.conn.execute("CREATE INDEX invitations_survey ON invitations (survey)")


@migrations()
def m013_account_keys(db):
    """Give every account a random session key and token key, and bind each API token to its account's token key.

    A session holds the account's id and session key (a new key ends every session); a token
    works only while its account has the token key it was made with. An id is never trusted
    alone: SQLite may give a removed account's id to the next one, never its keys.
    """
    conn = db.conn
    conn.execute("ALTER TABLE users ADD COLUMN session_key TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE users ADD COLUMN token_key TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE api_tokens ADD COLUMN token_key TEXT NOT NULL DEFAULT ''")
    for (user_id,) in conn.execute("SELECT id FROM users").fetchall():
        conn.execute("UPDATE users SET session_key = ?, token_key = ? WHERE id = ?",
                     [secrets.token_hex(32), secrets.token_hex(32), user_id])
    conn.execute("UPDATE api_tokens SET token_key = (SELECT u.token_key FROM users u WHERE u.id = api_tokens.user_id)")


@migrations()
def m014_invitation_addresses(db):
    """Add e-mailed invitations: each address with its link's token, and the log of messages sent (``mailing``).

    Both live apart from the reports and are written only when addresses are added or a message
    is sent, never by a submission; deleting a survey's addresses deletes both (docs/how-to/invitations-and-panels.md).
    """
    db.conn.execute("""CREATE TABLE invitation_addresses (
                        id INTEGER PRIMARY KEY,
                        survey TEXT NOT NULL REFERENCES surveys(slug) ON DELETE CASCADE,
                        email TEXT NOT NULL, invite_token TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE,
                        invited_day TEXT, reminded_day TEXT, UNIQUE (survey, email))""")
    db.conn.execute("""CREATE TABLE mail_log (
                        id INTEGER PRIMARY KEY,
                        survey TEXT NOT NULL REFERENCES surveys(slug) ON DELETE CASCADE,
                        email TEXT NOT NULL,
                        kind TEXT NOT NULL CHECK (kind IN ('invitation', 'reminder')),
                        status TEXT NOT NULL CHECK (status IN ('sent', 'failed')),
                        error TEXT, day TEXT NOT NULL)""")
    db.conn.execute("CREATE INDEX mail_log_survey ON mail_log (survey)")


@migrations()
def m015_joint_patterns(db):
    """Keep report patterns at insert (``patterns``): make and fill their tables, and give each survey the new trigger."""
    conn = db.conn
    for slug, design_text in conn.execute("SELECT slug, design FROM surveys").fetchall():
        design = json.loads(design_text)
        patterns.recreate(conn, design, table_name(design), sandbox_table_name(design["hash"]))
        conn.execute(f'DROP TRIGGER IF EXISTS "{trigger_name(design)}"')
        conn.execute(tally_trigger_sql(slug, design))


@migrations()
def m016_retention(db):
    """Let a survey be archived (``archived`` 1: status closed, hidden) and carry a deletion day (``delete_after``)."""
    db.conn.execute("ALTER TABLE surveys ADD COLUMN archived INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1))")
    db.conn.execute("ALTER TABLE surveys ADD COLUMN delete_after TEXT")


@migrations()
def m017_password_resets(db):
    """Add password reset links: each token's SHA-256 hash, its account and its expiry (deleted once used or replaced)."""
    db.conn.execute("""CREATE TABLE password_resets (
                        token_hash TEXT PRIMARY KEY,
                        user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                        expires_at BIGINT NOT NULL)""")
    db.conn.execute("CREATE INDEX password_resets_user ON password_resets (user_id)")
# Later migrations live with their SQL: m018 in ``interviews``, m019 and m021 in ``versioning``, m020 in ``mailing``.
