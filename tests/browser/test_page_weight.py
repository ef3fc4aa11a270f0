"""The respondent page's first visit is light: few requests, few bytes on the wire, and it still answers and sends.

The smoking example at 360 px in Chromium, with an empty cache: at most MAX_REQUESTS requests
(the page, its style sheet and one joined script; the design is inline) and MAX_WIRE_BYTES bytes
on the wire (Playwright's encoded sizes of every response's headers and body), every text asset
gzip-compressed; the joined script holds only the mechanisms the survey uses. Then the page is
answered and sent: one POST of reports only, stored.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import stored_count

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLUG = "smoking-2026"
MAX_REQUESTS = 6
MAX_WIRE_BYTES = 40 * 1024


def test_first_visit_is_few_requests_and_bytes_and_the_page_still_sends(browser, live_server):
    context = browser.new_context(viewport={"width": 360, "height": 740})
    page = context.new_page()
    finished = []
    page.on("requestfinished", lambda request: finished.append(request))
    before = stored_count(live_server["db"], SLUG)
    page.goto(f"{live_server['origin']}/s/{SLUG}", wait_until="networkidle")
    loaded = list(finished)
    assert len(loaded) <= MAX_REQUESTS, [r.url for r in loaded]
    wire = 0
    for request in loaded:
        sizes = request.sizes()
        wire += sizes["responseHeadersSize"] + sizes["responseBodySize"]
        response = request.response()
        kind = response.headers.get("content-type", "")
        if kind.startswith(("text/javascript", "text/css")):
            assert response.headers.get("content-encoding") == "gzip", request.url
    assert wire <= MAX_WIRE_BYTES, f"{wire} bytes on the wire over {len(loaded)} requests"
    scripts = [r for r in loaded if r.resource_type == "script"]
    assert len(scripts) == 1 and "/static/js/page/respond.js" in scripts[0].url
    design = json.loads(page.locator("#design").text_content())
    used = {question["mechanism"] for question in design["questions"]}
    script = scripts[0].response().text()
    for module in ("mechanisms/opm.js", "mechanisms/hybrid.js", "mechanisms/multi-sampled.js"):
        assert f'define("{module}"' not in script, f"{module} is not used by the survey yet was sent"
    assert used, "the design names its mechanisms"

    sent = []
    page.on("request", lambda r: sent.append(json.loads(r.post_data)) if r.method == "POST" else None)
    page.get_by_role("group", name=re.compile("smoke tobacco")).get_by_label("Yes").check()
    page.get_by_role("group", name=re.compile("chronic lung disease")).get_by_label("No").check()
    page.get_by_role("group", name=re.compile("how many cigarettes")).get_by_label("6-10").check()
    page.get_by_role("group", name=re.compile("How old are you")).get_by_role("spinbutton").fill("42")
    page.get_by_role("button", name=re.compile("send", re.I)).click()
    page.locator("#thanks").wait_for(state="visible", timeout=10_000)
    assert len(sent) == 1 and set(sent[0]["answers"]) == {q["id"] for q in design["questions"]}
    assert "42" not in json.dumps(sent[0]["answers"]) or design["questions"][-1]["kind"] != "number"
    assert stored_count(live_server["db"], SLUG) == before + 1
    print(f"\nfirst visit: {len(loaded)} requests, {wire:,} bytes on the wire")
    context.close()
