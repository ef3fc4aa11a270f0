"""Copy a whole database into a new, empty one on either backend (``migrate --to``, and PostgreSQL's ``backup``).

Accounts, API tokens, settings, surveys, collaborators, invitations (and their e-mail addresses and send
log), join links, the record of
acknowledged submissions, every survey's released and held reports and its sandbox are copied
as they are; the counts are made anew from the copied rows by the target's own write path, so
they are right by construction on the target's layout (PostgreSQL's sharded, SQLite's single
rows). Then every survey is checked: its aggregates CSV, released and held counts, responses per
day and sandbox counts must be identical on both sides, or CopyMismatch names what differs.

Not copied: sign-in failure counts and flood-limit windows (minutes long and keyed per server),
and the migration records (each backend keeps its own).
"""

from __future__ import annotations

from pathlib import Path

from ..core.aggregate import aggregate_counts, rows_to_csv
from ..core.design import release_every
from . import patterns, schema
from .batches import batch_from_rows
from .base import Store
from .errors import StoreError
from .location import display_location, is_postgres_url

PAGE = 50_000
# Tables copied row for row, in an order that satisfies their foreign keys, with their columns.
PLAIN_TABLES = (
    ("users", ("id", "email", "password_hash", "created_day", "session_epoch", "session_key", "token_key")),
    ("settings", ("key", "value")),
    ("surveys", ("slug", "title", "definition", "design", "design_hash", "created_day", "owner_id", "status",
                 "archived", "delete_after", "family", "version", "wording")),
    ("wordings", ("survey", "revision", "from_day", "definition")),
    ("collaborators", ("survey", "user_id")),
    ("api_tokens", ("id", "user_id", "token_key", "token_hash", "label", "created_day")),
    ("invitations", ("token_hash", "survey", "created_day")),
    ("unused_invitations", ("token_hash", "survey")),
    ("submissions", ("id_hash", "survey", "answers_check")),
    ("collaborator_invitations", ("id", "token_hash", "survey", "email", "invited_by", "expires_day")),
    ("invitation_addresses", ("id", "survey", "email", "invite_token", "nonce", "token_hash", "invited_day",
                              "reminded_day")),
    ("mail_log", ("id", "survey", "email", "kind", "status", "error", "day")),
    ("password_resets", ("token_hash", "user_id", "expires_at")),
    ("sandbox_tallies", ("survey", "source", "question", "option", "count")),
)
# Tables whose identity column PostgreSQL must move past the copied ids.
IDENTITY_TABLES = ("users", "api_tokens", "collaborator_invitations", "invitation_addresses", "mail_log")


class CopyMismatch(StoreError):
    """A survey reads differently after the copy (the target is left as it is, for inspection)."""


def open_target(target: str | Path) -> Store:
    """Open the target database, refusing one that holds surveys or accounts, or an existing SQLite file."""
    if not is_postgres_url(target) and Path(target).exists():
        raise StoreError(f"{target} already exists; choose a new file name")
    store = Store(target)
    try:
        if store.list_surveys() or store.list_users():
            raise StoreError(f"{display_location(target)} already holds surveys or accounts; copy into an empty "
                             "database")
    except BaseException:
        store.close()
        raise
    return store


def copy_database(source: Store, target: str | Path, *, progress=None) -> dict:
    """Copy ``source`` into the new database ``target`` and check every survey; return {"surveys", "responses"}.

    ``progress(rows)`` is called as report rows are copied (for a progress bar).
    """
    destination = open_target(target)
    try:
        # One snapshot of the source for the copy and its check: servers may go on writing.
        with source._snapshot():
            _copy(source, destination, progress)
            return verify(source, destination)
    finally:
        destination.close()


def _rows(store: Store, table: str, columns) -> list[tuple]:
    return [tuple(row) for row in store._execute(f'SELECT {", ".join(columns)} FROM "{table}"').fetchall()]


def _pages(store: Store, table: str, columns):
    """Yield the rows of a report, held or sandbox table by random id, PAGE at a time."""
    names = ", ".join(columns)
    after = ""
    while True:
        rows = [tuple(row) for row in store._execute(
            f'SELECT {names} FROM "{table}" WHERE id > ? ORDER BY id LIMIT {PAGE}', [after]).fetchall()]
        if rows:
            yield rows
        if len(rows) < PAGE:
            return
        after = rows[-1][0]


def _insert(conn, table: str, columns, rows):
    if rows:
        conn.executemany(f'INSERT INTO "{table}" ({", ".join(columns)}) VALUES ({", ".join("?" * len(columns))})',
                         rows)


def _copy(source: Store, target: Store, progress):
    plain = {table: _rows(source, table, columns) for table, columns in PLAIN_TABLES}
    smallest = dict(_rows(source, "surveys", ("slug", "smallest_release")))
    with target._write() as conn:
        for table, columns in PLAIN_TABLES:
            if table == "sandbox_tallies":
                continue
            _insert(conn, table, columns, plain[table])
        for (slug,) in _rows(source, "surveys", ("slug",)):
            design = source.get_design(slug)
            target._schema.create_reports(conn, slug, design)
            target._schema.create_sandbox(conn, slug, design)
            _copy_reports(source, target, conn, slug, design, progress)
            conn.execute("UPDATE surveys SET smallest_release = ? WHERE slug = ?", [smallest[slug], slug])
        _insert(conn, "sandbox_tallies", PLAIN_TABLES[-1][1], plain["sandbox_tallies"])
        if is_postgres_url(target.path):
            for table in IDENTITY_TABLES:
                conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                             f"coalesce((SELECT max(id) FROM {table}), 0) + 1, false)")


def _copy_reports(source: Store, target: Store, conn, slug: str, design: dict, progress):
    columns = ["id", "received_day", *schema.column_names(design)]
    for rows in _pages(source, schema.table_name(design), columns):
        target._schema.insert_reports(conn, slug, design, batch_from_rows(design, rows))
        if progress:
            progress(len(rows))
    if release_every(design) > 1:
        for rows in _pages(source, schema.pending_table_name(design), columns):
            target._schema.load_held(conn, slug, design, rows)
            if progress:
                progress(len(rows))
    sandbox = schema.sandbox_table_name(design["hash"])
    sandbox_columns = ["id", "received_day", "source", *schema.column_names(design)]
    for rows in _pages(source, sandbox, sandbox_columns):
        _insert(conn, sandbox, sandbox_columns, rows)
        if progress:
            progress(len(rows))
    patterns.fill(conn, design, sandbox, sandbox=True, postgres=is_postgres_url(target.path))


def survey_fingerprint(store: Store, slug: str) -> dict:
    """Return what a researcher reads of a survey: aggregates CSV, counts, responses per day, sandbox counts."""
    design = store.get_design(slug)
    return {"aggregates": rows_to_csv(aggregate_counts(design, store.question_counts(slug))),
            "release": store.release_state(slug), "days": store.responses_per_day(slug),
            "sandbox": store.sandbox_counts(slug), "status": store.survey_status(slug),
            "collaborators": store.collaborators(slug)}


def verify(source: Store, target: Store) -> dict:
    """Raise CopyMismatch unless every survey reads the same on both; return {"surveys", "responses"}."""
    surveys = source.list_surveys()
    if [survey["slug"] for survey in target.list_surveys()] != [survey["slug"] for survey in surveys]:
        raise CopyMismatch("the copy does not hold the same surveys")
    if [user["email"] for user in target.list_users()] != [user["email"] for user in source.list_users()]:
        raise CopyMismatch("the copy does not hold the same accounts")
    for survey in surveys:
        before, after = survey_fingerprint(source, survey["slug"]), survey_fingerprint(target, survey["slug"])
        for key in before:
            if before[key] != after[key]:
                raise CopyMismatch(f"survey {survey['slug']!r}: its {key} differ after the copy")
    return {"surveys": len(surveys), "responses": sum(survey["responses"] for survey in surveys)}
