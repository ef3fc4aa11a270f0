"""PostgreSQL's store against the suite's own cluster: moving a study both ways, backups, and concurrent writers.

The rest of the store, web, ownership, crash, unlinkability and flood tests run on both
backends through the ``backend`` parameter (tests/conftest.py).
"""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from werkzeug.security import generate_password_hash

from survey.cli import main
from survey.core.aggregate import aggregate_counts, rows_to_csv
from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.core.simulate import complete_truth, simulate_answers, simulate_columns
from survey.store import Store, StoreError, SurveyClosed
from survey.store.copying import survey_fingerprint

from conftest import smoking_text

pytestmark = [pytest.mark.postgresql, pytest.mark.both_backends]


def design_of(text: str) -> dict:
    return build_design(parse_definition_toml(text))


def created(url: str, text: str) -> dict:
    """Create the survey of a definition in the database at ``url``; return its design."""
    design = design_of(text)
    Store(url).create_survey(text, design)
    return design


def stepped_text(step: int, slug: str = "stepped") -> str:
    """Return the smoking survey with another slug, released in steps of ``step``."""
    text = smoking_text().replace('slug = "smoking-2026"', f'slug = "{slug}"')
    return text.replace("release_every = 1", f"release_every = {step}")


def answers_for(design: dict, n: int, seed: int) -> list[dict]:
    truth = complete_truth(design, {}, np.random.default_rng(seed))
    return simulate_answers(design, truth, n, np.random.default_rng(seed + 1))


def fill(store: Store) -> list[str]:
    """Give a database two surveys (one releasing in steps of 7, with held responses), a sandbox, accounts and links."""
    slugs = []
    for text in (smoking_text(), stepped_text(7)):
        design = design_of(text)
        store.create_survey(text, design)
        answers = answers_for(design, 250, seed=len(slugs))
        store.add_responses(design["slug"], design["hash"], answers[:200])
        for answer in answers[200:]:
            store.add_submission(design["slug"], design["hash"], answer, submission=f"sub-{len(slugs)}-{id(answer)}")
        store.add_responses(design["slug"], design["hash"], answers[:30], source="simulated")
        slugs.append(design["slug"])
    store.add_user("owner@example.org", generate_password_hash("owner password"))
    store.add_user("other@example.org", generate_password_hash("other password"))
    store.share(slugs[0], "owner@example.org")
    store.share(slugs[0], "other@example.org")
    store.create_token("owner@example.org", "laptop")
    store.close_survey(slugs[1])
    return slugs


def test_a_study_moves_to_postgresql_and_back_reading_the_same(tmp_path, pg_url, cli_runner):
    sqlite_file = tmp_path / "study.db"
    store = Store(sqlite_file)
    try:
        slugs = fill(store)
        before = {slug: survey_fingerprint(store, slug) for slug in slugs}
        held = store.release_state(slugs[1])["held"]
    finally:
        store.close()
    assert held == 250 - 250 // 7 * 7
    url = pg_url
    result = cli_runner.invoke(main, ["--db", str(sqlite_file), "migrate", "--to", url])
    assert result.exit_code == 0, result.output
    assert "Copied 2 surveys and 495 released responses" in result.stdout
    moved = Store(url)
    after = {slug: survey_fingerprint(moved, slug) for slug in slugs}
    assert after == before
    token = moved.create_token("owner@example.org", "desktop")[1]
    assert moved.user_for_token(token)["email"] == "owner@example.org"
    assert moved.add_user("third@example.org", "x") is None
    moved.reopen_survey(slugs[1])
    design = moved.get_design(slugs[1])
    for answer in answers_for(design, 7 - held, seed=9):
        moved.add_response(slugs[1], design["hash"], answer)
    state = moved.release_state(slugs[1])
    assert (state["released"], state["held"]) == (250 // 7 * 7 + 7, 0)
    assert moved.integrity_check() == "ok"
    back = tmp_path / "back.db"
    result = cli_runner.invoke(main, ["--db", url, "backup", str(back)])
    assert result.exit_code == 0, result.output
    restored = Store(back)
    try:
        for slug in slugs:
            assert survey_fingerprint(restored, slug) == survey_fingerprint(moved, slug)
        assert restored.integrity_check() == "ok"
    finally:
        restored.close()


def test_migrate_refuses_a_database_that_is_not_empty_and_names_it_without_its_password(tmp_path, pg_url,
                                                                                      cli_runner):
    sqlite_file = tmp_path / "study.db"
    store = Store(sqlite_file)
    try:
        fill(store)
    finally:
        store.close()
    url = pg_url
    assert cli_runner.invoke(main, ["--db", str(sqlite_file), "migrate", "--to", url]).exit_code == 0
    with_password = url.replace("postgres@", "postgres:hunter22@")
    result = cli_runner.invoke(main, ["--db", str(sqlite_file), "migrate", "--to", with_password])
    assert result.exit_code == 1
    assert "already holds surveys or accounts" in result.stderr
    assert "hunter22" not in result.output and "postgres:***@" in result.stderr
    result = cli_runner.invoke(main, ["--db", str(sqlite_file), "migrate", "--to", str(sqlite_file)])
    assert result.exit_code == 1 and "already exists" in result.stderr


def concurrent(count: int, work):
    """Run work(i) in ``count`` threads at once; return the exceptions they raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def run(i):
        start.wait()
        try:
            work(i)
        except BaseException as exc:  # collected and asserted by the caller
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return errors


def test_concurrent_submissions_are_all_counted_across_shards(pg_url):
    url = pg_url
    design = created(url, smoking_text())
    answers = answers_for(design, 400, seed=4)

    def submit(i):
        store = Store(url, migrate=False)
        for k in range(i, len(answers), 8):
            assert store.add_submission(design["slug"], design["hash"], answers[k], submission=f"id-{k}")

    assert concurrent(8, submit) == []
    store = Store(url)
    assert store.response_count(design["slug"]) == 400
    counts = store.question_counts(design["slug"])
    assert counts == store.recount(design["slug"])
    assert rows_to_csv(aggregate_counts(design, counts)) == rows_to_csv(aggregate_counts(design, store.recount(design["slug"])))
    shards = store._execute("SELECT count(DISTINCT shard) FROM tallies WHERE survey = ?", [design["slug"]]).fetchone()[0]
    assert shards > 1
    assert sum(day[1] for day in store.responses_per_day(design["slug"])) == 400
    assert store.integrity_check() == "ok"


def test_concurrent_submissions_release_only_whole_steps_or_more(pg_url):
    url = pg_url
    design = created(url, stepped_text(10))
    answers = answers_for(design, 203, seed=5)
    seen: list[int] = []

    def submit(i):
        store = Store(url, migrate=False)
        for k in range(i, len(answers), 6):
            store.add_submission(design["slug"], design["hash"], answers[k], submission=f"id-{k}")
            seen.append(store.response_count(design["slug"]))

    assert concurrent(6, submit) == []
    store = Store(url)
    state = store.release_state(design["slug"])
    assert state["released"] + state["held"] == 203
    assert state["released"] >= 190 and state["held"] < 10 + 6
    released = sorted(set(seen))
    assert all(b - a >= 10 for a, b in zip([0, *released], released) if b != a)
    assert store.question_counts(design["slug"]) == store.recount(design["slug"])
    assert store.integrity_check() == "ok"


def test_no_response_is_stored_after_close_returns(pg_url):
    url = pg_url
    design = created(url, smoking_text())
    answers = answers_for(design, 2000, seed=6)
    acknowledged: list[int] = []
    closed_at: list[int] = []

    def submit(i):
        store = Store(url, migrate=False)
        for k in range(i, len(answers), 4):
            try:
                store.add_response(design["slug"], design["hash"], answers[k])
                acknowledged.append(k)
            except SurveyClosed:
                return

    def close_midway():
        store = Store(url, migrate=False)
        while store.response_count(design["slug"]) < 100:
            pass
        store.close_survey(design["slug"])
        closed_at.append(store.response_count(design["slug"]))

    closer = threading.Thread(target=close_midway)
    closer.start()
    assert concurrent(4, submit) == []
    closer.join(60)
    store = Store(url)
    assert store.response_count(design["slug"]) == len(acknowledged) == closed_at[0]
    with pytest.raises(StoreError):
        store.add_response(design["slug"], design["hash"], answers[0])


def test_a_replaced_design_of_a_draft_gets_new_tables_and_zero_counts(pg_url):
    url = pg_url
    store = Store(url)
    text = smoking_text()
    design = design_of(text)
    store.create_survey(text, design, status="draft")
    stepped = stepped_text(5, slug="smoking-2026")
    store.create_survey(stepped, design_of(stepped), replace=True, status="draft")
    assert store.release_state("smoking-2026") == {"every": 5, "released": 0, "held": 0, "smallest_release": None}
    columns = simulate_columns(design_of(stepped), complete_truth(design_of(stepped), {}, np.random.default_rng(1)),
                               12, np.random.default_rng(2))
    store.publish_survey("smoking-2026")
    store.add_report_columns("smoking-2026", design_of(stepped)["hash"], columns)
    assert store.release_state("smoking-2026")["released"] == 10
    assert store.release_held("smoking-2026") == 2
    assert store.release_state("smoking-2026")["smallest_release"] == 2


def test_a_survey_at_the_definition_limits_takes_submissions(pg_url):
    """100 questions of 64 options (a report of two words each): more words than a function's 100 arguments."""
    questions = "".join(f'\n[[questions]]\nid = "q{i:03d}"\nkind = "choice"\ntext = "Question {i}?"\n'
                        f"options = [{', '.join(repr(f'o{k}').replace(chr(39), chr(34)) for k in range(64))}]\n"
                        for i in range(100))
    text = f'slug = "limits"\ntitle = "At the limits"\nepsilon = 20\nrelease_every = 1\n{questions}'
    design = design_of(text)
    store = Store(pg_url)
    store.create_survey(text, design)
    answers = answers_for(design, 3, seed=7)
    assert store.add_submission("limits", design["hash"], answers[0], submission="limits-0")
    assert not store.add_submission("limits", design["hash"], answers[0], submission="limits-0")
    store.add_response("limits", design["hash"], answers[1])
    assert store.response_count("limits") == 2
    assert store.question_counts("limits") == store.recount("limits")
    assert sorted(json.dumps(a, sort_keys=True) for a in store.iter_answers("limits")) == \
        sorted(json.dumps(a, sort_keys=True) for a in answers[:2])
