"""The respondent page sends only what it shows (issue 25 item 4), in headless Chromium against the real server.

Every shown question has a line under it: the exact report sending will send for it, or that
nothing is sent. For each state — untouched questions of every kind, a multi-select left blank,
"Prefer not to say", an answer changed before and after an attempted send, a series wave
reusing kept reports, questions sampled out — each line is read from the page (its words and
its data-report) and compared, question by question, with the request body the page sends.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import create_from_toml, definition, lose_first_send, survey_page, watch_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

KINDS_TOML = """
slug = "shown-kinds"
release_every = 1
title = "Every kind of question"
epsilon = 5

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"

[[questions]]
id = "drinks"
kind = "choice"
text = "How many drinks a week?"
options = ["none", "1-7", "more"]
decline = true

[[questions]]
id = "lies"
kind = "multi"
text = "Which of these have you done?"
options = ["Cheated at cards", "Skipped work", "Took a sick day", "Lied to a doctor"]

[[questions]]
id = "habits"
kind = "multi"
text = "Which of these do you do daily?"
options = ["Walk", "Read", "Cook"]
decline = true

""" + definition("age")
SERIES_TOML = """
slug = "{slug}"
release_every = 1
title = "Wave {slug}"
epsilon = 3
series = "shown-series"

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"

[[questions]]
id = "lies"
kind = "multi"
text = "Which of these have you done?"
options = ["Cheated at cards", "Skipped work", "Took a sick day", "Lied to a doctor"]
"""
SAMPLE_TOML = """
slug = "shown-sample"
release_every = 1
title = "One question of four"
epsilon = 2
allocation = "sample"
sample = 1

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"

[[questions]]
id = "lies"
kind = "multi"
text = "Which of these have you done?"
options = ["Cheated at cards", "Skipped work", "Took a sick day", "Lied to a doctor"]

[[questions]]
id = "habits"
kind = "multi"
text = "Which of these do you do daily?"
options = ["Walk", "Read", "Cook"]

""" + definition("age")

# Every question's line as the page shows it: visible or not, its words, and the report it says will be sent.
LINES_JS = """() => Object.fromEntries([...document.querySelectorAll('fieldset[data-question]')].map((fs) => {
  const line = fs.querySelector('.report-preview');
  const visible = !fs.hidden && !line.hidden;
  return [fs.dataset.question, {visible, text: visible ? line.textContent : '', sends: line.dataset.sends ?? null,
    report: line.dataset.report === undefined ? null : JSON.parse(line.dataset.report)}];
}))"""
# The words report-line.js gives a report (the module the page runs), to check a line says what it sends.
WORDS_JS = """async ([question, report, options]) => {
  const href = document.querySelector('a[href$="/report-line.js"]').href;
  const { reportLine } = await import(href);
  return reportLine(question, report, options);
}"""


def wait_ready(page):
    """Wait until the survey's page can send (its script has run)."""
    page.locator("#survey-form button[type=submit]:not([disabled])").wait_for()


def open_survey(browser, origin: str, slug: str, *, width: int = 360):
    """Open a survey's page at a phone's width; return (context, page, bodies sent, page errors)."""
    context, page, bodies, errors = survey_page(browser, f"{origin}/s/{slug}", width=width)
    wait_ready(page)
    return context, page, bodies, errors


def lines(page) -> dict:
    return page.evaluate(LINES_JS)


def questions_of(page) -> dict:
    """Return the page's design's questions by id."""
    return {q["id"]: q for q in json.loads(page.locator("#design").text_content())["questions"]}


def group(page, qid: str):
    return page.locator(f'fieldset[data-question="{qid}"]')


def send(page):
    page.get_by_role("button", name=re.compile("send", re.I)).click()


def send_and_wait_thanks(page):
    """Press send and wait for the thank-you."""
    send(page)
    page.locator("#thanks").wait_for(state="visible", timeout=10_000)


def blank_memo_report(memo: dict, d: int) -> list[int]:
    """Return a kept multi memo's report for the blank: each option's "not ticked" report, or the drawn one's."""
    if "bits" in memo:
        return [pair[0] for pair in memo["bits"]]
    report = [0] * d
    report[memo["drawn"]] = memo["reports"][0]
    return report


def assert_words(page, question: dict, line: dict, **options):
    """The line's words are report-line.js's words for the very report it says will be sent."""
    assert line["visible"] and line["sends"] == "report", (question["id"], line)
    expected = page.evaluate(WORDS_JS, [question, line["report"], options])
    assert line["text"] == expected, (question["id"], line["text"], expected)


def assert_body_is_shown(body: dict, shown: dict, asked: list[str]):
    """The body holds exactly the asked questions' shown reports, and every other line sends nothing."""
    assert sorted(body["answers"]) == sorted(asked)
    for qid, line in shown.items():
        if qid in asked:
            assert line["visible"] and line["sends"] == "report", (qid, line)
            assert body["answers"][qid] == line["report"], (qid, body["answers"][qid], line)
        else:
            assert not line["visible"] and line["sends"] == "nothing" and line["report"] is None, (qid, line)


def test_untouched_blank_declined_and_changed_answers_send_exactly_what_their_lines_show(browser, live_server):
    origin = live_server["origin"]
    create_from_toml(live_server["db"], KINDS_TOML)
    context, page, bodies, errors = open_survey(browser, origin, "shown-kinds")
    failed = lose_first_send(page, f"{origin}/s/shown-kinds/responses")
    questions = questions_of(page)

    # Untouched: the multi-selects show the report of "none ticked"; the others say nothing is sent yet.
    start = lines(page)
    for qid in ("lies", "habits"):
        assert_words(page, questions[qid], start[qid], noneTicked=True)
        assert "for your answer “none ticked”" in start[qid]["text"]
        assert len(start[qid]["report"]) == len(questions[qid]["options"])
    for qid in ("smoker", "drinks", "age"):
        assert start[qid]["visible"] and start[qid]["sends"] == "nothing" and start[qid]["report"] is None
        assert start[qid]["text"].startswith("No report yet, and nothing is sent until there is one"), start[qid]
    assert "whole number from 18 to 90" in start["age"]["text"]
    assert page.locator(".report-preview[aria-live=polite]").count() == len(questions)

    # Send with questions unanswered: nothing leaves, and the lines still say what they said.
    send(page)
    page.locator("#q-smoker-error:not(:empty)").wait_for()
    page.wait_for_timeout(600)  # longer than the page's fixed send delay
    assert bodies == [] and failed == []
    assert lines(page) == start

    # Answers given, one changed, a number made invalid then valid again, "Prefer not to say" in both kinds.
    group(page, "smoker").get_by_label("Yes").check()
    group(page, "smoker").get_by_label("No").check()
    group(page, "drinks").get_by_label("Prefer not to say").check()
    group(page, "habits").get_by_label("Walk").check()
    group(page, "habits").get_by_label("Prefer not to say").check()
    age = group(page, "age").get_by_role("spinbutton")
    age.fill("30")
    assert lines(page)["age"]["sends"] == "report"
    age.fill("")
    assert lines(page)["age"]["sends"] == "nothing", "an emptied number sends nothing: sending waits for it"
    age.fill("41")
    shown = lines(page)
    assert shown["lies"] == start["lies"], "the blank's report made on load is the one kept"
    assert_words(page, questions["lies"], shown["lies"], noneTicked=True)
    for qid in ("smoker", "drinks", "habits", "age"):
        assert_words(page, questions[qid], shown[qid])
    assert "none ticked" not in shown["habits"]["text"], "“Prefer not to say” is an answer like the others"
    send(page)  # this first send is lost on the way
    page.get_by_text(re.compile("could not be sent", re.I)).wait_for(timeout=10_000)
    assert len(bodies) == 1 and failed == ["refused"]
    assert_body_is_shown(bodies[0], shown, list(questions))

    # After an attempted send, a changed answer keeps its report (and says so) until a new one is confirmed.
    page.wait_for_function("!document.querySelector('button[type=submit]').disabled")
    group(page, "smoker").get_by_label("Yes").check()
    group(page, "lies").get_by_label("Lied to a doctor").check()
    kept = lines(page)
    for qid in ("smoker", "lies"):
        assert kept[qid]["report"] == bodies[0]["answers"][qid], qid
        assert_words(page, questions[qid], kept[qid], earlier=True)
        assert "the report kept from your earlier answer" in kept[qid]["text"]
    group(page, "smoker").get_by_role("button", name=re.compile("new report")).click()
    final = lines(page)
    assert_words(page, questions["smoker"], final["smoker"])
    send_and_wait_thanks(page)
    assert len(bodies) == 2 and bodies[1]["submission"] == bodies[0]["submission"]
    assert_body_is_shown(bodies[1], final, list(questions))
    assert bodies[1]["answers"]["lies"] == start["lies"]["report"], "the blank's report, as shown since the page loaded"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "fits 360 px"
    assert errors == []
    context.close()


def test_a_series_wave_shows_the_kept_reports_it_reuses(browser, live_server):
    origin = live_server["origin"]
    for slug in ("shown-wave-1", "shown-wave-2"):
        create_from_toml(live_server["db"], SERIES_TOML.format(slug=slug))
    context = browser.new_context(viewport={"width": 360, "height": 800})
    sent = {}
    for slug in ("shown-wave-1", "shown-wave-2"):
        page = context.new_page()
        bodies, _ = watch_page(page)
        page.goto(f"{origin}/s/{slug}")
        wait_ready(page)
        questions = questions_of(page)
        memo = json.loads(page.evaluate("localStorage.getItem('ldp-survey:series:shown-series:lies')"))["memo"]
        status = page.locator("#series-status").inner_text()
        assert ("reuse the reports" in status) == (slug == "shown-wave-2"), status
        start = lines(page)
        assert start["lies"]["report"] == blank_memo_report(memo, len(questions["lies"]["options"]))
        assert_words(page, questions["lies"], start["lies"], noneTicked=True)
        group(page, "smoker").get_by_label("No").check()
        shown = lines(page)
        assert_words(page, questions["smoker"], shown["smoker"])
        send_and_wait_thanks(page)
        [body] = bodies
        assert_body_is_shown(body, shown, list(questions))
        sent[slug] = body["answers"]
        page.close()
    assert sent["shown-wave-2"] == sent["shown-wave-1"], "the second wave shows and sends the kept reports again"
    context.close()


def test_sampled_out_questions_show_nothing_and_send_nothing(browser, live_server):
    origin = live_server["origin"]
    create_from_toml(live_server["db"], SAMPLE_TOML)
    context, page, bodies, errors = open_survey(browser, origin, "shown-sample")
    questions = questions_of(page)
    start = lines(page)
    [asked] = [qid for qid, line in start.items() if line["visible"]]
    hidden = [qid for qid in questions if qid != asked]
    assert all(group(page, qid).is_hidden() for qid in hidden)
    assert {"lies", "habits"} & set(hidden), "a multi-select is always sampled out: its blank is not sent"
    kind = questions[asked]["kind"]
    if kind == "yes_no":
        group(page, asked).get_by_label("Yes").check()
    elif kind == "number":
        group(page, asked).get_by_role("spinbutton").fill("50")
    shown = lines(page)
    assert_words(page, questions[asked], shown[asked], noneTicked=kind == "multi")
    send_and_wait_thanks(page)
    [body] = bodies
    assert_body_is_shown(body, shown, [asked])
    assert errors == []
    context.close()
