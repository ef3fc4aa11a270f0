"""Report patterns kept at insert: crosstabs and regressions read counts that equal a recount from the reports.

Every insert path (one response, a submission, a batch, per-question columns with questions not asked,
a release step with held responses, the sandbox's two sources, a cleared source, a migration from a
database made before the patterns) is followed by the same comparison, on SQLite and PostgreSQL:
``joint_patterns`` from the kept patterns against ``recount=True`` (a GROUP BY over every stored report),
array for array, and the crosstab and regression CSVs made from each, byte for byte.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from survey.cli import main
from survey.core.crosstab import CrosstabError, check_pair, crosstab, crosstab_to_csv
from survey.core.definition import parse_definition
from survey.core.design import build_design
from survey.core.modelling import fit_words
from survey.core.regression import RegressionError
from survey.core.regression_text import regression_to_csv
from survey.core.simulate import complete_truth, simulate_answers
from survey.store import Store
from survey.store import patterns
from survey.store.checks import check_counts
from tests.conftest import is_postgres

pytestmark = pytest.mark.both_backends

SLUG = "joint"
WIDE = [f"option {i}" for i in range(256)]


def make_design(release_every: int = 1) -> dict:
    """A survey whose first four questions are pattern questions; the last three do not fit with them."""
    return build_design(parse_definition({
        "slug": SLUG, "title": "Joint", "epsilon": 6.0, "release_every": release_every,
        "questions": [
            {"id": "smoker", "kind": "yes_no", "text": "Smoke?"},
            {"id": "colour", "kind": "choice", "text": "Colour?", "options": ["red", "green", "blue"]},
            {"id": "pair", "kind": "multi", "text": "Pair?", "options": ["tea", "coffee"]},
            {"id": "age", "kind": "number", "text": "Age?", "min": 18, "max": 90},
            {"id": "hours", "kind": "number", "text": "Hours?", "min": 0, "max": 80},
            {"id": "pick", "kind": "choice", "text": "Pick", "options": WIDE[:40]},
            {"id": "wide", "kind": "choice", "text": "Wide", "options": WIDE},
        ]}))


def answers(design: dict, n: int, seed: int, *, drop: float = 0.0) -> list[dict]:
    """Return n simulated responses; with ``drop``, each question left out with that probability."""
    rng = np.random.default_rng(seed)
    simulated = simulate_answers(design, complete_truth(design, {}, rng), n, rng)
    if drop:
        simulated = [{qid: report for qid, report in answer.items() if rng.random() >= drop}
                     for answer in simulated]
    return simulated


def assert_kept_equals_recount(store: Store, design: dict, *, sandbox: bool = False):
    """Every pair and two models read from the patterns equal their recount from the reports, byte for byte."""
    questions = {question["id"]: question for question in design["questions"]}
    for a, b in itertools.permutations(questions, 2):
        kept = store.joint_patterns(SLUG, [a, b], sandbox=sandbox)
        counted = store.joint_patterns(SLUG, [a, b], sandbox=sandbox, recount=True)
        assert all(np.array_equal(x, y) for x, y in zip(kept[0], counted[0])), (a, b)
        assert np.array_equal(kept[1], counted[1]), (a, b)
        try:
            check_pair(questions[a], questions[b])
        except CrosstabError:
            continue
        if patterns.covers(design, [a, b]):
            tables = [crosstab_to_csv(crosstab(questions[a], questions[b], *words, counts))
                      for words, counts in (kept, counted)]
            assert tables[0] == tables[1], (a, b)
    for outcome, covariates in (("smoker", ["colour"]), ("age", ["smoker", "colour"])):
        names = [outcome, *covariates]
        fits = [fitted(design, outcome, covariates, store.joint_patterns(SLUG, names, sandbox=sandbox, recount=recount))
                for recount in (False, True)]
        assert fits[0] == fits[1]
    assert check_counts(store, SLUG)[1] == []


def fitted(design: dict, outcome: str, covariates: list[str], data) -> str:
    """Return the model's CSV, or the reason it cannot be fitted (too few responses)."""
    try:
        return regression_to_csv(fit_words(design, outcome, covariates, *data))
    except RegressionError as exc:
        return f"refused: {exc}"


def kept_total(store: Store, design: dict) -> int:
    """Return how many responses the released patterns count."""
    return int(store.conn.execute(f'SELECT coalesce(sum(count), 0) FROM "{patterns.released_table(design)}"')
               .fetchone()[0])


def test_the_pattern_questions_fit_the_limit_and_leave_out_wide_ones():
    design = make_design()
    assert patterns.pattern_questions(design) == [0, 1, 2, 3]
    assert patterns.covers(design, ["smoker", "age"]) and not patterns.covers(design, ["smoker", "hours"])
    size = 1
    for index in patterns.pattern_questions(design):
        size *= patterns.domain_size(design["questions"][index]) + 1
    assert size <= patterns.PATTERN_LIMIT


@pytest.mark.slow
def test_every_insert_path_keeps_patterns_equal_to_a_recount(db_path):
    design = make_design()
    store = Store(db_path)
    try:
        store.create_survey("", design)
        sample = answers(design, 900, seed=1, drop=0.2)
        store.add_responses(SLUG, design["hash"], sample[:600])
        for answer in sample[600:640]:
            store.add_response(SLUG, design["hash"], answer)
        for index, answer in enumerate(sample[640:660]):
            assert store.add_submission(SLUG, design["hash"], answer, submission=f"submission-{index:04d}")
        assert kept_total(store, design) == store.response_count(SLUG) == 660
        assert_kept_equals_recount(store, design)
        # The sandbox is kept apart: its patterns are its own, and the released ones do not move.
        store.add_responses(SLUG, design["hash"], sample[660:800], source="simulated")
        store.add_responses(SLUG, design["hash"], sample[800:], source="test")
        assert kept_total(store, design) == 660
        assert_kept_equals_recount(store, design, sandbox=True)
        store.clear_sandbox(SLUG, "test")
        assert_kept_equals_recount(store, design, sandbox=True)
        assert store.joint_patterns(SLUG, ["smoker", "colour"], sandbox=True)[1].sum() <= 140
    finally:
        store.close()


def test_held_responses_are_invisible_until_released(db_path):
    design = make_design(release_every=5)
    store = Store(db_path)
    try:
        store.create_survey("", design)
        sample = answers(design, 40, seed=2)
        for answer in sample[:3]:
            store.add_response(SLUG, design["hash"], answer)
        assert kept_total(store, design) == 0
        assert store.joint_patterns(SLUG, ["smoker", "colour"])[1].size == 0
        for answer in sample[3:5]:
            store.add_response(SLUG, design["hash"], answer)
        assert kept_total(store, design) == 5
        assert_kept_equals_recount(store, design)
        store.add_responses(SLUG, design["hash"], sample[5:17])  # 10 released, 2 held
        assert kept_total(store, design) == 15 and store.release_state(SLUG)["held"] == 2
        assert_kept_equals_recount(store, design)
        assert store.release_held(SLUG) == 2
        assert kept_total(store, design) == 17
        assert_kept_equals_recount(store, design)
    finally:
        store.close()


def test_a_crosstab_reads_the_patterns_and_check_finds_a_wrong_count(db_path, cli_runner):
    design = make_design()
    store = Store(db_path)
    try:
        store.create_survey("", design)
        store.add_responses(SLUG, design["hash"], answers(design, 300, seed=3))
        result = cli_runner.invoke(main, ["--db", str(db_path), "check", SLUG])
        assert result.exit_code == 0, result.output
        assert f"{SLUG}: 300 stored reports recounted; every kept count agrees" in result.output
        table, shard = patterns.released_table(design), ("shard, ", "0, ") if is_postgres(store) else ("", "")
        with store._write() as conn:  # one more count of one pattern than the reports hold
            conn.execute(f'INSERT INTO "{table}" ({shard[0]}q0_0, q1_0, q2_0, q3_0, count) VALUES ({shard[1]}1, 0, 0, 0, 1) '
                         f'ON CONFLICT ({shard[0]}q0_0, q1_0, q2_0, q3_0) DO UPDATE SET count = "{table}".count + 1')
        kept = store.joint_patterns(SLUG, ["smoker", "colour"])[1].sum()
        assert kept == store.joint_patterns(SLUG, ["smoker", "colour"], recount=True)[1].sum() + 1
        problems = check_counts(store, SLUG)[1]
        assert len(problems) == 1 and problems[0].startswith("the report patterns of the released reports differ")
        result = cli_runner.invoke(main, ["--db", str(db_path), "check"])
        assert result.exit_code == 1
        assert "the report patterns of the released reports differ from a recount" in result.output
        assert f"Error: the counts kept at insert differ from a recount for {SLUG}" in result.output
        assert "Traceback" not in result.output
    finally:
        store.close()


@pytest.mark.slow
def test_the_migration_fills_the_patterns_of_an_existing_database(db_path):
    design = make_design(release_every=4)
    store = Store(db_path)
    try:
        store.create_survey("", design)
        sample = answers(design, 250, seed=4, drop=0.1)
        store.add_responses(SLUG, design["hash"], sample[:201])  # 200 released, 1 held
        store.add_responses(SLUG, design["hash"], sample[201:], source="simulated")
        expected = [store.joint_patterns(SLUG, ["smoker", "age"], sandbox=sandbox, recount=True)
                    for sandbox in (False, True)]
        # The database as it was before the patterns: no pattern tables, migration not applied.
        with store._write() as conn:
            conn.execute(f'DROP TABLE "{patterns.released_table(design)}"')
            conn.execute(f'DROP TABLE "{patterns.sandbox_table(design["hash"])}"')
            record = "ldp_survey_migrations" if is_postgres(store) else "_sqlite_migrations"
            conn.execute(f"DELETE FROM {record} WHERE name = 'm015_joint_patterns'")
    finally:
        store.close()
    store = Store(db_path)
    try:
        for sandbox, (words, counts) in zip((False, True), expected):
            kept_words, kept_counts = store.joint_patterns(SLUG, ["smoker", "age"], sandbox=sandbox)
            assert all(np.array_equal(x, y) for x, y in zip(kept_words, words)) and np.array_equal(kept_counts, counts)
        assert_kept_equals_recount(store, design)
        assert_kept_equals_recount(store, design, sandbox=True)
        # New responses after the migration are counted by the insert paths.
        for answer in sample[:7]:
            store.add_response(SLUG, design["hash"], answer)
        assert kept_total(store, design) == 208
        assert_kept_equals_recount(store, design)
    finally:
        store.close()


def test_a_copied_database_counts_the_same_patterns(db_path, tmp_path):
    from survey.store.copying import copy_database

    design = make_design(release_every=4)
    store = Store(db_path)
    try:
        store.create_survey("", design)
        sample = answers(design, 120, seed=6, drop=0.1)
        store.add_responses(SLUG, design["hash"], sample[:102])  # 100 released, 2 held
        store.add_responses(SLUG, design["hash"], sample[102:], source="test")
        copy_database(store, tmp_path / "copy.db")
        expected = [store.joint_patterns(SLUG, ["colour", "age"], sandbox=sandbox) for sandbox in (False, True)]
    finally:
        store.close()
    copy = Store(tmp_path / "copy.db")
    try:
        assert check_counts(copy, SLUG) == (120, [])
        for sandbox, (words, counts) in zip((False, True), expected):
            got_words, got_counts = copy.joint_patterns(SLUG, ["colour", "age"], sandbox=sandbox)
            assert all(np.array_equal(x, y) for x, y in zip(got_words, words)) and np.array_equal(got_counts, counts)
        assert_kept_equals_recount(copy, design)
        assert_kept_equals_recount(copy, design, sandbox=True)
    finally:
        copy.close()


def test_migrating_into_the_backend_fills_its_patterns(db_path, tmp_path):
    from survey.store.copying import copy_database

    design = make_design()
    source = Store(tmp_path / "source.db")
    try:
        source.create_survey("", design)
        sample = answers(design, 90, seed=7)
        source.add_responses(SLUG, design["hash"], sample[:80])
        source.add_responses(SLUG, design["hash"], sample[80:], source="simulated")
        copy_database(source, db_path)
    finally:
        source.close()
    target = Store(db_path)
    try:
        assert check_counts(target, SLUG) == (90, [])
        assert_kept_equals_recount(target, design)
        assert_kept_equals_recount(target, design, sandbox=True)
    finally:
        target.close()
