"""The results and crosstab pages in Chromium, at 360 and 1280 px: plain sentences whose numbers are the estimates,
readable charts, tables that scroll in their own region, actions after the results and confirmed first."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from werkzeug.security import generate_password_hash

from survey.core.aggregate import aggregate_counts
from survey.core.simulate import complete_truth, parse_truth, simulate_columns
from survey.store import Store
from conftest import RENDERED_TEXT_SIZES_JS, create_from_toml, definition, signed_in_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EMAIL, PASSWORD = "reader@example.org", "results in plain words"
SLUG = "every-kind"
SHOTS = Path("/tmp/shots-results")
DEFINITION = f"""
slug = "{SLUG}"
release_every = 1
title = "Travel and health, every kind of question"
epsilon = 6.0

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke tobacco at least once a week?"

[[questions]]
id = "trip"
kind = "choice"
text = "What was the main reason for your last trip?"
options = ["Business", "Leisure", "Visiting family or friends", "Something else entirely, or I would rather not say"]

[[questions]]
id = "sport"
kind = "multi"
text = "Which sports did you do last month?"
options = ["swimming", "running", "cycling"]

""" + definition("age")
KINDS = {"smoker": "yes_no", "trip": "choice", "sport": "multi", "age": "number"}


@pytest.fixture(scope="module")
def origin(live_server):
    """The live server with a survey of every kind, 4,000 simulated respondents, shared with the researcher."""
    db = live_server["db"]
    design = create_from_toml(db, DEFINITION)
    store = Store(db)
    try:
        store.add_user(EMAIL, generate_password_hash(PASSWORD), replace=True)
        store.share(SLUG, EMAIL)
        store.share("smoking-2026", EMAIL)
        rng = np.random.default_rng(13)
        truth = complete_truth(design, parse_truth(design, ["smoker=0.25", "age=36"]), rng)
        store.add_report_columns(SLUG, design["hash"], simulate_columns(design, truth, 4000, rng))
    finally:
        store.close()
    return live_server["origin"]


def estimates(db) -> dict:
    """Return the aggregate rows of the survey by (question, option), as the page computes them."""
    store = Store(db)
    try:
        design = store.get_design(SLUG)
        _, counts = store.tallies(SLUG)
    finally:
        store.close()
    return {(row.question, row.option): row for row in aggregate_counts(design, counts, level=0.95)}


def numbers(text: str) -> list[float]:
    return [float(match) for match in re.findall(r"-?\d+(?:\.\d+)?", text.replace(",", ""))]


def test_every_kind_reads_as_a_sentence_whose_numbers_are_the_estimates(browser, origin, live_server):
    context, page, errors = signed_in_page(browser, origin, EMAIL, PASSWORD)
    page.goto(f"{origin}/surveys/{SLUG}/results")
    rows = estimates(live_server["db"])
    for qid, kind in KINDS.items():
        sentences = page.locator(f"#question-{qid} ul.readout li").all_inner_texts()
        own = [row for (question, _), row in rows.items() if question == qid]
        assert len(sentences) == len(own) >= 1, qid
        for sentence, row in zip(sentences, own):
            low, high, *rest = numbers(sentence.split("(")[0] if kind == "number" else sentence)
            best = numbers(sentence.split("best single estimate is")[1])[0]
            scale = 1 if kind == "number" else 100
            half_step = 0.05 if kind == "number" else 0.5
            assert abs(low - row.ci_low * scale) <= half_step and abs(high - row.ci_high * scale) <= half_step, sentence
            assert abs(best - row.estimate * scale) <= half_step, sentence
            assert "(95% confidence" in sentence, sentence
            expected_start = {"yes_no": "Between", "choice": "Between", "multi": "Between", "number": "The mean answer"}
            assert sentence.startswith(expected_start[kind]), sentence
            if kind == "choice":
                assert f"chose “{row.option}” (95% confidence, holding for all options at once)" in sentence
            if kind == "multi":
                assert f"ticked “{row.option}”" in sentence
        assert page.locator(f"#chart-{qid} .bar-figures").count() == len(own), "each bar carries its figures"
    assert errors == []
    context.close()


def test_the_page_explains_itself_and_keeps_the_technical_table_behind_a_legend(browser, origin):
    context, page, errors = signed_in_page(browser, origin, EMAIL, PASSWORD)
    page.goto(f"{origin}/surveys/{SLUG}/results")
    how = page.locator("#how-to-read")
    for words in ("95% confidence", "below 0% or above 100%", "Holding for all options at once",
                  "Privacy loss per answer"):
        assert words in how.inner_text(), words
    table = page.get_by_role("table", name="Debiased estimates")
    assert not table.is_visible(), "the technical table waits behind its summary"
    page.get_by_text("Technical details").click()
    assert table.is_visible()
    legend = page.locator("details.technical dl.legend").inner_text()
    assert "Noisy share" in legend and "before correcting for the noise" in legend and "Privacy loss per answer" in legend
    methods = set(table.locator("tbody tr td:nth-child(3)").all_inner_texts())
    assert "randomized response" in methods and all(len(method) > 5 for method in methods), methods
    assert errors == []
    context.close()


@pytest.mark.parametrize("width", [360, 1280])
def test_readable_at_phone_width_results_first_and_tables_scroll_in_their_region(browser, origin, width):
    SHOTS.mkdir(exist_ok=True)
    context, page, errors = signed_in_page(browser, origin, EMAIL, PASSWORD, width=width)
    page.goto(f"{origin}/surveys/{SLUG}/results")
    page.get_by_text("Technical details").click()
    sizes = page.evaluate(RENDERED_TEXT_SIZES_JS, "figure.chart, .finding")
    assert len(sizes) > 40
    smallest = min(sizes)
    assert smallest[0] >= 12, f"{smallest[1]!r} is {smallest[0]:.1f} CSS px"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "no sideways page scroll"
    assert page.locator("#results-title").bounding_box()["y"] < page.locator("#manage").bounding_box()["y"]
    assert page.locator(".finding").first.bounding_box()["y"] < 900, "the first result is on the first screen"

    region = page.get_by_role("region", name=re.compile("Debiased estimates"))
    first = region.locator("tbody tr").first.locator("th")
    left = first.bounding_box()["x"]
    if width == 360:
        assert region.evaluate("element => element.scrollWidth > element.clientWidth"), "the table scrolls in place"
    region.evaluate("element => { element.scrollLeft = 300; }")
    assert first.bounding_box()["x"] == pytest.approx(left, abs=1), "the first column stays in view"
    region.evaluate("element => { element.scrollLeft = 0; }")
    page.get_by_text("Technical details").click()
    page.screenshot(path=str(SHOTS / f"results-{width}.png"), full_page=True)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(SHOTS / f"results-{width}-first-screen.png"))
    assert errors == []
    context.close()


def test_close_publish_and_delete_ask_first_and_look_dangerous(browser, origin, live_server):
    context, page, errors = signed_in_page(browser, origin, EMAIL, PASSWORD, width=360)

    def status(slug):
        store = Store(live_server["db"])
        try:
            return store.survey_status(slug) if store.survey_exists(slug) else None
        finally:
            store.close()

    page.goto(f"{origin}/surveys/{SLUG}/results")
    page.get_by_label("New slug").fill("every-kind-copy")
    page.get_by_role("button", name="Duplicate as a new draft").click()
    page.wait_for_url(re.compile("/surveys/every-kind-copy/results"))
    # How a button looks: its fill, text colour and border (the delete button is outlined, dashed, in red).
    colour = ("element => { const s = getComputedStyle(element);"
              " return [s.backgroundColor, s.color, s.borderTopStyle, s.borderTopColor].join(' '); }")
    safe = page.get_by_role("button", name="Duplicate as a new draft").evaluate(colour)
    assert (page.get_by_role("button", name="Publish…").evaluate(colour)
            != page.get_by_role("button", name="Delete draft…").evaluate(colour)), "deleting looks like publishing"
    for name, question in (("Publish…", "Yes, publish the survey"), ("Delete draft…", "Yes, delete the draft")):
        button = page.get_by_role("button", name=name)
        assert button.evaluate(colour) != safe, f"{name} looks different from a safe action"
        button.click()
        page.get_by_role("button", name=question).wait_for()
        assert status("every-kind-copy") == "draft", "the first press only asks"
        page.get_by_role("link", name="Cancel").click()
        page.get_by_role("button", name=name).wait_for()
    page.get_by_role("button", name="Delete draft…").click()
    page.get_by_role("button", name="Yes, delete the draft").click()
    page.wait_for_url(re.compile("/surveys$"))
    assert status("every-kind-copy") is None

    page.goto(f"{origin}/surveys/smoking-2026/results")
    page.get_by_role("button", name="Close survey…").click()
    assert status("smoking-2026") == "open"
    page.get_by_role("button", name="Yes, close the survey").click()
    page.get_by_text(re.compile("^Closed")).first.wait_for()
    assert status("smoking-2026") == "closed"
    page.get_by_role("button", name="Reopen survey").click()
    page.get_by_text(re.compile("^Reopened")).wait_for()
    assert status("smoking-2026") == "open" and errors == []
    context.close()


def test_downloads_link_every_file_and_the_codebook(browser, origin):
    context, page, errors = signed_in_page(browser, origin, EMAIL, PASSWORD)
    page.goto(f"{origin}/surveys/{SLUG}/results")
    downloads = page.locator("#downloads")
    for name in ("Estimates (CSV)", "Noisy reports (CSV)", "as JSON", "Crosstabs", "smoker × trip as CSV"):
        link = downloads.get_by_role("link", name=name)
        fetched = page.request.get(origin + link.get_attribute("href"))
        assert fetched.status == 200, name
    codebook = page.request.get(origin + downloads.get_by_role("link", name="as JSON").get_attribute("href"))
    assert codebook.headers["content-type"].startswith("application/json") and "columns" in codebook.text()
    assert errors == []
    context.close()


@pytest.mark.parametrize("width", [360, 1280])
def test_crosstab_opens_on_a_default_pair_with_numbers(browser, origin, width):
    SHOTS.mkdir(exist_ok=True)
    context, page, errors = signed_in_page(browser, origin, EMAIL, PASSWORD, width=width)
    page.goto(f"{origin}/surveys/{SLUG}/results")
    page.locator("#downloads").get_by_role("link", name="Crosstabs").click()
    page.goto(f"{origin}/surveys/{SLUG}/crosstab")
    assert page.get_by_role("alert").count() == 0, "no error on opening"
    assert page.get_by_role("heading", name="smoker × trip").is_visible()
    assert page.get_by_label("First question (rows)").input_value() == "smoker"
    cells = page.locator("table.results td.num").all_inner_texts()
    assert cells and all(re.match(r"-?\d+(\.\d+)?% \[\d+(\.\d+)?%, \d+(\.\d+)?%\]$", cell) for cell in cells), cells
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(SHOTS / f"crosstab-{width}.png"), full_page=True)
    assert errors == []
    context.close()
