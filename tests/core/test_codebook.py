"""The codebook lets anyone recompute the aggregates CSV from responses.csv without our code.

The re-derivation runs in a separate interpreter, in isolated mode, from a script that
imports only csv, json, fractions, math, sys and scipy: every estimate, std_error and
interval of the aggregates CSV must follow from responses.csv and codebook.json alone.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from fractions import Fraction

import pytest

from survey.core.aggregate import CSV_HEADER
from survey.core.mechanisms.multi_sampled import multi_sampled_probabilities
from survey.core.mechanisms.subset import ss_probabilities
from survey.exports.codebook import codebook, response_columns, slugify
from survey.core.definition import parse_definition
from survey.core.design import build_design, response_probabilities

from conftest import command_line, definition

# Every kind and mechanism: rr (yes_no), grr (3 options), OUE (8 options: at epsilon 0.4 a
# question, OUE is chosen from d >= 3e^0.4 + 2 = 6.5), multi (with labels that collide
# once slugified, or are a formula), and duchi (number).
ALL_KINDS_TOML = """
slug = "every-kind"
title = "Every kind"
epsilon = 2.0

""" + definition("smoker_colour") + """
[[questions]]
id = "pet"
kind = "choice"
text = "Favourite pet?"
options = ["cat", "dog", "fish", "bird", "horse", "rabbit", "snake", "none"]

[[questions]]
id = "sports"
kind = "multi"
text = "Which sports do you play?"
options = ["Run", "run!", "=SUM(A1)", "Swim"]

""" + definition("age")

RECOMPUTE = r'''
import csv, json, math, sys
from fractions import Fraction
from scipy.stats import beta, t

responses_path, codebook_path, aggregates_path = sys.argv[1:4]
with open(codebook_path, encoding="utf-8") as handle:
    book = json.load(handle)
with open(responses_path, encoding="utf-8", newline="") as handle:
    responses = list(csv.DictReader(handle))
with open(aggregates_path, encoding="utf-8", newline="") as handle:
    aggregates = list(csv.DictReader(handle))
assert len(aggregates) == len(book["estimands"]), (len(aggregates), len(book["estimands"]))
names = [column["name"] for column in book["columns"]]
assert list(responses[0]) == book.get("leading_columns", ["response_id", "received_day"]) + names, (list(responses[0]), names)

def clip(value, low, high):
    return min(max(value, low), high)

def inside(low, high):
    """The method: clipped to [0, 1], but one wholly beyond an end moved inside keeping its width."""
    width = min(high - low, 1.0)
    if low >= 1:
        return 1 - width, 1.0
    if high <= 0:
        return 0.0, width
    return clip(low, 0, 1), clip(high, 0, 1)

def lower_end(total, squares, n, threshold, least, most):
    """The betting lower bound on the mean of n values in [0, 1] (the codebook's bounded-mean interval)."""
    smallest = math.sqrt(2 * threshold / (n * most))
    largest = max(min(64.0 if least <= 0 else math.sqrt(2 * threshold / (n * least)), 64.0), smallest)
    steps = max(1, math.ceil(math.log(largest / smallest) / math.log(2.0) - 1e-9) + 1)
    bets = [smallest * (largest / smallest) ** (k / (steps - 1)) if steps > 1 else smallest for k in range(steps)]
    top = squares / total if squares > 0 else 0.0
    weight = total * total / (n * squares) if squares > 0 else 0.0
    def rejects(m):
        wealth = 0.0
        for bet in bets:
            if bet * m < 1:
                log = weight * math.log1p(bet * (top - m)) + ((1 - weight) * math.log1p(-bet * m) if weight < 1 else 0)
                wealth += math.exp(min(n * log, 700.0))
        return wealth / len(bets) >= math.exp(threshold)
    if not rejects(0.0):
        return 0.0
    low, high = 0.0, total / n
    for _ in range(44):
        middle = (low + high) / 2
        low, high = (middle, high) if rejects(middle) else (low, middle)
    return low

checked = 0
for estimand, row in zip(book["estimands"], aggregates):
    assert row["question"] == estimand["question"] and row["option"] == estimand["option"], (row, estimand)
    cells = [response[estimand["column"]] for response in responses if response[estimand["column"]] != ""]
    n = len(cells)
    p, q = estimand["p"], estimand["q"]
    if estimand["value"] is None:
        # Not one indicator: the mean of the output levels, by the estimator the codebook states.
        assert estimand["interval"] == "bounded-mean"
        if "level_values" in estimand:
            assert "R = level_values[L]" in estimand["estimator"] and len(estimand["level_values"]) == estimand["levels"]
            values = [float(Fraction(value)) for value in estimand["level_values"]]
            levels = [values[int(cell)] for cell in cells]
        else:
            assert "R = (k + 1/2)/" in estimand["estimator"]
            levels = [(int(cell) + 0.5) / estimand["levels"] for cell in cells]
        mean = sum(levels) / n
        spread = p - q
        lo, hi = estimand["scale"]
        unit = (mean - q) / spread
        least, most = estimand["report_variance"]
        se_unit = math.sqrt(max(sum((r - mean) ** 2 for r in levels) / (n - 1), least) / n) / spread
        r_low, r_high = (float(Fraction(value)) for value in estimand["report_range"])
        width = r_high - r_low
        units = [(r - r_low) / width for r in levels]
        total, squares = sum(units), sum(u * u for u in units)
        threshold = math.log(2 / (1 - float(row["ci_level"])))
        unit_least, unit_most = least / width ** 2, min(most / width ** 2, 0.25)
        ci_r_low = r_low + width * lower_end(total, squares, n, threshold, unit_least, unit_most)
        ci_r_high = r_high - width * lower_end(n - total, n - 2 * total + squares, n, threshold, unit_least, unit_most)
        unit_low, unit_high = inside((ci_r_low - q) / spread, (ci_r_high - q) / spread)
        for name, value in (("n", n), ("noisy_share", mean), ("estimate", lo + (hi - lo) * unit),
                            ("std_error", (hi - lo) * se_unit),
                            ("ci_low", lo + (hi - lo) * unit_low), ("ci_high", lo + (hi - lo) * unit_high)):
            assert abs(float(row[name]) - value) <= 1e-6, (estimand["question"], name, row[name], value)
            checked += 1
        continue
    ones = sum(1 for cell in cells if int(cell) == estimand["value"])
    assert Fraction(estimand["p_exact"]) == Fraction(p) or abs(float(Fraction(estimand["p_exact"])) - p) < 1e-15
    assert abs(float(Fraction(estimand["q_exact"])) - q) < 1e-15
    lo, hi = estimand["scale"] or (0, 1)
    width = hi - lo
    share = ones / n
    spread = p - q
    estimate = lo + width * (share - q) / spread
    feasible = clip(share, min(p, q), max(p, q))  # the method: the standard error at the nearest feasible share
    std_error = width * math.sqrt(feasible * (1 - feasible) / (n - 1)) / abs(spread)
    assert estimand["interval"] == "clopper-pearson"
    alpha = (1 - float(row["ci_level"])) / estimand["simultaneous_over"]
    share_low = 0.0 if ones == 0 else beta.ppf(alpha / 2, ones, n - ones + 1)
    share_high = 1.0 if ones == n else beta.ppf(1 - alpha / 2, ones + 1, n - ones)
    unit_low, unit_high = inside(*sorted(((share_low - q) / spread, (share_high - q) / spread)))
    ci_low, ci_high = lo + width * unit_low, lo + width * unit_high
    for name, value in (("n", n), ("noisy_share", share), ("estimate", estimate), ("std_error", std_error),
                        ("ci_low", ci_low), ("ci_high", ci_high)):
        assert abs(float(row[name]) - value) <= 1e-6, (estimand["question"], estimand["option"], name, row[name], value)
        checked += 1
assert "survey" not in sys.modules
print(f"checked {checked} numbers in {len(aggregates)} rows")
'''


@pytest.fixture
def run(cli_runner, db_path):
    """Return a runner of the command line on the test database (conftest.command_line)."""
    return command_line(db_path, cli_runner)


def all_kinds_design() -> dict:
    import tomllib

    return build_design(parse_definition(tomllib.loads(ALL_KINDS_TOML)))


def test_every_aggregate_follows_from_responses_and_codebook_alone(run, tmp_path):
    definition = tmp_path / "every-kind.toml"
    definition.write_text(ALL_KINDS_TOML, encoding="utf-8")
    run("create", definition)
    run("simulate", "every-kind", "--n", 3000, "--seed", 11)
    files = {name: tmp_path / name for name in ("responses.csv", "codebook.json", "aggregates.csv")}
    run("export", "every-kind", "--responses", "-o", files["responses.csv"], "--sandbox")
    run("export", "every-kind", "--codebook", "-o", files["codebook.json"], "--sandbox")
    run("export", "every-kind", "--aggregates", "--level", "0.9", "-o", files["aggregates.csv"], "--sandbox")
    mechanisms = {e["mechanism"] for e in json.loads(files["codebook.json"].read_text())["columns"]}
    assert mechanisms == {"rr", "grr", "ss", "sampled", "duchi"}
    script = tmp_path / "recompute.py"
    script.write_text(RECOMPUTE, encoding="utf-8")
    result = subprocess.run([sys.executable, "-I", str(script), *map(str, files.values())], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    # 1 smoker + 3 colour + 8 pet + 4 sports + 1 age rows, 6 numbers each.
    assert result.stdout.strip() == "checked 102 numbers in 17 rows"


LEVELS_TOML = """
slug = "{slug}"
title = "Levels"
epsilon = {epsilon}

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"
weight = {smoker}

[[questions]]
id = "income"
kind = "number"
text = "Income in thousands?"
min = 0
max = 250
weight = 4
mechanism = "{slug}"
"""


@pytest.mark.parametrize("slug, epsilon, smoker, meaning", [
    ("hybrid", 7.0, 3, "the output level L in 0..{top} of the hybrid mechanism"),
    ("piecewise", 20.0, 1, "the output level k in 0..{top} of the discretised piecewise mechanism"),
    ("opm", 7.0, 3, "the output level k in 0..{top} of the optimal piecewise mechanism")])
def test_level_mean_follows_from_responses_and_codebook_alone(run, tmp_path, slug, epsilon, smoker, meaning):
    definition = tmp_path / f"{slug}.toml"
    definition.write_text(LEVELS_TOML.format(slug=slug, epsilon=epsilon, smoker=smoker), encoding="utf-8")
    run("create", definition)
    run("simulate", slug, "--n", 2000, "--seed", 5)
    files = {name: tmp_path / name for name in ("responses.csv", "codebook.json", "aggregates.csv")}
    run("export", slug, "--responses", "-o", files["responses.csv"], "--sandbox")
    run("export", slug, "--codebook", "-o", files["codebook.json"], "--sandbox")
    run("export", slug, "--aggregates", "--level", "0.9", "-o", files["aggregates.csv"], "--sandbox")
    book = json.loads(files["codebook.json"].read_text())
    income = book["estimands"][-1]
    assert book["columns"][-1]["mechanism"] == slug
    assert (income["value"], income["interval"], income["scale"]) == (None, "bounded-mean", [0, 250])
    assert Fraction(income["p_exact"]) + Fraction(income["q_exact"]) == 1
    assert book["columns"][-1]["meaning"].startswith(meaning.format(top=income["levels"] - 1))
    if slug == "hybrid":
        # Both branches' levels have mean q + (p - q)x: Duchi's two values are the ends of that line's image.
        values = [Fraction(value) for value in income["level_values"]]
        p, q = Fraction(income["p_exact"]), Fraction(income["q_exact"])
        bins = income["levels"] - 2
        a, b = p * bins, q * bins
        flip = b * b / (a * a + b * b)
        low, high = values[-2:]
        assert values[:2] == [Fraction(1, 2 * bins), Fraction(3, 2 * bins)]
        for x in (0, 1):
            assert low + (high - low) * (flip + (1 - 2 * flip) * x) == q + (p - q) * x
    script = tmp_path / "recompute.py"
    script.write_text(RECOMPUTE, encoding="utf-8")
    result = subprocess.run([sys.executable, "-I", str(script), *map(str, files.values())], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "checked 12 numbers in 2 rows"


def test_codebook_columns_and_estimands():
    design = all_kinds_design()
    book = codebook(design)
    assert book["survey"] == "every-kind" and book["design_hash"] == design["hash"]
    assert [column["name"] for column in book["columns"]] == [
        "smoker", "colour", "pet__cat", "pet__dog", "pet__fish", "pet__bird", "pet__horse", "pet__rabbit",
        "pet__snake", "pet__none", "sports__option_0", "sports__option_1", "sports__sum_a1", "sports__swim", "age"]
    smoker = book["estimands"][0]
    p, q = response_probabilities(design["questions"][0])
    assert (smoker["column"], smoker["value"], smoker["p"], smoker["q"]) == ("smoker", 1, p, q)
    threshold = design["questions"][0]["flip_threshold"]
    assert smoker["q_exact"] == f"{threshold}/9007199254740992"
    assert smoker["p_exact"] == f"{2**53 - threshold}/9007199254740992"
    assert "1 if the randomized report says yes" in book["columns"][0]["meaning"]
    assert f"kept with probability {p:.6g}" in book["columns"][0]["meaning"]
    colour = [e for e in book["estimands"] if e["question"] == "colour"]
    assert [(e["column"], e["value"], e["simultaneous_over"]) for e in colour] == [
        ("colour", 0, 3), ("colour", 1, 3), ("colour", 2, 3)]
    grr = design["questions"][1]
    assert Fraction(colour[0]["p_exact"]) == Fraction(grr["keep_threshold"], 2**53)
    assert Fraction(colour[0]["q_exact"]) == (1 - Fraction(grr["keep_threshold"], 2**53)) / 2
    assert float(Fraction(colour[0]["q_exact"])) == colour[0]["q"]
    pet = [e for e in book["estimands"] if e["question"] == "pet"]
    subset = design["questions"][2]
    assert subset["mechanism"] == "ss"
    assert {e["simultaneous_over"] for e in pet} == {8} and {e["p_exact"] for e in pet} == {
        f"{subset['keep_threshold']}/9007199254740992"}
    p, q = ss_probabilities(subset["keep_threshold"], 8, subset["subset_size"])
    assert {Fraction(e["q_exact"]) for e in pet} == {q} and q.denominator % 2**53 == 0
    sports = [e for e in book["estimands"] if e["question"] == "sports"]
    assert [(e["option"], e["column"], e["simultaneous_over"]) for e in sports] == [
        ("Run", "sports__option_0", 4), ("run!", "sports__option_1", 4), ("=SUM(A1)", "sports__sum_a1", 4),
        ("Swim", "sports__swim", 4)]
    sports_column = next(column for column in book["columns"] if column["name"] == "sports__swim")
    assert design["questions"][3]["mechanism"] == "sampled"
    assert sports_column["meaning"].startswith("1 if the report drew option 'Swim' (each with probability 1/4)")
    p, q = multi_sampled_probabilities(design["questions"][3]["flip_threshold"], 4)
    assert {(Fraction(e["p_exact"]), Fraction(e["q_exact"])) for e in sports} == {(p, q)}
    age = book["estimands"][-1]
    assert (age["option"], age["column"], age["scale"], age["value"]) == ("", "age", [18, 90], 1)
    assert all(e["scale"] is None for e in book["estimands"][:-1])
    json.dumps(book, allow_nan=False)


def test_column_names_are_unique_slugs_with_fallbacks():
    assert slugify("More than 20 / day") == "more_than_20_day" and slugify("Café") == "cafe"
    assert slugify("日本") == "" and slugify("--") == ""
    design = build_design(parse_definition({
        "slug": "names", "title": "Names", "epsilon": 20.0,
        "questions": [
            {"id": "a__b", "kind": "yes_no", "text": "?"},
            {"id": "a", "kind": "multi", "text": "?", "options": ["b", "日本", "option 1", "c"]},
            {"id": "a__option_1", "kind": "yes_no", "text": "?"},
        ]}))
    names = [column["name"] for column in response_columns(design)]
    assert names == ["a__b", "a__option_0", "a__option_1_2", "a__option_2", "a__c", "a__option_1"]
    assert len(set(names)) == len(names)


def test_responses_csv_has_one_column_per_bit_and_empty_cells_for_unasked(tmp_path):
    from survey.exports.export import responses_csv

    design = all_kinds_design()
    answers = {"smoker": 1, "colour": 2, "pet": [0, 1, 0, 0, 1, 0, 0, 0], "sports": [1, 0, 0, 1], "age": 0}
    text = responses_csv(design, [{"id": 7, "received_day": "2026-11-22", "answers": answers},
                                  {"id": 8, "received_day": "2026-11-22", "answers": {"smoker": 0}}])
    assert text == (
        "response_id,received_day,smoker,colour,pet__cat,pet__dog,pet__fish,pet__bird,pet__horse,pet__rabbit,"
        "pet__snake,pet__none,sports__option_0,sports__option_1,sports__sum_a1,sports__swim,age\r\n"
        "7,2026-11-22,1,2,0,1,0,0,1,0,0,0,1,0,0,1,0\r\n"
        "8,2026-11-22,0,,,,,,,,,,,,,,\r\n")
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows[0]) == len(rows[1]) == len(rows[2]) == 2 + 15


def test_aggregates_csv_keeps_its_header():
    assert CSV_HEADER == ["question", "option", "kind", "mechanism", "epsilon", "n", "noisy_share", "estimate",
                          "std_error", "ci_low", "ci_high", "ci_level", "ci_kind", "ci_planned", "consistent",
                          "consistent_low", "consistent_high"]
