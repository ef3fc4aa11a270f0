"""Browser test of a series in two layers (issue 29, item 3), in headless Chromium against the real server.

A wave made under one layer, then the next wave of the same series with ``wave_epsilon`` at the
same ε: the device reuses its kept report (still valid), the page says that the wave randomizes it
again, the kept report is unchanged, and the report sent is in the composed randomizer's domain.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import create_from_toml, stored_count

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WAVE_TOML = """
slug = "{slug}"
title = "Layers, {slug}"
epsilon = 2
series = "layers"
{extra}

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"

[[questions]]
id = "cigarettes"
kind = "number"
text = "How many cigarettes a day?"
min = 0
max = 40
mechanism = "piecewise"
"""


def answer(page, origin: str, slug: str) -> dict:
    """Answer Yes and 12, send, and return the body sent."""
    sent = []
    page.on("request", lambda r: sent.append(json.loads(r.post_data)) if r.method == "POST" else None)
    page.goto(f"{origin}/s/{slug}")
    page.get_by_role("group", name=re.compile("Do you smoke")).get_by_label("Yes").check()
    page.get_by_role("group", name=re.compile("How many cigarettes")).get_by_role("spinbutton").fill("12")
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.locator("#thanks").wait_for(state="visible", timeout=10_000)
    return sent[-1]["answers"]


def kept(page, qid: str) -> dict:
    return json.loads(page.evaluate(f"localStorage.getItem('ldp-survey:series:layers:{qid}')"))


def test_a_wave_in_two_layers_reuses_the_kept_reports_and_says_it_randomizes_them_again(browser, live_server):
    origin, db = live_server["origin"], live_server["db"]
    create_from_toml(db, WAVE_TOML.format(slug="layers-1", extra=""))
    create_from_toml(db, WAVE_TOML.format(slug="layers-2", extra="wave_epsilon = 1"))
    context = browser.new_context()
    page = context.new_page()
    first = answer(page, origin, "layers-1")
    assert "randomizes the kept reports again" not in page.locator("#series-status").inner_text()
    memos = {qid: kept(page, qid) for qid in ("smoker", "cigarettes")}
    assert first["smoker"] == memos["smoker"]["memo"]["reports"][1], "one layer sends the kept report"

    second = answer(page, origin, "layers-2")
    status = page.locator("#series-status").inner_text()
    assert "2 question(s) reuse the reports" in status, "the kept reports stay valid under two layers"
    assert "randomizes the kept reports again" in status and "ε₁ = 1" in status
    assert page.get_by_text(re.compile("every wave also draws the kept report again")).is_visible()
    assert {qid: kept(page, qid) for qid in memos} == memos, "the kept reports are not changed"
    design = json.loads(page.evaluate("document.getElementById('design').textContent"))
    levels = {q["id"]: q["wave"].get("bins") for q in design["questions"]}
    assert second["smoker"] in (0, 1)
    assert 0 <= second["cigarettes"] < levels["cigarettes"], "a number's report is a level of its per-wave layer"
    assert stored_count(db, "layers-2") == 1
    context.close()
