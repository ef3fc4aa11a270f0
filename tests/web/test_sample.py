"""Sample allocation end to end: each respondent answers m of the k questions at ε/m (Arcolezi et al. 2021).

The design, the server's refusal of any other set of questions (storing nothing), per-question n in
the store, estimates and their coverage from seeded simulations (tolerances from the variance), the
crosstab of respondents who answered both questions (and the plain refusal when m = 1), the exports
and the respondent page. The browser half is in tests/browser/test_browser_sample.py.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from werkzeug.security import generate_password_hash

from survey.core import codec
from survey.core.aggregate import aggregate_counts
from survey.cli import main
from survey.exports.codebook import codebook, response_columns
from survey.core.crosstab import crosstab
from survey.core.definition import DefinitionError, parse_definition, parse_definition_toml
from survey.core.design import build_design, design_hash
from survey.core.mechanisms.common import rr_epsilon
from survey.core.planning import plan_allocation
from survey.core.simulate import complete_truth, parse_given, parse_truth, simulate_answers, simulate_reports
from survey.store import Store

from conftest import command_line, domain_report, released_at_once, stored_count

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ATHLETES = EXAMPLES / "athletes.toml"
SLUG = "athletes-2026"
Z_TOLERANCE = 4.5


def yes_no_survey(k: int, m: int, epsilon: float, slug: str = "sampled") -> dict:
    """Return the design of k yes/no questions q0..q{k-1} under sample allocation with m per respondent."""
    return build_design(parse_definition({
        "slug": slug, "title": "Sampled", "epsilon": epsilon, "allocation": "sample", "sample": m, "release_every": 1,
        "questions": [{"id": f"q{i}", "kind": "yes_no", "text": f"Question {i}?"} for i in range(k)]}))


def athletes_text() -> str:
    """Return examples/athletes.toml released after every response."""
    return released_at_once(ATHLETES.read_text(encoding="utf-8"))


def athletes_design() -> dict:
    return build_design(parse_definition_toml(athletes_text(), source=str(ATHLETES)))


ATHLETES_QUESTIONS = {q["id"]: q for q in athletes_design()["questions"]}


def report(qid: str, pick: int):
    """Return a report to an athletes question in its output domain (source is a subset selection: bits)."""
    return domain_report(ATHLETES_QUESTIONS[qid], pick)


def counts_of(design: dict, columns, asked) -> dict:
    """Return question_counts-style (n, ones) per question from simulated columns, counting asked rows only."""
    return {question["id"]: (int(asked[:, i].sum()), codec.tally(question, words[asked[:, i]]).tolist())
            for i, (question, words) in enumerate(zip(design["questions"], columns))}


# The design


def test_each_question_is_randomized_at_epsilon_over_m_and_the_m_costliest_fit_the_budget():
    design = athletes_design()
    assert design["allocation"] == "sample" and design["sample"] == 2
    for question in design["questions"]:
        assert question["epsilon_nominal"] <= 0.5 and question["epsilon_nominal"] == pytest.approx(0.5, abs=1e-15)
        assert question["epsilon"] <= question["epsilon_nominal"]
    realised = sorted((question["epsilon"] for question in design["questions"]), reverse=True)
    assert design["epsilon_spent"] == pytest.approx(realised[0] + realised[1], abs=1e-12)
    assert design["epsilon_spent"] <= design["epsilon"]
    # The multi question pays one RR's epsilon when it sends one drawn option's bit (sampled), else d
    # per-option epsilons (rr); the planner sees the same budgets.
    multi = next(q for q in design["questions"] if q["kind"] == "multi")
    if multi["mechanism"] == "sampled":
        assert "epsilon_per_option" not in multi
        assert multi["epsilon"] == pytest.approx(float(rr_epsilon(multi["flip_threshold"])), rel=1e-12)
    else:
        assert multi["mechanism"] == "rr"
        assert multi["epsilon_per_option"] * len(multi["options"]) == pytest.approx(multi["epsilon"], rel=1e-12)
    plan = plan_allocation(parse_definition_toml(ATHLETES.read_text(encoding="utf-8")), sample=2,
                           respondents=1000, margin=0.05)
    assert [(q.id, q.mechanism, q.epsilon) for q in plan.questions] == [
        (q["id"], q["mechanism"], q["epsilon"]) for q in design["questions"]]


@pytest.mark.parametrize("epsilon, m", [(1.0, 1), (3.0, 2), (7.0, 3), (0.01, 4)])
def test_the_realised_total_never_exceeds_the_budget(epsilon, m):
    design = yes_no_survey(5, m, epsilon)
    realised = sorted((Decimal(q["epsilon"]) for q in design["questions"]), reverse=True)[:m]
    assert sum(realised) <= Decimal(epsilon)
    assert design["epsilon_spent"] <= epsilon


def test_the_hash_covers_the_sample_size():
    two, three = yes_no_survey(5, 2, 2.0), yes_no_survey(5, 3, 3.0)
    assert two["hash"] == design_hash(two) and three["hash"] == design_hash(three)
    tampered = {**two, "sample": 3}
    assert design_hash(tampered) != two["hash"]
    split = build_design(parse_definition({"slug": "s", "title": "S", "epsilon": 1.0, "questions": [
        {"id": "a", "kind": "yes_no", "text": "A?"}]}))
    assert "sample" not in split and split["allocation"] == "split"


def test_unequal_weights_are_refused_and_equal_weights_change_nothing():
    base = {"slug": "w", "title": "W", "epsilon": 1.0, "allocation": "sample", "sample": 1,
            "questions": [{"id": "a", "kind": "yes_no", "text": "A?"}, {"id": "b", "kind": "yes_no", "text": "B?"}]}
    with pytest.raises(DefinitionError) as info:
        build_design(parse_definition({**base, "questions": [base["questions"][0],
                                                             {**base["questions"][1], "weight": 3}]}))
    assert info.value.question == "b" and info.value.field == "weight"
    assert 'only under allocation = "split"' in str(info.value)
    equal = build_design(parse_definition({**base, "questions": [{**q, "weight": 2} for q in base["questions"]]}))
    plain = build_design(parse_definition(base))
    assert [q["epsilon"] for q in equal["questions"]] == [q["epsilon"] for q in plain["questions"]]


# The server


def post(client, body, slug=SLUG):
    """POST a submission as the respondent page does: JSON, no cookie, no token."""
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.post(f"/s/{slug}/responses", data=data, content_type="application/json")


@pytest.fixture
def athletes(db_path) -> dict:
    design = athletes_design()
    store = Store(db_path)
    try:
        store.create_survey(athletes_text(), design)
    finally:
        store.close()
    return design



REPORTS = {"doping": 1, "missed_test": 0, "supplements": report("supplements", 1), "source": report("source", 3),
           "hours": 1, "pressure": 0}


@pytest.mark.parametrize("answers, field, fragment", [
    ({"doping": 1}, "answers", "exactly 2 of the 6 questions of this survey, got reports to 1"),
    ({}, "answers", "got reports to 0"),
    ({"doping": 1, "pressure": 0, "hours": 1}, "answers", "got reports to 3"),
    (REPORTS, "answers", "got reports to 6"),
    ({"doping": 1, "nope": 0}, "nope", "'nope' is not a question of this survey"),
    ({"doping": 1, "smoker": 0}, "smoker", "'smoker' is not a question of this survey"),
    ({"doping": 1, "source": [1, 1, 1, 0, 0]}, "source", "exactly 2 values equal to 1 (a subset of that size)"),
    ({"doping": 1, "source": 3}, "source", "a list of 5 values"),
    ({"doping": 1, "supplements": [1, 0, 1, 0, 0]}, "supplements", "at most one value equal to 1"),
    ({"doping": 1, "supplements": [1, 0]}, "supplements", "a list of 5 values"),
])
def test_the_server_refuses_any_other_set_of_questions_and_stores_nothing(client, db_path, athletes, answers,
                                                                          field, fragment):
    response = post(client, {"design": athletes["hash"], "answers": answers})
    assert response.status_code == 400 and response.is_json, response.get_data(as_text=True)
    assert response.json["field"] == field and fragment in response.json["error"], response.json
    assert stored_count(db_path, SLUG) == 0


def test_a_repeated_question_is_refused(client, db_path, athletes):
    raw = '{"design": "%s", "answers": {"doping": 1, "doping": 0}}' % athletes["hash"]
    response = post(client, raw)
    assert response.status_code == 400 and response.json["field"] == "doping"
    assert "more than once" in response.json["error"]
    assert stored_count(db_path, SLUG) == 0


def test_a_sampled_response_stores_null_for_the_others_and_counts_per_question(client, db_path, athletes):
    for answers in ({"doping": 1, "supplements": report("supplements", 2)}, {"doping": 0, "hours": 1},
                    {"source": report("source", 2), "pressure": 1}):
        assert post(client, {"design": athletes["hash"], "answers": answers}).status_code == 201
    store = Store(db_path)
    try:
        counts = store.question_counts(SLUG)
        assert counts == store.recount(SLUG)
        responses = [r["answers"] for r in store.iter_responses(SLUG)]
    finally:
        store.close()
    assert {qid: n for qid, (n, _) in counts.items()} == {
        "doping": 2, "missed_test": 0, "supplements": 1, "source": 1, "hours": 1, "pressure": 1}
    assert counts["doping"][1] == [1] and counts["supplements"][1] == report("supplements", 2)
    assert counts["source"][1] == report("source", 2)
    assert sorted(map(sorted, responses)) == [["doping", "hours"], ["doping", "supplements"], ["pressure", "source"]]


def test_split_surveys_still_need_every_question(client, db_path, smoking_survey):
    response = post(client, {"design": smoking_survey["hash"], "answers": {"smoker": 1}}, slug="smoking-2026")
    assert response.status_code == 400 and response.json["field"] == "lung_disease"


# Estimates


def test_simulated_respondents_answer_m_questions_drawn_uniformly():
    design = yes_no_survey(5, 2, 1.0)
    rng = np.random.default_rng(11)
    truth = complete_truth(design, {}, rng)
    columns, asked = simulate_reports(design, truth, 50_000, rng)
    assert (asked.sum(axis=1) == 2).all()
    pairs = np.bincount(np.packbits(asked, axis=1, bitorder="little")[:, 0], minlength=32)
    observed = pairs[pairs > 0]
    assert len(observed) == 10
    expected = 50_000 / 10
    assert abs(observed - expected).max() < Z_TOLERANCE * math.sqrt(expected * 0.9)
    answers = simulate_answers(design, truth, 300, rng)
    assert {len(answer) for answer in answers} == {2}


def test_each_estimate_uses_its_own_n_and_lies_within_tolerance_of_the_truth():
    design = athletes_design()
    rng = np.random.default_rng(2026)
    truth = complete_truth(design, {}, rng)
    n = 60_000
    columns, asked = simulate_reports(design, truth, n, rng)
    rows = aggregate_counts(design, counts_of(design, columns, asked))
    by_question = {}
    for row in rows:
        by_question.setdefault(row.question, []).append(row)
    k, m = 6, 2
    for index, question in enumerate(design["questions"]):
        own = int(asked[:, index].sum())
        assert abs(own - n * m / k) < Z_TOLERANCE * math.sqrt(n * m / k * (1 - m / k))
        value = truth[question["id"]]
        targets = value if isinstance(value, tuple) else (value,)
        for row, target in zip(by_question[question["id"]], targets):
            assert row.n == own
            assert abs(row.estimate - target) < Z_TOLERANCE * row.std_error, (row, target)


def test_intervals_cover_with_each_questions_own_n():
    """400 seeded surveys of 1,500 respondents answering 2 of 4 yes/no questions at ε = 2: coverage ≥ 93% each."""
    design = yes_no_survey(4, 2, 2.0)
    truth = {"q0": 0.1, "q1": 0.35, "q2": 0.5, "q3": 0.8}
    rng = np.random.default_rng(7)
    covered = np.zeros(4)
    reps = 400
    for _ in range(reps):
        columns, asked = simulate_reports(design, truth, 1500, rng)
        for index, row in enumerate(aggregate_counts(design, counts_of(design, columns, asked))):
            covered[index] += row.ci_low <= truth[row.question] <= row.ci_high
    coverage = covered / reps
    assert (coverage >= 0.93).all(), coverage


def test_create_simulate_aggregate_the_athletes_example_within_4_standard_errors(cli_runner, db_path):
    run = command_line(db_path, cli_runner)
    run("create", ATHLETES)
    out = run("simulate", SLUG, "--n", 40_000, "--seed", 9)
    truth = dict(line.split("=", 1) for line in out.split("Truth used:\n")[1].strip().splitlines())
    rows = json.loads(run("aggregate", SLUG, "--format", "json", "--sandbox"))  # simulate writes to the sandbox
    design = athletes_design()
    kinds = {q["id"]: q for q in design["questions"]}
    ns = {}
    for row in rows:
        values = [float(v) for v in truth[row["question"]].split(",")]
        question = kinds[row["question"]]
        target = values[question["options"].index(row["option"])] if question["kind"] in ("choice", "multi") \
            else values[0]
        assert abs(row["estimate"] - target) < 4 * row["std_error"], (row, target)
        ns[row["question"]] = row["n"]
    assert sum(ns.values()) == 2 * 40_000, "every respondent answered exactly 2 questions"
    assert all(abs(n - 40_000 / 3) < Z_TOLERANCE * math.sqrt(40_000 * 2 / 9) for n in ns.values())


# Crosstabs


def test_a_crosstab_of_an_m_2_survey_uses_the_respondents_who_answered_both(db_path):
    definition = {"slug": "pairs", "title": "Pairs", "epsilon": 3.0, "allocation": "sample", "sample": 2, "release_every": 1,
                  "questions": [{"id": qid, "kind": "yes_no", "text": f"{qid}?"} for qid in ("a", "b", "c")]}
    design = build_design(parse_definition(definition))
    store = Store(db_path)
    try:
        store.create_survey(json.dumps(definition), design)
        rng = np.random.default_rng(5)
        truth = complete_truth(design, parse_truth(design, ["a=0.4", "c=0.5"]), rng)
        given = parse_given(design, ["b|a=1:0.5", "b|a=0:0.1"])
        n = 90_000
        columns, asked = simulate_reports(design, truth, n, rng, given=given)
        store.add_report_columns("pairs", design["hash"], columns, asked=asked)
        words_a, words_b, counts = store.joint_reports("pairs", "a", "b")
    finally:
        store.close()
    questions = {q["id"]: q for q in design["questions"]}
    table = crosstab(questions["a"], questions["b"], words_a, words_b, counts)
    both = int((asked[:, 0] & asked[:, 1]).sum())
    assert table.n == both
    assert abs(both - n / 3) < Z_TOLERANCE * math.sqrt(n / 3 * 2 / 3)
    cells = {("yes", "yes"): 0.2, ("yes", "no"): 0.2, ("no", "yes"): 0.06, ("no", "no"): 0.54}
    for (a_option, b_option), target in cells.items():
        row = table.get("joint", a_option, b_option)
        assert abs(row.estimate - target) < 4 * row.std_error, (row, target)
    row = table.get("b_given_a", "yes", "yes")
    assert abs(row.estimate - 0.5) < 4 * row.std_error


ONE_OF_THREE = """slug = "one-of-three"
title = "One of three"
epsilon = 1.0
allocation = "sample"
sample = 1

[[questions]]
id = "a"
kind = "yes_no"
text = "A?"

[[questions]]
id = "b"
kind = "yes_no"
text = "B?"

[[questions]]
id = "c"
kind = "yes_no"
text = "C?"
"""
EMAIL, PASSWORD = "sample@example.org", "sampled questions"


@pytest.fixture
def one_of_three(db_path):
    design = build_design(parse_definition_toml(ONE_OF_THREE))
    store = Store(db_path)
    try:
        store.add_user(EMAIL, generate_password_hash(PASSWORD))
        store.create_survey(ONE_OF_THREE, design, owner=EMAIL)
        store.add_responses("one-of-three", design["hash"], [{"a": 1}, {"b": 0}, {"c": 1}])
        token = store.create_token(EMAIL)[1]
    finally:
        store.close()
    return token


def test_with_m_1_the_cli_api_and_page_say_no_crosstab_can_exist(cli_runner, client, db_path, one_of_three):
    result = cli_runner.invoke(main, ["--db", str(db_path), "crosstab", "one-of-three", "a", "b"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert result.stderr.startswith("Error:") and "no respondent answered two questions" in result.stderr

    api = client.get("/api/surveys/one-of-three/crosstab?a=a&b=b", headers={"Authorization": f"Bearer {one_of_three}"})
    assert api.status_code == 400 and api.is_json and "sample = 1" in api.json["error"]

    page = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    assert client.post("/login", data={"csrf_token": token, "email": EMAIL, "password": PASSWORD}).status_code == 302
    chosen = client.get("/surveys/one-of-three/crosstab?a=a&b=b")
    assert chosen.status_code == 400
    assert "no respondent answered two questions" in chosen.get_data(as_text=True)
    blank = client.get("/surveys/one-of-three/crosstab")
    assert blank.status_code == 200 and "this survey has no crosstabs" in blank.get_data(as_text=True)
    assert client.get("/surveys/one-of-three/crosstab.csv?a=a&b=b").status_code == 400
    results = client.get("/surveys/one-of-three/results").get_data(as_text=True)
    assert "Each respondent answered 1 of the 3 questions" in results


# Exports and pages


def test_exports_leave_questions_not_asked_empty_and_the_codebook_says_so(db_path, athletes):
    store = Store(db_path)
    try:
        store.add_responses(SLUG, athletes["hash"], [{"doping": 1, "hours": 0},
                                                  {"source": report("source", 4), "pressure": 1}])
        responses = list(store.iter_responses(SLUG))
    finally:
        store.close()
    from survey.exports.export import responses_csv

    rows = list(csv.DictReader(io.StringIO(responses_csv(athletes, responses))))
    # A bit-list report (source, a subset selection) fills one column per option.
    question_of = {column["name"]: column["question"] for column in response_columns(athletes)}
    for row in rows:
        filled = {question_of[name] for name, value in row.items() if value != "" and name in question_of}
        assert filled in ({"doping", "hours"}, {"source", "pressure"})
    book = codebook(athletes)
    assert book["allocation"] == "sample" and book["sample"] == 2
    assert "asked 2 of the 6 questions" in book["files"]["responses"]


def test_the_respondent_page_says_why_only_some_questions_are_shown(client, athletes):
    page = client.get(f"/s/{SLUG}").get_data(as_text=True)
    assert "Each person answers 2 of the 6 questions, chosen at random on your device" in page
    assert "Your privacy loss stays at most ε = 1 in total" in page
    assert "After seeing all that this page sends, they can be at most 74% sure" in page
    fieldsets = re.findall(r"<fieldset\b[^>]*>", page)
    assert len(fieldsets) == 6 and all(re.search(r"\shidden\b", tag) for tag in fieldsets)


def test_the_sample_note_counts_the_answered_questions_and_says_nothing_when_all_are_asked():
    from survey.core.explain import sample_note

    design = yes_no_survey(5, 2, 1.0)
    assert "Each person answers 2 of the 5 questions" in sample_note(design)
    assert "ε′ = 0.5 each" in sample_note(design)
    assert sample_note(yes_no_survey(3, 3, 1.0)) is None
    assert sample_note(build_design(parse_definition_toml((EXAMPLES / "smoking.toml").read_text()))) is None


def test_whole_column_simulation_refuses_a_sampled_design():
    from survey.core.simulate import TruthError, simulate_columns

    design = yes_no_survey(3, 1, 1.0)
    with pytest.raises(TruthError, match="simulate_reports"):
        simulate_columns(design, {f"q{i}": 0.5 for i in range(3)}, 10, np.random.default_rng(0))
