"""Invitations and submission ids cannot be tied to the responses they admitted (docs/explanation/privacy.md).

After a mix of invited responses (some with submission ids), nothing in the database joins
or orders tokens to responses: no shared column or value, no time finer than a day, and
the physical order of the used tokens, of the submission rows and of the responses are
independent of the order of arrival and of one another (Spearman's rho within 4 standard
errors of 0, the standard error being 1/sqrt(n-1) under independence).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from conftest import PANEL_TOML, is_postgres, table_columns, table_names

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.store import Store
from survey.store.admission import invite_hash, submission_hash
from survey.store.schema import pending_table_name

pytestmark = pytest.mark.both_backends

TOML = PANEL_TOML + """
[[questions]]
id = "team"
kind = "choice"
text = "Your team?"
options = ["a", "b", "c"]
"""
INVITED = 300
ANSWERED = 200
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def spearman(x, y) -> float:
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


@pytest.fixture
def filled(db_path, backend):
    """Invite INVITED people, let ANSWERED of them answer in a random order; return what the test knows.

    On PostgreSQL the survey releases all ANSWERED responses at once (see
    test_physical_orders_say_nothing_of_arrival_or_of_each_other).
    """
    rng = np.random.default_rng(2026)
    text = TOML if backend == "sqlite" else TOML.replace("release_every = 1", f"release_every = {ANSWERED}")
    design = build_design(parse_definition_toml(text))
    store = Store(db_path)
    store.create_survey(text, design)
    tokens = store.create_invitations("panel", INVITED)
    table = store.conn.execute("SELECT reports_table FROM surveys WHERE slug = 'panel'").fetchone()[0]
    held = pending_table_name(design)
    arrivals = []
    seen: set[str] = set()
    for index, token in enumerate(rng.permutation(tokens)[:ANSWERED]):
        answers = {"remote": int(rng.integers(2)), "team": int(rng.integers(3))}
        submission = rng.bytes(16).hex() if index % 2 else None
        assert store.add_submission("panel", design["hash"], answers, submission=submission, invite=str(token))
        ids = {row[0] for name in {table, held} & set(table_names(store))
               for row in store.conn.execute(f'SELECT id FROM "{name}"')}
        [response_id] = ids - seen
        seen = ids
        arrivals.append({"token": str(token), "submission": submission, "response": response_id})
    yield store, table, arrivals
    store.close()


def columns(store, table) -> list[str]:
    return table_columns(store, table)


def test_no_column_or_value_joins_tokens_or_submissions_to_responses(filled):
    store, table, arrivals = filled
    report_columns = set(columns(store, table))
    for name in ("invitations", "submissions"):
        assert not set(columns(store, name)) & report_columns, f"{name} shares a column name with the reports"
        values = {value for row in store.conn.execute(f"SELECT * FROM {name}") for value in row}
        reports = {value for row in store.conn.execute(f'SELECT * FROM "{table}"') for value in row
                   if isinstance(value, str)}
        # Days are shared (an invitation made today, a response received today), but a day is
        # common to every row of that day and ties none in particular (see the next test).
        shared = {v for v in values if isinstance(v, str) and not DAY.fullmatch(v)} & reports
        assert not shared, f"{name} shares a value with the reports"
    assert columns(store, "invitations") == ["token_hash", "survey", "created_day"]
    assert columns(store, "unused_invitations") == ["token_hash", "survey"]
    assert columns(store, "submissions") == ["id_hash", "survey", "answers_check"]
    # Neither is a rowid table, whose hidden rowid would number rows in order of arrival (on PostgreSQL:
    # no column takes its value from a sequence).
    for name in ("invitations", "unused_invitations", "submissions", table):
        if is_postgres(store):
            numbered = store.conn.execute(
                "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND "
                "table_name = ? AND (is_identity = 'YES' OR column_default LIKE 'nextval%')", [name]).fetchone()[0]
            assert numbered == 0, name
            continue
        sql = store.conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", [name]).fetchone()[0]
        assert sql.rstrip().upper().endswith("WITHOUT ROWID"), name
    stored_tokens = {row[0] for row in store.conn.execute("SELECT token_hash FROM invitations")}
    assert not {a["token"] for a in arrivals} & stored_tokens, "tokens are stored only hashed"


def test_no_time_finer_than_a_day(filled):
    store, table, _ = filled
    for name in ("invitations", "submissions", table):
        for row in store.conn.execute(f'SELECT * FROM "{name}"'):
            for value in row:
                if isinstance(value, str) and re.search(r"\d{4}-\d{2}-\d{2}", value):
                    assert DAY.fullmatch(value), f"{name} holds {value!r}, finer than a day"
                assert not (isinstance(value, (int, float)) and value > 10**8), \
                    f"{name} holds {value!r}, which could be a timestamp"


def test_physical_orders_say_nothing_of_arrival_or_of_each_other(filled):
    """On SQLite every table is kept in key order. PostgreSQL keeps rows in the order they were written: its
    reports are written a release at a time, in random-id order, so here (all responses released together) the
    reports' order is independent of arrival, and the invitations' is their hash order (a use deletes a row and
    writes none); the submission ids it keeps in arrival order, which ties them to nothing once the responses
    are shuffled (docs/explanation/privacy.md)."""
    store, table, arrivals = filled
    n = len(arrivals)
    bound = 4 / math.sqrt(n - 1)
    kept_in_arrival_order = {"submissions vs arrival"} if is_postgres(store) else set()
    token_position = {row[0]: i for i, row in enumerate(store.conn.execute(
        "SELECT token_hash FROM invitations WHERE token_hash NOT IN (SELECT token_hash FROM unused_invitations)"))}
    response_position = {row[0]: i for i, row in enumerate(store.conn.execute(f'SELECT id FROM "{table}"'))}
    submission_position = {row[0]: i for i, row in enumerate(store.conn.execute("SELECT id_hash FROM submissions"))}
    assert len(token_position) == len(response_position) == n

    arrival = np.arange(n)
    tokens = np.array([token_position[invite_hash(a["token"])] for a in arrivals])
    responses = np.array([response_position[a["response"]] for a in arrivals])
    for label, x, y in (("tokens vs arrival", tokens, arrival), ("responses vs arrival", responses, arrival),
                        ("tokens vs responses", tokens, responses)):
        if label in kept_in_arrival_order:
            continue
        rho = spearman(x, y)
        assert abs(rho) < bound, f"{label}: Spearman rho {rho:.3f} beyond {bound:.3f}"

    with_id = [(i, a) for i, a in enumerate(arrivals) if a["submission"]]
    submissions = np.array([submission_position[submission_hash("panel", a["submission"])] for _, a in with_id])
    paired = np.array([responses[i] for i, _ in with_id])
    sub_bound = 4 / math.sqrt(len(with_id) - 1)
    for label, y in (("submissions vs arrival", np.array([i for i, _ in with_id])), ("submissions vs responses", paired)):
        if label in kept_in_arrival_order:
            continue
        rho = spearman(submissions, y)
        assert abs(rho) < sub_bound, f"{label}: Spearman rho {rho:.3f} beyond {sub_bound:.3f}"


def test_the_spearman_check_would_see_an_order_kept_by_arrival():
    """The check above is not vacuous: a table kept in arrival order gives rho = 1, far beyond the bound."""
    n = ANSWERED
    assert spearman(np.arange(n), np.arange(n)) > 4 / math.sqrt(n - 1)
