"""Storage built for counting: integer reports, tallies kept at insert, random-key row order, migration."""

from __future__ import annotations

import json
import secrets
import sqlite3

import numpy as np
import pytest
import sqlite_utils

from survey.core import codec
from survey.core.aggregate import aggregate, aggregate_counts, rows_to_csv
from survey.core.definition import parse_definition
from survey.core.design import build_design
from survey.core.mechanisms import mechanism_for
from survey.exports.export import iter_responses_csv, responses_csv
from survey.core.simulate import complete_truth, simulate_answers, simulate_columns
from survey.store import Store, StoreError
from survey.store.schema import migrations

pytestmark = pytest.mark.both_backends

WIDE = [f"option {i}" for i in range(256)]


@pytest.fixture
def mixed_design() -> dict:
    """A survey with every kind of report: rr, grr, subset selection (bits), OUE over 256 options (five
    words), a sampled 64-option multi (two words), a per-bit multi, duchi and a hybrid number's level."""
    return build_design(parse_definition({
        "slug": "mixed", "title": "Mixed", "epsilon": 7.5, "release_every": 1,
        "questions": [
            {"id": "smoker", "kind": "yes_no", "text": "Smoke?"},
            {"id": "colour", "kind": "choice", "text": "Colour?", "options": ["red", "green", "blue"]},
            {"id": "pick", "kind": "choice", "text": "Pick", "options": WIDE[:40]},
            {"id": "sports", "kind": "multi", "text": "Sports?", "options": WIDE[:64]},
            {"id": "age", "kind": "number", "text": "Age?", "min": 18, "max": 90, "weight": 0.5},
            {"id": "wide", "kind": "choice", "text": "Wide", "options": WIDE},
            {"id": "pair", "kind": "multi", "text": "Pair?", "options": ["tea", "coffee"]},
            {"id": "hours", "kind": "number", "text": "Hours?", "min": 0, "max": 80},
        ]}))


def simulated(design: dict, n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return simulate_answers(design, complete_truth(design, {}, rng), n, rng)


def test_the_mixed_design_covers_every_encoding(mixed_design):
    mechanisms = [(q["kind"], q["mechanism"], codec.word_count(q)) for q in mixed_design["questions"]]
    assert mechanisms == [("yes_no", "rr", 1), ("choice", "grr", 1), ("choice", "ss", 1), ("multi", "sampled", 2),
                          ("number", "duchi", 1), ("choice", "oue", 5), ("multi", "rr", 1), ("number", "hybrid", 1)]


def test_reports_round_trip_through_their_words(mixed_design):
    for answer in simulated(mixed_design, 200, seed=1):
        for question in mixed_design["questions"]:
            report = answer[question["id"]]
            words = codec.encode_report(question, report)
            assert all(0 <= word < 2**63 for word in words)
            assert codec.decode_report(question, words) == report
            if codec.is_level(question):
                assert codec.indicators(question, np.array([words]))[0, 0] == float(codec.level_values(question)[report])
                continue
            assert codec.indicators(question, np.array([words]))[0].nonzero()[0].tolist() == \
                codec.indicator_options(question, report)


def test_tallies_kept_at_insert_equal_a_recount_and_the_in_memory_aggregate(db_path, mixed_design):
    answers = simulated(mixed_design, 500, seed=2)
    store = Store(db_path)
    try:
        store.create_survey("", mixed_design)
        store.add_responses("mixed", mixed_design["hash"], answers[:300])
        for answer in answers[300:]:
            store.add_response("mixed", mixed_design["hash"], answer)
        counts = store.question_counts("mixed")
        assert counts == store.recount("mixed")
        assert store.response_count("mixed") == 500
        stored = list(store.iter_answers("mixed"))
    finally:
        store.close()
    assert rows_to_csv(aggregate_counts(mixed_design, counts)) == rows_to_csv(aggregate(mixed_design, answers))
    key = lambda answer: json.dumps(answer, sort_keys=True)  # noqa: E731
    assert sorted(map(key, stored)) == sorted(map(key, answers))


def test_the_vectorised_simulation_stores_exactly_what_the_per_answer_path_stores(tmp_path, mixed_design):
    n, seed = 400, 3
    rng = np.random.default_rng(seed)
    truth = complete_truth(mixed_design, {}, rng)
    columns = simulate_columns(mixed_design, truth, n, np.random.default_rng(seed + 1))
    answers = simulate_answers(mixed_design, truth, n, np.random.default_rng(seed + 1))
    for question, words in zip(mixed_design["questions"], columns):
        assert words.tolist() == [list(codec.encode_report(question, a[question["id"]])) for a in answers]
    by_columns, by_answers = Store(tmp_path / "columns.db"), Store(tmp_path / "answers.db")
    try:
        for store in (by_columns, by_answers):
            store.create_survey("", mixed_design)
        assert by_columns.add_report_columns("mixed", mixed_design["hash"], columns) == n
        by_answers.add_responses("mixed", mixed_design["hash"], answers)
        assert by_columns.question_counts("mixed") == by_answers.question_counts("mixed") == \
            by_columns.recount("mixed")
    finally:
        by_columns.close()
        by_answers.close()


@pytest.mark.parametrize("epsilon, weight, mechanism", [(8.0, 3, "hybrid"), (20.0, 7, "piecewise"), (8.0, 3, "opm")])
def test_level_numbers_are_tallied_as_sums_of_scores_and_squares_on_every_path(tmp_path, epsilon, weight, mechanism):
    """Insert one by one (trigger), in batches and as columns: Σs and Σs² agree with a recount and the answers."""
    design = build_design(parse_definition({
        "slug": "levels", "title": "Levels", "epsilon": epsilon, "release_every": 1,
        "questions": [{"id": "smoker", "kind": "yes_no", "text": "Smoke?"},
                      {"id": "income", "kind": "number", "text": "Income?", "min": 0, "max": 250, "weight": weight,
                       "mechanism": mechanism}]}))
    question = design["questions"][1]
    assert (question["mechanism"], codec.tally_count(question), codec.word_count(question)) == (mechanism, 2, 1)
    n, seed = 300, 9
    truth = complete_truth(design, {}, np.random.default_rng(seed))
    answers = simulate_answers(design, truth, n, np.random.default_rng(seed + 1))
    columns = simulate_columns(design, truth, n, np.random.default_rng(seed + 1))
    levels = np.array([answer["income"] for answer in answers])
    assert columns[1][:, 0].tolist() == levels.tolist() and 0 <= levels.min()
    assert levels.max() < mechanism_for(question).levels == (question.get("levels") or question["bins"])
    scores = np.array(codec.level_scores(question))[levels]
    expected = (n, [int(scores.sum()), int((scores * scores).sum())])
    stores = {name: Store(tmp_path / f"{name}.db") for name in ("one", "batch", "columns")}
    try:
        for store in stores.values():
            store.create_survey("", design)
        for answer in answers:
            stores["one"].add_response("levels", design["hash"], answer)
        stores["batch"].add_responses("levels", design["hash"], answers)
        stores["columns"].add_report_columns("levels", design["hash"], columns)
        for store in stores.values():
            counts = store.question_counts("levels")
            assert counts["income"] == expected and counts == store.recount("levels")
        counts = stores["one"].question_counts("levels")
    finally:
        for store in stores.values():
            store.close()
    assert rows_to_csv(aggregate_counts(design, counts)) == rows_to_csv(aggregate(design, answers))


def test_a_stale_design_stores_nothing(db_path, mixed_design):
    store = Store(db_path)
    try:
        store.create_survey("", mixed_design)
        with pytest.raises(StoreError, match="not the current design"):
            store.add_responses("mixed", "0" * 64, simulated(mixed_design, 3, seed=4))
        assert store.response_count("mixed") == 0
        assert store.recount("mixed") == store.question_counts("mixed")
    finally:
        store.close()


def test_joint_reports_give_every_joint_indicator_count(db_path, mixed_design):
    answers = simulated(mixed_design, 600, seed=5)
    store = Store(db_path)
    try:
        store.create_survey("", mixed_design)
        store.add_responses("mixed", mixed_design["hash"], answers)
        questions = {q["id"]: q for q in mixed_design["questions"]}
        for first, second in [("smoker", "colour"), ("colour", "sports"), ("pick", "age"), ("sports", "sports")]:
            words_a, words_b, counts = store.joint_reports("mixed", first, second)
            joint = codec.indicators(questions[first], words_a).T @ (
                codec.indicators(questions[second], words_b) * counts[:, None])
            expected = np.zeros_like(joint)
            for answer in answers:
                for i in codec.indicator_options(questions[first], answer[first]):
                    for j in codec.indicator_options(questions[second], answer[second]):
                        expected[i, j] += 1
            assert counts.sum() == len(answers)
            assert (joint == expected).all(), (first, second)
        with pytest.raises(StoreError, match="not a question"):
            store.joint_reports("mixed", "smoker", "nope")
    finally:
        store.close()


@pytest.mark.sqlite_only
def test_rows_are_stored_in_random_key_order_whatever_the_arrival_order(db_path, mixed_design):
    n = 400
    store = Store(db_path)
    try:
        store.create_survey("", mixed_design)
        arrival = [store.add_response("mixed", mixed_design["hash"], answer)
                   for answer in simulated(mixed_design, n, seed=6)]
        table = store.conn.execute("SELECT reports_table FROM surveys WHERE slug = 'mixed'").fetchone()[0]
        physical = [row[0] for row in store.conn.execute(f'SELECT id FROM "{table}"')]
        with pytest.raises(sqlite3.OperationalError, match="rowid"):
            store.conn.execute(f'SELECT rowid FROM "{table}"')
        schema = store.conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", [table]).fetchone()[0]
    finally:
        store.close()
    assert "WITHOUT ROWID" in schema
    assert physical == sorted(arrival) and sorted(physical) == sorted(set(arrival))
    # Spearman's rank correlation of arrival and physical position is ~N(0, 1/(n-1)) when
    # they are independent; 5 standard errors would flag any tie between them.
    position = {rid: index for index, rid in enumerate(physical)}
    rho = np.corrcoef(np.arange(n), [position[rid] for rid in arrival])[0, 1]
    assert abs(rho) < 5 / np.sqrt(n - 1)


def _old_schema_database(path, design: dict, answers: list[dict]) -> list[dict]:
    """Write a database as the previous schema did: JSON answers in one responses table. Return its rows."""
    db = sqlite_utils.Database(path)
    migrations.apply(db, stop_before="m002_counting")
    db["surveys"].insert({"slug": design["slug"], "title": design["title"], "definition": "old text",
                          "design": json.dumps(design, sort_keys=True), "design_hash": design["hash"],
                          "created_day": "2026-11-01"})
    rows = [{"id": secrets.token_hex(8), "survey": design["slug"], "design_hash": design["hash"],
             "received_day": f"2026-11-{1 + index % 20:02d}",
             "answers": json.dumps(answer, separators=(",", ":"))} for index, answer in enumerate(answers)]
    db["responses"].insert_all(rows)
    db["users"].insert({"email": "old@example.org", "password_hash": "x", "created_day": "2026-11-01"})
    db.close()
    return rows


@pytest.mark.sqlite_only
def test_an_old_database_is_upgraded_in_place_without_loss(db_path, mixed_design):
    answers = simulated(mixed_design, 700, seed=7)
    old_rows = _old_schema_database(db_path, mixed_design, answers)
    before_aggregates = rows_to_csv(aggregate(mixed_design, [json.loads(r["answers"]) for r in old_rows]))
    before_responses = responses_csv(mixed_design, sorted(
        ({"id": r["id"], "received_day": r["received_day"], "answers": json.loads(r["answers"])} for r in old_rows),
        key=lambda response: response["id"]))

    store = Store(db_path)
    try:
        assert "responses" not in store.db.table_names()
        assert store.get_definition("mixed") == "old text"
        assert store.get_user("old@example.org") is not None
        assert store.response_count("mixed") == 700
        assert store.question_counts("mixed") == store.recount("mixed")
        after_aggregates = rows_to_csv(aggregate_counts(mixed_design, store.question_counts("mixed")))
        after_responses = responses_csv(mixed_design, store.iter_responses("mixed"))
        assert store.integrity_check() == "ok"
    finally:
        store.close()
    assert after_aggregates == before_aggregates
    assert after_responses == before_responses


@pytest.mark.sqlite_only
def test_a_failed_migration_leaves_the_old_database_untouched(db_path, mixed_design):
    old_rows = _old_schema_database(db_path, mixed_design, simulated(mixed_design, 5, seed=8))
    db = sqlite_utils.Database(db_path)
    db.execute("UPDATE responses SET design_hash = 'other' WHERE id = ?", [old_rows[0]["id"]])
    db.conn.commit()
    db.close()
    with pytest.raises(RuntimeError, match="another design"):
        Store(db_path)
    db = sqlite_utils.Database(db_path)
    try:
        assert db["responses"].count == 5
        assert "question_tallies" not in db.table_names()
    finally:
        db.close()


def test_backup_is_a_consistent_private_copy_and_never_overwrites(tmp_path, db_path, mixed_design):
    store = Store(db_path)
    try:
        store.create_survey("", mixed_design)
        store.add_responses("mixed", mixed_design["hash"], simulated(mixed_design, 50, seed=9))
        destination = tmp_path / "copy.db"
        store.backup(destination)
        assert destination.stat().st_mode & 0o077 == 0
        with pytest.raises(StoreError, match="already exists"):
            store.backup(destination)
        counts = store.question_counts("mixed")
    finally:
        store.close()
    copy = Store(destination)
    try:
        assert copy.integrity_check() == "ok"
        assert copy.question_counts("mixed") == counts
    finally:
        copy.close()


def test_the_responses_csv_streams_in_chunks_that_join_to_the_whole(db_path, mixed_design):
    store = Store(db_path)
    try:
        store.create_survey("", mixed_design)
        store.add_responses("mixed", mixed_design["hash"], simulated(mixed_design, 25, seed=10))
        chunks = list(iter_responses_csv(mixed_design, store.iter_responses("mixed"), rows_per_chunk=7))
        whole = responses_csv(mixed_design, store.iter_responses("mixed"))
    finally:
        store.close()
    assert len(chunks) == 4 and "".join(chunks) == whole
    lines = whole.split("\r\n")
    header = ["response_id", "received_day", "smoker", "colour", *(f"pick__option_{i}" for i in range(40)),
              *(f"sports__option_{i}" for i in range(64)), "age", *(f"wide__option_{i}" for i in range(256)),
              "pair__tea", "pair__coffee", "hours"]
    assert lines[0] == ",".join(header) and len(lines) == 27
    assert all(len(line.split(",")) == len(header) and set(line.split(",")[44:108]) <= {"0", "1"}
               for line in lines[1:-1])


@pytest.mark.sqlite_only
@pytest.mark.parametrize(("setting", "level"), [(None, 1), ("full", 2), ("NORMAL", 1)])
def test_the_synchronous_level_comes_from_the_environment(db_path, monkeypatch, setting, level):
    if setting is None:
        monkeypatch.delenv("LDP_SURVEY_SYNCHRONOUS", raising=False)
    else:
        monkeypatch.setenv("LDP_SURVEY_SYNCHRONOUS", setting)
    store = Store(db_path)
    try:
        assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == level
        assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        store.close()


@pytest.mark.sqlite_only
def test_a_bad_synchronous_level_is_a_clear_error(db_path, monkeypatch):
    monkeypatch.setenv("LDP_SURVEY_SYNCHRONOUS", "off")
    with pytest.raises(StoreError, match="LDP_SURVEY_SYNCHRONOUS must be one of NORMAL, FULL, got 'OFF'"):
        Store(db_path)


@pytest.mark.sqlite_only
def test_a_writer_waits_for_another_connections_write_lock_then_stores(db_path, mixed_design):
    import threading
    import time

    import survey.store as store_module

    store = Store(db_path)
    holder = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    try:
        store.create_survey("", mixed_design)
        answer = simulated(mixed_design, 1, seed=11)[0]
        holder.execute("BEGIN IMMEDIATE")
        release = threading.Timer(0.2, lambda: holder.execute("COMMIT"))
        start = time.monotonic()
        release.start()
        store.add_response("mixed", mixed_design["hash"], answer)
        assert time.monotonic() - start >= 0.19
        release.join()
        assert store.response_count("mixed") == 1

        store.lock_timeout_ms = 50  # what LDP_SURVEY_LOCK_TIMEOUT_MS=50 sets when a store opens
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(store_module.StoreUnavailable, match="locked") as caught:
            store.add_response("mixed", mixed_design["hash"], answer)
        assert caught.value.cause == "database locked"
        holder.execute("COMMIT")
        assert store.response_count("mixed") == 1 and store.recount("mixed") == store.question_counts("mixed")
    finally:
        holder.close()
        store.close()


def test_responses_per_day_are_kept_at_insert_by_every_path(db_path, mixed_design):
    from collections import Counter

    answers = simulated(mixed_design, 60, seed=12)
    rng = np.random.default_rng(13)
    columns = simulate_columns(mixed_design, complete_truth(mixed_design, {}, rng), 25, rng)
    store = Store(db_path)
    try:
        store.create_survey("", mixed_design)
        for index, answer in enumerate(answers[:30]):
            store.add_response("mixed", mixed_design["hash"], answer, day=f"2026-11-{20 + index % 3}")
        store.add_responses("mixed", mixed_design["hash"], answers[30:], day="2026-11-21")
        store.add_report_columns("mixed", mixed_design["hash"], columns, day="2026-11-23")
        per_day = store.responses_per_day("mixed")
        counted = Counter(response["received_day"] for response in store.iter_responses("mixed"))
    finally:
        store.close()
    assert per_day == sorted(counted.items())
    assert per_day == [("2026-11-20", 10), ("2026-11-21", 40), ("2026-11-22", 10), ("2026-11-23", 25)]


def test_store_opens_the_backend_its_location_names(tmp_path):
    """``Store(location)`` is SQLite's store for a file path and PostgreSQL's for a ``postgresql://`` URL."""
    from survey.store import PostgresStore, SqliteStore

    store = Store(tmp_path / "picked.db")
    try:
        assert type(store) is SqliteStore and isinstance(store, Store)
    finally:
        store.close()
    assert type(Store.__new__(Store, "postgresql://user@localhost/db")) is PostgresStore
    assert type(SqliteStore.__new__(SqliteStore, "postgresql://user@localhost/db")) is SqliteStore, \
        "a backend's own class opens itself"
