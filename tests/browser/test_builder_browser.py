"""The builder in Chromium with JavaScript: build every kind in place with a live preview, save, publish,
answer as a respondent, see the response on the dashboard, close, and a later submission gets 410."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect
from werkzeug.security import generate_password_hash

from survey.core.definition import parse_definition, parse_definition_toml
from survey.core.planning import question_previews
from survey.core.words import format_epsilon, percent_up
from survey.store import Store
from conftest import signed_in_page, stored_count

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EMAIL, PASSWORD = "builder@example.org", "builds surveys"
SLUG = "gym-habits"



def legends(page) -> list[str]:
    return page.locator("#questions > fieldset > legend").all_inner_texts()


def test_build_publish_answer_and_close_in_the_browser(browser, live_server):
    origin, db_path = live_server["origin"], live_server["db"]
    store = Store(db_path)
    store.add_user(EMAIL, generate_password_hash(PASSWORD), replace=True)
    store.close()
    context, page, errors = signed_in_page(browser, origin, EMAIL, PASSWORD)
    page.get_by_role("link", name="New survey").first.click()
    page.wait_for_url(re.compile("/surveys/build$"))
    page.locator("#builder[data-enhanced=yes]").wait_for(state="attached")
    page.evaluate("window.__sameDocument = true")

    sample = page.get_by_label("Questions per respondent (sample only)")
    assert not sample.is_visible(), "the sample size shows only for the sample allocation"
    page.get_by_label("How questions share the budget").select_option("sample")
    assert sample.is_visible()
    page.get_by_label("How questions share the budget").select_option("split")
    page.get_by_label("Title").fill("Gym habits")
    page.get_by_label("Address (slug)").fill(SLUG)
    page.get_by_label("Privacy budget ε per respondent").fill("3")
    page.get_by_label("Series (optional)", exact=True).fill("gym-panel")
    page.get_by_label("Release results every … responses (optional)").fill("1")
    page.fill("#questions-0-id", "member")
    page.fill("#questions-0-text", "Are you a gym member?")
    page.get_by_role("button", name="Add single choice question").click()
    assert page.evaluate("document.activeElement.id") == "questions-1-id", "focus moves to the new question"
    page.fill("#questions-1-id", "visits")
    page.fill("#questions-1-text", "How often do you go?")
    page.fill("#questions-1-options", "never\nmonthly\nweekly\ndaily")
    page.locator("#questions-1-decline").check()
    page.get_by_role("button", name="Add multiple choice question").click()
    page.fill("#questions-2-id", "sports")
    page.fill("#questions-2-text", "Which sports do you do?")
    page.fill("#questions-2-options", "running\nswimming\ncycling")
    page.get_by_role("button", name="Add number question").click()
    page.fill("#questions-3-id", "age")
    page.fill("#questions-3-text", "How old are you?")
    page.fill("#questions-3-min", "16")
    page.fill("#questions-3-max", "99")
    page.fill("#questions-3-weight", "0.5")
    # Add and remove one more; move the number up and back down: all in place.
    page.get_by_role("button", name="Add yes/no question").click()
    assert len(legends(page)) == 5
    page.get_by_role("button", name="Remove question 5").click()
    page.get_by_role("button", name="Move up question 4").click()
    assert legends(page) == ["Question 1: yes/no", "Question 2: single choice", "Question 3: number",
                             "Question 4: multiple choice"]
    assert page.evaluate("document.activeElement.id") == "questions-2-up", "focus follows the moved question"
    assert page.input_value("#questions-2-id") == "age" and page.input_value("#questions-2-min") == "16"
    page.get_by_role("button", name="Move down question 3").click()
    assert [page.input_value(f"#questions-{i}-id") for i in range(4)] == ["member", "visits", "sports", "age"]
    assert page.locator("#questions-1-decline").is_checked() and not page.locator("#questions-2-decline").is_checked()

    definition = parse_definition({"slug": SLUG, "title": "Gym habits", "epsilon": 3.0, "series": "gym-panel",
                                   "release_every": 1,
                                   "questions": [
        {"id": "member", "kind": "yes_no", "text": "Are you a gym member?"},
        {"id": "visits", "kind": "choice", "text": "How often do you go?",
         "options": ["never", "monthly", "weekly", "daily"], "decline": True},
        {"id": "sports", "kind": "multi", "text": "Which sports do you do?",
         "options": ["running", "swimming", "cycling"]},
        {"id": "age", "kind": "number", "text": "How old are you?", "min": 16, "max": 99, "weight": 0.5}]})
    page.get_by_label("Respondents you expect").fill("4000")
    expected = question_previews(definition, respondents=4000, margin=0.05)
    for index, numbers in enumerate(expected):
        preview = page.locator(f"#questions-{index}-preview")
        preview.get_by_text("Margin with 4,000 respondents").wait_for(timeout=10_000)
        text = preview.inner_text()
        assert f"{numbers['respondents_needed']:,}" in text and f"ε′ = {format_epsilon(numbers['epsilon'], 3)}" in text
        assert f"at most {percent_up(numbers['posterior'], 1)} sure" in text
    assert "all 5 options at once" in page.locator("#questions-1-preview").inner_text(), "the declined option counts"
    summary = page.locator("#builder-summary").inner_text()
    assert "ldp-survey plan" in summary and ("Allocation: yours" in summary or "Recommended allocation" in summary)

    # Sample allocation, live: a differing weight is marked beside it; once equal, each question is at ε/m.
    page.get_by_label("How questions share the budget").select_option("sample")
    page.get_by_label("Questions per respondent (sample only)").fill("2")
    page.locator("#questions-3-weight-error").get_by_text("make them all equal").wait_for(timeout=10_000)
    page.fill("#questions-3-weight", "1")
    page.locator("#questions-3-preview").get_by_text("each answers 2 of the 4 questions").wait_for(timeout=10_000)
    assert "at ε/2 = 1.5" in page.locator("#questions-0-preview").inner_text()
    page.get_by_label("How questions share the budget").select_option("split")
    page.fill("#questions-3-weight", "0.5")
    page.locator("#questions-3-preview").get_by_text("Margin with 4,000 respondents").wait_for(timeout=10_000)
    expect(page.locator("#questions-3-preview")).not_to_contain_text("each answers", timeout=10_000)

    # A live error appears beside its field, and goes once fixed.
    page.get_by_label("Privacy budget ε per respondent").fill("lots")
    page.locator("#epsilon-error").get_by_text("got 'lots'").wait_for(timeout=10_000)
    assert page.get_attribute("#epsilon", "aria-invalid") == "true"
    page.get_by_label("Privacy budget ε per respondent").fill("3")
    expect(page.locator("#epsilon-error")).to_have_text("", timeout=10_000)
    expect(page.locator("#epsilon")).not_to_have_attribute("aria-invalid", "true")
    page.locator("#questions-0-preview").get_by_text("Margin with 4,000 respondents").wait_for(timeout=10_000)
    assert page.evaluate("window.__sameDocument === true"), "no step reloaded the page"

    page.get_by_role("button", name="Save draft").click()
    page.wait_for_url(re.compile(f"/surveys/{SLUG}/results$"))
    assert page.get_by_text("Draft created").is_visible()
    page.get_by_role("button", name="Publish…").click()
    page.get_by_role("button", name="Yes, publish the survey").click()
    page.get_by_text(re.compile("^Published")).wait_for()

    respondent = browser.new_context(viewport={"width": 390, "height": 844})
    answer = respondent.new_page()
    posts = []
    answer.on("request", lambda request: posts.append(request.post_data) if request.method == "POST" else None)
    answer.goto(f"{origin}/s/{SLUG}")
    answer.get_by_role("group", name=re.compile("gym member")).get_by_label("Yes").check()
    expect(answer.get_by_role("group", name=re.compile("How often")).get_by_label("Prefer not to say")).to_be_visible()
    answer.get_by_role("group", name=re.compile("How often")).get_by_label("weekly").check()
    answer.get_by_role("group", name=re.compile("Which sports")).get_by_label("swimming").check()
    answer.get_by_role("group", name=re.compile("How old")).get_by_role("spinbutton").fill("40")
    answer.get_by_role("button", name=re.compile("send", re.I)).click()
    answer.get_by_text(re.compile("thank you", re.I)).first.wait_for(timeout=10_000)
    assert stored_count(db_path, SLUG) == 1 and len(posts) == 1

    page.reload()
    assert page.get_by_text(re.compile(r"^1 response\.")).is_visible()
    page.get_by_role("button", name="Close survey…").click()
    page.get_by_role("button", name="Yes, close the survey").click()
    page.get_by_text(re.compile("^Closed")).first.wait_for()

    # The browser's request as a new submission after the close: 410. The very same request
    # again is a repeat of a stored submission id, confirmed (201) and not stored again.
    sent = json.loads(posts[0])
    headers = {"Content-Type": "application/json"}
    late = answer.request.post(f"{origin}/s/{SLUG}/responses", headers=headers,
                               data={**sent, **({"submission": "0" * 32} if "submission" in sent else {})})
    assert late.status == 410, late.text()
    repeat = answer.request.post(f"{origin}/s/{SLUG}/responses", data=sent, headers=headers)
    assert repeat.status in (201, 410), repeat.text()
    assert stored_count(db_path, SLUG) == 1, "a submission to a closed survey stores nothing"
    assert errors == []
    respondent.close()
    context.close()


def test_the_builder_works_without_javascript(browser, live_server):
    """Every step is a submit button the server applies: add, move, preview, export; nothing happens in place."""
    origin = live_server["origin"]
    store = Store(live_server["db"])
    store.add_user(EMAIL, generate_password_hash(PASSWORD), replace=True)
    store.close()
    context = browser.new_context(java_script_enabled=False, accept_downloads=True)
    page = context.new_page()
    page.goto(f"{origin}/login")
    page.get_by_label("Email").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{origin}/surveys/build")
    page.get_by_label("Title").fill("Plain form")
    page.get_by_label("Address (slug)").fill("plain-form")
    page.get_by_label("Who may answer").select_option("invite")
    page.fill("#questions-0-id", "first")
    page.fill("#questions-0-text", "First?")
    with page.expect_navigation():
        page.get_by_role("button", name="Add number question").click()
    assert legends(page) == ["Question 1: yes/no", "Question 2: number"]
    assert page.evaluate("document.activeElement.id") == "questions-1-id", "the new question has the focus"
    page.fill("#questions-1-id", "second")
    page.fill("#questions-1-text", "How many?")
    page.fill("#questions-1-min", "0")
    page.fill("#questions-1-max", "10")
    with page.expect_navigation():
        page.get_by_role("button", name="Move up question 2").click()
    assert legends(page) == ["Question 1: number", "Question 2: yes/no"]
    page.fill("#questions-1-text", "First, now second?")
    with page.expect_navigation():
        page.locator("#questions-1-text").press("Tab")
        page.get_by_label("Respondents you expect").press("Enter")  # Enter previews
    assert page.locator("#questions-0-preview").get_by_text("Respondents for ±5 points").is_visible()
    assert legends(page) == ["Question 1: number", "Question 2: yes/no"], "Enter changed no question"
    with page.expect_download() as download:
        page.get_by_role("button", name="Export TOML").click()
    assert download.value.suggested_filename == "plain-form.toml"
    text = download.value.path().read_text(encoding="utf-8")
    assert [q.id for q in parse_definition_toml(text).questions] == ["second", "first"]
    assert parse_definition_toml(text).access == "invite"
    context.close()
