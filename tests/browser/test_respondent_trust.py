"""Browser tests of respondent trust (issue 8), in headless Chromium against the real server.

The preview shows exactly the reports then sent; a lost 201 followed by a retry stores one
response; a second visit sends nothing; a later wave of a series sends the same report for
an unchanged answer; an invitation link works once, then 409 with nothing stored; the
survey can be completed and sent with the keyboard only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import (PANEL_TOML, create_from_toml, lose_first_send, signed_in_page, stored_count, survey_page,
                      watch_page)

from survey.store import Store
from test_accessibility import RULES
from test_browser import fill_survey

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SLUG = "smoking-2026"
OPTIONS = [f"habit {i}" for i in range(16)]
# Two questions at epsilon 2 each; the multi question's 16 options are reported by one option
# drawn at random (mechanism "sampled"), so its memo keeps the drawn option and the reports of
# its blank and its tick. Each wave must send exactly what the kept memos give for the answer.
WAVE_TOML = """
slug = "{slug}"
title = "Habits, {slug}"
epsilon = {epsilon}
series = "habits"

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"

[[questions]]
id = "habits"
kind = "multi"
text = "Which of these do you do?"
options = {options}
"""


def send(page):
    page.get_by_role("button", name=re.compile("send", re.I)).click()


def wait_thanks(page):
    page.locator("#thanks").wait_for(state="visible", timeout=10_000)


def send_unheard(browser, origin: str, *, delivered: bool = False):
    """Open the smoking survey, answer it and send it, that first send lost (``lose_first_send``, ``delivered`` or not);
    wait until the page says it could not be sent. Return (context, page, bodies sent, what became of the first)."""
    context, page, sent, _ = survey_page(browser, f"{origin}/s/{SLUG}")
    fate = lose_first_send(page, f"{origin}/s/{SLUG}/responses", delivered=delivered)
    fill_survey(page)
    send(page)
    page.get_by_text(re.compile("could not be sent", re.I)).wait_for(timeout=10_000)
    return context, page, sent, fate


def previews(page) -> dict:
    """Return {question id: (report, text)} shown under the questions."""
    return page.evaluate("""Object.fromEntries([...document.querySelectorAll('fieldset[data-question]')].map(fs => {
        const p = fs.querySelector('.report-preview');
        const sends = !p.hidden && p.dataset.sends === 'report';
        return [fs.dataset.question, [sends ? JSON.parse(p.dataset.report) : null, sends ? p.textContent : '']];
    }))""")


def page_modules(design: dict) -> set[str]:
    """Return the respondent page's module and every module it imports, read from client_js/ here.

    Names are paths relative to client_js (``mechanisms/grr.js``), each import resolved from its
    importing module's folder as the browser resolves it; the registry's imports of mechanisms the
    survey's design does not use are not followed (the page's joined script leaves them out).
    """
    client_js = (REPO / "client_js").resolve()
    used = {(q["kind"], q["mechanism"]) for q in design["questions"]}

    def unused(importer: str, path: Path) -> bool:
        declared = re.search(r"kind: '(\w+)',\s*name: '(\w+)',", path.read_text(encoding="utf-8"))
        return importer == "mechanisms/index.js" and declared is not None and declared.groups() not in used

    found, pending = set(), ["respond.js"]
    while pending:
        name = pending.pop()
        if name not in found:
            found.add(name)
            module = client_js / name
            for specifier in re.findall(r"from '(\.\.?/[\w./-]+\.js)'", module.read_text(encoding="utf-8")):
                path = (module.parent / specifier).resolve()
                if not unused(name, path):
                    pending.append(path.relative_to(client_js).as_posix())
    return found


def test_the_preview_shows_exactly_the_reports_then_sent(browser, live_server):
    context, page, sent, _ = survey_page(browser, f"{live_server['origin']}/s/{SLUG}")
    design = json.loads(page.locator("#design").text_content())
    assert all(report is None for report, _ in previews(page).values()), "no report is shown before an answer"
    assert "at most 89% sure" in page.locator("#posterior-bound").inner_text()
    page.locator("#check-files summary").click()  # the design and the file list are folded (issue 27)
    links = set(page.locator("#protection p a").all_inner_texts())
    assert links == {"the public design (design.json)", "one file", *page_modules(design)}
    assert {"mechanisms/index.js", "mechanisms/common.js"} < page_modules(design), "the page links the registry"
    for name in ("design.json", *page_modules(design)):
        link = page.get_by_role("link", name=name)
        served = page.request.get(link.evaluate("a => a.href"))
        assert served.ok, name
        if name == "design.json":
            assert served.json() == design
        else:
            assert served.text() == (REPO / "client_js" / name).read_text(encoding="utf-8"), name
    assert "No IP address, no time of day" in page.inner_text("body")
    assert "This page sets no cookie" in page.inner_text("body")

    fill_survey(page)
    shown = previews(page)
    send(page)
    wait_thanks(page)

    [body] = sent
    assert body["answers"] == {qid: report for qid, (report, _) in shown.items()}
    assert re.fullmatch(r"[0-9a-f]{32}", body["submission"])
    questions = {q["id"]: q for q in design["questions"]}
    for qid, (report, text) in shown.items():
        assert text.startswith("We will send (after randomizing): ") and text.endswith("— this may not be your answer.")
        kind = questions[qid]["kind"]
        expected = {"yes_no": "Yes" if report == 1 else "No",
                    "number": "high end" if report == 1 else "low end"}.get(kind)
        if kind == "choice" and questions[qid]["mechanism"] == "grr":
            expected = questions[qid]["options"][report]
        assert expected is None or expected in text, (qid, report, text)
    context.close()


def test_a_lost_201_then_a_retry_stores_one_response(browser, live_server):
    before = stored_count(live_server["db"], SLUG)
    # The first answer reaches the server and is stored, but the page never hears the 201.
    context, page, sent, delivered = send_unheard(browser, live_server["origin"], delivered=True)
    assert delivered == [201] and stored_count(live_server["db"], SLUG) == before + 1
    page.wait_for_function("!document.querySelector('button[type=submit]').disabled")
    send(page)
    wait_thanks(page)

    assert len(sent) == 2 and sent[0] == sent[1], "the retry is the same submission, id and reports"
    assert stored_count(live_server["db"], SLUG) == before + 1, "stored once"
    stored = page.evaluate("JSON.stringify(Object.entries(localStorage))")
    assert sent[0]["submission"] not in stored, "the acknowledged id is forgotten"
    context.close()


def test_after_a_lost_201_and_a_reload_the_page_offers_the_same_reports_and_stores_them_once(browser, live_server):
    before = stored_count(live_server["db"], SLUG)
    context, page, sent, delivered = send_unheard(browser, live_server["origin"], delivered=True)
    page.unroute(f"{live_server['origin']}/s/{SLUG}/responses")
    assert delivered == [201]

    page.reload()
    page.locator("#pending").wait_for(state="visible")
    assert page.locator("#survey-form").is_hidden(), "no new reports can be made while a send is pending"
    offered = page.locator("#pending-reports li").all_inner_texts()
    assert len(offered) == len(sent[0]["answers"]) and any(
        line.startswith("“Do you smoke tobacco") and line.endswith(("Yes", "No")) for line in offered), offered
    page.get_by_role("button", name="Send the same reports again").click()
    wait_thanks(page)
    assert len(sent) == 2 and sent[1] == sent[0]
    assert stored_count(live_server["db"], SLUG) == before + 1
    assert page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('ldp-survey:pending:'))") == []
    context.close()


def test_a_changed_answer_after_a_failed_send_keeps_its_report_unless_confirmed(browser, live_server):
    before = stored_count(live_server["db"], SLUG)
    context, page, sent, _ = send_unheard(browser, live_server["origin"])
    page.wait_for_function("!document.querySelector('button[type=submit]').disabled")
    smoker = page.get_by_role("group", name=re.compile("smoke tobacco"))
    smoker.get_by_label("No").check()
    notice = smoker.locator(".report-changed")
    assert notice.is_visible() and "is kept" in notice.inner_text()
    assert previews(page)["smoker"][0] == sent[0]["answers"]["smoker"], "the earlier report is kept"
    smoker.get_by_role("button", name=re.compile("new report")).click()
    assert "has now cost ε′" in notice.inner_text()
    shown = previews(page)
    send(page)
    wait_thanks(page)
    assert len(sent) == 2 and sent[1]["submission"] == sent[0]["submission"]
    assert sent[1]["answers"] == {qid: report for qid, (report, _) in shown.items()}
    assert stored_count(live_server["db"], SLUG) == before + 1
    context.close()


def test_a_second_visit_does_not_send_again(browser, live_server):
    before = stored_count(live_server["db"], SLUG)
    context, page, sent, _ = survey_page(browser, f"{live_server['origin']}/s/{SLUG}")
    fill_survey(page)
    send(page)
    wait_thanks(page)
    page.goto(f"{live_server['origin']}/s/{SLUG}")
    page.locator("#already-answered").wait_for(state="visible")
    assert page.locator("#survey-form").is_hidden()
    page.keyboard.press("Enter")
    page.wait_for_timeout(600)
    assert len(sent) == 1 and stored_count(live_server["db"], SLUG) == before + 1
    context.close()


def answer_wave(page, origin, slug, ticks) -> dict:
    sent, _ = watch_page(page)
    page.goto(f"{origin}/s/{slug}")
    page.get_by_role("group", name=re.compile("Do you smoke")).get_by_label("Yes").check()
    habits = page.get_by_role("group", name=re.compile("Which of these"))
    for i in ticks:
        habits.get_by_label(OPTIONS[i], exact=True).check()
    send(page)
    wait_thanks(page)
    [body] = sent
    return body["answers"]


def kept_memo(page, qid: str) -> dict:
    """Return the {fingerprint, memo} this browser keeps for a question of the series "habits"."""
    return json.loads(page.evaluate(f"localStorage.getItem('ldp-survey:series:habits:{qid}')"))


def sampled_report(memo: dict, ticked: list[int]) -> list[int]:
    """Return the report a sampled multi memo gives for the ticked options: zeros but the drawn option's report."""
    report = [0] * len(ticked)
    report[memo["drawn"]] = memo["reports"][ticked[memo["drawn"]]]
    return report


def test_a_later_wave_of_a_series_sends_the_same_report_for_an_unchanged_answer(browser, live_server):
    origin, db = live_server["origin"], live_server["db"]
    for slug, epsilon in (("habits-1", 4), ("habits-2", 4), ("habits-3", 3)):
        create_from_toml(db, WAVE_TOML.format(slug=slug, epsilon=epsilon, options=json.dumps(OPTIONS)))
    context = browser.new_context()
    page = context.new_page()
    ticks = [1, 5, 9]
    ticked = [1 if i in ticks else 0 for i in range(len(OPTIONS))]
    first = answer_wave(page, origin, "habits-1", ticks)
    assert "have new reports" in page.locator("#series-status").inner_text()
    kept = page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('ldp-survey:series:habits:'))")
    assert sorted(kept) == ["ldp-survey:series:habits:habits", "ldp-survey:series:habits:smoker"]
    smoker, habits = kept_memo(page, "smoker"), kept_memo(page, "habits")
    assert sorted(habits["memo"]) == ["drawn", "reports"] and 0 <= habits["memo"]["drawn"] < len(OPTIONS)
    assert len(habits["memo"]["reports"]) == 2, "the drawn option's report is kept for a blank and a tick"
    assert len(smoker["memo"]["reports"]) == 2, "a report is kept for No and for Yes"
    assert first == {"smoker": smoker["memo"]["reports"][1], "habits": sampled_report(habits["memo"], ticked)}, \
        "the reports sent are the kept memos' reports of the answers"

    second = answer_wave(page, origin, "habits-2", ticks)
    assert "reuse the reports" in page.locator("#series-status").inner_text()
    assert (kept_memo(page, "smoker"), kept_memo(page, "habits")) == (smoker, habits), "the memos are kept as they were"
    assert second == first, "an unchanged answer to an unchanged design sends the same report"

    answer_wave(page, origin, "habits-3", ticks)
    assert "2 question(s) changed" in page.locator("#series-status").inner_text()
    replaced = kept_memo(page, "habits")
    assert replaced["fingerprint"] != habits["fingerprint"], "another design of the question gets a new memo"
    context.close()

    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{origin}/s/habits-2")
    page.get_by_role("button", name="Forget the kept reports").click()
    assert "Forgotten" in page.locator("#series-status").inner_text()
    assert page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('ldp-survey:series:')).length") == 0
    context.close()


def test_an_invitation_link_works_once_then_409_with_nothing_stored(browser, live_server):
    origin, db = live_server["origin"], live_server["db"]
    create_from_toml(db, PANEL_TOML)
    store = Store(db)
    [token] = store.create_invitations("panel", 1)
    store.close()

    context, page, sent, _ = survey_page(browser, f"{origin}/s/panel")
    assert page.locator("#invite-needed").is_visible() and page.locator("#survey-form").is_hidden()
    page.goto(f"{origin}/s/panel?invite={token}")
    page.get_by_role("radio", name="Yes").check()
    send(page)
    wait_thanks(page)
    assert sent[0]["invite"] == token and stored_count(db, "panel") == 1
    context.close()

    # Another device, or cleared storage: the page says the link is used.
    context, page, _, _ = survey_page(browser, f"{origin}/s/panel?invite={token}")
    assert page.locator("#invite-used").is_visible() and page.locator("form").count() == 0
    context.close()

    # Two pages open on one new link: the second to send gets 409, said in plain words, stored nothing.
    store = Store(db)
    [token] = store.create_invitations("panel", 1)
    store.close()
    first, second = browser.new_context(), browser.new_context()
    late, early = first.new_page(), second.new_page()
    replies = []
    late.on("response", lambda r: replies.append(r.status) if r.request.method == "POST" else None)
    for page in (late, early):
        page.goto(f"{origin}/s/panel?invite={token}")
    early.get_by_role("radio", name="Yes").check()
    send(early)
    wait_thanks(early)
    late.get_by_role("radio", name="No").check()
    send(late)
    late.locator("#refused").wait_for(state="visible", timeout=10_000)
    assert "already been used" in late.locator("#refused").inner_text()
    assert not re.search(r"press (the button|send) again", late.inner_text("body"), re.I)
    assert replies == [409] and stored_count(db, "panel") == 2
    first.close()
    second.close()


def tab_to(page, selector: str, limit: int = 60):
    """Press Tab until the focused element matches ``selector``."""
    for _ in range(limit):
        if page.evaluate("(s) => document.activeElement && document.activeElement.matches(s)", selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector}")


def test_keyboard_only_completion(browser, live_server):
    before = stored_count(live_server["db"], SLUG)
    context, page, sent, _ = survey_page(browser, f"{live_server['origin']}/s/{SLUG}")
    tab_to(page, "#q-smoker-yes")
    page.keyboard.press("Space")
    tab_to(page, "#q-lung_disease-yes")
    page.keyboard.press("ArrowDown")
    tab_to(page, "#q-cigarettes-0")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    tab_to(page, "#q-age-value")
    page.keyboard.type("42")
    tab_to(page, "button[type=submit]")
    page.keyboard.press("Enter")
    wait_thanks(page)
    assert page.evaluate("document.activeElement.id") == "thanks"
    assert len(sent) == 1 and stored_count(live_server["db"], SLUG) == before + 1
    checked = page.evaluate("[...document.querySelectorAll('input:checked')].length")
    assert checked == 0, "the true answers were cleared"
    context.close()


def test_the_trust_sections_are_axe_clean_without_sideways_scroll_at_360_px(browser, live_server):
    from axe_playwright_python.sync_playwright import Axe

    origin, db = live_server["origin"], live_server["db"]
    create_from_toml(db, WAVE_TOML.format(slug="habits-a11y", epsilon=4, options=json.dumps(OPTIONS)))
    create_from_toml(db, PANEL_TOML.replace('slug = "panel"', 'slug = "panel-a11y"'))
    context, page, _, _ = survey_page(browser, f"{origin}/s/habits-a11y", width=360)
    page.route(f"{origin}/s/habits-a11y/responses", lambda route: route.abort("connectionrefused"))
    page.get_by_role("group", name=re.compile("Do you smoke")).get_by_label("Yes").check()
    page.get_by_role("group", name=re.compile("Which of these")).get_by_label(OPTIONS[3], exact=True).check()
    send(page)
    page.get_by_text(re.compile("could not be sent", re.I)).wait_for(timeout=10_000)
    page.get_by_role("group", name=re.compile("Do you smoke")).get_by_label("No").check()
    assert page.locator("#q-smoker-changed").is_visible()
    for url in (None, f"{origin}/s/habits-a11y", f"{origin}/s/panel-a11y"):
        if url:
            page.goto(url)
        if url and "habits" in url:
            assert page.locator("#pending").is_visible(), "the unacknowledged send is offered again"
        results = Axe().run(page, options=RULES).response
        assert [v["id"] for v in results["violations"]] == [], page.url
        assert page.evaluate("document.documentElement.scrollWidth") <= 360, page.url
    context.close()


def test_the_dashboard_downloads_invitation_links_and_is_axe_clean_at_360_px(browser, live_server):
    from axe_playwright_python.sync_playwright import Axe
    from werkzeug.security import generate_password_hash

    origin, db = live_server["origin"], live_server["db"]
    create_from_toml(db, PANEL_TOML.replace('slug = "panel"', 'slug = "panel-dash"'))
    store = Store(db)
    store.add_user("inviter@example.org", generate_password_hash("invite people"), replace=True)
    store.share("panel-dash", "inviter@example.org")
    store.close()
    context, page, _ = signed_in_page(browser, origin, "inviter@example.org", "invite people", width=360)
    page.goto(f"{origin}/surveys/panel-dash/results")
    assert Axe().run(page, options=RULES).response["violations"] == []
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.get_by_label("Number of links").fill("3")
    with page.expect_download() as download:
        page.get_by_role("button", name="Make links (CSV)").click()
    with open(download.value.path(), encoding="utf-8") as file:
        lines = file.read().splitlines()
    assert lines[0] == "link" and len(lines) == 4
    assert all(re.fullmatch(rf"{re.escape(origin)}/s/panel-dash\?invite=[A-Za-z0-9_-]{{22}}", line) for line in lines[1:])
    page.goto(lines[1])
    assert page.locator("#survey-form").is_visible() and page.locator("#invite-needed").count() == 0
    context.close()
