"""Crosstabs: the indicator-product estimator, its delta-method intervals, and the store path.

The statistical tests draw all repetitions at once: true pairs from a known joint
distribution, randomized by ``survey.core.mechanisms.randomize_question``, encoded by
``survey.core.codec.encode_column`` and grouped per repetition with ``np.unique`` as
``Store.joint_reports`` groups them in SQL. The mean of R estimates must lie within 4
standard errors of the truth (the standard error of the mean from the spread of the R
estimates); the intervals must cover at least 0.95 − 2.33 Monte Carlo standard errors.
"""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pytest

from survey.core import codec
from survey.core.crosstab import (CSV_HEADER, CrosstabError, crosstab, crosstab_to_csv, crosstab_to_json,
                             crosstab_to_table)
from survey.core.definition import parse_definition_toml
from survey.core.design import build_design, response_probabilities
from survey.core.mechanisms.piecewise import piecewise_epsilon, piecewise_ratio
from survey.core.mechanisms import randomize_question
from survey.store import Store

from conftest import definition

REPETITIONS = 150
# The intervals hold at 95% at every n (tests/core/test_crosstab_coverage.py checks them at small n); here
# 150 repetitions allow 0.95 − 2.33 Monte Carlo standard errors.
MIN_COVERAGE = 0.95 - 2.33 * math.sqrt(0.95 * 0.05 / REPETITIONS)
TOLERANCE_SE = 4.0


def make_design(questions: str, epsilon: float) -> dict:
    text = f'slug = "x"\ntitle = "x"\nepsilon = {epsilon}\n' + questions
    return build_design(parse_definition_toml(text, source="test.toml"))


YES_NO_2 = "\n" + definition("smoker_lung")


def choice_yes_no(d: int) -> str:
    options = ", ".join(f'"o{i}"' for i in range(d))
    return f"""
[[questions]]
id = "drink"
kind = "choice"
text = "Drink?"
options = [{options}]
[[questions]]
id = "lung"
kind = "yes_no"
text = "Lung disease?"
"""


NUMBER = """
[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"
[[questions]]
id = "age"
kind = "number"
text = "Age?"
min = 0
max = 10
"""


def as_piecewise(design: dict) -> dict:
    """Return the design with its number question (the second) under the piecewise mechanism, as older designs hold it."""
    question = design["questions"][1]
    a, b = piecewise_ratio(epsilon=question["epsilon_nominal"])
    piecewise = {key: value for key, value in question.items() if key != "levels"}
    piecewise.update(mechanism="piecewise", ratio_a=a, ratio_b=b, bins=a + b, epsilon=float(piecewise_epsilon(a, b)))
    return {**design, "questions": [design["questions"][0], piecewise]}


def simulate(design, true_a, true_b, repetitions, n, rng, *, level=0.95):
    """Return one crosstab per repetition of n respondents with the given true answers."""
    qa, qb = design["questions"]
    words_a = codec.encode_column(qa, randomize_question(qa, true_a, rng))
    words_b = codec.encode_column(qb, randomize_question(qb, true_b, rng))
    tables = []
    for rep in range(repetitions):
        part = slice(rep * n, (rep + 1) * n)
        pairs, counts = np.unique(np.hstack([words_a[part], words_b[part]]), axis=0, return_counts=True)
        wa, wb = pairs[:, :words_a.shape[1]], pairs[:, words_a.shape[1]:]
        tables.append(crosstab(qa, qb, wa, wb, counts, level=level))
    return tables


def draw_pairs(joint: np.ndarray, size: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Draw true (a, b) index pairs from a joint probability table joint[a, b]."""
    flat = rng.choice(joint.size, size=size, p=joint.ravel() / joint.sum())
    return flat // joint.shape[1], flat % joint.shape[1]


def values(tables, measure, a_option, b_option=""):
    return np.array([np.nan if (row := t.get(measure, a_option, b_option)).estimate is None else row.estimate
                     for t in tables])


def assert_unbiased(estimates, truth, label):
    estimates = np.asarray(estimates, dtype=float)
    assert not np.isnan(estimates).any(), label
    se = estimates.std(ddof=1) / math.sqrt(estimates.size)
    assert abs(estimates.mean() - truth) <= TOLERANCE_SE * se, (
        f"{label}: mean {estimates.mean():.5f} vs {truth:.5f} ({abs(estimates.mean() - truth) / se:.2f} SE)")


def coverage(tables, measure, a_option, b_option, truth):
    rows = [t.get(measure, a_option, b_option) for t in tables]
    return np.mean([row.ci_low is not None and row.ci_low <= truth <= (math.inf if row.ci_high is None else row.ci_high)
                    for row in rows])


# Statistical tests


@pytest.mark.slow
def test_yes_no_by_yes_no_cells_conditionals_and_odds_ratio():
    rng = np.random.default_rng(20261122)
    design = make_design(YES_NO_2, 2.0)
    joint = np.array([[0.5, 0.1], [0.15, 0.25]])  # [smoker no/yes, lung no/yes]
    n = 4000
    a, b = draw_pairs(joint, REPETITIONS * n, rng)
    tables = simulate(design, a, b, REPETITIONS, n, rng)
    label = {0: "no", 1: "yes"}
    for i in (0, 1):
        for j in (0, 1):
            assert_unbiased(values(tables, "joint", label[i], label[j]), joint[i, j], f"joint {i}{j}")
            truth = joint[i, j] / joint[i].sum()
            assert coverage(tables, "b_given_a", label[i], label[j], truth) >= MIN_COVERAGE
    odds = joint[0, 0] * joint[1, 1] / (joint[0, 1] * joint[1, 0])
    assert coverage(tables, "odds_ratio", "", "", odds) >= MIN_COVERAGE
    assert all(t.n == n for t in tables)


@pytest.mark.slow
@pytest.mark.parametrize("d", [3, 12])  # generalized RR, then subset selection
def test_choice_by_yes_no(d):
    rng = np.random.default_rng(d)
    design = make_design(choice_yes_no(d), 4.0 if d == 3 else 2.2)
    assert design["questions"][0]["mechanism"] == ("grr" if d == 3 else "ss")
    margin = rng.dirichlet(np.ones(d) * 3)
    disease = np.linspace(0.1, 0.6, d)
    joint = np.column_stack([margin * (1 - disease), margin * disease])
    n = 3000
    a, b = draw_pairs(joint, REPETITIONS * n, rng)
    tables = simulate(design, a, b, REPETITIONS, n, rng)
    for i in range(d):
        assert_unbiased(values(tables, "joint", f"o{i}", "yes"), joint[i, 1], f"joint o{i} yes")
        assert_unbiased(values(tables, "joint", f"o{i}", "no"), joint[i, 0], f"joint o{i} no")
    for i in range(d):
        assert coverage(tables, "b_given_a", f"o{i}", "yes", disease[i]) >= MIN_COVERAGE


@pytest.mark.slow
@pytest.mark.parametrize("epsilon, mechanism", [(2.0, "hybrid"), (8.0, "opm"), (3.0, "piecewise"), (1.0, "duchi")])
def test_number_within_yes_no(epsilon, mechanism):
    rng = np.random.default_rng(7)
    design = make_design(NUMBER, epsilon)
    if mechanism == "piecewise":
        design = as_piecewise(design)
    assert design["questions"][1]["mechanism"] == mechanism
    n = 3000
    smoker = (rng.random(REPETITIONS * n) < 0.3).astype(np.int64)
    age = rng.binomial(10, np.where(smoker == 1, 0.7, 0.3))
    tables = simulate(design, smoker, age, REPETITIONS, n, rng)
    for option, mean in (("yes", 7.0), ("no", 3.0)):
        assert_unbiased(values(tables, "mean_given_a", option), mean, f"mean among {option}")
        assert coverage(tables, "mean_given_a", option, "", mean) >= MIN_COVERAGE


# Unit tests


def test_hand_computed_small_case():
    design = make_design(YES_NO_2, 2.0)
    qa, qb = design["questions"]
    p, q = response_probabilities(qa)
    delta = p - q
    # 10 respondents: reports (1,1) x4, (1,0) x1, (0,1) x2, (0,0) x3.
    table = crosstab(qa, qb, [[1], [1], [0], [0]], [[1], [0], [1], [0]], [4, 1, 2, 3])
    assert table.n == 10
    x, y, z = 0.4, 0.5, 0.6
    f_a, f_b = (y - q) / delta, (z - q) / delta
    pi11 = (x - q * q - q * delta * f_b - q * delta * f_a) / delta ** 2
    assert table.get("joint", "yes", "yes").estimate == pytest.approx(pi11, abs=1e-12)
    assert table.get("joint", "yes", "no").estimate == pytest.approx(f_a - pi11, abs=1e-12)
    assert table.get("joint", "no", "no").estimate == pytest.approx(1 - f_a - f_b + pi11, abs=1e-12)
    assert table.get("b_given_a", "yes", "yes").estimate == pytest.approx(pi11 / f_a, abs=1e-12)
    assert table.get("b_given_a", "no", "yes").estimate == pytest.approx((f_b - pi11) / (1 - f_a), abs=1e-12)
    # Var(x̄) = x(1 − x)/(n − 1); π11's variance from the linear map of (x̄, ȳ, z̄).
    g = np.array([1, -q, -q]) / delta ** 2
    s = np.array([[x * (1 - x), x * (1 - y), x * (1 - z)], [x * (1 - y), y * (1 - y), x - y * z],
                  [x * (1 - z), x - y * z, z * (1 - z)]]) / 9
    assert table.get("joint", "yes", "yes").std_error == pytest.approx(math.sqrt(g @ s @ g), rel=1e-12)


def test_per_respondent_and_grouped_inputs_agree():
    design = make_design(YES_NO_2, 2.0)
    qa, qb = design["questions"]
    grouped = crosstab(qa, qb, [[1], [1], [0], [0]], [[1], [0], [1], [0]], [4, 1, 2, 3])
    single = crosstab(qa, qb, [1] * 5 + [0] * 5, [1, 1, 1, 1, 0, 1, 1, 0, 0, 0])
    assert crosstab_to_csv(grouped) == crosstab_to_csv(single)


def _kronecker(qa, qb, words_a, words_b, counts, matrix_a, matrix_b):
    ra = np.asarray(words_a).ravel()
    rb = np.asarray(words_b).ravel()
    da, db = matrix_a.shape[0], matrix_b.shape[0]
    freq = np.zeros(da * db)
    np.add.at(freq, ra * db + rb, counts)
    freq /= freq.sum()
    return (np.kron(np.linalg.inv(matrix_a), np.linalg.inv(matrix_b)) @ freq).reshape(da, db)


def test_rr_by_rr_equals_kronecker_inversion():
    rng = np.random.default_rng(3)
    design = make_design(YES_NO_2, 1.3)
    qa, qb = design["questions"]
    words_a, words_b = rng.integers(0, 2, (500, 1)), rng.integers(0, 2, (500, 1))
    counts = rng.integers(1, 5, 500)
    matrices = []
    for question in (qa, qb):
        p, q = response_probabilities(question)
        matrices.append(np.array([[p, q], [q, p]]))  # P[report, truth], index 0 = no
    expected = _kronecker(qa, qb, words_a, words_b, counts, *matrices)
    table = crosstab(qa, qb, words_a, words_b, counts)
    label = ["no", "yes"]
    for i in (0, 1):
        for j in (0, 1):
            assert table.get("joint", label[i], label[j]).estimate == pytest.approx(expected[i, j], abs=1e-10)


def test_grr_by_grr_equals_kronecker_inversion():
    rng = np.random.default_rng(4)
    text = """
[[questions]]
id = "a"
kind = "choice"
text = "A?"
options = ["x", "y", "z"]
[[questions]]
id = "b"
kind = "choice"
text = "B?"
options = ["u", "v", "w", "t"]
"""
    design = make_design(text, 6.0)
    qa, qb = design["questions"]
    assert qa["mechanism"] == qb["mechanism"] == "grr"
    words_a, words_b = rng.integers(0, 3, (800, 1)), rng.integers(0, 4, (800, 1))
    matrices = []
    for question in (qa, qb):
        p, q = response_probabilities(question)
        d = len(question["options"])
        matrices.append(np.full((d, d), q) + np.eye(d) * (p - q))
    expected = _kronecker(qa, qb, words_a, words_b, np.ones(800), *matrices)
    table = crosstab(qa, qb, words_a, words_b)
    for i, oa in enumerate(qa["options"]):
        for j, ob in enumerate(qb["options"]):
            assert table.get("joint", oa, ob).estimate == pytest.approx(expected[i, j], abs=1e-10)


def test_the_odds_ratio_interval_is_built_from_the_two_conditional_shares_at_half_the_error():
    """[odds(c1_low)/odds(c0_high), odds(c1_high)/odds(c0_low)], the shares of B's yes at level 1 − α/2.

    At the planning setting it is narrower than the box of the four cells' intervals at 1 − α/4,
    the interval it replaced (bench/odds_ratio_intervals.py measures how much).
    """
    design = make_design(YES_NO_2, 2.0)
    qa, qb = design["questions"]
    # The expected reports of 20,000 respondents whose cells are [[0.5, 0.1], [0.15, 0.25]] (odds ratio 8.3).
    words_a, words_b, counts = [[1], [1], [0], [0]], [[1], [0], [1], [0]], [4379, 4697, 4235, 6689]
    row = crosstab(qa, qb, words_a, words_b, counts).get("odds_ratio", "", "")
    half = crosstab(qa, qb, words_a, words_b, counts, level=0.975)
    yes, no = half.get("b_given_a", "yes", "yes"), half.get("b_given_a", "no", "yes")

    def odds(share):
        return share / (1 - share)

    assert row.ci_low == pytest.approx(odds(yes.ci_low) / odds(no.ci_high), rel=1e-12)
    assert row.ci_high == pytest.approx(odds(yes.ci_high) / odds(no.ci_low), rel=1e-12)
    assert row.ci_low < row.estimate < row.ci_high
    box = crosstab(qa, qb, words_a, words_b, counts, level=1 - 0.05 / 4)
    cell = {(i, j): box.get("joint", i, j) for i in ("yes", "no") for j in ("yes", "no")}
    box_low = cell["no", "no"].ci_low * cell["yes", "yes"].ci_low / (cell["no", "yes"].ci_high * cell["yes", "no"].ci_high)
    box_high = cell["no", "no"].ci_high * cell["yes", "yes"].ci_high / (cell["no", "yes"].ci_low * cell["yes", "no"].ci_low)
    assert math.log(row.ci_high / row.ci_low) < 0.95 * math.log(box_high / box_low)


def test_odds_ratio_not_estimable_when_a_cell_is_not_positive():
    design = make_design(YES_NO_2, 2.0)
    qa, qb = design["questions"]
    # Nobody reports (1, 1): the estimated π11 is negative; the interval still stands, with no upper limit.
    table = crosstab(qa, qb, [[1], [0], [0]], [[0], [1], [0]], [30, 30, 40])
    assert table.get("joint", "yes", "yes").estimate < 0
    row = table.get("odds_ratio", "", "")
    assert row.estimate is None and "no estimate" in row.note
    assert row.ci_low >= 0 and row.ci_high is None and "no upper limit" in row.note
    line = crosstab_to_csv(table).split("\r\n")[-2]
    assert line == f"odds_ratio,,,,,{row.ci_low:.6f},,0.95"


def test_conditional_mean_of_a_number():
    design = make_design(NUMBER, 1.0)
    qa, qb = design["questions"]
    assert qb["mechanism"] == "duchi"
    p, q = response_probabilities(qb)
    table = crosstab(qa, qb, [[1], [1], [0], [0]], [[1], [0], [1], [0]], [50, 20, 30, 60])
    pa, qa_ = response_probabilities(qa)
    x, y, z = 50 / 160, 70 / 160, 80 / 160
    f_a = (y - qa_) / (pa - qa_)
    f_b = (z - q) / (p - q)
    pi = (x - qa_ * z - q * y + qa_ * q) / ((pa - qa_) * (p - q))
    assert table.get("mean_given_a", "yes").estimate == pytest.approx(10 * pi / f_a, abs=1e-12)
    assert table.get("mean_given_a", "no").estimate == pytest.approx(10 * (f_b - pi) / (1 - f_a), abs=1e-12)
    row = table.get("mean_given_a", "yes")
    assert 0 <= row.ci_low <= row.ci_high <= 10
    assert not [r for r in table.rows if r.measure in ("joint", "odds_ratio")]


def test_conditional_mean_of_a_piecewise_number_by_hand():
    """The piecewise level R = (k + 1/2)/bins enters the products as a value, with its own second moments."""
    _check_level_number_by_hand(as_piecewise(make_design(NUMBER, 3.0)), "piecewise")


def test_conditional_mean_of_a_hybrid_number_by_hand():
    """A hybrid level's value R(L), Duchi's ab/G² and (a² + ab + b²)/G² among them, enters the products alike."""
    _check_level_number_by_hand(make_design(NUMBER, 3.0), "hybrid")


def _check_level_number_by_hand(design, mechanism):
    qa, qb = design["questions"]
    assert qb["mechanism"] == mechanism
    bins = qb["bins"]
    levels = [bins - 1, 3, bins // 2, 0]
    if mechanism == "hybrid":
        levels = [bins + 1, 3, bins, 0]
    words_a, words_b, counts = [[1], [1], [0], [0]], [[level] for level in levels], np.array([50, 20, 30, 60])
    table = crosstab(qa, qb, words_a, words_b, counts)
    pa, qa_ = response_probabilities(qa)
    p, q = response_probabilities(qb)
    r_a = np.array([1.0, 1, 0, 0])
    r_b = (np.array(levels) + 0.5) / bins
    if mechanism == "hybrid":
        a, b = qb["ratio_a"], qb["ratio_b"]
        r_b = np.array([(a * a + a * b + b * b) / bins ** 2, 3.5 / bins, a * b / bins ** 2, 0.5 / bins])
    w = counts / counts.sum()
    x, y, z = w @ (r_a * r_b), w @ r_a, w @ r_b
    f_a = (y - qa_) / (pa - qa_)
    pi = (x - qa_ * z - q * y + qa_ * q) / ((pa - qa_) * (p - q))
    assert table.get("mean_given_a", "yes").estimate == pytest.approx(10 * pi / f_a, rel=1e-12)
    # The delta-method variance from the sample covariance of (R_A R_B, R_A, R_B), computed directly.
    vectors = np.column_stack([r_a * r_b, r_a, r_b])
    mean = w @ vectors
    cov = ((vectors - mean).T * w) @ (vectors - mean) / (counts.sum() - 1)
    d_ab = (pa - qa_) * (p - q)
    jac = np.array([[0, 1 / (pa - qa_), 0], [1 / d_ab, -q / d_ab, -qa_ / d_ab]])
    grad_ratio = np.array([-pi / f_a ** 2, 1 / f_a])
    grad = grad_ratio @ jac
    se = 10 * math.sqrt(grad @ cov @ grad)
    assert table.get("mean_given_a", "yes").std_error == pytest.approx(se, rel=1e-9)


def test_refused_pairs_and_bad_level():
    design = make_design(NUMBER, 3.0)
    qa, qb = design["questions"]
    with pytest.raises(CrosstabError, match="twice"):
        crosstab(qa, qa, [[1]], [[1]])
    with pytest.raises(CrosstabError, match="put it second"):
        crosstab(qb, qa, [[1]], [[1]])
    with pytest.raises(ValueError, match="level"):
        crosstab(qa, qb, [[1]], [[1]], level=1.5)


def test_no_respondents():
    design = make_design(YES_NO_2, 2.0)
    qa, qb = design["questions"]
    table = crosstab(qa, qb, np.zeros((0, 1), dtype=np.int64), np.zeros((0, 1), dtype=np.int64),
                     np.zeros(0, dtype=np.int64))
    assert table.n == 0
    assert all(row.estimate is None for row in table.rows)


def test_formats():
    design = make_design(YES_NO_2, 2.0)
    qa, qb = design["questions"]
    table = crosstab(qa, qb, [[1], [1], [0], [0]], [[1], [0], [1], [0]], [40, 10, 20, 30], level=0.9)
    text = crosstab_to_csv(table)
    assert text.startswith("measure,a_option,b_option,estimate,std_error,ci_low,ci_high,ci_level\r\n")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == CSV_HEADER
    assert len(rows) == 1 + 4 + 4 + 1
    assert all(row[-1] == "0.9" for row in rows[1:])
    assert rows[1][3] == f"{table.rows[0].estimate:.6f}"
    data = crosstab_to_json(table)
    assert data["n"] == 100 and data["a"] == "smoker" and len(data["rows"]) == 9
    assert "odds_ratio" in crosstab_to_table(table)


def test_store_round_trip(tmp_path):
    rng = np.random.default_rng(11)
    text = (tmp_path / "s.toml")
    body = 'slug = "rt"\nrelease_every = 1\ntitle = "rt"\nepsilon = 3.0\n' + choice_yes_no(12) + NUMBER.replace(
        'id = "smoker"', 'id = "smoker2"')
    text.write_text(body, encoding="utf-8")
    design = build_design(parse_definition_toml(body, source="s.toml"))
    n = 700
    columns, questions = [], design["questions"]
    truths = [rng.integers(0, 12, n), rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 11, n)]
    for question, truth in zip(questions, truths):
        columns.append(codec.encode_column(question, randomize_question(question, truth, rng)))
    store = Store(tmp_path / "rt.db")
    try:
        store.create_survey(body, design)
        store.add_report_columns("rt", design["hash"], columns)
        for a, b in ((0, 1), (1, 3), (0, 3), (2, 1)):
            wa, wb, counts = store.joint_reports("rt", questions[a]["id"], questions[b]["id"])
            from_store = crosstab(questions[a], questions[b], wa, wb, counts)
            direct = crosstab(questions[a], questions[b], columns[a], columns[b])
            assert from_store.n == n
            assert crosstab_to_csv(from_store) == crosstab_to_csv(direct)
    finally:
        store.close()


# Command line


def _cli(db, *args):
    from click.testing import CliRunner

    from survey.cli import main

    return CliRunner().invoke(main, ["--db", str(db), *map(str, args)])


@pytest.fixture
def smoking_db(tmp_path):
    db = tmp_path / "cli.db"
    toml = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples" / "smoking.toml"
    assert _cli(db, "create", toml).exit_code == 0
    assert _cli(db, "simulate", "smoking-2026", "--n", 2000, "--seed", 5).exit_code == 0
    return db


def test_cli_crosstab_csv_is_the_library_output(smoking_db):
    store = Store(smoking_db)
    try:
        design = store.get_design("smoking-2026")
        wa, wb, counts = store.joint_reports("smoking-2026", "smoker", "lung_disease", sandbox=True)
    finally:
        store.close()
    qa, qb = design["questions"][:2]
    result = _cli(smoking_db, "crosstab", "smoking-2026", "smoker", "lung_disease", "--format", "csv",
                  "--level", 0.9, "--sandbox")
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == crosstab_to_csv(crosstab(qa, qb, wa, wb, counts, level=0.9)).encode()
    data = __import__("json").loads(_cli(smoking_db, "crosstab", "smoking-2026", "cigarettes", "age",
                                         "--format", "json", "--sandbox").stdout)
    assert data["n"] == 2000 and {row["measure"] for row in data["rows"]} == {"mean_given_a"}
    table = _cli(smoking_db, "crosstab", "smoking-2026", "smoker", "lung_disease", "--sandbox").stdout
    assert "odds_ratio" in table and "n = 2000" in table
    # The simulated respondents are in the sandbox only: the real responses have no crosstab.
    real = __import__("json").loads(_cli(smoking_db, "crosstab", "smoking-2026", "smoker", "lung_disease",
                                         "--format", "json").stdout)
    assert real["n"] == 0


@pytest.mark.parametrize("args, fragment", [
    (("smoker", "nope"), "'nope' is not a question of 'smoking-2026'; its questions are smoker, lung_disease"),
    (("smoker", "smoker"), "choose two different questions"),
    (("age", "smoker"), "put it second"),
])
def test_cli_crosstab_user_errors(smoking_db, args, fragment):
    result = _cli(smoking_db, "crosstab", "smoking-2026", *args)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and fragment in lines[0], result.output


# Simulating dependent answers (simulate --given)


def test_simulate_given_is_recovered_by_the_crosstab(smoking_db):
    db = smoking_db
    result = _cli(db, "simulate", "smoking-2026", "--n", 60000, "--seed", 3, "--truth", "smoker=0.4",
                  "--given", "lung_disease|smoker=1:0.5", "--given", "lung_disease|smoker=0:0.1",
                  "--given", "cigarettes|smoker=no:none", "--given", "age|smoker=yes:70")
    assert result.exit_code == 0, result.output
    assert "Given:\nlung_disease|smoker=0:0.1\nlung_disease|smoker=1:0.5\ncigarettes|smoker=0:1,0,0,0,0\n" \
           "age|smoker=1:70" in result.stdout
    # The 2,000 respondents of the fixture were drawn independently; 60,000 follow the givens.
    store = Store(db)
    try:
        design = store.get_design("smoking-2026")
        questions = {q["id"]: q for q in design["questions"]}
        share = 60000 / 62000
        lung = crosstab(questions["smoker"], questions["lung_disease"],
                        *store.joint_reports("smoking-2026", "smoker", "lung_disease", sandbox=True))
        cigarettes = crosstab(questions["smoker"], questions["cigarettes"],
                              *store.joint_reports("smoking-2026", "smoker", "cigarettes", sandbox=True))
    finally:
        store.close()
    # Among smokers: 0.5 for the given respondents. The fixture's lung_disease truth is unknown,
    # so bound its weight: the estimate lies within 5 SE of 0.5 ± (1 − share).
    for option, value in (("yes", 0.5), ("no", 0.1)):
        row = lung.get("b_given_a", option, "yes")
        slack = (1 - share) + 5 * row.std_error
        assert abs(row.estimate - value) <= slack, (option, row)
    row = cigarettes.get("b_given_a", "no", "none")
    assert abs(row.estimate - 1.0) <= (1 - share) + 5 * row.std_error, row


def test_simulate_given_recovers_conditional_shares_within_5_se():
    design = make_design(YES_NO_2 + """
[[questions]]
id = "drink"
kind = "choice"
text = "Drink?"
options = ["never", "sometimes", "daily"]
""", 6.0)
    from survey.core.simulate import complete_truth, parse_given, parse_truth, simulate_columns

    rng = np.random.default_rng(12)
    truth = complete_truth(design, parse_truth(design, ["smoker=0.3"]), rng)
    given = parse_given(design, ["lung|smoker=1:0.4", "lung|smoker=0:0.1", "drink|smoker=0:never",
                                 "drink|smoker=1:0.2,0.3,0.5"])
    columns = simulate_columns(design, truth, 50000, rng, given=given)
    qs = design["questions"]
    lung = crosstab(qs[0], qs[1], columns[0], columns[1])
    drink = crosstab(qs[0], qs[2], columns[0], columns[2])
    for table, a_option, b_option, value in ((lung, "yes", "yes", 0.4), (lung, "no", "yes", 0.1),
                                             (drink, "no", "never", 1.0), (drink, "yes", "daily", 0.5),
                                             (drink, "yes", "never", 0.2)):
        row = table.get("b_given_a", a_option, b_option)
        assert abs(row.estimate - value) <= 5 * row.std_error, (a_option, b_option, row)


@pytest.mark.parametrize("spec, fragment", [
    ("lung|smoker=1", "must look like B|A=V:P"),
    ("lung|nope=1:0.3", "'nope' is not a question"),
    ("lung|lung=1:0.3", "two different questions"),
    ("lung|smoker=2:0.3", "must be 1 (yes) or 0 (no)"),
    ("lung|smoker=1:1.3", "must lie in [0.0, 1.0]"),
    ("smoker|lung=1:0.3", "has givens of its own"),
])
def test_parse_given_errors(spec, fragment):
    from survey.core.simulate import TruthError, parse_given

    design = make_design(YES_NO_2, 2.0)
    specs = [spec, "lung|smoker=0:0.2"] if spec.startswith("smoker|") else [spec]
    with pytest.raises(TruthError) as info:
        parse_given(design, specs)
    assert fragment in str(info.value)


@pytest.mark.parametrize("level", [0.9999999999999999, 0.5])
def test_levels_near_the_ends_never_raise(level):
    """The odds ratio's Bonferroni level stays below 1 even when level is the float just below 1."""
    design = make_design(YES_NO_2, 2.0)
    qa, qb = design["questions"]
    table = crosstab(qa, qb, [[1], [1], [0], [0]], [[1], [0], [1], [0]], [40, 10, 20, 30], level=level)
    for row in table.rows:
        assert row.ci_low is not None and (row.ci_high is None or row.ci_low < row.ci_high), row
    assert "nan" not in crosstab_to_csv(table) and "inf" not in crosstab_to_csv(table)
