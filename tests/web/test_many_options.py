"""Up to 256 options: definition, design, store, submission, aggregation and the respondent form.

The form test drives the real page in Chromium: the filter box finds an option among 256,
"Prefer not to say" is an ordinary option shown last (exclusive of the others in a multi),
the page is axe-clean and never scrolls sideways at 360 px, and the request holds only a
report in the mechanism's domain.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from survey.core.aggregate import aggregate_counts
from survey.core.definition import DECLINE_LABEL, MAX_OPTIONS, DefinitionError, parse_definition, parse_definition_toml
from survey.core.design import build_design
from survey.core.reports import validate_report
from survey.core.simulate import simulate_columns
from survey.store import Store

from test_accessibility import RULES

SLUG = "many-options"
LABELS = [f"Town {i:03d}" for i in range(255)]
MANY_TOML = f'''
slug = "{SLUG}"
release_every = 1
title = "Where do you live?"
epsilon = 8.0

[[questions]]
id = "town"
kind = "choice"
text = "Which town do you live in?"
options = {json.dumps(LABELS)}
decline = true

[[questions]]
id = "sports"
kind = "multi"
text = "Which sports do you play?"
options = {json.dumps([f"Sport {i}" for i in range(11)])}
decline = true
'''


def many_design() -> dict:
    return build_design(parse_definition_toml(MANY_TOML, source="many.toml"))


def test_definitions_take_256_options_and_decline_adds_one_last():
    assert MAX_OPTIONS >= 256
    design = many_design()
    town, sports = design["questions"]
    assert len(town["options"]) == 256 and town["options"][-1] == DECLINE_LABEL and town["decline"] is True
    assert sports["options"][-1] == DECLINE_LABEL and len(sports["options"]) == 12
    assert sum(q["epsilon"] for q in design["questions"]) <= design["epsilon"]


@pytest.mark.parametrize("change, field, message", [
    ({"options": [f"o{i}" for i in range(257)]}, "options", "2 to 256 option labels"),
    ({"options": [f"o{i}" for i in range(256)], "decline": True}, "options", "at most 255 options"),
    ({"options": ["a", DECLINE_LABEL], "decline": True}, "options", "added by decline = true"),
    ({"options": ["a", "b"], "decline": "yes"}, "decline", "must be true or false"),
])
def test_bad_option_lists_and_decline_flags_name_the_field(change, field, message):
    data = {"slug": "x", "title": "X", "epsilon": 1.0,
            "questions": [{"id": "c", "kind": "choice", "text": "C", **change}]}
    with pytest.raises(DefinitionError, match=message) as info:
        parse_definition(data)
    assert (info.value.question, info.value.field) == ("c", field)


def test_decline_is_not_a_field_of_yes_no_or_number():
    data = {"slug": "x", "title": "X", "epsilon": 1.0,
            "questions": [{"id": "y", "kind": "yes_no", "text": "Y", "decline": True}]}
    with pytest.raises(DefinitionError) as info:
        parse_definition(data)
    assert info.value.field == "decline"


def test_256_options_end_to_end_create_submit_aggregate(db_path):
    """Stored in several words per report, counted by the insert trigger, estimated within 5 SE."""
    from survey.web import create_app

    design = many_design()
    store = Store(db_path)
    store.create_survey(MANY_TOML, design)
    rng = np.random.default_rng(256)
    truth = {"town": tuple(np.r_[np.full(255, 0.6 / 255), 0.4]),
             "sports": tuple([0.3] * 11 + [0.1])}
    n = 20000
    columns = simulate_columns(design, truth, n, rng)
    store.add_report_columns(SLUG, design["hash"], columns)
    store.close()
    client = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "t",
                         "WTF_CSRF_ENABLED": False}).test_client()
    town, sports = design["questions"]
    # At 4 each: a subset of 5 of the 256 towns (five 63-bit words), every sport's bit at 4/12.
    assert (town["mechanism"], town["subset_size"], sports["mechanism"]) == ("ss", 5, "rr")
    good = {"design": design["hash"], "answers": {"town": [1] * 5 + [0] * 251, "sports": [1] * 12}}
    assert client.post(f"/s/{SLUG}/responses", json=good).status_code == 201
    for bad in ([0] * 255, [1] * 256, [0] * 255 + [2], 255):
        body = {"design": design["hash"], "answers": {**good["answers"], "town": bad}}
        response = client.post(f"/s/{SLUG}/responses", json=body)
        assert response.status_code == 400 and response.json["field"] == "town"
    store = Store(db_path)
    try:
        counts = store.question_counts(SLUG)
        assert counts == store.recount(SLUG)
    finally:
        store.close()
    rows = aggregate_counts(design, counts)
    assert len(rows) == 256 + 12 and {row.n for row in rows} == {n + 1}
    options = {q["id"]: q["options"] for q in design["questions"]}
    for row in rows:
        want = truth[row.question][options[row.question].index(row.option)]
        assert abs(row.estimate - want) <= 5 * row.std_error, row


@pytest.fixture(scope="module")
def many_live(live_server):
    """The live server's database with the 256-option survey added."""
    store = Store(live_server["db"])
    try:
        store.create_survey(MANY_TOML, many_design(), replace=True)
    finally:
        store.close()
    return live_server


@pytest.mark.browser
@pytest.mark.slow
def test_the_form_filters_256_options_and_sends_a_subset(browser, many_live):
    from axe_playwright_python.sync_playwright import Axe

    design = many_design()
    context = browser.new_context(viewport={"width": 360, "height": 800})
    page = context.new_page()
    requests = []
    page.on("request", lambda request: requests.append(request))
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{many_live['origin']}/s/{SLUG}")
    town = page.get_by_role("group", name=re.compile("Which town"))
    search = town.get_by_role("searchbox", name="Find an option")
    assert town.get_by_text("All 256 options shown.").is_visible()
    search.fill("town 12")
    assert town.get_by_text("10 of 256 options shown.").is_visible()  # Town 120 to Town 129
    assert town.get_by_label("Town 129").is_visible() and not town.get_by_label("Town 200").is_visible()
    search.fill("prefer NOT")
    town.get_by_label(DECLINE_LABEL).check()
    # Enter in the filter box does not send the survey; arrows move among the shown options only.
    search.fill("town 12")
    search.press("Enter")
    page.wait_for_timeout(600)
    assert [request for request in requests if request.method == "POST"] == []
    town.get_by_label("Town 125").check()
    town.get_by_label("Town 125").press("ArrowDown")
    assert town.get_by_label("Town 126").is_checked()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert town.get_by_label("Town 124").is_checked() and not town.get_by_label(DECLINE_LABEL).is_checked()
    town.get_by_label("Town 120").check()
    page.keyboard.press("ArrowUp")  # wraps to the last shown option, past the hidden ones
    assert town.get_by_label("Town 129").is_checked()

    sports = page.get_by_role("group", name=re.compile("Which sports"))
    sports.get_by_label("Sport 3").check()
    sports.get_by_label("Sport 7").check()
    sports.get_by_label(DECLINE_LABEL).check()
    assert not sports.get_by_label("Sport 3").is_checked() and not sports.get_by_label("Sport 7").is_checked()
    sports.get_by_label("Sport 1", exact=True).check()
    assert not sports.get_by_label(DECLINE_LABEL).is_checked()

    results = Axe().run(page, options=RULES).response
    assert [v["id"] for v in results["violations"]] == []
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.get_by_text(re.compile("thank you", re.I)).first.wait_for(timeout=10_000)
    [post] = [request for request in requests if request.method == "POST"]
    answers = json.loads(post.post_data)["answers"]
    questions = {q["id"]: q for q in design["questions"]}
    assert set(answers) == {"town", "sports"}
    for qid, report in answers.items():
        assert validate_report(questions[qid], report) == report
    assert sum(answers["town"]) == 5 and "Town" not in post.post_data and "town 12" not in post.post_data
    assert errors == []
    context.close()
