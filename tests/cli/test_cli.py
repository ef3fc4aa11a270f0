"""CLI tests (click CliRunner): every command, its output formats and its one-line user errors."""

from __future__ import annotations

import csv
import gc
import io
import json
import math
from pathlib import Path
import socket
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from werkzeug.security import check_password_hash

from survey.core.mechanisms.hybrid import hybrid_variance
from survey.core.mechanisms.opm import opm_variance
from survey.core.aggregate import aggregate, rows_to_csv
from survey.cli import main
from survey.cli.operations import DEMO_EMAIL
from survey.core.definition import parse_definition_toml
from survey.core.design import build_design, response_probabilities
from survey.core.simulate import draw_true_values, parse_truth
from survey.core.words import format_epsilon
from survey.store import Store

from conftest import free_port

SLUG = "smoking-2026"
HEADER = ("question,option,kind,mechanism,epsilon,n,noisy_share,estimate,std_error,ci_low,ci_high,ci_level,ci_kind,"
          "ci_planned,consistent,consistent_low,consistent_high")
COMMANDS = [[], ["create"], ["serve"], ["demo"], ["simulate"], ["aggregate"], ["crosstab"], ["plan"], ["export"], ["backup"], ["share"], ["user"],
            ["user", "add"], ["user", "passwd"], ["user", "list"], ["user", "remove"]]
LIFECYCLE = ["publish", "close", "reopen", "duplicate", "delete"]
COMMANDS += [[command] for command in LIFECYCLE]
COMMANDS += [["invite"], ["interview"], ["migrate"], ["check"]]

# A survey whose choice question is large enough for OUE and which has a multi question,
# so every report shape (index, 0/1, bit list) goes through the CLI.
MIXED_TOML = """
slug = "mixed"
title = "Every report shape"
epsilon = 1.2

[[questions]]
id = "pet"
kind = "choice"
text = "Favourite pet?"
options = ["cat", "dog", "fish", "bird", "horse", "rabbit", "snake", "none"]

[[questions]]
id = "sports"
kind = "multi"
text = "Which sports do you play?"
options = ["run", "swim", "ride"]

[[questions]]
id = "owner"
kind = "yes_no"
text = "Do you own a pet?"
"""


@pytest.fixture
def run(cli_runner, db_path):
    """Invoke ldp-survey on the test database with optional stdin."""

    def invoke(*args, input=None):
        return cli_runner.invoke(main, ["--db", str(db_path), *map(str, args)], input=input)

    return invoke


@pytest.fixture
def mixed_toml(tmp_path):
    """Write the mixed survey's definition and return its path."""
    path = tmp_path / "mixed.toml"
    path.write_text(MIXED_TOML, encoding="utf-8")
    return path


def ok(result):
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def assert_user_error(result, code, *fragments):
    """A user error exits with ``code``, prints a message naming the problem and no traceback."""
    assert result.exit_code == code, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.stderr.startswith(("Error:", "Usage:")), result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def stored_design(db_path, slug=SLUG):
    """Return a survey's design and the answers of its sandbox (where `simulate` puts its respondents)."""
    store = Store(db_path)
    try:
        return store.get_design(slug), [response["answers"] for response in store.iter_responses(slug, sandbox=True)]
    finally:
        store.close()


def add_real_response(db_path, slug=SLUG):
    """Store one real response, as the respondent page would (a simulated one is not real)."""
    from survey.core.simulate import complete_truth, simulate_answers

    store = Store(db_path)
    try:
        design = store.get_design(slug)
        rng = np.random.default_rng(0)
        store.add_responses(slug, design["hash"], simulate_answers(design, complete_truth(design, {}, rng), 1, rng))
    finally:
        store.close()


# Help and version


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "main")
def test_every_command_has_help_with_examples(cli_runner, command):
    result = ok(cli_runner.invoke(main, [*command, "--help"]))
    assert result.stdout.startswith("Usage: ")
    assert "Examples:" in result.stdout


def test_command_list_shows_untruncated_one_line_summaries(cli_runner):
    listing = ok(cli_runner.invoke(main, ["--help"])).stdout.split("Commands:")[1]
    lines = [line.strip() for line in listing.strip().splitlines()]
    assert {line.split()[0] for line in lines} == set(LIFECYCLE) | {"aggregate", "analyze", "backup", "archive", "check", "codebook", "create", "crosstab", "delete-on", "demo", "export", "interview", "invite", "uninvite", "list", "mail", "migrate", "plan", "purge", "release",
                                                   "qr", "regress", "revise", "serve",
                                                   "share", "simulate", "token", "unarchive", "user"}
    assert not [line for line in lines if line.endswith("...")]


def test_db_option_documents_env_var_and_default(cli_runner):
    text = ok(cli_runner.invoke(main, ["--help"])).stdout
    assert "LDP_SURVEY_DB" in text and "ldp-survey.db" in text


def test_db_comes_from_the_environment(cli_runner, tmp_path, smoking_toml):
    db = tmp_path / "from-env.db"
    ok(cli_runner.invoke(main, ["create", str(smoking_toml)], env={"LDP_SURVEY_DB": str(db)}))
    assert Store(db).survey_exists(SLUG)


def test_version(cli_runner):
    assert ok(cli_runner.invoke(main, ["--version"])).stdout.startswith("ldp-survey, version 0.")


@pytest.mark.slow
def test_python_dash_m_survey_runs_the_cli():
    result = subprocess.run([sys.executable, "-m", "survey", "--help"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: ldp-survey ")


# create


def test_create_stores_definition_and_prints_design(run, db_path, smoking_toml):
    result = ok(run("create", smoking_toml))
    design, _ = stored_design(db_path)
    for question in design["questions"]:
        line = next(line for line in result.stdout.splitlines() if line.split()[:1] == [question["id"]])
        assert question["mechanism"] in line.split()
        assert f"epsilon {format_epsilon(question['epsilon'], 6)}" in line
    assert f"{format_epsilon(design['epsilon_spent'], 6)} spent of 2" in result.stdout
    assert f"/s/{SLUG}" in result.stdout
    assert Store(db_path).get_definition(SLUG) == smoking_toml.read_text(encoding="utf-8")


def test_create_makes_a_sample_survey_and_prints_its_allocation_and_the_recommendation(run, db_path, smoking_toml):
    from survey.core.planning import plan

    athletes = Path(__file__).resolve().parents[2] / "examples" / "athletes.toml"
    result = run("create", athletes)
    assert result.exit_code == 0, result.output
    assert "Each respondent answers 2 of the 6 questions" in result.stdout
    best = plan(parse_definition_toml(athletes.read_text(encoding="utf-8")))["recommended"]
    assert best == {"allocation": "sample", "sample": 1}
    assert 'Recommended allocation: allocation = "sample", sample = 1 needs' in result.stdout
    assert Store(db_path).get_design("athletes-2026")["sample"] == 2


def test_create_names_file_question_and_field_of_a_bad_definition(run, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(MIXED_TOML.replace('options = ["run", "swim", "ride"]', "options = []"), encoding="utf-8")
    assert_user_error(run("create", bad), 1, str(bad), "'sports'", "'options'")


def test_create_rejects_invalid_toml_and_missing_file(run, tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("slug = \n", encoding="utf-8")
    assert_user_error(run("create", broken), 1, "broken.toml", "not valid TOML")
    assert_user_error(run("create", tmp_path / "absent.toml"), 2, "absent.toml")


def test_create_duplicate_slug_needs_replace_and_replace_needs_no_responses(run, db_path, smoking_toml):
    ok(run("create", smoking_toml))
    assert_user_error(run("create", smoking_toml), 1, "already exists", "--replace")
    ok(run("create", smoking_toml, "--replace"))
    ok(run("simulate", SLUG, "--n", 5, "--seed", 1))
    ok(run("create", smoking_toml, "--replace"))  # simulated respondents do not freeze the design
    add_real_response(db_path)
    assert_user_error(run("create", smoking_toml, "--replace"), 1, "frozen")


def test_lifecycle_draft_publish_close_reopen_duplicate_delete(run, db_path, smoking_toml):
    created = ok(run("create", smoking_toml, "--draft")).stdout
    assert f"ldp-survey publish {SLUG}" in created
    assert_user_error(run("close", SLUG), 1, "cannot close", "it is a draft", "published")
    # A draft can be simulated (into its sandbox): its design stays unfrozen.
    assert "sandbox" in ok(run("simulate", SLUG, "--n", 5, "--seed", 1)).stdout
    ok(run("create", smoking_toml, "--replace"))  # a draft is replaced freely, and stays a draft
    assert "Published" in ok(run("publish", SLUG)).stdout
    assert_user_error(run("publish", SLUG), 1, "it is open", "can be closed")
    assert_user_error(run("create", smoking_toml, "--replace", "--draft"), 1, "cannot become a draft")
    ok(run("simulate", SLUG, "--n", 5, "--seed", 1))
    assert "Closed" in ok(run("close", SLUG)).stdout
    ok(run("simulate", SLUG, "--n", 5, "--seed", 3))  # the sandbox takes simulations in any status
    assert_user_error(run("delete", SLUG, "--yes"), 1, "only a draft can be deleted")
    ok(run("reopen", SLUG))
    ok(run("simulate", SLUG, "--n", 5, "--seed", 2))
    assert_user_error(run("reopen", SLUG), 1, "cannot reopen", "it is open")
    assert_user_error(run("publish", "nope"), 1, "no survey with slug 'nope'")

    assert "draft smoking-copy" in ok(run("duplicate", SLUG, "smoking-copy")).stdout
    assert_user_error(run("duplicate", SLUG, "smoking-copy"), 1, "already exists")
    assert_user_error(run("duplicate", SLUG, "Bad Slug"), 1, "'slug'")
    store = Store(db_path)
    try:
        copy = {s["slug"]: s for s in store.list_surveys()}["smoking-copy"]
        assert copy["status"] == "draft" and copy["responses"] == 0
        assert store.get_definition("smoking-copy") == store.get_definition(SLUG).replace(
            f'slug = "{SLUG}"', 'slug = "smoking-copy"')
        assert store.get_design("smoking-copy")["hash"] != store.get_design(SLUG)["hash"]
    finally:
        store.close()
    aborted = run("delete", "smoking-copy", input="n\n")
    assert aborted.exit_code == 1 and "Aborted" in aborted.output
    assert "Deleted the draft smoking-copy" in ok(run("delete", "smoking-copy", input="y\n")).stdout
    assert_user_error(run("delete", "smoking-copy", "--yes"), 1, "no survey with slug")


# simulate and aggregate


def test_aggregate_csv_is_byte_for_byte_the_library_output(run, db_path, smoking_survey):
    ok(run("simulate", SLUG, "--n", 3000, "--seed", 7, "--batch", 700))
    design, answers = stored_design(db_path)
    assert len(answers) == 3000
    result = ok(run("aggregate", SLUG, "--format", "csv", "--sandbox"))
    assert result.stdout_bytes == rows_to_csv(aggregate(design, answers)).encode("utf-8")
    assert result.stdout_bytes.split(b"\r\n")[0] == HEADER.encode()
    at_90 = ok(run("aggregate", SLUG, "--format", "csv", "--level", "0.9", "--sandbox")).stdout
    assert at_90 == rows_to_csv(aggregate(design, answers, level=0.9)).replace("\r\n", "\n")
    assert {row["ci_level"] for row in csv.DictReader(io.StringIO(at_90))} == {"0.9"}


def test_aggregate_json_and_table(run, smoking_survey):
    ok(run("simulate", SLUG, "--n", 500, "--seed", 2))
    rows = json.loads(ok(run("aggregate", SLUG, "--format", "json", "--sandbox")).stdout)
    assert [(row["question"], row["option"]) for row in rows] == [
        ("smoker", "yes"), ("lung_disease", "yes"), *(("cigarettes", o) for o in
                                                      smoking_survey["questions"][2]["options"]),
        ("age", "")]
    assert all(set(HEADER.split(",")) <= set(row) and row["n"] == 500 for row in rows)
    table = ok(run("aggregate", SLUG, "--sandbox")).stdout
    assert "95% Clopper-Pearson" in table
    assert all(q["id"] in table for q in smoking_survey["questions"])


@pytest.mark.parametrize("level", ["0", "1", "1.5", "-0.1", "high"])
def test_aggregate_level_must_lie_strictly_between_0_and_1(run, smoking_survey, level):
    assert_user_error(run("aggregate", SLUG, "--level", level), 2, "--level")


def test_simulation_with_a_seed_is_reproducible(cli_runner, tmp_path, smoking_toml):
    outputs = []
    for name in ("a.db", "b.db"):
        db = str(tmp_path / name)
        ok(cli_runner.invoke(main, ["--db", db, "create", str(smoking_toml)]))
        ok(cli_runner.invoke(main, ["--db", db, "simulate", SLUG, "--n", "400", "--seed", "5"]))
        result = ok(cli_runner.invoke(main, ["--db", db, "aggregate", SLUG, "--format", "csv"]))
        outputs.append(result.stdout_bytes)
    assert outputs[0] == outputs[1]


def test_simulate_prints_a_truth_that_truth_accepts_back(run, smoking_survey):
    result = ok(run("simulate", SLUG, "--n", 10, "--seed", 3, "--truth", "cigarettes=6-10"))
    lines = result.stdout.split("Truth used:\n")[1].split()
    truth = parse_truth(smoking_survey, lines)
    assert list(truth) == [q["id"] for q in smoking_survey["questions"]]
    assert truth["cigarettes"] == (0.0, 0.0, 1.0, 0.0, 0.0)
    assert math.isclose(sum(truth["cigarettes"]), 1.0)


def expected_standard_error(question: dict, theta: float, n: int) -> float:
    """Return the SE of one estimate at the design's epsilon: Var = λ(1−λ)/(n(p−q)²), λ = q + θ(p−q).

    A piecewise number (answers lo + Binomial(hi − lo, θ), as simulate draws them) has on t = 2x − 1
    Var = E[t²]·r/(r−1) + (r+3)/(3(r−1)²) − w²/12 − (E t)², r = a/b, w = 2/(a − b) (Wang et al. 2019),
    divided by 4 for the [0, 1] scale (the grid rounding adds under 1/(4a²)). A hybrid or optimal
    piecewise number's is E[Var(x̂ | x)] + Var(x) over the same answers, with its exact variance
    (hybrid_variance, opm_variance).
    """
    if question["mechanism"] in ("hybrid", "opm"):
        span = question["max"] - question["min"]
        weights = [math.comb(span, k) * theta ** k * (1 - theta) ** (span - k) for k in range(span + 1)]
        if question["mechanism"] == "hybrid":
            def variance(x):
                return hybrid_variance(question["ratio_a"], question["ratio_b"], x)
        else:
            def variance(x):
                return opm_variance(question["ratio_a"], question["ratio_b"], question["steps"], question["band"],
                                         x)
        inner = sum(w * float(variance(Fraction(k, span))) for k, w in enumerate(weights))
        return math.sqrt((inner + theta * (1 - theta) / span) / n)
    if question["mechanism"] == "piecewise":
        r = question["ratio_a"] / question["ratio_b"]
        width = 2 / (question["ratio_a"] - question["ratio_b"])
        mean_t = 2 * theta - 1
        square_t = 4 * (theta * (1 - theta) / (question["max"] - question["min"]) + theta ** 2) - 4 * theta + 1
        variance = square_t * r / (r - 1) + (r + 3) / (3 * (r - 1) ** 2) - width ** 2 / 12 - mean_t ** 2
        return math.sqrt(variance / 4 / n)
    p, q = response_probabilities(question)
    lam = q + theta * (p - q)
    return math.sqrt(lam * (1 - lam) / n) / (p - q)


# A high budget gives small standard errors, so a biased simulation cannot hide within 5 of them.
SHARP_TOML = """
slug = "sharp"
title = "High budget"
epsilon = 12.0

[[questions]]
id = "yes"
kind = "yes_no"
text = "Yes?"

[[questions]]
id = "pick"
kind = "choice"
text = "Pick one"
options = ["a", "b", "c", "d"]

[[questions]]
id = "tick"
kind = "multi"
text = "Tick any"
options = ["x", "y", "z"]

[[questions]]
id = "score"
kind = "number"
text = "Score"
min = 0
max = 100
"""

TRUTHS = {
    "smoking": ["smoker=0.3", "lung_disease=0.1", "cigarettes=0.5,0.2,0.15,0.1,0.05", "age=40"],
    "mixed": ["pet=0.3,0.3,0.1,0.1,0.05,0.05,0.05,0.05", "sports=0.6,0.2,0.05", "owner=0.7"],
    "sharp": ["yes=0.35", "pick=0.1,0.2,0.3,0.4", "tick=0.9,0.5,0.15", "score=61.5"],
}
MECHANISMS = {"smoking": {"rr", "ss", "duchi"}, "mixed": {"rr", "ss", "sampled"}, "sharp": {"rr", "grr", "opm"}}


@pytest.mark.parametrize("survey", ["smoking", "mixed", "sharp"])
def test_simulate_truth_is_recovered_within_five_standard_errors(run, db_path, tmp_path, smoking_toml, survey):
    path, slug = smoking_toml, SLUG
    if survey != "smoking":
        path, slug = tmp_path / f"{survey}.toml", survey
        path.write_text({"mixed": MIXED_TOML, "sharp": SHARP_TOML}[survey], encoding="utf-8")
    ok(run("create", path))
    n = 20000
    ok(run("simulate", slug, "--n", n, "--seed", 11, *(f"--truth={t}" for t in TRUTHS[survey])))
    design, _ = stored_design(db_path, slug)
    truth = parse_truth(design, TRUTHS[survey])
    rows = json.loads(ok(run("aggregate", slug, "--format", "json", "--sandbox")).stdout)
    questions = {q["id"]: q for q in design["questions"]}
    mechanisms = set()
    for row in rows:
        question = questions[row["question"]]
        mechanisms.add(question["mechanism"])
        value = truth[question["id"]]
        if question["kind"] in ("choice", "multi"):
            value = value[question["options"].index(row["option"])]
        if question["kind"] == "number":
            lo, hi = question["min"], question["max"]
            se = (hi - lo) * expected_standard_error(question, (value - lo) / (hi - lo), n)
        else:
            se = expected_standard_error(question, value, n)
        assert row["n"] == n
        assert abs(row["estimate"] - value) <= 5 * se, (row, value, se)
        assert math.isclose(row["std_error"], se, rel_tol=0.05), (row, se)
    assert mechanisms == MECHANISMS[survey]


@pytest.mark.parametrize("spec", ["yes=0.35", "pick=0.1,0.2,0.3,0.4", "pick=c", "tick=0.9,0.5,0.15",
                                  "score=61.5", "score=0", "score=100"])
def test_true_answers_follow_the_truth(spec):
    """True answers (before randomization) have the stated shares, and numbers the stated mean."""
    design = build_design(parse_definition_toml(SHARP_TOML))
    [(qid, truth)] = parse_truth(design, [spec]).items()
    question = next(q for q in design["questions"] if q["id"] == qid)
    n = 200_000
    values = draw_true_values(question, truth, n, np.random.default_rng(5))
    if question["kind"] == "number":
        lo, hi = question["min"], question["max"]
        assert values.dtype.kind == "i" and lo <= values.min() and values.max() <= hi
        theta = (truth - lo) / (hi - lo)
        se = math.sqrt((hi - lo) * theta * (1 - theta) / n)
        assert abs(values.mean() - truth) <= 5 * se + 1e-12
        variance = (hi - lo) * theta * (1 - theta)  # Binomial(max - min, theta)
        assert abs(values.var() - variance) <= 5 * variance * math.sqrt(2 / (n - 1)) + 1e-12
        return
    if question["kind"] == "yes_no":
        shares, expected = np.array([values.mean()]), np.array([truth])
    elif question["kind"] == "choice":
        shares, expected = np.bincount(values, minlength=len(truth)) / n, np.array(truth)
    else:
        shares, expected = values.mean(axis=0), np.array(truth)
    assert np.all(np.abs(shares - expected) <= 5 * np.sqrt(expected * (1 - expected) / n) + 1e-12)


@pytest.mark.parametrize("truth, fragments", [
    ("nosuch=0.5", ["'nosuch'", "smoker, lung_disease, cigarettes, age"]),
    ("smoker", ["QUESTION=VALUE"]),
    ("smoker=1.5", ["'smoker'", "[0.0, 1.0]", "'1.5'"]),
    ("smoker=lots", ["'smoker'", "'lots'"]),
    ("cigarettes=0.5,0.5", ["'cigarettes'", "5 comma-separated", "'0.5,0.5'"]),
    ("cigarettes=0.5,0.2,0.2,0.2,0.1", ["'cigarettes'", "sum to 1"]),
    ("cigarettes=seven", ["'cigarettes'", "option label"]),
    ("age=100", ["'age'", "[18, 90]", "'100'"]),
])
def test_simulate_rejects_a_bad_truth(run, smoking_survey, truth, fragments):
    assert_user_error(run("simulate", SLUG, "--n", 10, "--truth", truth), 1, *fragments)


def test_simulate_rejects_a_duplicate_truth(run, smoking_survey):
    assert_user_error(run("simulate", SLUG, "--n", 10, "--truth", "smoker=0.1", "--truth", "smoker=0.2"),
                      1, "twice")


@pytest.mark.parametrize("n", ["0", "-3", "many"])
def test_simulate_needs_at_least_one_respondent(run, smoking_survey, n):
    assert_user_error(run("simulate", SLUG, "--n", n), 2, "--n")


def test_unknown_slug_lists_the_surveys(run, smoking_survey):
    for args in (["simulate", "nope", "--n", 1], ["aggregate", "nope"], ["export", "nope", "--responses"]):
        assert_user_error(run(*args), 1, "'nope'", SLUG)


def test_a_missing_database_is_not_created_by_read_commands(run, db_path):
    assert_user_error(run("aggregate", SLUG), 1, "no database", str(db_path))
    assert not db_path.exists()


def test_a_file_that_is_not_a_database_is_a_user_error(run, db_path):
    db_path.write_bytes(b"this is not sqlite" * 100)
    assert_user_error(run("aggregate", SLUG), 1, str(db_path))


# export


def test_export_responses_has_one_column_per_question_and_one_row_per_response(run, db_path, mixed_toml):
    ok(run("create", mixed_toml))
    ok(run("simulate", "mixed", "--n", 250, "--seed", 4))
    text = ok(run("export", "mixed", "--responses", "--sandbox")).stdout_bytes.decode("utf-8")
    pets = ["cat", "dog", "fish", "bird", "horse", "rabbit", "snake", "none"]
    pet_columns = [f"pet__{pet}" for pet in pets]
    assert text.startswith(",".join(["response_id", "received_day", "source", *pet_columns, "sports__run", "sports__swim",
                                     "sports__ride", "owner"]) + "\r\n")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 250
    assert len({row["response_id"] for row in rows}) == 250
    assert {row["source"] for row in rows} == {"simulated"}
    for row in rows:
        assert {row[column] for column in [*pet_columns, "sports__run", "sports__swim", "sports__ride"]} <= {"0", "1"}
        assert row["owner"] in ("0", "1")
    design, answers = stored_design(db_path, "mixed")
    assert sorted("".join(row[column] for column in pet_columns) for row in rows) == sorted(
        "".join(map(str, a["pet"])) for a in answers)


def test_export_to_a_file_and_aggregates_match_aggregate(run, db_path, smoking_survey, tmp_path):
    ok(run("simulate", SLUG, "--n", 300, "--seed", 9))
    out = tmp_path / "estimates.csv"
    result = ok(run("export", SLUG, "--aggregates", "-o", out, "--level", "0.9", "--sandbox"))
    assert result.stdout == ""
    expected = ok(run("aggregate", SLUG, "--format", "csv", "--level", "0.9", "--sandbox")).stdout_bytes
    assert out.read_bytes() == expected
    scalar = ok(run("export", SLUG, "--responses", "--sandbox")).stdout
    rows = list(csv.DictReader(io.StringIO(scalar)))
    subset = ["cigarettes__none", "cigarettes__1_5", "cigarettes__6_10", "cigarettes__11_20", "cigarettes__more_than_20"]
    assert len(rows) == 300 and all(sum(int(row[name]) for name in subset) == 2 for row in rows)


def test_export_needs_a_choice(run, smoking_survey):
    assert_user_error(run("export", SLUG), 2, "--aggregates, --responses, --codebook or --package")


@pytest.mark.parametrize("flags", [["--responses", "--aggregates"], ["--aggregates", "--codebook"],
                                   ["--codebook", "--responses"], ["--aggregates", "--responses", "--codebook"]])
def test_export_refuses_options_that_cannot_go_together(run, smoking_survey, tmp_path, flags):
    out = tmp_path / "out.csv"
    result = run("export", SLUG, *flags, "-o", out)
    assert_user_error(result, 2, "cannot go together", *flags)
    assert not out.exists()


def test_export_codebook_to_stdout_and_a_file(run, smoking_survey, tmp_path):
    book = json.loads(ok(run("export", SLUG, "--codebook")).stdout)
    assert book["survey"] == SLUG and book["design_hash"] == smoking_survey["hash"]
    assert [column["name"] for column in book["columns"]] == [
        "smoker", "lung_disease", "cigarettes__none", "cigarettes__1_5", "cigarettes__6_10", "cigarettes__11_20",
        "cigarettes__more_than_20", "age"]
    assert len(book["estimands"]) == 1 + 1 + 5 + 1
    out = tmp_path / "codebook.json"
    result = ok(run("export", SLUG, "--codebook", "-o", out))
    assert result.stdout == "" and json.loads(out.read_text(encoding="utf-8")) == book


# user add


def password_ok(db_path, email, password):
    user = Store(db_path).get_user(email)
    return user is not None and check_password_hash(user["password_hash"], password)


def test_user_add_reads_the_password_from_stdin_and_stores_a_hash(run, db_path):
    ok(run("user", "add", "alice@example.org", input="correct horse battery\n"))
    assert password_ok(db_path, "alice@example.org", "correct horse battery")
    assert "correct horse" not in Store(db_path).get_user("alice@example.org")["password_hash"]
    assert_user_error(run("user", "add", "alice@example.org", input="another password\n"), 1,
                      "already exists", "--replace")
    ok(run("user", "add", "alice@example.org", "--replace", input="another password\n"))
    assert password_ok(db_path, "alice@example.org", "another password")


def test_user_add_rejects_a_short_password_and_a_bad_email(run, db_path):
    assert_user_error(run("user", "add", "bob@example.org", input="short\n"), 1, "at least 8", "got 5")
    assert_user_error(run("user", "add", "not-an-email", input="long enough\n"), 2, "'not-an-email'")
    assert Store(db_path).get_user("bob@example.org") is None


# demo and serve


def test_demo_is_idempotent_and_prints_a_working_login(run, db_path):
    first = ok(run("demo", "--no-serve", "--respondents", 300, "--seed", 1, "--port", 8123))
    assert "Simulated 300 respondents" in first.stdout
    assert f"http://127.0.0.1:8123/surveys/{SLUG}/results" in first.stdout
    password = first.stdout.split("Password:")[1].split()[0]
    assert DEMO_EMAIL in first.stdout and password_ok(db_path, DEMO_EMAIL, password)
    second = ok(run("demo", "--no-serve", "--respondents", 300))
    assert "Simulated" not in second.stdout
    assert Store(db_path).received_count(SLUG) == 300
    new_password = second.stdout.split("Password:")[1].split()[0]
    assert new_password != password and password_ok(db_path, DEMO_EMAIL, new_password)
    ok(run("demo", "--no-serve", "--respondents", 350, "--seed", 2))
    assert Store(db_path).received_count(SLUG) == 350


@pytest.fixture
def gunicorn_runs(monkeypatch):
    """Replace the gunicorn run by a recorder; return the recorded EmbeddedGunicorn instances.

    The recorder closes the listening socket handed over as fd://N, as gunicorn would, and
    runs the when_ready hook (which prints the Serving line).
    """
    from survey.web import server

    runs = []

    def run(self):
        [fd] = self.cfg.address
        with socket.socket(fileno=fd) as listener:
            runs.append((self, listener.getsockname(), listener.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)))
        self.cfg.when_ready(None)

    monkeypatch.setattr(server.EmbeddedGunicorn, "run", run)
    return runs


def test_serve_runs_gunicorn_on_the_app_of_the_database(run, db_path, smoking_survey, gunicorn_runs):
    port = free_port()
    result = ok(run("serve", "--port", port, "--workers", 2, "--threads", 3))
    assert result.stdout == f"Serving {db_path} on http://127.0.0.1:{port}/ (press Ctrl+C to stop)\n"
    [(gunicorn, address, listening)] = gunicorn_runs
    assert address == ("127.0.0.1", port) and listening
    cfg = gunicorn.cfg
    assert (cfg.worker_class_str, cfg.workers, cfg.threads) == ("survey.web.buffering.BufferingWorker", 2, 3)
    assert cfg.preload_app and cfg.accesslog is None and cfg.errorlog == "-" and cfg.graceful_timeout == 30
    app = gunicorn.wsgi()
    assert app.config["DATABASE"] == str(db_path)
    assert app.test_client().get(f"/s/{SLUG}/design.json").get_json()["hash"] == smoking_survey["hash"]
    assert app.config["SESSION_COOKIE_SECURE"] is False


def test_serve_defaults_to_one_worker_per_cpu_and_8_threads(run, smoking_survey, gunicorn_runs):
    from survey.web.server import default_workers

    ok(run("serve", "--port", free_port()))
    cfg = gunicorn_runs[0][0].cfg
    assert cfg.workers == default_workers() and 1 <= cfg.workers <= 8 and cfg.threads == 8


def test_serve_https_sends_secure_cookies(run, smoking_survey, gunicorn_runs):
    ok(run("serve", "--https", "--port", free_port()))
    client = gunicorn_runs[0][0].wsgi().test_client()
    cookie = client.get("/login").headers["Set-Cookie"]
    assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert "Set-Cookie" not in client.get(f"/s/{SLUG}").headers, "the respondent page sets no cookie"


def test_demo_serves_like_serve(run, db_path, gunicorn_runs):
    port = free_port()
    result = ok(run("demo", "--respondents", 20, "--seed", 1, "--port", port))
    assert result.stdout.endswith(f"Serving {db_path} on http://127.0.0.1:{port}/ (press Ctrl+C to stop)\n")
    [(gunicorn, address, _)] = gunicorn_runs
    assert address == ("127.0.0.1", port) and gunicorn.cfg.worker_class_str == "survey.web.buffering.BufferingWorker"


MANY_WEIGHTS_TOML = """
slug = "weights"
title = "Uneven weights"
epsilon = 3.0
""" + "".join(f"""
[[questions]]
id = "q{i}"
kind = "{kind}"
text = "Question {i}"
weight = {weight}
{extra}
""" for i, (kind, weight, extra) in enumerate([
    ("yes_no", 0.3, ""), ("choice", 2.5, 'options = ["a", "b", "c"]'),
    ("choice", 0.7, "options = [" + ", ".join(f'"o{j}"' for j in range(30)) + "]"),
    ("multi", 1.9, 'options = ["x", "y", "z", "w"]'), ("number", 0.11, "min = -5\nmax = 1000"),
]))


@pytest.mark.parametrize("name", ["smoking", "mixed", "weights"])
def test_created_designs_spend_at_most_the_budget(run, db_path, tmp_path, smoking_toml, name):
    """Invariant 3: the realised epsilons a respondent spends add up to at most the budget."""
    texts = {"mixed": MIXED_TOML, "weights": MANY_WEIGHTS_TOML}
    path = smoking_toml if name == "smoking" else tmp_path / f"{name}.toml"
    if name != "smoking":
        path.write_text(texts[name], encoding="utf-8")
    ok(run("create", path))
    [survey] = Store(db_path).list_surveys()
    design, _ = stored_design(db_path, survey["slug"])
    spent = math.fsum(q["epsilon"] for q in design["questions"])
    assert spent <= design["epsilon"] * (1 + 1e-12)
    assert math.isclose(design["epsilon_spent"], spent, rel_tol=1e-12)
    assert all(q["epsilon"] <= q["epsilon_nominal"] for q in design["questions"])
    for q in design["questions"]:
        if q["kind"] == "multi" and q["mechanism"] == "rr":
            assert q["epsilon"] == pytest.approx(len(q["options"]) * q["epsilon_per_option"], rel=1e-12)


@pytest.mark.parametrize("command", [["serve"], ["demo", "--respondents", 20]])
def test_serve_on_a_busy_port_is_a_user_error(run, db_path, command):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run(*command, "--port", port)
    assert_user_error(result, 1, f"cannot listen on 127.0.0.1:{port} (Address already in use)", "--port")
    assert result.stdout == ""  # demo checks the port before it does any work
    gc.collect()  # a socket left open would raise its ResourceWarning here
