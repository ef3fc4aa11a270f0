"""Releases in batches: nothing a researcher, collaborator or reader sees counts a response until its batch is complete.

The store holds responses until another ``release_every`` have arrived; then, inside the INSERT
that completes the batch, they move into the reports and their tallies. Every read — the
dashboard, the aggregates CSV, responses.csv, crosstabs, the API — sees released responses only.
"""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
from conftest import OTHER, OWNER, create_from_toml, domain_answers
from test_ownership import signed_in
from werkzeug.security import generate_password_hash

from survey.cli import main
from survey.core.definition import DefinitionError, parse_definition_toml
from survey.core.design import build_design
from survey.core.releases import batch_epsilon, release_note, release_view
from survey.core.shuffling import central_epsilon, default_release_every
from survey.core.words import format_epsilon
from survey.store import Store, StoreError

pytestmark = pytest.mark.both_backends

SLUG = "batches"
TOML = """slug = "batches"
title = "Released in batches"
epsilon = 2.0
release_every = 3

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"

[[questions]]
id = "diet"
kind = "choice"
text = "Your diet?"
options = ["meat", "fish", "vegetarian"]
"""


@pytest.fixture
def batches(db_path) -> dict:
    """Create the survey released every 3 responses, owned by OWNER, with OTHER as a collaborator."""
    design = create_from_toml(db_path, TOML)
    store = Store(db_path)
    try:
        for email, password in (OWNER, OTHER):
            store.add_user(email, generate_password_hash(password))
        store.share(SLUG, OWNER[0])
        store.share(SLUG, OTHER[0])
    finally:
        store.close()
    return design


def answers(design: dict, count: int, seed: int = 0) -> list[dict]:
    """Return ``count`` answers of reports in every question's domain, varied by ``seed``."""
    rng = np.random.default_rng(seed)
    return [domain_answers(design, **{q["id"]: int(rng.integers(0, 6)) for q in design["questions"]})
            for _ in range(count)]


def with_store(db_path, action):
    store = Store(db_path)
    try:
        return action(store)
    finally:
        store.close()


def test_the_definition_takes_a_release_step_and_defaults_to_the_planners():
    design = build_design(parse_definition_toml(TOML))
    assert design["release_every"] == 3
    default = build_design(parse_definition_toml(TOML.replace("release_every = 3\n", "")))
    assert default["release_every"] == default_release_every(2.0) == 370


@pytest.mark.parametrize("bad", ["0", "-4", "2.5", "true", '"100"', "1000001"])
def test_a_bad_release_step_is_refused_with_the_allowed_range(bad):
    with pytest.raises(DefinitionError, match=r"field 'release_every'.*from 1 .* to 1,000,000"):
        parse_definition_toml(TOML.replace("release_every = 3", f"release_every = {bad}"))


@pytest.mark.parametrize("path", ["response", "submission"])
def test_single_responses_are_held_until_a_batch_is_complete(db_path, batches, path):
    """Through add_response and through the browser's submission with an id (a retry of which adds nothing)."""
    store = Store(db_path)
    try:
        reports = answers(batches, 7)
        seen = []
        for index, report in enumerate(reports):
            if path == "response":
                store.add_response(SLUG, batches["hash"], report, day=f"2026-03-0{index + 1}")
            else:
                submission = f"{index:032x}"
                assert store.add_submission(SLUG, batches["hash"], report, submission=submission,
                                            day=f"2026-03-0{index + 1}")
                assert not store.add_submission(SLUG, batches["hash"], report, submission=submission)
            state = store.release_state(SLUG)
            seen.append((state["released"], state["held"]))
            assert store.question_counts(SLUG) == store.recount(SLUG)
            assert len(list(store.iter_responses(SLUG))) == state["released"]
        assert seen == [(0, 1), (0, 2), (3, 0), (3, 1), (3, 2), (6, 0), (6, 1)]
        # A released response is dated the day of its release: no day splits a batch.
        days = sorted(response["received_day"] for response in store.iter_responses(SLUG))
        assert days == ["2026-03-03"] * 3 + ["2026-03-06"] * 3
        assert store.responses_per_day(SLUG) == [("2026-03-03", 3), ("2026-03-06", 3)]
    finally:
        store.close()


@pytest.mark.parametrize("sizes", [[2, 5], [1, 1, 7, 2], [3, 3], [10], [2, 1]])
def test_batches_of_responses_release_whole_multiples(db_path, batches, sizes):
    store = Store(db_path)
    try:
        total = 0
        for seed, size in enumerate(sizes):
            store.add_responses(SLUG, batches["hash"], answers(batches, size, seed=seed))
            total += size
            state = store.release_state(SLUG)
            assert (state["released"], state["held"]) == (total // 3 * 3, total % 3)
            assert store.question_counts(SLUG) == store.recount(SLUG)
    finally:
        store.close()


def test_report_columns_are_held_too(db_path, batches):
    rng = np.random.default_rng(3)
    columns = [rng.integers(0, 2, size=(8, 1)), rng.integers(0, 3, size=(8, 1))]
    store = Store(db_path)
    try:
        store.add_report_columns(SLUG, batches["hash"], columns)
        assert store.release_state(SLUG)["released"] == 6
        assert store.question_counts(SLUG) == store.recount(SLUG)
    finally:
        store.close()


def test_held_responses_freeze_the_design(db_path, batches):
    with_store(db_path, lambda store: store.add_response(SLUG, batches["hash"], answers(batches, 1)[0]))
    changed = TOML.replace("Your diet?", "What do you eat?")
    with pytest.raises(StoreError, match="already has responses"):
        with_store(db_path, lambda store: store.create_survey(changed, build_design(parse_definition_toml(changed)),
                                                              replace=True))


def test_releasing_held_responses_early_is_recorded(db_path, batches):
    store = Store(db_path)
    try:
        store.add_responses(SLUG, batches["hash"], answers(batches, 5))
        store.close_survey(SLUG)
        assert store.release_state(SLUG)["held"] == 2, "closing releases nothing"
        assert store.release_held(SLUG) == 2
        assert store.release_state(SLUG) == {"every": 3, "released": 5, "held": 0, "smallest_release": 2}
        assert store.question_counts(SLUG) == store.recount(SLUG)
        assert store.release_held(SLUG) == 0
    finally:
        store.close()


def test_test_answers_are_not_held(db_path, batches):
    store = Store(db_path)
    try:
        store.add_responses(SLUG, batches["hash"], answers(batches, 1), source="test")
        assert store.sandbox_counts(SLUG)["test"] == 1
        assert store.release_state(SLUG)["held"] == 0
    finally:
        store.close()


def _post(client, design, report):
    return client.post(f"/s/{SLUG}/responses", json={"design": design["hash"], "answers": report})


def _without_tokens(page: str) -> str:
    """Return a page without its per-request CSRF tokens and its count of held responses (the release notice)."""
    page = re.sub(r'<p class="muted" id="release-notice">.*?</p>', "", page, flags=re.S)
    return re.sub(r'(name="csrf_token" type="hidden" value="|name="csrf-token" content=")[^"]*"', r"\1", page)


def _views(app, design) -> dict:
    """Return everything a researcher can read about the survey: pages, CSVs and API answers (the parts that count)."""
    client = signed_in(app, *OWNER)
    page = client.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    figures = re.search(r'<section class="findings".*?</section>\s*</section>', page, re.S)
    views = {
        "page": figures.group(0) if figures else page,
        "aggregates.csv": client.get(f"/surveys/{SLUG}/results.csv").get_data(as_text=True),
        "responses.csv": client.get(f"/surveys/{SLUG}/responses.csv").get_data(as_text=True),
        "crosstab": _without_tokens(client.get(f"/surveys/{SLUG}/crosstab?a=smoker&b=diet").get_data(as_text=True)),
    }
    store = Store(app.config["DATABASE"])
    try:
        _, token = store.create_token(OWNER[0])
    finally:
        store.close()
    api = app.test_client()
    headers = {"Authorization": f"Bearer {token}"}
    results = api.get(f"/api/surveys/{SLUG}/results", headers=headers).get_json()
    views["api"] = json.dumps(results["rows"], sort_keys=True)
    views["api-crosstab"] = json.dumps(api.get(f"/api/surveys/{SLUG}/crosstab?a=smoker&b=diet",
                                               headers=headers).get_json()["rows"], sort_keys=True)
    views["api-responses"] = api.get(f"/api/surveys/{SLUG}/responses.csv", headers=headers).get_data(as_text=True)
    views["release"] = results["release"]
    return views


def test_nothing_a_researcher_reads_shows_a_partial_batch(app, batches):
    respondent = app.test_client()
    reports = answers(batches, 6, seed=9)
    empty = _views(app, batches)
    for report in reports[:2]:
        assert _post(respondent, batches, report).status_code == 201
        now = _views(app, batches)
        assert {k: v for k, v in now.items() if k != "release"} == \
            {k: v for k, v in empty.items() if k != "release"}
    assert now["release"]["held"] == 2 and now["release"]["released"] == 0 and now["release"]["to_go"] == 1
    assert _post(respondent, batches, reports[2]).status_code == 201
    first = _views(app, batches)
    assert first["release"]["released"] == 3 and first["release"]["held"] == 0
    assert len(list(csv.reader(io.StringIO(first["responses.csv"])))) == 1 + 3
    assert first["aggregates.csv"] != empty["aggregates.csv"]
    for report in reports[3:5]:
        _post(respondent, batches, report)
        now = _views(app, batches)
        assert {k: v for k, v in now.items() if k != "release"} == \
            {k: v for k, v in first.items() if k != "release"}
    _post(respondent, batches, reports[5])
    assert _views(app, batches)["release"]["released"] == 6


def test_the_results_page_says_what_is_released_and_its_central_epsilon(app, batches):
    respondent = app.test_client()
    for report in answers(batches, 4):
        _post(respondent, batches, report)
    page = signed_in(app, *OWNER).get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    section = re.search(r'<section id="releases".*?</section>', page, re.S).group(0)
    central = release_view(batches, released=3, held=1).central_epsilon
    assert central == batch_epsilon(batches["epsilon_spent"], 3)
    assert 0 <= central - central_epsilon(batches["epsilon_spent"], 3) < 1e-4
    assert "3 responses released so far; 1 more have arrived" in section.replace("\n", " ")
    assert "2 to go" in section
    assert 'value="1"' in section and 'max="3"' in section
    assert "Whoever runs the server sees each report as it arrives" in section


def test_the_owner_releases_early_after_confirming(app, batches):
    respondent = app.test_client()
    for report in answers(batches, 2):
        _post(respondent, batches, report)
    owner = signed_in(app, *OWNER)
    page = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    token = re.search(r'id="release-csrf" name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    asked = owner.post(f"/surveys/{SLUG}/release", data={"csrf_token": token})
    assert asked.status_code == 302 and "confirm=release" in asked.headers["Location"]
    assert with_store(app.config["DATABASE"], lambda store: store.release_state(SLUG))["held"] == 2
    confirm = owner.get(asked.headers["Location"]).get_data(as_text=True)
    assert "Releasing the 2 held responses now, fewer than 3" in confirm
    done = owner.post(f"/surveys/{SLUG}/release", data={"csrf_token": token, "confirm": "yes"})
    assert done.status_code == 302
    state = with_store(app.config["DATABASE"], lambda store: store.release_state(SLUG))
    assert (state["released"], state["held"], state["smallest_release"]) == (2, 0, 2)
    assert "One release was made early with a batch of 2 responses, too few to amplify" in owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)


def test_a_collaborator_cannot_release_early(app, batches):
    _post(app.test_client(), batches, answers(batches, 1)[0])
    other = signed_in(app, *OTHER)
    page = other.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "held response" not in page
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    other.post(f"/surveys/{SLUG}/release", data={"csrf_token": token, "confirm": "yes"})
    assert with_store(app.config["DATABASE"], lambda store: store.release_state(SLUG))["held"] == 1


def test_an_archived_survey_releases_nothing_early(app, batches, db_path):
    _post(app.test_client(), batches, answers(batches, 1)[0])
    with_store(db_path, lambda store: store.archive_survey(SLUG))
    with pytest.raises(StoreError, match="archived and read-only"):
        with_store(db_path, lambda store: store.release_held(SLUG))
    owner = signed_in(app, *OWNER)
    page = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "release-csrf" not in page, "no early-release button on an archived survey"
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    refused = owner.post(f"/surveys/{SLUG}/release", data={"csrf_token": token, "confirm": "yes"}, follow_redirects=True)
    assert refused.status_code == 200 and "archived and read-only" in refused.get_data(as_text=True)
    assert with_store(db_path, lambda store: store.release_state(SLUG))["held"] == 1


def test_an_outsider_cannot_release(app, batches, db_path):
    with_store(db_path, lambda store: store.add_user("third@example.org", generate_password_hash("third password")))
    third = signed_in(app, "third@example.org", "third password")
    assert third.post(f"/surveys/{SLUG}/release", data={"confirm": "yes"}).status_code == 404


def test_the_respondent_page_says_who_sees_what(client, batches):
    page = client.get(f"/s/{SLUG}").get_data(as_text=True)
    note = re.search(r'<p id="release-note">(.*?)</p>', page, re.S).group(1)
    assert note == release_note(batches)
    assert "only totals over at least 3 people" in note
    immediate = build_design(parse_definition_toml(TOML.replace("release_every = 3", "release_every = 1")))
    assert "each time a set of answers arrives" in release_note(immediate)


def test_the_release_command_shows_and_releases(db_path, batches, cli_runner):
    with_store(db_path, lambda store: store.add_responses(SLUG, batches["hash"], answers(batches, 4)))
    shown = cli_runner.invoke(main, ["--db", str(db_path), "release", SLUG])
    assert shown.exit_code == 0, shown.output
    assert "3 responses released so far; 1 more have arrived" in shown.output
    refused = cli_runner.invoke(main, ["--db", str(db_path), "release", SLUG, "--now"], input="n\n")
    assert refused.exit_code == 1 and "fewer than 3" in refused.output
    assert with_store(db_path, lambda store: store.release_state(SLUG))["held"] == 1
    done = cli_runner.invoke(main, ["--db", str(db_path), "release", SLUG, "--now", "--yes"])
    assert done.exit_code == 0 and "Released 1 held response of batches" in done.output
    assert with_store(db_path, lambda store: store.release_state(SLUG))["released"] == 4


def test_create_says_how_results_are_released(db_path, cli_runner, tmp_path):
    path = tmp_path / "survey.toml"
    path.write_text(TOML.replace("release_every = 3\n", ""), encoding="utf-8")
    result = cli_runner.invoke(main, ["--db", str(db_path), "create", str(path)])
    assert result.exit_code == 0, result.output
    assert (f"Releases: every 370 responses, so readers of the results get central ε = "
            f"{format_epsilon(central_epsilon(2.0, 370))} (δ = 10⁻⁶)") in result.output


def test_the_codebook_records_the_release(app, batches):
    codebook = signed_in(app, *OWNER).get(f"/surveys/{SLUG}/codebook.json").get_json()
    assert codebook["release"]["every"] == 3
    assert codebook["release"]["central_epsilon"] == batch_epsilon(batches["epsilon_spent"], 3)
    assert "received_day is the day of a response's release" in codebook["files"]["responses"]


def test_the_docs_table_of_default_steps_is_the_planners():
    from conftest import REPO

    text = (REPO / "docs" / "explanation" / "released-results.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([\d.]+) \| ([\d,]+) \| ([\d.]+) \|$", text, re.M)
    assert len(rows) == 7
    for local, step, central in rows:
        assert default_release_every(float(local)) == int(step.replace(",", ""))
        assert format_epsilon(central_epsilon(float(local), int(step.replace(",", "")))) == central


@pytest.mark.parametrize("page", ["crosstab", "regression"])
def test_the_analysis_pages_say_they_read_released_responses(app, batches, page):
    respondent = app.test_client()
    for report in answers(batches, 4):
        _post(respondent, batches, report)
    text = signed_in(app, *OWNER).get(f"/surveys/{SLUG}/{page}").get_data(as_text=True)
    notice = re.search(r'<p class="muted" id="release-notice">(.*?)</p>', text, re.S).group(1)
    assert "From the 3 released responses; 1 more are held until 3 have arrived (2 to go)." in notice
