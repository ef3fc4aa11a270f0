"""The planner: worst-case margins and respondents needed, checked against closed forms and simulation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from survey.cli import main
from survey.core.definition import parse_definition
from survey.core.design import build_design, response_probabilities
from survey.core import mechanisms as mech
from survey.core.mechanisms.hybrid import debias_hybrid_mean, hybrid_scores, hybrid_worst_variance, randomize_hybrid
from survey.core.mechanisms.piecewise import (debias_piecewise_mean, piecewise_epsilon, piecewise_ratio,
                                              piecewise_worst_variance, randomize_piecewise)
from survey.core.mechanisms.warner import debias_rr
from survey.core.mechanisms.common import TWO53, randomize_rr, rr_flip_threshold
from survey.core.planning import (half_width, level_half_width, level_reports_needed, plan, plan_allocation,
                                  plan_question, posterior_bound, reports_needed)

# Respondents a yes/no question needs for a worst-case 95% margin h under Warner's randomized
# response: z²/(4h²tanh²(ε/2)), the non-private n inflated by 1/tanh²(ε/2).
PUBLISHED = {0.5: [1602, 6405, 17789, 40026, 160101], 1: [450, 1799, 4997, 11243, 44971],
             2: [166, 663, 1840, 4140, 16558], 4: [104, 414, 1149, 2584, 10334]}
MARGINS = [0.10, 0.05, 0.03, 0.02, 0.01]


def rr(epsilon: float) -> tuple[float, float]:
    flip = rr_flip_threshold(epsilon=epsilon) / TWO53
    return 1 - flip, flip


@pytest.mark.parametrize("epsilon", sorted(PUBLISHED))
def test_binary_respondents_match_the_closed_form(epsilon):
    p, q = rr(epsilon)
    assert [reports_needed(p, q, h) for h in MARGINS] == PUBLISHED[epsilon]
    closed = [1.959963984540054 ** 2 / (4 * h * h * math.tanh(epsilon / 2) ** 2) for h in MARGINS]
    assert [math.ceil(value) for value in closed] == PUBLISHED[epsilon]


def test_the_planned_margin_is_the_realised_clopper_pearson_half_width():
    """At θ = 1/2 (the worst case) the mean half-width of 400 simulated intervals matches the plan within 2%."""
    epsilon, n = 1.0, 4000
    p, q = rr(epsilon)
    rng = np.random.default_rng(5)
    threshold = rr_flip_threshold(epsilon=epsilon)
    widths = []
    for _ in range(400):
        reports = randomize_rr((rng.random(n) < 0.5).astype(np.int64), flip_threshold=threshold, rng=rng)
        estimate = debias_rr(int(reports.sum()), n, flip=q, level=0.95)
        widths.append((estimate.ci_high - estimate.ci_low) / 2)
    assert np.mean(widths) == pytest.approx(half_width(p, q, n), rel=0.02)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism, duchi_ratio", [("hybrid", 4.91), ("piecewise", 4.46)])
def test_the_planned_margin_of_a_level_number_is_its_realised_half_width(mechanism, duchi_ratio):
    """Half the answers at min, half at max (the planner's worst population): 400 simulated intervals match the plan.

    A population's n·Var is E[V(x)] + Var(x): the noise of each report and the spread of the
    answers, which the ends make largest (1/4 on the [0, 1] scale), as an indicator's worst
    case λ(1 − λ) holds both. The hybrid is what a definition forces here (the design's own choice at
    epsilon 4 is the optimal piecewise mechanism, planned alike in the conformance suite); a piecewise
    question (as older designs hold) is planned alike. The design itself compares mechanisms
    by their worst single answer, where Duchi's variance is 4.9 (hybrid) or 4.5 (PM) times
    theirs (Wang et al. 2019).
    """
    epsilon = 4
    defn = parse_definition({"slug": "pw", "title": "PW", "epsilon": epsilon, "questions": [
        {"id": "income", "kind": "number", "text": "Income?", "min": 0, "max": 250, "mechanism": "hybrid"}]})
    question = build_design(defn)["questions"][0]
    assert question["mechanism"] == "hybrid"
    if mechanism == "piecewise":
        a, b = piecewise_ratio(epsilon=epsilon)
        question = {**question, "mechanism": "piecewise", "ratio_a": a, "ratio_b": b, "bins": a + b,
                    "epsilon": float(piecewise_epsilon(a, b))}
        del question["levels"]
        planned = plan_question(question, respondents=2000, margin=0.02)
    else:
        planned = plan_allocation(defn, sample=None, respondents=2000, margin=0.02).questions[0]
    a, b = question["ratio_a"], question["ratio_b"]
    randomizer = mech.mechanism_for(question)
    assert randomizer.worst_population() == pytest.approx({0.0: 0.5, 1.0: 0.5})
    rng = np.random.default_rng(8)
    answers = rng.choice(np.array([0, 250]), size=(400, 2000))
    if mechanism == "hybrid":
        scores = np.array(hybrid_scores(a, b), dtype=np.int64)[
            randomize_hybrid(answers, lo=0, hi=250, ratio_a=a, ratio_b=b, rng=rng)]
        estimates = [debias_hybrid_mean(int(row.sum()), int((row * row).sum()), 2000, ratio_a=a, ratio_b=b, lo=0,
                                        hi=250, level=0.95, variance=randomizer.report_variance_range())
                         for row in scores]
    else:
        levels = randomize_piecewise(answers, lo=0, hi=250, ratio_a=a, ratio_b=b, rng=rng)
        estimates = [debias_piecewise_mean(int(row.sum()), int((row * row).sum()), 2000, ratio_a=a, ratio_b=b,
                                           lo=0, hi=250, level=0.95,
                                           variance=randomizer.report_variance_range()) for row in levels]
    worst = randomizer.worst_variance()
    assert worst == pytest.approx(randomizer.variance_at(0) + 0.25, rel=1e-9)
    widths = [(e.ci_high - e.ci_low) / 2 / 250 for e in estimates]
    assert np.mean(widths) == pytest.approx(planned.half_width, rel=0.02)
    # The interval valid at every n is wider than the normal one, by less than the factor 2 measured at worst.
    normal = 1.959963984540054 * math.sqrt(worst / 2000)
    assert planned.half_width == pytest.approx(level_half_width(randomizer, 2000))
    assert normal < planned.half_width < 2 * normal
    needed = level_reports_needed(randomizer, 0.02)
    assert planned.respondents == needed
    assert level_half_width(randomizer, needed) <= 0.02 < level_half_width(randomizer, needed - 1)
    single = hybrid_worst_variance(a, b) if mechanism == "hybrid" else piecewise_worst_variance(a, b)
    assert randomizer.answer_worst_variance() == single
    duchi = half_width(*rr(float(epsilon)), 2000)
    assert (duchi ** 2 / (1.959963984540054 ** 2 * single / 2000)) == pytest.approx(duchi_ratio, rel=0.01)


def test_choice_margins_are_simultaneous_and_sampling_scales_respondents():
    defn = parse_definition({"slug": "plan", "title": "Plan", "epsilon": 2, "questions": [
        {"id": "a", "kind": "yes_no", "text": "A?"},
        {"id": "b", "kind": "choice", "text": "B?", "options": ["x", "y", "z", "w"]},
        {"id": "c", "kind": "number", "text": "C?", "min": 0, "max": 10}]})
    split = plan_allocation(defn, sample=None, respondents=1000, margin=0.05)
    design = build_design(defn)
    choice = split.questions[1]
    p, q = response_probabilities(design["questions"][1])
    assert choice.simultaneous_over == 4
    assert choice.respondents == reports_needed(p, q, 0.05, simultaneous_over=4) > reports_needed(p, q, 0.05)
    assert [question.epsilon for question in split.questions] == [q["epsilon"] for q in design["questions"]]
    one = plan_allocation(defn, sample=1, respondents=1000, margin=0.05)
    p1, q1 = rr(2.0)
    assert one.questions[0].respondents == math.ceil(reports_needed(p1, q1, 0.05) * 3)
    assert one.questions[0].half_width == pytest.approx(half_width(p1, q1, 1000 / 3))
    with pytest.raises(ValueError, match="sample must be from 1 to 3"):
        plan_allocation(defn, sample=4, respondents=1000, margin=0.05)


def test_the_recommendation_needs_the_fewest_respondents():
    many = parse_definition({"slug": "many", "title": "Many", "epsilon": 1, "questions": [
        {"id": f"q{i}", "kind": "yes_no", "text": f"Q{i}?"} for i in range(5)]})
    result = plan(many)
    needs = {(a["allocation"], a["sample"]): a["respondents"] for a in result["allocations"]}
    best = result["recommended"]
    assert needs[best["allocation"], best["sample"]] == min(needs.values())
    # Five yes/no questions at ε = 1: one sampled question at full ε beats splitting ε/5 five ways.
    assert best == {"allocation": "sample", "sample": 1}
    assert needs["split", None] > 4 * needs["sample", 1]


def test_posterior_bound_in_plain_words():
    assert [round(posterior_bound(e), 2) for e in (0.29, 0.57, 1, 2, 4)] == [0.57, 0.64, 0.73, 0.88, 0.98]


def test_plan_command_table_and_json(cli_runner, smoking_toml):
    table = cli_runner.invoke(main, ["plan", str(smoking_toml)])
    assert table.exit_code == 0, table.output
    assert "split: needs" in table.stdout and "Recommended: allocation" in table.stdout
    result = cli_runner.invoke(main, ["plan", str(smoking_toml), "--margin", "0.03", "--format", "json"])
    data = json.loads(result.stdout)
    assert set(data["recommended"]) == {"allocation", "sample"} and data["margin"] == 0.03
    first = data["allocations"][0]
    assert first["allocation"] == "split" and first["sample"] is None
    assert set(first["questions"][0]) >= {"id", "mechanism", "epsilon", "half_width", "respondents"}
    both = cli_runner.invoke(main, ["plan", str(smoking_toml), "--margin", "0.03", "--respondents", "10"])
    assert both.exit_code == 2 and "not both" in both.stderr


def test_plan_table_columns_line_up_whatever_the_mechanisms_name(cli_runner, tmp_path):
    definition = tmp_path / "names.toml"
    definition.write_text('slug = "names"\ntitle = "Names"\nepsilon = 4\n'
                          '[[questions]]\nid = "a"\nkind = "yes_no"\ntext = "A?"\n'
                          '[[questions]]\nid = "b"\nkind = "number"\ntext = "B?"\nmin = 0\nmax = 9\n'
                          'mechanism = "piecewise"\n', encoding="utf-8")
    table = cli_runner.invoke(main, ["plan", str(definition)])
    assert table.exit_code == 0, table.output
    rows = [line for line in table.stdout.splitlines() if "  epsilon " in line]
    assert {row.split()[1] for row in rows} == {"rr", "piecewise"}
    assert len({row.index("  epsilon ") for row in rows}) == 1


def test_create_prints_the_precision_and_warns_when_protection_is_nominal(cli_runner, tmp_path):
    definition = tmp_path / "high.toml"
    definition.write_text('slug = "high"\ntitle = "High"\nepsilon = 10\n'
                          '[[questions]]\nid = "a"\nkind = "yes_no"\ntext = "A?"\n'
                          '[[questions]]\nid = "b"\nkind = "yes_no"\ntext = "B?"\nweight = 0.25\n', encoding="utf-8")
    result = cli_runner.invoke(main, ["--db", str(tmp_path / "h.db"), "create", str(definition)])
    assert result.exit_code == 0, result.output
    p, q = rr(8.0)
    p_b, q_b = rr(2.0)
    needed = max(reports_needed(p, q, 0.05), reports_needed(p_b, q_b, 0.05))
    assert f"Precision: {needed:,} respondents give every estimate a 95% margin of ±0.05" in result.stdout
    assert "Warning: 'a' has epsilon 8: someone who thought an answer 50/50 can be 99.97% sure" in result.stderr
    assert "'b'" not in result.stderr


@pytest.mark.slow
def test_respondents_for_an_odds_ratio_give_the_planned_power_of_the_crosstabs_interval():
    """At the planned n, 400 simulated crosstabs' guaranteed odds-ratio intervals exclude 1 as often as planned.

    The power is that of the product's own interval (from the two conditional shares' intervals
    that hold at every n), not of a Wald interval: 400 runs give it a standard error of about
    0.02, so the tolerance is 0.08. The log odds ratio's descriptive spread is as predicted too.
    """
    from survey.core import codec
    from survey.core.crosstab import crosstab
    from survey.core.mechanisms import randomize_question
    from survey.core.crosstab_planning import (log_odds_ratio_variance, odds_ratio_cells, odds_ratio_power,
                                               respondents_for_odds_ratio)

    defn = parse_definition({"slug": "or", "title": "OR", "epsilon": 4, "questions": [
        {"id": "a", "kind": "yes_no", "text": "A?"}, {"id": "b", "kind": "yes_no", "text": "B?"}]})
    qa, qb = build_design(defn)["questions"]
    cells = odds_ratio_cells(0.3, 0.2, 2.5)
    population = dict(share_a=0.3, share_b_without_a=0.2, odds_ratio=2.5)
    n = respondents_for_odds_ratio(qa, qb, **population)
    assert 2_000 < n < 4_000
    rng = np.random.default_rng(8)
    true = rng.choice(4, size=400 * n, p=cells)
    words_a = codec.encode_column(qa, randomize_question(qa, true // 2, rng))
    words_b = codec.encode_column(qb, randomize_question(qb, true % 2, rng))
    logs, excluded = [], 0
    for rep in range(400):
        part = slice(rep * n, (rep + 1) * n)
        pairs, counts = np.unique(np.hstack([words_a[part], words_b[part]]), axis=0, return_counts=True)
        row = crosstab(qa, qb, pairs[:, :1], pairs[:, 1:], counts).get("odds_ratio", "", "")
        excluded += row.ci_low > 1 or (row.ci_high is not None and row.ci_high < 1)
        if row.estimate is not None:
            logs.append(math.log(row.estimate))
    planned_sd = math.sqrt(log_odds_ratio_variance(qa, qb, cells) / n)
    assert len(logs) >= 390
    # The spread of 400 log odds ratios has a relative standard error of about 1/sqrt(800) = 3.5%.
    assert np.std(logs) == pytest.approx(planned_sd, rel=0.15)
    power = odds_ratio_power(qa, qb, respondents=n, **population)
    assert abs(excluded / 400 - power) < 0.08 and abs(excluded / 400 - 0.8) < 0.08
    assert power >= 0.8 > odds_ratio_power(qa, qb, respondents=n - 1, **population)
    # Half as many respondents: the plan and the product's interval both lose most of their power.
    assert odds_ratio_power(qa, qb, respondents=n // 2, **population) < 0.4
    # An odds ratio below 1 is planned alike (the interval's upper end below 1).
    below = dict(share_a=0.3, share_b_without_a=0.2, odds_ratio=1 / 2.5)
    assert odds_ratio_power(qa, qb, respondents=respondents_for_odds_ratio(qa, qb, **below), **below) >= 0.8
    with pytest.raises(ValueError, match="two yes/no questions"):
        log_odds_ratio_variance(qa, {**qb, "kind": "number", "id": "x"}, cells)
    with pytest.raises(ValueError, match="two yes/no questions"):
        odds_ratio_power(qa, {**qb, "kind": "number", "id": "x"}, respondents=n, **population)
    with pytest.raises(ValueError, match="not 1"):
        odds_ratio_cells(0.3, 0.2, 1.0)
    with pytest.raises(ValueError, match="too close to 1"):
        respondents_for_odds_ratio(qa, qb, share_a=0.3, share_b_without_a=0.2, odds_ratio=1.0001)


def test_plan_command_odds_ratio(cli_runner, smoking_toml):
    from survey.core.definition import load_definition
    from survey.core.crosstab_planning import odds_ratio_power, respondents_for_odds_ratio

    args = ["plan", str(smoking_toml), "--odds-ratio", "smoker", "lung_disease", "3", "--shares", "0.22", "0.06"]
    result = cli_runner.invoke(main, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    detect = json.loads(result.stdout)["odds_ratio"]
    design = build_design(load_definition(smoking_toml))
    questions = {question["id"]: question for question in design["questions"]}
    assert detect["respondents"] == respondents_for_odds_ratio(questions["smoker"], questions["lung_disease"],
                                                               share_a=0.22, share_b_without_a=0.06, odds_ratio=3)
    assert detect["at_respondents"] == 1000 and detect["power_at_respondents"] == pytest.approx(odds_ratio_power(
        questions["smoker"], questions["lung_disease"], share_a=0.22, share_b_without_a=0.06, odds_ratio=3,
        respondents=1000))
    table = cli_runner.invoke(main, args).stdout
    assert f"{detect['respondents']:,} respondents" in table
    assert f"at 1,000 respondents the power is {detect['power_at_respondents']:.1%}" in table
    wrong = cli_runner.invoke(main, ["plan", str(smoking_toml), "--odds-ratio", "smoker", "age", "3"])
    assert wrong.exit_code == 2 and "two yes/no questions" in wrong.stderr
    unknown = cli_runner.invoke(main, ["plan", str(smoking_toml), "--odds-ratio", "smoker", "nope", "3"])
    assert unknown.exit_code == 2 and "'nope' is not a question" in unknown.stderr
