"""The builder in Chromium: a question's kind changes in place, while the form has errors the last
preview stays, marked as out of date, and questions move by drag and drop."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from werkzeug.security import generate_password_hash

from survey.core.definition import Question, parse_definition_toml
from survey.store import Store
from conftest import signed_in_page
from test_accessibility import violations

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EMAIL, PASSWORD = "kinds@example.org", "changes question kinds"
WAIT = 10_000


@pytest.fixture(scope="module")
def axe():
    from axe_playwright_python.sync_playwright import Axe

    return Axe()


@pytest.fixture
def builder(request, browser, live_server):
    """Yield (page, console errors, database): the builder, enhanced by builder.js, signed in, at the ``param`` width."""
    store = Store(live_server["db"])
    store.add_user(EMAIL, generate_password_hash(PASSWORD), replace=True)
    store.close()
    width = getattr(request, "param", 1280)
    context, page, errors = signed_in_page(browser, live_server["origin"], EMAIL, PASSWORD, width=width)
    page.goto(live_server["origin"] + "/surveys/build")
    page.locator("#builder[data-enhanced=yes]").wait_for(state="attached")
    page.evaluate("window.__sameDocument = true")
    yield page, errors, live_server["db"]
    context.close()


def legends(page) -> list[str]:
    return page.locator("#questions > fieldset > legend").all_inner_texts()


def fill_survey(page, question_id="transport", text="How do you travel?"):
    page.get_by_label("Title").fill("Kinds")
    page.get_by_label("Address (slug)").fill("kinds")
    page.fill("#questions-0-id", question_id)
    page.fill("#questions-0-text", text)


@pytest.mark.parametrize("builder", [360], indirect=True)
def test_change_a_questions_kind_in_place(builder, axe):
    page, errors, db_path = builder
    fill_survey(page)
    preview = page.locator("#questions-0-preview")
    preview.get_by_text("randomized response (rr)").wait_for(timeout=WAIT)
    expect(page.locator("#questions-0-kind-apply")).to_be_hidden()
    options, decline = page.locator("#questions-0-options"), page.locator("#questions-0-decline")
    smallest, largest = page.locator("#questions-0-min"), page.locator("#questions-0-max")
    mechanism = page.get_by_label("Mechanism")
    for hidden in (options, decline, smallest, largest, mechanism):
        expect(hidden).to_be_hidden()

    # By keyboard: the focus stays on the select, the change is announced, the fields of a choice appear.
    kind = page.get_by_label("Kind of question 1")
    kind.focus()
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.id") == "questions-0-kind"
    assert legends(page) == ["Question 1: single choice"]
    expect(page.locator("#builder-status")).to_have_text("Question 1 is now a single choice question.")
    expect(options).to_be_visible()
    expect(decline).to_be_visible()
    expect(smallest).to_be_hidden()
    expect(mechanism).to_be_hidden()
    expect(page.locator("#questions-0-options-hint")).to_contain_text("respondents pick one")
    expect(preview.locator(".stale-note")).to_have_text(
        "Out of date: fill in the empty fields to update this preview.", timeout=WAIT)
    expect(preview).to_contain_text("randomized response (rr)")
    options.fill("walk\nbicycle\ncar")
    expect(preview).to_contain_text("all 3 options at once", timeout=WAIT)
    expect(preview.locator(".stale-note")).to_have_count(0)
    assert page.input_value("#questions-0-id") == "transport"
    assert page.input_value("#questions-0-text") == "How do you travel?"
    assert violations(axe, page) == [], "the builder after a change of kind"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    kind.select_option("multi")
    assert legends(page) == ["Question 1: multiple choice"]
    assert page.input_value("#questions-0-options") == "walk\nbicycle\ncar", "the options stay"
    expect(page.locator("#questions-0-options-hint")).to_contain_text("tick any number")
    expect(preview).to_contain_text("one bit per option", timeout=WAIT)

    kind.select_option("number")
    expect(options).to_be_hidden()
    expect(decline).to_be_hidden()
    expect(smallest).to_be_visible()
    expect(largest).to_be_visible()
    expect(mechanism).to_be_visible()
    expect(mechanism).to_have_value("auto")
    smallest.fill("0")
    largest.fill("20")
    expect(preview).to_contain_text("of the answer's range", timeout=WAIT)
    expect(page.locator("#questions-0-options-error")).to_have_text("")

    # A wrong largest answer is an error while the question is a number, and none once it is a choice again.
    largest.fill("lots")
    expect(page.locator("#questions-0-max-error")).not_to_have_text("", timeout=WAIT)
    expect(preview.locator(".stale-note")).to_contain_text("fix the 1 marked field")
    kind.select_option("choice")
    assert page.input_value("#questions-0-options") == "walk\nbicycle\ncar", "hidden options come back"
    expect(mechanism).to_be_hidden()
    expect(preview).to_contain_text("all 3 options at once", timeout=WAIT)
    expect(preview.locator(".stale-note")).to_have_count(0)
    expect(page.locator(".field-error:not(:empty)")).to_have_count(0)
    expect(page.locator("[aria-invalid=true]")).to_have_count(0)

    assert page.evaluate("window.__sameDocument === true"), "no change of kind reloaded the page"

    # Saved, the question is the choice shown, without the hidden smallest and largest answers.
    page.get_by_role("button", name="Save draft").click()
    page.wait_for_url(re.compile("/surveys/kinds/results$"))
    store = Store(db_path)
    try:
        [question] = parse_definition_toml(store.get_definition("kinds")).questions
    finally:
        store.close()
    assert question == Question(id="transport", kind="choice", text="How do you travel?",
                                options=("walk", "bicycle", "car"))
    assert errors == []


def test_the_last_preview_stays_marked_out_of_date(builder, axe):
    page, errors, _ = builder
    fill_survey(page, "smoker", "Do you smoke?")
    preview = page.locator("#questions-0-preview")
    preview.get_by_text("ε′ = 2").wait_for(timeout=WAIT)
    numbers = preview.locator(".preview-numbers").inner_text()

    page.get_by_label("Privacy budget ε per respondent").fill("lots")
    page.locator("#epsilon-error").get_by_text("got 'lots'").wait_for(timeout=WAIT)
    expect(preview.locator(".stale-note")).to_have_text(
        "Out of date: fix the 1 marked field to update this preview.")
    assert preview.locator(".preview-numbers").inner_text() == numbers, "the last good preview stays"
    expect(page.locator("#builder-summary")).to_have_text(
        "The preview below is out of date: fix the 1 marked field to update it.")
    assert violations(axe, page) == [], "the builder with an out-of-date preview"

    # A question added meanwhile has no preview yet, so nothing to mark.
    page.get_by_role("button", name="Add yes/no question").click()
    expect(page.locator("#questions-1-preview")).to_be_empty()
    page.get_by_role("button", name="Remove question 2").click()

    page.get_by_label("Privacy budget ε per respondent").fill("3")
    expect(preview).to_contain_text("ε′ = 3", timeout=WAIT)
    expect(preview.locator(".stale-note")).to_have_count(0)
    expect(preview).not_to_have_attribute("data-stale", re.compile("."))
    expect(page.locator("#epsilon-error")).to_have_text("")
    assert page.evaluate("window.__sameDocument === true")
    assert errors == []


def test_change_a_questions_kind_without_javascript(browser, live_server):
    """Without JavaScript the Change kind button beside the select applies it: a new page, what was typed kept."""
    store = Store(live_server["db"])
    store.add_user(EMAIL, generate_password_hash(PASSWORD), replace=True)
    store.close()
    context = browser.new_context(java_script_enabled=False, viewport={"width": 360, "height": 800})
    page = context.new_page()
    page.goto(live_server["origin"] + "/login")
    page.get_by_label("Email").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.goto(live_server["origin"] + "/surveys/build")
    fill_survey(page, "age", "How old are you?")
    page.get_by_label("Kind of question 1").select_option("number")
    assert legends(page) == ["Question 1: yes/no"], "nothing changes before the button"
    with page.expect_navigation():
        page.get_by_role("button", name="Change kind of question 1").click()
    assert legends(page) == ["Question 1: number"]
    assert page.evaluate("document.activeElement.id") == "questions-0-kind", "the focus is back on the kind"
    expect(page.get_by_label("Smallest answer")).to_be_visible()
    expect(page.get_by_label("Options, one per line")).to_be_hidden()
    expect(page.locator(".drag-handle")).to_be_hidden()  # without JavaScript nothing can be dragged
    assert page.input_value("#questions-0-id") == "age" and page.input_value("#questions-0-text") == "How old are you?"
    context.close()


def test_drag_a_question_by_its_handle(builder):
    """A mouse drops a question above or below another; the questions are renumbered and the move announced."""
    page, errors, _ = builder
    fill_survey(page, "first", "First?")
    for kind, name in (("single choice", "second"), ("number", "third")):
        page.get_by_role("button", name=f"Add {kind} question").click()
        index = len(legends(page)) - 1
        page.fill(f"#questions-{index}-id", name)
        page.fill(f"#questions-{index}-text", f"{name.title()}?")
    page.fill("#questions-1-options", "red\ngreen")
    page.fill("#questions-2-min", "0")
    page.fill("#questions-2-max", "9")
    page.locator("#questions-2-preview").get_by_text("of the answer's range").wait_for(timeout=WAIT)

    def ids():
        return [page.input_value(f"#questions-{index}-id") for index in range(3)]

    # Playwright's drag does not scroll while the button is down: the window shows every question.
    page.set_viewport_size({"width": 1280, "height": page.evaluate("document.documentElement.scrollHeight")})
    handle = page.locator("#questions-2 .drag-handle")
    expect(handle).to_be_visible()
    handle.drag_to(page.locator("#questions-0"), target_position={"x": 40, "y": 10})
    assert ids() == ["third", "first", "second"]
    assert legends(page) == ["Question 1: number", "Question 2: yes/no", "Question 3: single choice"]
    expect(page.locator("#builder-status")).to_have_text("Question moved to position 1.")
    assert page.input_value("#questions-0-max") == "9" and page.input_value("#questions-2-options") == "red\ngreen"
    expect(page.locator("#questions-0-preview")).to_contain_text("of the answer's range", timeout=WAIT)

    target = page.locator("#questions-2")
    box = target.bounding_box()
    page.locator("#questions-0 .drag-handle").drag_to(target, target_position={"x": 40, "y": box["height"] - 10})
    assert ids() == ["first", "second", "third"]
    expect(page.locator("#builder-status")).to_have_text("Question moved to position 3.")
    expect(page.get_by_role("button", name="Move up question 3")).to_be_visible()
    expect(page.locator(".drop-before, .drop-after, .dragging")).to_have_count(0)
    expect(page.locator("#questions-2-preview")).to_contain_text("of the answer's range", timeout=WAIT)
    assert page.evaluate("window.__sameDocument === true")
    assert errors == []


def test_a_numbers_mechanism_chosen_in_the_select_changes_its_preview(builder):
    """Choosing Piecewise, Duchi, Hybrid, then Automatic redraws the preview with that mechanism, in place."""
    page, errors, _ = builder
    fill_survey(page, "age", "How old are you?")
    page.get_by_label("Privacy budget ε per respondent").fill("4")
    page.locator("#questions-0-kind").select_option("number")
    page.fill("#questions-0-min", "16")
    page.fill("#questions-0-max", "99")
    preview = page.locator("#questions-0-preview")
    expect(preview).to_contain_text("optimal piecewise mechanism (opm)", timeout=WAIT)
    mechanism = page.get_by_label("Mechanism")
    for value, name in (("piecewise", "piecewise mechanism (piecewise)"),
                        ("duchi", "Duchi rounding + randomized response (duchi)"),
                        ("hybrid", "hybrid of the piecewise and Duchi mechanisms (hybrid)"),
                        ("auto", "optimal piecewise mechanism (opm)")):
        mechanism.select_option(value)
        expect(preview).to_contain_text(name, timeout=WAIT)
    assert page.evaluate("window.__sameDocument === true")
    assert errors == []
