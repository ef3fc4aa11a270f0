"""Shared steps of the field-mode browser tests (offline, handover, and the two joined): Chromium against a real server.

What the device holds (IndexedDB's queue, the service worker's cache, localStorage, the page's inputs), a server
process that can be stopped and started again on the same port and database, a page made ready to work offline,
a report checked against its question's output domain, and one handover respondent's answers.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

from conftest import REPO, ServerProcess, stored_count, wait_for_line

CACHE = "ldp-survey-offline-v1"
# The offline queue's records (client_js/offline-queue.js), as the page's own origin reads them.
QUEUE_JS = """() => new Promise((resolve, reject) => {
  const open = indexedDB.open('ldp-survey-offline');
  open.onerror = () => reject(open.error);
  open.onsuccess = () => {
    const request = open.result.transaction('queue').objectStore('queue').getAll();
    request.onsuccess = () => { resolve(request.result); open.result.close(); };
  };
})"""
CACHED_JS = f"""async () => {{
  const cache = await caches.open('{CACHE}');
  const kept = [];
  for (const request of await cache.keys()) {{
    kept.push([request.method, request.url, await (await cache.match(request, {{ ignoreVary: true }})).text()]);
  }}
  return kept;
}}"""
STORAGE_JS = "() => Object.fromEntries(Object.keys(localStorage).map((key) => [key, localStorage.getItem(key)]))"
# Five handover respondents' true answers: (smoker, lung disease, cigarettes, age).
RESPONDENTS = [("Yes", "No", "6-10", "23"), ("No", "Yes", "none", "67"), ("Yes", "Yes", "more than 20", "41"),
               ("No", "No", "1-5", "58"), ("Yes", "No", "11-20", "34")]
# What a handover page holds that could carry a respondent's answer: inputs' states, storage, history.
REMNANTS_JS = """() => ({
  checked: document.querySelectorAll('input:checked').length,
  values: [...document.querySelectorAll('input[type=number], input[type=search]')].map(i => i.value).filter(v => v),
  oldFormAttached: window.__previousForm ? document.contains(window.__previousForm) : false,
  local: localStorage.length, session: sessionStorage.length, history: history.length,
  formHidden: document.getElementById('survey-form').hidden,
  errors: [...document.querySelectorAll('.field-error, #form-error')].map(e => e.textContent.trim()).filter(t => t),
})"""
# The reports each shown question's line holds, as the page would send them.
SHOWN_JS = """() => Object.fromEntries([...document.querySelectorAll('.report-preview')].map(
    (p) => [p.closest('fieldset').dataset.question, JSON.parse(p.dataset.report)]))"""


def serve(db_path, directory, port: int) -> ServerProcess:
    """Start `ldp-survey serve` on ``port`` of 127.0.0.1 over ``db_path``; return once it serves."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with (directory / f"server-{time.monotonic_ns()}.log").open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "survey", "--db", str(db_path), "serve", "--host",
                                    "127.0.0.1", "--port", str(port), "--workers", "1",
                                    "--max-submissions-per-minute", "0"],
                                   env=env, stdout=subprocess.PIPE, stderr=stderr, bufsize=0)
    server = ServerProcess(process, port, directory / "server.log")
    try:
        wait_for_line(process, b"Serving ", 30)
    except (TimeoutError, EOFError):
        server.stop(signal.SIGKILL)
        raise
    return server


def ready_offline(page, url: str, design_url: str):
    """Open ``url`` online and wait until its service worker controls it and keeps it, its design and files."""
    page.goto(url)
    # Polled here: wait_for_function's polling evaluates strings, which the page's CSP forbids.
    for _ in range(150):
        if page.evaluate("navigator.serviceWorker.controller !== null"):
            break
        page.wait_for_timeout(100)
    assert page.evaluate("navigator.serviceWorker.controller !== null"), "the service worker controls the page"
    for _ in range(100):
        urls = {url for _method, url, _text in page.evaluate(CACHED_JS)}
        if url in urls and design_url in urls and len(urls) >= 5:
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"the page's files were not kept: {urls}")


def in_domain(question: dict, report) -> bool:
    """Return whether ``report`` is in the output domain of the design's question (not an answer's form)."""
    if isinstance(report, list):
        return len(report) == len(question["options"]) and set(report) <= {0, 1}
    size = {"rr": 2, "duchi": 2, "grr": len(question.get("options", ())), "piecewise": question.get("bins"),
            "hybrid": question.get("levels"), "opm": question.get("levels")}[question["mechanism"]]
    return isinstance(report, int) and 0 <= report < size


def wait_stored(db_path, slug: str, count: int):
    """Wait until the survey has stored ``count`` responses (at most 20 s)."""
    for _ in range(200):
        if stored_count(db_path, slug) >= count:
            break
        time.sleep(0.1)
    assert stored_count(db_path, slug) == count


def wait_text(locator, text: str, tries: int = 100):
    """Wait until ``locator``'s text is ``text`` (at most tries × 100 ms); return its last text."""
    for _ in range(tries):
        if locator.text_content() == text:
            break
        locator.page.wait_for_timeout(100)
    return locator.text_content()


def answer_handover(page, respondent):
    """Give one handover respondent's true answers (smoker, lung disease, cigarettes, age) on the smoking survey."""
    smoker, lung, cigarettes, age = respondent
    page.get_by_role("group", name=re.compile("smoke tobacco")).get_by_label(smoker, exact=True).check()
    page.get_by_role("group", name=re.compile("chronic lung disease")).get_by_label(lung, exact=True).check()
    page.get_by_role("group", name=re.compile("how many cigarettes")).get_by_label(cigarettes, exact=True).check()
    page.get_by_role("group", name=re.compile("How old are you")).get_by_role("spinbutton").fill(age)
