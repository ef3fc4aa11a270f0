"""The results chart: a hand-written SVG that renders under the CSP, and its cache in the web layer."""

from __future__ import annotations

import math
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from werkzeug.security import generate_password_hash

from survey.aggregate import AggregateRow, aggregate
from survey.charts import PLOT_LEFT, PLOT_RIGHT, results_chart_svg
from survey.store import Store
from survey.web.chart_cache import ChartCache

SVG = "{http://www.w3.org/2000/svg}"
SLUG = "smoking-2026"
GOOD = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}
HOSTILE = '<script>alert("x")</script> & \'q\''
ROOT = Path(__file__).resolve().parent.parent


def question(qid, kind, text="A question?", **extra):
    return {"id": qid, "kind": kind, "text": text, "mechanism": extra.pop("mechanism", "rr"),
            "epsilon": extra.pop("epsilon", 0.5), **extra}


def row(qid, option, estimate, low=None, high=None, *, kind="choice", n=100, level=0.95):
    low = 0.0 if low is None else low
    high = 1.0 if high is None else high
    return AggregateRow(question=qid, option=option, kind=kind, mechanism="grr", epsilon=0.5, n=n,
                        noisy_share=0.5, estimate=estimate, std_error=0.05, ci_low=low, ci_high=high,
                        ci_level=level)


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg.encode("utf-8"))


def markers(root: ET.Element) -> list[ET.Element]:
    return [el for el in root.iter() if el.get("class") == "estimate"]


def x_of(value, low, high):
    """The chart's axis mapping: [low, high] onto [PLOT_LEFT, PLOT_RIGHT]."""
    return PLOT_LEFT + (value - low) / (high - low) * (PLOT_RIGHT - PLOT_LEFT)


@pytest.fixture
def design():
    return {"slug": "t", "title": 'Title <b>&</b> "quoted"', "questions": [
        question("smoker", "yes_no", "Do you smoke?"),
        question("colour", "choice", f"Favourite colour {HOSTILE}?", options=[HOSTILE, "blue", "green", "red"],
                 mechanism="grr"),
        question("age", "number", "How old are you?", min=18, max=90, mechanism="duchi"),
    ]}


@pytest.fixture
def rows():
    return [
        row("smoker", "yes", 0.25, 0.2, 0.3, kind="yes_no"),
        row("colour", HOSTILE, 0.4, 0.3, 0.5),
        row("colour", "blue", -0.08, 0.0, 0.1),     # unbiased estimates can leave [0, 1]
        row("colour", "green", float("nan"), 0.0, 1.0),
        row("colour", "red", None, 0.0, 1.0),
        row("age", "", 36.0, 30.0, 42.0, kind="number"),
    ]


def test_chart_is_xml_with_title_desc_and_a_scalable_size(design, rows):
    svg = results_chart_svg(design, rows)
    assert svg.startswith("<?xml")
    root = parse(svg)
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    width, height = float(root.get("width")), float(root.get("height"))
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}" and width > 0 and height > 0
    title, desc = root.find(f"{SVG}title"), root.find(f"{SVG}desc")
    assert title is not None and 'Title <b>&</b> "quoted"' in title.text
    assert desc is not None and "3 questions" in desc.text and "6 estimates" in desc.text
    assert set(root.get("aria-labelledby").split()) == {title.get("id"), desc.get("id")}


def test_chart_uses_no_style_attribute_or_element(design, rows):
    root = parse(results_chart_svg(design, rows))
    for element in root.iter():
        assert element.tag != f"{SVG}style"
        assert "style" not in element.attrib, element.tag


def test_chart_escapes_hostile_labels_and_texts(design, rows):
    svg = results_chart_svg(design, rows)
    assert "<script" not in svg and "<b>" not in svg
    root = parse(svg)
    assert not [el for el in root.iter() if el.tag.endswith("script")]
    texts = ["".join(el.itertext()) for el in root.iter(f"{SVG}text")]
    assert any(HOSTILE in text for text in texts)
    assert any("Favourite colour " + HOSTILE in text for text in texts)
    assert any(text.startswith("colour · choice") and "ε′ = 0.5" in text and "n = 100" in text for text in texts)


def test_chart_replaces_characters_xml_cannot_hold(design, rows):
    design["questions"][0]["text"] = "Bell \x07 and NUL \x00?"
    assert "Bell \ufffd and NUL \ufffd?" in "".join(parse(results_chart_svg(design, rows)).itertext())


def test_one_marker_per_finite_estimate_at_the_right_x(design, rows):
    root = parse(results_chart_svg(design, rows))
    found = markers(root)
    assert len(found) == sum(1 for r in rows if r.estimate is not None and math.isfinite(r.estimate)) == 4
    circles = [el for el in found if el.tag == f"{SVG}circle"]
    xs = sorted(float(el.get("cx")) for el in circles)
    expected = sorted([x_of(0.25, 0, 1), x_of(0.4, 0, 1), x_of(36.0, 18, 90)])
    assert xs == pytest.approx(expected, abs=0.051)
    assert x_of(0.25, 0, 1) == pytest.approx(PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) / 4)
    # The estimate below 0 is a triangle at the left edge of the axis, pointing left.
    (triangle,) = [el for el in found if el.tag == f"{SVG}polygon"]
    points = [tuple(map(float, point.split(","))) for point in triangle.get("points").split()]
    assert min(x for x, _ in points) < PLOT_LEFT <= max(x for x, _ in points) == pytest.approx(PLOT_LEFT)
    assert "-8.0%" in "".join(triangle.itertext())


def test_share_axis_is_shared_and_labelled(design, rows):
    root = parse(results_chart_svg(design, rows))
    labels = ["".join(el.itertext()) for el in root.iter(f"{SVG}text")]
    for tick in ("0%", "25%", "50%", "75%", "100%"):
        assert labels.count(tick) == 2  # the yes_no panel and the choice panel
    assert "18" in labels and "90" in labels  # the number question's own min..max axis


def test_chart_is_deterministic(design, rows):
    assert results_chart_svg(design, rows) == results_chart_svg(design, list(rows))


def test_empty_survey_and_survey_without_responses():
    empty = parse(results_chart_svg({"title": "Empty", "questions": []}, []))
    assert "No questions" in "".join(empty.itertext())
    from survey.definition import parse_definition_toml
    from survey.design import build_design

    text = (ROOT / "examples" / "smoking.toml").read_text(encoding="utf-8")
    design = build_design(parse_definition_toml(text, source="smoking.toml"))
    root = parse(results_chart_svg(design, aggregate(design, [])))
    assert markers(root) == []
    assert "".join(root.itertext()).count("no responses") == 8
    nan_rows = [row(r.question, r.option, float("nan"), r.ci_low, r.ci_high, n=0)
                for r in aggregate(design, [])]
    assert markers(parse(results_chart_svg(design, nan_rows))) == []


def test_long_texts_are_truncated_with_the_full_text_in_a_title():
    long_text = "Why " + "very " * 200 + "long?"
    long_label = "option " * 20
    design = {"title": "T", "questions": [question("q", "choice", long_text, options=[long_label, "b"])]}
    root = parse(results_chart_svg(design, [row("q", long_label, 0.5), row("q", "b", 0.5)]))
    titles = [el.text for el in root.iter(f"{SVG}title")]
    assert long_text in titles and long_label in titles
    shown = [el.text or el.find(f"{SVG}title").tail for el in root.iter(f"{SVG}text")]
    cut = [text for text in shown if text.endswith("…")]
    assert len(cut) == 2 and cut[0].startswith("very very") and cut[0].endswith(" very…")
    assert cut[1].startswith("option option") and cut[1].endswith(" option…")
    assert all(len(text) < 120 for text in shown)


def test_large_survey_draws_fast():
    options = [f"option {j} <&>" for j in range(64)]
    design = {"title": "Large", "questions": [question(f"q{i}", "choice", f"Question {i}?", options=options)
                                              for i in range(100)]}
    rows = [row(f"q{i}", option, (j % 13) / 10 - 0.1, 0.0, 0.5) for i in range(100)
            for j, option in enumerate(options)]
    start = time.perf_counter()
    svg = results_chart_svg(design, rows)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"6400 rows took {elapsed:.2f} s"
    assert len(markers(parse(svg))) == 6400


def test_charts_do_not_import_matplotlib():
    code = "import sys, survey.charts\nprint('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# The cache ---------------------------------------------------------------------------------------

def concurrent_gets(cache, key, draw, threads=8):
    barrier = threading.Barrier(threads)
    results, errors = [], []

    def worker():
        barrier.wait()
        try:
            results.append(cache.get(key, draw))
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(10)
    return results, errors


def test_cache_draws_once_for_concurrent_requests_then_again_for_a_new_key():
    cache = ChartCache()
    calls = []

    def draw():
        calls.append(1)
        time.sleep(0.2)
        return b"<svg/>"

    results, errors = concurrent_gets(cache, ("db", "s", "h", 1, 0.95), draw)
    assert not errors and len(results) == 8 and len(calls) == 1
    assert len({id(result) for result in results}) == 1 and results[0].body == b"<svg/>"
    assert cache.get(("db", "s", "h", 1, 0.95), draw) is results[0] and len(calls) == 1
    cache.get(("db", "s", "h", 2, 0.95), draw)
    assert len(calls) == 2


def test_cache_is_a_bounded_lru():
    cache = ChartCache(max_entries=2, max_bytes=10)
    cache.get("a", lambda: b"1")
    cache.get("b", lambda: b"2")
    cache.get("a", lambda: b"x")          # a is now the most recent
    cache.get("c", lambda: b"3")          # evicts b
    assert len(cache) == 2
    assert cache.get("a", lambda: b"new").body == b"1"
    assert cache.get("b", lambda: b"new").body == b"new"
    cache.get("big", lambda: b"0123456789")  # fills the byte budget alone
    assert len(cache) == 1


def test_cache_shares_a_failure_with_waiters_and_caches_nothing():
    cache = ChartCache()

    def fail():
        time.sleep(0.1)
        raise RuntimeError("boom")

    results, errors = concurrent_gets(cache, "k", fail, threads=4)
    assert not results and len(errors) == 4 and all(str(exc) == "boom" for exc in errors)
    assert cache.get("k", lambda: b"ok").body == b"ok"


# The web layer -----------------------------------------------------------------------------------

@pytest.fixture
def signed_in(app, db_path, smoking_survey):
    """Return a function making a test client signed in as a researcher."""
    store = Store(db_path)
    store.add_user("r@example.org", generate_password_hash("correct horse"))
    store.share("smoking-2026", "r@example.org")
    user = store.get_user("r@example.org")
    store.close()

    def make():
        client = app.test_client()
        with client.session_transaction() as session:
            session["user_id"] = user["id"]
            session["epoch"] = user["session_epoch"]
        return client

    return make


@pytest.fixture
def draws(monkeypatch):
    """Count the charts the web layer draws (each drawing takes a little while)."""
    import survey.web.research as research

    calls = []
    real = research.results_chart_svg

    def counting(design, rows):
        calls.append(len(rows))
        time.sleep(0.2)
        return real(design, rows)

    monkeypatch.setattr(research, "results_chart_svg", counting)
    return calls


def test_web_draws_once_for_concurrent_requests(signed_in, draws):
    clients = [signed_in() for _ in range(6)]
    barrier = threading.Barrier(len(clients))
    responses = [None] * len(clients)

    def fetch(index):
        barrier.wait()
        responses[index] = clients[index].get(f"/surveys/{SLUG}/chart.svg")

    threads = [threading.Thread(target=fetch, args=(index,)) for index in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert [r.status_code for r in responses] == [200] * len(clients)
    assert len({r.get_data() for r in responses}) == 1 and len({r.headers["ETag"] for r in responses}) == 1
    assert len(draws) == 1


def test_web_redraws_when_the_data_or_level_changes(signed_in, draws, db_path, smoking_survey):
    client = signed_in()
    first = client.get(f"/surveys/{SLUG}/chart.svg")
    assert client.get(f"/surveys/{SLUG}/chart.svg").get_data() == first.get_data() and len(draws) == 1
    store = Store(db_path)
    store.add_responses(SLUG, smoking_survey["hash"], [GOOD, {**GOOD, "smoker": 0}])
    store.close()
    second = client.get(f"/surveys/{SLUG}/chart.svg")
    assert len(draws) == 2 and second.headers["ETag"] != first.headers["ETag"]
    assert b"n = 2" in second.get_data()
    client.get(f"/surveys/{SLUG}/chart.svg?level=0.9")
    assert len(draws) == 3


def test_web_chart_etag_and_conditional_get(signed_in):
    client = signed_in()
    response = client.get(f"/surveys/{SLUG}/chart.svg")
    assert response.status_code == 200 and response.mimetype == "image/svg+xml"
    assert response.headers["Cache-Control"] == "private, no-cache"
    assert "style-src 'self'" in response.headers["Content-Security-Policy"]
    assert "Content-Disposition" not in response.headers
    etag = response.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"')
    parse(response.get_data(as_text=True))

    again = client.get(f"/surveys/{SLUG}/chart.svg", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.get_data() == b""
    assert again.headers["ETag"] == etag and again.headers["Cache-Control"] == "private, no-cache"
    other = client.get(f"/surveys/{SLUG}/chart.svg", headers={"If-None-Match": '"something-else"'})
    assert other.status_code == 200 and other.get_data() == response.get_data()


def test_web_chart_download(signed_in):
    client = signed_in()
    response = client.get(f"/surveys/{SLUG}/chart.svg?download=1")
    assert response.status_code == 200
    assert response.headers["Content-Disposition"] == f'attachment; filename="{SLUG}-chart.svg"'
    page = client.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "Download chart (SVG)" in page
    assert f'href="/surveys/{SLUG}/chart.svg?level=0.95&amp;download=1"' in page
    assert 'class="chart-image"' in page


def test_web_chart_of_an_unknown_survey_is_404(signed_in):
    assert signed_in().get("/surveys/no-such-survey/chart.svg").status_code == 404
