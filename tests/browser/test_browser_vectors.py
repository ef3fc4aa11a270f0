"""The shipped randomizers in headless Chromium: the browser engine itself agrees with the Python mirror.

The modules are imported from the real server (/static/js/random.js and mechanisms/index.js, the
registry, which imports the modules of /static/js/mechanisms/) into a page of the app's origin. Every stream case of tests/vectors.json is replayed through
makeRandom(fill) with its listed words, which must give the file's output and consume every
word; then randomizeRR at the example design's threshold, drawing from crypto.getRandomValues,
must flip with probability T/2^53. The live_server and browser fixtures are in conftest.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SLUG = "smoking-2026"
STREAMS = json.loads((ROOT / "tests" / "vectors.json").read_text(encoding="utf-8"))["streams"]
TWO_53 = 2**53
DRAWS_PER_INPUT = 200_000

# Count the words drawn from crypto.getRandomValues, so the distribution check knows its source.
COUNT_RANDOM_WORDS = """
window.__randomWords = 0;
const original = crypto.getRandomValues.bind(crypto);
crypto.getRandomValues = (array) => { window.__randomWords += array.length; return original(array); };
"""

REPLAY = """
async (streams) => {
  const { makeRandom } = await import('/static/js/random.js');
  const { randomizeQuestion } = await import('/static/js/mechanisms/index.js');
  const outcomes = {};
  for (const c of streams) {
    let used = 0;
    const fill = (array) => {
      for (let i = 0; i < array.length; i += 1) {
        if (used >= c.words.length) throw new Error(`stream exhausted after ${c.words.length} words`);
        array[i] = c.words[used];
        used += 1;
      }
      return array;
    };
    const rnd = makeRandom(fill);
    try {
      const result = c.call === 'question' ? randomizeQuestion(c.question, c.true, rnd) : rnd[c.call](...c.args);
      outcomes[c.name] = { result: typeof result === 'boolean' ? Number(result) : result, used };
    } catch (error) {
      outcomes[c.name] = { error: String(error), used };
    }
  }
  return outcomes;
}
"""

COUNT_REPORTS = """
async ({ flipThreshold, n }) => {
  const { randomizeRR } = await import('/static/js/mechanisms/warner.js');
  const before = window.__randomWords;
  const ones = [0, 0];
  for (const bit of [0, 1]) {
    for (let i = 0; i < n; i += 1) ones[bit] += randomizeRR(bit, { flipThreshold });
  }
  return { ones, words: window.__randomWords - before };
}
"""


@pytest.fixture(scope="module")
def app_page(browser, live_server):
    """Return a page of the app's origin (the respondent page), counting crypto words; fail on page errors."""
    context = browser.new_context()
    context.add_init_script(COUNT_RANDOM_WORDS)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server['origin']}/s/{SLUG}")
    yield page
    context.close()
    assert not errors, f"page errors: {errors}"


@pytest.fixture(scope="module")
def replayed(app_page):
    """Return {case name: {result, used} or {error, used}} for every stream case, run in Chromium."""
    return app_page.evaluate(REPLAY, STREAMS)


def test_served_modules_are_the_shipped_files(app_page, live_server):
    mechanisms = sorted(f"mechanisms/{path.name}" for path in (ROOT / "client_js" / "mechanisms").glob("*.js"))
    for name in ("random.js", *mechanisms):
        response = app_page.request.get(f"{live_server['origin']}/static/js/{name}")
        assert response.status == 200
        assert response.text() == (ROOT / "client_js" / name).read_text(encoding="utf-8")


def test_every_stream_case_was_replayed(replayed):
    assert len(STREAMS) >= 60
    assert sorted(replayed) == sorted(case["name"] for case in STREAMS)


@pytest.mark.parametrize("case", STREAMS, ids=[case["name"] for case in STREAMS])
def test_chromium_replays_the_python_stream(replayed, case):
    outcome = replayed[case["name"]]
    assert "error" not in outcome, outcome.get("error")
    assert outcome["result"] == case["expected"]
    assert outcome["used"] == len(case["words"]), "Chromium must consume exactly the words Python consumed"


def test_rr_flips_at_the_design_threshold_with_crypto_words(app_page, live_server):
    design = json.loads(app_page.request.get(f"{live_server['origin']}/s/{SLUG}/design.json").text())
    question = next(q for q in design["questions"] if q["kind"] == "yes_no" and q["mechanism"] == "rr")
    flip_threshold = question["flip_threshold"]
    counts = app_page.evaluate(COUNT_REPORTS, {"flipThreshold": flip_threshold, "n": DRAWS_PER_INPUT})
    assert counts["words"] == 2 * 2 * DRAWS_PER_INPUT, "each draw takes two words from crypto.getRandomValues"
    flip = flip_threshold / TWO_53
    standard_error = math.sqrt(DRAWS_PER_INPUT * flip * (1 - flip))
    flips = {0: counts["ones"][0], 1: DRAWS_PER_INPUT - counts["ones"][1]}
    for bit, observed in flips.items():
        expected = DRAWS_PER_INPUT * flip
        assert abs(observed - expected) <= 5 * standard_error, (
            f"RR({bit}) flipped {observed} of {DRAWS_PER_INPUT}, expected {expected:.0f} ± {5 * standard_error:.0f}")
