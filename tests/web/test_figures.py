"""Privacy figures shown to people are rounded up: never below the bound they stand for.

Unit tests of the rounding helpers (``survey.core.words``), then a scan of the pages — the
respondent page and its test mode, the builder's preview, the results page with its release
sentence and early-release confirmation, the sandbox — of surveys at awkward ε: every ε, δ and
"X% sure" read off them must be at least its exact value from the machine views (the public
design, the API's release object), within one step of its shown precision, and an exact 2 reads 2.
"""

from __future__ import annotations

import html
import math
import re
from decimal import Decimal

import pytest
from conftest import OWNER, create_from_toml, domain_answers
from test_builder import fields
from test_ownership import signed_in
from werkzeug.security import generate_password_hash

from survey.core.planning import posterior_bound
from survey.core.releases import early_release_sentence, format_delta, release_sentence, release_view
from survey.core.shuffling import central_epsilon
from survey.core.words import format_epsilon, percent_up, round_up
from survey.store import Store

# Relative float noise the helpers ignore (words._ROUND_OFF), and a little more for the comparison.
ROUND_OFF = 1e-11


# --- the helpers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, digits, text", [
    (0.4942, 2, "0.5"), (1.9235, 2, "2"), (0.1132, 2, "0.12"), (0.4942, 6, "0.4942"), (1.9235, 3, "1.93"),
    (0.49, 2, "0.49"), (0.4901, 2, "0.5"), (2.0, 2, "2"), (2.0, 6, "2"), (0.0029, 2, "0.0029"),
    (0.00291, 2, "0.003"), (12.01, 2, "13"), (123.4, 2, "124"), (0.0, 2, "0"),
    (0.2857142857142857, 6, "0.285715"), (0.9912975648690157, 2, "1"),
])
def test_format_epsilon_rounds_up_at_its_precision(value, digits, text):
    assert format_epsilon(value, digits) == text
    assert Decimal(text) >= Decimal(repr(value)) * (1 - Decimal("1e-12"))


@pytest.mark.parametrize("value", [2.0, 2.0000000000000004, 1.9999999999999998, 2 * (1 + 5e-13), 2 * (1 - 5e-13)])
def test_float_noise_around_an_exact_value_is_not_rounded_up(value):
    assert format_epsilon(value) == "2" and format_epsilon(value, 6) == "2"


@pytest.mark.parametrize("value, text, six", [(2 * (1 + 1e-9), "2.01", "2.00001"), (0.5 * (1 + 1e-9), "0.501", "0.500001"),
                                             (2.0001, "2.01", "2.0001")])
def test_a_value_just_above_its_shown_precision_rounds_up(value, text, six):
    """Past the 1e-12 tolerance a value above the precision is a real excess and shows the next step."""
    assert format_epsilon(value) == text and format_epsilon(value, 6) == six
    assert round_up(value, 6) == Decimal(six)


@pytest.mark.parametrize("probability, decimals, text", [
    (0.8725282210426282, 0, "88%"), (0.8807970779778823, 0, "89%"), (0.8807970779778823, 1, "88.1%"),
    (0.5, 0, "50%"), (0.87, 0, "87%"), (0.995, 0, "99.5%"), (0.99999, 0, "99.999%"),
    (posterior_bound(20.0), 2, "99.9999998%"), (1.0, 0, "100%"), (0.0, 0, "0%"),
])
def test_percent_up_rounds_up_and_never_reads_100_for_less(probability, decimals, text):
    assert percent_up(probability, decimals) == text


@pytest.mark.parametrize("bad", [-0.1, math.inf, math.nan])
def test_the_helpers_refuse_what_is_not_a_figure(bad):
    with pytest.raises(ValueError):
        format_epsilon(bad)
    with pytest.raises(ValueError):
        percent_up(bad)
    with pytest.raises(ValueError):
        percent_up(1.5)


def test_delta_reads_as_a_power_of_ten_or_rounded_up():
    assert format_delta(1e-6) == "10⁻⁶"
    assert format_delta(1.2345678e-7) == "1.23457e-07"
    assert float(format_delta(1.2345641e-7)) >= 1.2345641e-7


# --- the early-release sentences ------------------------------------------------------------------------


def test_an_early_release_of_one_response_says_there_is_no_amplification():
    text = early_release_sentence(2.0, 1)
    assert text == ("One release was made early with a batch of one response: no amplification; the central ε "
                    "equals each report's ε = 2.")
    design = {"epsilon_spent": 2.0, "release_every": 370}
    sentence = release_sentence(release_view(design, released=1, held=0, smallest_release=1))
    assert "far less than each report's own ε = 2" in sentence, "batches of 370 do amplify"
    assert "central ε = 0.992 allows" in sentence, "the guarantee of a batch of 370 (0.9913), rounded up"
    assert sentence.endswith(text)


def test_a_step_too_small_to_amplify_is_not_called_far_less():
    design = {"epsilon_spent": 2.0, "release_every": 3}
    sentence = release_sentence(release_view(design, released=3, held=0))
    assert "far less" not in sentence and "no less than each report's own ε = 2" in sentence
    assert "too few to amplify" in early_release_sentence(2.0, 2)
    amplified = early_release_sentence(1.0, 2435)
    assert "central ε = 0.114 instead of each report's ε = 1" in amplified, "0.1132 rounded up"


# --- the pages ---------------------------------------------------------------------------------------------

SURVEYS = {
    # Budgets at the audited awkward values, with tiny batches.
    "budget-a": ("0.4942", 'release_every = 2\nallocation = "sample"\nsample = 1\n'),
    "budget-b": ("1.9235", "release_every = 1\n"),
    "budget-c": ("0.1132", "release_every = 3\n"),
    # Central ε at the audited values: 0.4942 (ε = 1, 160), 1.9235 (ε = 4, 1,900), 0.1132 (ε = 1, 2,435).
    "central-a": ("1", ""),
    "central-b": ("4", ""),
    "central-c": ("1", "release_every = 2435\n"),
    # Exactly 2, released early with one response.
    "exact-two": ("2", "release_every = 3\n"),
}
QUESTIONS = """
[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"

[[questions]]
id = "diet"
kind = "choice"
text = "Your diet?"
options = ["meat", "fish", "vegetarian", "vegan"]

[[questions]]
id = "sports"
kind = "multi"
text = "Which sports?"
options = ["run", "swim", "climb"]
"""
# Responses stored per survey before the pages are read (budget-a: 2 released, 1 held).
RESPONSES = {"budget-a": 3, "budget-b": 2, "budget-c": 2, "exact-two": 1}
SUPERSCRIPT = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")
NUMBER = r"(\d+(?:\.\d+)?)"


def _toml(slug: str, epsilon: str, extra: str) -> str:
    """Return the definition of one scanned survey (one question only at ε = 2, so its ε′ is 2)."""
    questions = QUESTIONS.split("\n[[questions]]")[0:2] if slug == "exact-two" else [QUESTIONS]
    return f'slug = "{slug}"\ntitle = "Figures {slug}"\nepsilon = {epsilon}\n{extra}' + "\n[[questions]]".join(questions)


@pytest.fixture
def scanned(app, db_path):
    """Create the surveys (owned by OWNER), store their responses, release exact-two's one early; return designs."""
    designs = {slug: create_from_toml(db_path, _toml(slug, *spec)) for slug, spec in SURVEYS.items()}
    store = Store(db_path)
    try:
        store.add_user(OWNER[0], generate_password_hash(OWNER[1]))
        for slug, design in designs.items():
            store.share(slug, OWNER[0])
            count = RESPONSES.get(slug, 0)
            if count:
                store.add_responses(slug, design["hash"], [domain_answers(design) for _ in range(count)])
        token = store.create_token(OWNER[0])[1]
    finally:
        store.close()
    owner = signed_in(app, *OWNER)
    page = owner.get("/surveys/exact-two/results").get_data(as_text=True)
    csrf = re.search(r'id="release-csrf" name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    assert owner.post("/surveys/exact-two/release", data={"csrf_token": csrf, "confirm": "yes"}).status_code == 302
    return {"designs": designs, "owner": owner, "token": token}


def _text(markup: str) -> str:
    """Return a page's visible words: no hints of the builder's fields (fixed help text), no tags, unescaped."""
    markup = re.sub(r'<p class="hint"[^>]*>.*?</p>', " ", markup, flags=re.S)
    markup = re.sub(r"<(script|style)\b.*?</\1>", " ", markup, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup)))


def shown_figures(markup: str) -> dict[str, list[str]]:
    """Return the ε, "% sure" and δ figures a page shows, as their texts."""
    text = _text(markup)
    epsilons = re.findall(rf"(?:ε′?|epsilon)\s*(?:=\s*)?{NUMBER}(?![\d/])", text)
    epsilons += re.findall(rf"ε/\d+ = {NUMBER}", text) + re.findall(rf"{NUMBER} in total\)", text)
    # The results table's ε′ column: the third cell after each row's heading.
    epsilons += re.findall(r'<tr>\s*<th scope="row">.*?</th>\s*<td>.*?</td>\s*<td>.*?</td>\s*<td class="num">([^<]*)</td>',
                           markup, re.S)
    sure = re.findall(rf"{NUMBER}% sure", text)
    deltas = [f"1e{power.translate(SUPERSCRIPT)}" for power in re.findall(r"δ = 10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)", text)]
    deltas += re.findall(r"δ = (\d[\d.]*(?:e-?\d+)?)(?![\d⁻⁰¹²³⁴⁵⁶⁷⁸⁹])", text)
    return {"epsilon": epsilons, "sure": sure, "delta": deltas}


def exact_values(client, token: str, slug: str) -> dict[str, list[float]]:
    """Return every exact ε, posterior bound and δ the pages of ``slug`` may state, from the machine views."""
    design = client.get(f"/s/{slug}/design.json").get_json()
    release = client.get(f"/api/surveys/{slug}/results", headers={"Authorization": f"Bearer {token}"}).get_json()["release"]
    epsilons = {design["epsilon"], design["epsilon_spent"], release["local_epsilon"], release["central_epsilon"]}
    if release["every"] > 1:
        epsilons |= {central_epsilon(release["local_epsilon"], release["every"])}
    if release["held"] > 1:
        epsilons.add(central_epsilon(release["local_epsilon"], release["held"]))
    for question in design["questions"]:
        epsilons |= {question["epsilon"], question.get("epsilon_nominal", question["epsilon"])}
        if question["kind"] == "multi":
            epsilons.add(question["epsilon"] / len(question["options"]))
    if design.get("allocation") == "sample":
        epsilons.add(design["epsilon"] / design["sample"])
    return {"epsilon": sorted(epsilons), "sure": sorted(posterior_bound(value) * 100 for value in epsilons),
            "delta": [release["delta"]]}


def _check(kind: str, shown: str, exact: list[float], where: str) -> float:
    """Check one shown figure is at least the exact value nearest it, and within a step of its precision."""
    value = float(shown.replace(",", ""))
    nearest = min(exact, key=lambda candidate: abs(math.log(max(value, 1e-300) / max(candidate, 1e-300))))
    assert value >= nearest * (1 - ROUND_OFF), f"{where}: {kind} {shown} is below its exact value {nearest!r}"
    decimals = len(shown.partition(".")[2])
    step = 10.0 ** -decimals
    assert value - nearest <= max(step, 0.11 * nearest), f"{where}: {kind} {shown} stands for no value near it ({nearest!r})"
    return nearest


def _pages(scanned, slug: str) -> dict[str, str]:
    """Return the markup of every page of a survey that states privacy figures."""
    owner = scanned["owner"]
    pages = {"respondent page": owner.get(f"/s/{slug}").get_data(as_text=True),
             "test mode": owner.get(f"/surveys/{slug}/test").get_data(as_text=True),
             "results": owner.get(f"/surveys/{slug}/results").get_data(as_text=True),
             "sandbox": owner.get(f"/surveys/{slug}/sandbox").get_data(as_text=True)}
    if "release-csrf" in pages["results"]:
        pages["early-release notice"] = owner.get(f"/surveys/{slug}/results?confirm=release").get_data(as_text=True)
    builder = owner.get(f"/surveys/build?edit={slug}")
    pages["builder preview"] = owner.post("/surveys/build", data={**fields(builder), "action": "preview"}).get_data(
        as_text=True)
    return pages


def test_every_privacy_figure_on_the_pages_is_at_least_its_exact_value(scanned):
    matched = {}
    for slug in SURVEYS:
        exact = exact_values(scanned["owner"], scanned["token"], slug)
        for name, markup in _pages(scanned, slug).items():
            for kind, texts in shown_figures(markup).items():
                for shown in texts:
                    matched.setdefault((slug, kind), set()).add(
                        (shown, _check(kind, shown, exact[kind], f"{slug}, {name}")))
    # The audited values are on the pages, rounded up; an exact 2 reads 2.
    central = {slug: {shown for shown, _ in matched[(slug, "epsilon")]} for slug in SURVEYS}
    assert "0.495" in central["budget-a"] and not {"0.494", "0.4942"} & central["budget-a"]
    assert "1.93" in central["budget-b"] and not {"1.92", "1.9235"} & central["budget-b"]
    assert "0.114" in central["budget-c"] and not {"0.113", "0.1132"} & central["budget-c"]
    assert "0.495" in central["central-a"] and "1.93" in central["central-b"] and "0.114" in central["central-c"]
    # One style on every page: three significant digits at most (issue 27: ε once read 0.6666666666666664).
    digits = {shown: len(shown.replace(".", "").lstrip("0")) for key, pairs in matched.items() if key[1] == "epsilon"
              for shown, _ in pairs}
    assert all(count <= 3 for count in digits.values()), digits
    assert {shown for shown, value in matched[("exact-two", "epsilon")] if abs(value - 2) < 1e-9} == {"2"}
    assert {shown for shown, _ in matched[("exact-two", "sure")]} == {"89", "88.1"}, "e²/(1 + e²) = 88.08%"
    assert {shown for shown, _ in matched[("central-a", "delta")]} == {"1e-6"}


def test_the_results_page_says_an_early_release_of_one_has_no_amplification(scanned):
    page = _text(scanned["owner"].get("/surveys/exact-two/results").get_data(as_text=True))
    assert ("One release was made early with a batch of one response: no amplification; the central ε equals "
            "each report's ε = 2.") in page
    assert "far less than" not in page, "batches of 3 at ε = 2 are too small to amplify"
    assert "no less than each report's own ε = 2: batches of 3 are too small to amplify" in page
