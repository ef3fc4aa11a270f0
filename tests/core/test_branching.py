"""Display logic without leakage: show_if is validated, designed and hashed; estimates among those it applies to.

The statistical checks are seeded simulations through the Python mirror of the browser: the
estimates among those a question applies to lie within 4 standard errors of the simulated truth
on 50,000 respondents, and their intervals cover the truth at least at their level over 400
seeded repetitions (the interval is a guaranteed one: survey/core/conditional_shares.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from survey.core import codec
from survey.core.aggregate import QuestionCounts, aggregate_counts, rows_to_csv
from survey.core.branching import NOT_APPLICABLE_LABEL
from survey.core.conditional_shares import conditional_option, is_conditional
from survey.core.definition import DefinitionError, load_definition, parse_definition, parse_definition_toml
from survey.core.definition_check import definition_errors
from survey.core.definition_toml import dump_definition
from survey.core.design import build_design
from survey.core.simulate import parse_truth, simulate_answers, simulate_reports

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "smoking-branched.toml"


def survey(*questions, **fields):
    return {"slug": "b", "title": "B", "epsilon": 3.0, "questions": list(questions), **fields}


SMOKER = {"id": "smoker", "kind": "yes_no", "text": "Smoke?"}
KIND = {"id": "kind", "kind": "choice", "text": "Kind?", "options": ["Filter", "Rolled", "Other"]}


def branched(**fields):
    return {"id": "cigs", "kind": "number", "text": "A day?", "min": 0, "max": 40,
            "show_if": {"question": "smoker", "equals": "yes"}, **fields}


# ---- the definition ------------------------------------------------------------------------------

def test_show_if_takes_one_option_or_a_list_and_round_trips_through_toml():
    defn = parse_definition(survey(SMOKER, KIND, branched(show_if={"question": "kind", "equals": ["Filter", "Rolled"]}),
                                   {"id": "quit", "kind": "yes_no", "text": "Quit?",
                                    "show_if": {"question": "smoker", "equals": "yes"}}))
    assert defn.questions[2].show_if == ("kind", ("Filter", "Rolled"))
    assert defn.questions[3].show_if == ("smoker", ("yes",))
    assert parse_definition_toml(dump_definition(defn)) == defn


def test_a_branched_choice_gains_does_not_apply_last_after_decline():
    defn = parse_definition(survey(SMOKER, {**KIND, "decline": True, "show_if": {"question": "smoker", "equals": "yes"}}))
    assert defn.questions[1].options == ("Filter", "Rolled", "Other", "Prefer not to say", NOT_APPLICABLE_LABEL)
    assert parse_definition_toml(dump_definition(defn)) == defn


@pytest.mark.parametrize("show_if, message", [
    ({"question": "later", "equals": "yes"}, "must name an earlier question"),
    ({"question": "cigs", "equals": "yes"}, "must name an earlier question"),
    ({"question": "smoker", "equals": "maybe"}, "'maybe', which is not an option of 'smoker'"),
    ({"question": "kind", "equals": ["Filter", "Cigar"]}, "'Cigar', which is not an option of 'kind'"),
    ({"question": "kind", "equals": ["Filter", "Filter"]}, "names an option twice"),
    ({"question": "kind", "equals": []}, "non-empty list"),
    ({"question": "kind"}, "exactly the fields question and equals"),
    ({"question": "kind", "equals": "Filter", "when": 1}, "exactly the fields question and equals"),
    ("smoker", "must be a table"),
])
def test_show_if_errors_name_the_question_the_field_and_the_bad_value(show_if, message):
    with pytest.raises(DefinitionError) as caught:
        parse_definition(survey(SMOKER, KIND, branched(show_if=show_if),
                                {"id": "later", "kind": "yes_no", "text": "L?"}))
    assert caught.value.question == "cigs" and caught.value.field == "show_if"
    assert message in caught.value.reason


def test_a_question_depends_only_on_a_yes_no_or_choice_question():
    number = {"id": "n", "kind": "number", "text": "N?", "min": 0, "max": 3}
    with pytest.raises(DefinitionError, match="is a number question"):
        parse_definition(survey(number, branched(show_if={"question": "n", "equals": "1"})))


def test_does_not_apply_among_the_options_is_refused():
    with pytest.raises(DefinitionError, match="added by show_if") as caught:
        parse_definition(survey(SMOKER, {**KIND, "options": ["a", NOT_APPLICABLE_LABEL],
                                         "show_if": {"question": "smoker", "equals": "yes"}}))
    assert caught.value.field == "options"


def test_the_form_checker_finds_show_if_errors_in_context_and_none_for_a_valid_rule():
    good = survey(SMOKER, KIND, branched(show_if={"question": "kind", "equals": "Other"}))
    assert definition_errors(good) == []
    bad = survey(SMOKER, KIND, branched(show_if={"question": "kind", "equals": "Cigar"}))
    errors = definition_errors(bad)
    assert [(e.question, e.field) for e in errors] == [(2, "show_if")]
    assert "'Cigar'" in errors[0].message


# ---- the design ----------------------------------------------------------------------------------

def test_the_design_declares_the_rule_and_the_value_and_its_hash_covers_them():
    design = build_design(load_definition(EXAMPLE))
    smoker, cigs, quit_ = design["questions"]
    assert "show_if" not in smoker
    assert cigs["show_if"] == {"question": "smoker", "values": [1]} and cigs["not_applicable"] == cigs["min"] == 1
    assert quit_["options"][-1] == NOT_APPLICABLE_LABEL and quit_["not_applicable"] == 3
    text = EXAMPLE.read_text(encoding="utf-8")
    other = build_design(parse_definition_toml(text.replace('equals = ["yes"]', 'equals = ["no"]')))
    assert other["questions"][2]["show_if"]["values"] == [0] and other["hash"] != design["hash"]
    plain = build_design(parse_definition_toml(text.replace(
        'show_if = { question = "smoker", equals = "yes" }', "")))
    assert "show_if" not in plain["questions"][1] and plain["hash"] != design["hash"]


def test_a_branched_yes_no_is_a_three_option_choice_at_the_same_budget():
    design = build_design(parse_definition(survey(SMOKER, {"id": "quit", "kind": "yes_no", "text": "Quit?",
                                                           "show_if": {"question": "smoker", "equals": "no"}})))
    smoker, quit_ = design["questions"]
    assert quit_["kind"] == "choice" and quit_["options"] == ["Yes", "No", NOT_APPLICABLE_LABEL]
    assert quit_["not_applicable"] == 2 and quit_["show_if"] == {"question": "smoker", "values": [0]}
    assert quit_["epsilon"] <= quit_["epsilon_nominal"] == smoker["epsilon_nominal"]
    assert design["epsilon_spent"] <= design["epsilon"]


def test_every_simulated_body_has_every_question_in_both_branches():
    design = build_design(load_definition(EXAMPLE))
    answers = simulate_answers(design, parse_truth(design, ["smoker=0.5", "cigarettes=10", "quit=0.5,0.3,0.2"]),
                               200, np.random.default_rng(3))
    assert {frozenset(answer) for answer in answers} == {frozenset({"smoker", "cigarettes", "quit"})}


# ---- estimates among those it applies to ---------------------------------------------------------

TRUTH = {"smoker": 0.3, "cigarettes": 14.0, "quit": (0.5, 0.3, 0.2)}


def _counts(design, truth, n, rng):
    columns, asked = simulate_reports(design, truth, n, rng)
    counts = {}
    for index, (question, words) in enumerate(zip(design["questions"], columns)):
        rows = slice(None) if asked is None else asked[:, index]
        counts[question["id"]] = QuestionCounts(n=int(words[rows].shape[0]), ones=codec.tally(question, words[rows]))
    return counts


def _applied(rows):
    return {(row.question, row.option): row for row in rows if is_conditional(row.option)}


def _expected():
    return {("cigarettes", conditional_option("")): TRUTH["cigarettes"],
            **{("quit", conditional_option(label)): share
               for label, share in zip(["No", "Once", "More than once"], TRUTH["quit"])}}


@pytest.mark.parametrize("allocation", [{}, {"allocation": "sample", "sample": 2}])
def test_estimates_among_those_it_applies_to_are_within_4_se_of_the_truth_on_50000(allocation):
    text = EXAMPLE.read_text(encoding="utf-8")
    if allocation:
        text = text.replace('epsilon = 3.0', 'epsilon = 3.0\nallocation = "sample"\nsample = 2')
    design = build_design(parse_definition_toml(text))
    rows = aggregate_counts(design, _counts(design, TRUTH, 50_000, np.random.default_rng(2026)))
    applied = _applied(rows)
    assert set(applied) == set(_expected())
    for key, truth in _expected().items():
        row = applied[key]
        assert abs(row.estimate - truth) <= 4 * row.std_error, (key, row.estimate, truth, row.std_error)
        assert row.ci_low <= truth <= row.ci_high
    share = {row.option: row for row in rows if row.question == "quit"}[NOT_APPLICABLE_LABEL]
    assert abs(share.estimate - (1 - TRUTH["smoker"])) <= 4 * share.std_error


def test_applied_rows_follow_their_question_in_the_csv():
    design = build_design(load_definition(EXAMPLE))
    rows = aggregate_counts(design, _counts(design, TRUTH, 2000, np.random.default_rng(5)))
    lines = rows_to_csv(rows).splitlines()
    options = [line.split(",")[:2] for line in lines[1:]]
    assert options == [["smoker", "yes"], ["cigarettes", ""], ["cigarettes", "(among those it applies to)"],
                       ["quit", "No"], ["quit", "Once"], ["quit", "More than once"], ["quit", NOT_APPLICABLE_LABEL],
                       ["quit", "No (among those it applies to)"], ["quit", "Once (among those it applies to)"],
                       ["quit", "More than once (among those it applies to)"]]


@pytest.mark.slow
def test_the_intervals_among_those_it_applies_to_cover_the_truth_over_400_repetitions():
    """Coverage of the guaranteed intervals: at least the level, less a 4-SE allowance for 400 repetitions."""
    design = build_design(load_definition(EXAMPLE))
    rng = np.random.default_rng(400)
    reps, level = 400, 0.95
    hits = {key: 0 for key in _expected()}
    for _ in range(reps):
        applied = _applied(aggregate_counts(design, _counts(design, TRUTH, 3000, rng), level=level))
        for key, truth in _expected().items():
            hits[key] += applied[key].ci_low <= truth <= applied[key].ci_high
    allowance = 4 * math.sqrt(level * (1 - level) / reps)
    for key, count in hits.items():
        assert count / reps >= level - allowance, (key, count / reps)


def test_the_interval_check_can_fail_when_the_truth_is_off():
    """The coverage check is not vacuous: the intervals exclude a truth 0.3 away on 50,000 respondents."""
    design = build_design(load_definition(EXAMPLE))
    applied = _applied(aggregate_counts(design, _counts(design, TRUTH, 50_000, np.random.default_rng(8))))
    row = applied[("quit", conditional_option("No"))]
    assert not row.ci_low <= TRUTH["quit"][0] + 0.3 <= row.ci_high


def test_the_codebook_describes_each_row_among_those_it_applies_to_and_its_recipe_recomputes_it():
    from survey.exports.codebook import codebook

    design = build_design(load_definition(EXAMPLE))
    book = codebook(design)
    rows = aggregate_counts(design, _counts(design, TRUTH, 4000, np.random.default_rng(11)))
    applied = [row for row in rows if is_conditional(row.option)]
    assert [(e["question"], e["option"]) for e in book["applied_estimands"]] == [(r.question, r.option) for r in applied]
    assert [(e["question"], e["option"]) for e in book["estimands"]] == [
        (r.question, r.option) for r in rows if not is_conditional(r.option)]
    own = {row.option: row for row in rows if row.question == "quit" and not is_conditional(row.option)}
    na = own[NOT_APPLICABLE_LABEL]
    for row in applied[1:]:
        base = own[row.option.removesuffix(" (among those it applies to)")]
        assert row.estimate == pytest.approx(base.estimate / (1 - na.estimate), abs=1e-12)
        assert row.ci_low == pytest.approx(max(0.0, base.ci_low / (1 - na.ci_low)), abs=1e-12)
        assert row.ci_high == pytest.approx(min(1.0, base.ci_high / (1 - na.ci_high)), abs=1e-12)


def _lower_bound_epsilon(samples: dict, outputs: int, alpha: float = 1e-6) -> float:
    """Return max over input pairs and outputs of ln(CP lower of P(y | a) / CP upper of P(y | a′)), Bonferroni over all."""
    from scipy.stats import beta

    pairs = [(a, b) for a in samples for b in samples if a != b]
    level = alpha / (2 * len(pairs) * outputs)
    best = -math.inf
    for a, b in pairs:
        ca, cb = np.bincount(samples[a], minlength=outputs), np.bincount(samples[b], minlength=outputs)
        na, nb = ca.sum(), cb.sum()
        for y in range(outputs):
            if ca[y] == 0:
                continue
            low = beta.ppf(level, ca[y], na - ca[y] + 1)
            high = 1.0 if cb[y] == nb else beta.ppf(1 - level, cb[y] + 1, nb - cb[y])
            best = max(best, math.log(low / high))
    return best


@pytest.mark.parametrize("qid", ["cigarettes", "quit"])
def test_the_python_mirror_of_a_branched_question_leaks_no_more_than_its_epsilon(qid):
    """Audit (Jagielski, Ullman & Oprea 2020): reports of the hidden branch, made through the simulator's
    "does not apply" path, against the shown answers; the Clopper–Pearson lower bound on ε stays at most ε′."""
    from survey.core.branching import hide_not_applicable
    from survey.core.mechanisms import mechanism_for, randomize_question

    design = build_design(load_definition(EXAMPLE))
    entry = next(q for q in design["questions"] if q["id"] == qid)
    rng = np.random.default_rng(99)
    n = 100_000
    shown = [entry["min"], entry["max"]] if entry["kind"] == "number" else list(range(len(entry["options"]) - 1))
    samples = {}
    for answer in shown:
        samples[answer] = randomize_question(entry, np.full(n, answer), rng)
    hidden = hide_not_applicable(entry, np.full(n, shown[-1]), np.zeros(n, dtype=np.int64))  # a non-smoker
    assert (hidden == entry["not_applicable"]).all()
    samples["does not apply"] = randomize_question(entry, hidden, rng)
    outputs = mechanism_for(entry).highest + 1
    bound = _lower_bound_epsilon({key: np.asarray(value) for key, value in samples.items()}, outputs)
    assert bound <= entry["epsilon"], (bound, entry["epsilon"])
    assert bound > 0.2 * entry["epsilon"], "the audit has power"
