"""The charts: one matplotlib chart per question (SVG and PNG) with plain-text labels, their routes and cache."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PIL import Image
from werkzeug.security import generate_password_hash

from survey.core.aggregate import AggregateRow, aggregate
from survey.core.charts import PNG_SCALE, chart_size, question_chart, survey_chart
from survey.store import Store
from survey.web.chart_cache import ChartCache

from conftest import OTHER, OWNER

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"
SLUG = "smoking-2026"
GOOD = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}
TEX = "$\\undefinedcommand$"
HOSTILE = '<script>alert(1)</script> & "q"'
RTL = "שלום עולם"
ROOT = Path(__file__).resolve().parents[2]
CHART_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def question(qid, kind, text="A question?", **extra):
    return {"id": qid, "kind": kind, "text": text, "mechanism": extra.pop("mechanism", "rr"),
            "epsilon": extra.pop("epsilon", 0.5), **extra}


def row(qid, option, estimate, low=0.0, high=1.0, *, kind="choice", n=100, level=0.95):
    return AggregateRow(question=qid, option=option, kind=kind, mechanism="grr", epsilon=0.5, n=n,
                        noisy_share=0.5, estimate=estimate, std_error=0.05, ci_low=low, ci_high=high,
                        ci_level=level)


def parse(svg: bytes) -> ET.Element:
    return ET.fromstring(svg)


def texts(root: ET.Element) -> list[str]:
    return ["".join(el.itertext()) for el in root.iter(f"{SVG}text")]


def marker_xs(root: ET.Element, gid: str) -> list[float]:
    """Return the x of every marker in the group matplotlib names ``gid`` (empty if there is none)."""
    group = next((el for el in root.iter(f"{SVG}g") if el.get("id") == gid), None)
    return [] if group is None else [float(use.get("x")) for use in group.iter(f"{SVG}use")]


def png_image(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


@pytest.fixture
def design():
    return {"slug": "t", "title": f"Title {TEX} <b>&</b>", "questions": [
        question("smoker", "yes_no", "Do you smoke?"),
        question("colour", "choice", f"Favourite colour {HOSTILE} {TEX} under_score?",
                 options=[TEX, HOSTILE, RTL, "green", "red", "x" * 200], mechanism="grr"),
        question("age", "number", "How old are you?", min=18, max=90, mechanism="duchi"),
    ]}


@pytest.fixture
def rows():
    return [
        row("smoker", "yes", 0.25, 0.2, 0.3, kind="yes_no"),
        row("colour", TEX, 0.0, 0.0, 0.1),           # exactly on the left edge
        row("colour", HOSTILE, -0.08, 0.0, 0.1),     # unbiased estimates can leave [0, 1]
        row("colour", RTL, float("nan")),
        row("colour", "green", None),
        row("colour", "red", 1.0, 0.9, 1.0),         # exactly on the right edge
        row("colour", "x" * 200, 1.3, 0.95, 1.0),
        row("age", "", 36.0, 30.0, 42.0, kind="number"),
    ]


# Drawing -----------------------------------------------------------------------------------------

def test_labels_are_plain_text_in_the_svg(design, rows):
    svg = question_chart(design, "colour", rows, fmt="svg")
    root = parse(svg)
    assert b"<script" not in svg and not [el for el in root.iter() if el.tag.endswith("script")]
    shown = texts(root)
    for label in (TEX, HOSTILE, RTL):
        assert label in shown, label
    assert f"Favourite colour {HOSTILE} {TEX} under_score?" in " ".join(shown)  # wrapped over two lines
    assert any(text.startswith("colour · choice · share · grr · ε′ = 0.5 · n = 100") for text in shown)
    # svg.fonttype "none": the labels are <text>, not glyph outlines.
    assert not [el for el in root.iter(f"{SVG}path") if (el.get("id") or "").startswith("DejaVu")]


@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_a_tex_command_as_a_label_draws(design, fmt):
    only = [row("colour", TEX, 0.4, 0.3, 0.5), row("colour", "a_b^c \\\\ %", 0.2, 0.1, 0.3)]
    assert question_chart(design, "colour", only, fmt=fmt)


def test_characters_no_chart_can_hold_become_replacement_characters(design, rows):
    design["questions"][0]["text"] = "Bell \x07 and NUL \x00?"
    shown = texts(parse(question_chart(design, "smoker", rows)))
    assert "Bell \ufffd and NUL \ufffd?" in shown
    assert question_chart(design, "smoker", rows, fmt="png")


def test_estimates_at_their_x_and_outside_the_axis_at_its_edge(design, rows):
    root = parse(question_chart(design, "colour", rows))
    inside, below, above = (marker_xs(root, gid) for gid in ("estimates", "below-axis", "above-axis"))
    assert len(inside) == 2 and len(below) == 1 and len(above) == 1
    left, right = sorted(inside)  # the estimates 0.0 and 1.0, on the axis ends
    assert below == [pytest.approx(left)] and above == [pytest.approx(right)]
    assert right - left > 250
    shown = texts(root)
    assert shown.count("no responses") == 2  # NaN and None
    assert [t for t in shown if t.endswith("%")] == ["0%", "25%", "50%", "75%", "100%"]


def test_a_share_is_placed_proportionally(design):
    share = [row("colour", "a", 0.0), row("colour", "b", 0.25), row("colour", "c", 1.0)]
    xs = marker_xs(parse(question_chart(design, "colour", share)), "estimates")
    assert len(xs) == 3
    assert xs[1] - xs[0] == pytest.approx((xs[2] - xs[0]) / 4, abs=0.01)


def test_a_number_question_has_its_mean_on_its_own_axis(design, rows):
    root = parse(question_chart(design, "age", rows))
    (mean,) = marker_xs(root, "estimates")
    shown = texts(root)
    assert "mean" in shown and "18" in shown and "90" in shown and "0%" not in shown
    assert any("mean on 18–90" in text for text in shown)
    low = marker_xs(parse(question_chart(design, "age", [row("age", "", 18.0, 18, 20, kind="number")])),
                    "estimates")[0]
    high = marker_xs(parse(question_chart(design, "age", [row("age", "", 90.0, 88, 90, kind="number")])),
                     "estimates")[0]
    assert mean == pytest.approx(low + (36 - 18) / (90 - 18) * (high - low), abs=0.01)


def test_long_texts_and_labels_are_cut_and_the_width_stays(design, rows):
    design["questions"][1]["text"] = "Why " + "very " * 200 + "long?"
    svg = question_chart(design, "colour", rows)
    shown = texts(parse(svg))
    assert any(text.startswith("x" * 20) and text.endswith("…") and len(text) < 40 for text in shown)
    title_lines = [text for text in shown if text.startswith(("Why", "very"))]
    assert len(title_lines) == 3 and title_lines[-1].endswith("…") and all(len(t) <= 70 for t in title_lines)
    assert parse(svg).get("width") == parse(question_chart(design, "smoker", rows)).get("width")


def test_a_question_without_rows_and_a_survey_without_responses(design):
    assert "no estimates" in texts(parse(question_chart(design, "colour", [])))
    from survey.core.definition import parse_definition_toml
    from survey.core.design import build_design

    text = (ROOT / "examples" / "smoking.toml").read_text(encoding="utf-8")
    smoking = build_design(parse_definition_toml(text, source="smoking.toml"))
    empty = aggregate(smoking, [])
    for q in smoking["questions"]:
        root = parse(question_chart(smoking, q["id"], empty))
        assert marker_xs(root, "estimates") == [] and "no responses" in texts(root)
        assert question_chart(smoking, q["id"], empty, fmt="png")


def test_64_options(design):
    options = [f"option {j} {TEX}" for j in range(64)]
    design["questions"][1]["options"] = options
    many = [row("colour", option, (j % 13) / 10 - 0.1, 0.0, 0.5) for j, option in enumerate(options)]
    root = parse(question_chart(design, "colour", many))
    shown = texts(root)
    assert all(option in shown for option in options)
    assert shown.count("50%") == 2, "a long chart repeats its axis labels above its rows"
    assert sum(len(marker_xs(root, gid)) for gid in ("estimates", "below-axis", "above-axis")) == 64
    width, height = chart_size(design["questions"][1], many)
    assert height > 64 * 20 and width == chart_size(design["questions"][1], many[:2])[0]
    image = png_image(question_chart(design, "colour", many, fmt="png"))
    assert image.size == (width * PNG_SCALE, height * PNG_SCALE)


@pytest.mark.parametrize("qid", ["smoker", "colour", "age"])
def test_sizes_match_the_svg_and_the_png(design, rows, qid):
    width, height = chart_size(next(q for q in design["questions"] if q["id"] == qid),
                               [r for r in rows if r.question == qid])
    root = parse(question_chart(design, qid, rows))
    # matplotlib sizes the SVG in points (72/inch); browsers show 96 px per inch.
    assert float(root.get("width").removesuffix("pt")) * 96 / 72 == pytest.approx(width, abs=0.5)
    assert float(root.get("height").removesuffix("pt")) * 96 / 72 == pytest.approx(height, abs=0.5)
    image = png_image(question_chart(design, qid, rows, fmt="png"))
    assert image.size == (width * PNG_SCALE, height * PNG_SCALE)
    grey = image.convert("L")
    dark = sum(grey.histogram()[:96])
    assert 200 < dark < 0.2 * image.size[0] * image.size[1], "dark text on a white chart"


@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_charts_are_deterministic(design, rows, fmt):
    assert question_chart(design, "colour", rows, fmt=fmt) == question_chart(design, "colour", list(rows), fmt=fmt)
    assert survey_chart(design, rows, fmt=fmt) == survey_chart(design, list(rows), fmt=fmt)


def test_survey_chart_holds_every_question(design, rows):
    shown = texts(parse(survey_chart(design, rows)))
    assert any(text.startswith("Results: Title " + TEX) for text in shown)
    for q in design["questions"]:
        assert any(text.startswith(q["text"][:30]) for text in shown), q["id"]
    assert "No questions." in texts(parse(survey_chart({"title": "Empty", "questions": []}, [])))


def test_bad_requests_name_the_problem(design, rows):
    with pytest.raises(ValueError, match="svg, png.*'gif'"):
        question_chart(design, "smoker", rows, fmt="gif")
    with pytest.raises(KeyError, match="nope"):
        question_chart(design, "nope", rows)


def test_charts_use_no_pyplot_and_plain_text_settings():
    code = ("import sys, matplotlib, survey.core.charts\n"
            "r = matplotlib.rcParams\n"
            "print('matplotlib.pyplot' in sys.modules, r['text.parse_math'], r['text.usetex'], r['svg.fonttype'])")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "False", "False", "none"]


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
    store.share(SLUG, "r@example.org")
    user = store.get_user("r@example.org")
    store.close()

    def make():
        client = app.test_client()
        with client.session_transaction() as session:
            session["user_id"] = user["id"]
            session["key"] = user["session_key"]
        return client

    return make


@pytest.fixture
def draws(monkeypatch):
    """Count the question charts the web layer draws (each drawing takes a little while)."""
    import survey.core.charts as drawing

    calls = []
    real = drawing.question_chart

    def counting(design, qid, rows, *, fmt):
        calls.append((qid, fmt))
        time.sleep(0.2)
        return real(design, qid, rows, fmt=fmt)

    monkeypatch.setattr(drawing, "question_chart", counting)
    return calls


def test_web_draws_once_for_concurrent_requests(signed_in, draws):
    clients = [signed_in() for _ in range(6)]
    barrier = threading.Barrier(len(clients))
    responses = [None] * len(clients)

    def fetch(index):
        barrier.wait()
        responses[index] = clients[index].get(f"/surveys/{SLUG}/charts/cigarettes.png")

    threads = [threading.Thread(target=fetch, args=(index,)) for index in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert [r.status_code for r in responses] == [200] * len(clients)
    assert len({r.get_data() for r in responses}) == 1 and len({r.headers["ETag"] for r in responses}) == 1
    assert draws == [("cigarettes", "png")]


def test_web_redraws_when_the_data_or_level_changes(signed_in, draws, db_path, smoking_survey):
    client = signed_in()
    first = client.get(f"/surveys/{SLUG}/charts/smoker.svg")
    assert client.get(f"/surveys/{SLUG}/charts/smoker.svg").get_data() == first.get_data() and len(draws) == 1
    client.get(f"/surveys/{SLUG}/charts/smoker.png")
    assert len(draws) == 2
    store = Store(db_path)
    store.add_responses(SLUG, smoking_survey["hash"], [GOOD, {**GOOD, "smoker": 0}])
    store.close()
    second = client.get(f"/surveys/{SLUG}/charts/smoker.svg")
    assert len(draws) == 3 and second.headers["ETag"] != first.headers["ETag"]
    assert "n = 2" in " ".join(texts(parse(second.get_data())))
    client.get(f"/surveys/{SLUG}/charts/smoker.svg?level=0.9")
    assert len(draws) == 4


@pytest.mark.parametrize("path, mimetype", [("charts/smoker.svg", "image/svg+xml"),
                                            ("charts/age.png", "image/png"),
                                            ("chart.svg", "image/svg+xml")])
def test_web_chart_headers_etag_and_conditional_get(signed_in, path, mimetype):
    client = signed_in()
    response = client.get(f"/surveys/{SLUG}/{path}")
    assert response.status_code == 200 and response.mimetype == mimetype
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Content-Security-Policy"] == CHART_CSP
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "Content-Disposition" not in response.headers
    etag = response.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"')
    if mimetype == "image/png":
        assert png_image(response.get_data()).format == "PNG"
    else:
        parse(response.get_data())

    again = client.get(f"/surveys/{SLUG}/{path}", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.get_data() == b""
    assert again.headers["ETag"] == etag and again.headers["Content-Security-Policy"] == CHART_CSP
    other = client.get(f"/surveys/{SLUG}/{path}", headers={"If-None-Match": '"something-else"'})
    assert other.status_code == 200 and other.get_data() == response.get_data()


def test_web_chart_downloads_and_the_dashboard(signed_in):
    client = signed_in()
    for qid, fmt in (("smoker", "svg"), ("age", "png")):
        response = client.get(f"/surveys/{SLUG}/charts/{qid}.{fmt}?download=1")
        assert response.headers["Content-Disposition"] == f'attachment; filename="{SLUG}-{qid}.{fmt}"'
    whole = client.get(f"/surveys/{SLUG}/chart.svg?download=1")
    assert whole.headers["Content-Disposition"] == f'attachment; filename="{SLUG}-charts.svg"'
    page = client.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    import html.parser

    class Links(html.parser.HTMLParser):
        def __init__(self):
            super().__init__()
            self.images, self.links = [], []

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "img":
                self.images.append(attrs)
            if tag == "a" and "download" in attrs:
                self.links.append(attrs)

    parser = Links()
    parser.feed(page)
    charts = [image for image in parser.images if not image["src"].endswith("/link-qr.svg")]
    assert charts == [], "the dashboard draws its charts in HTML: no image to shrink on a phone"
    # The one image is the survey link's QR code, of a fixed size that fits a 360 px screen.
    assert all(int(image["width"]) <= 320 for image in parser.images if image not in charts)
    names = {link["download"] for link in parser.links}
    assert names >= {f"{SLUG}-{qid}.{fmt}" for qid in ("smoker", "age") for fmt in ("svg", "png")}
    for link in parser.links:
        assert client.get(link["href"]).status_code == 200, link["href"]
    assert f'href="/surveys/{SLUG}/charts/age.png?level=0.95&amp;download=1"' in page
    assert page.count('<figure class="chart"') == 4 and page.count("<figcaption>") >= 4


def test_web_chart_routes_are_404_for_another_researcher_and_unknown_questions(app, accounts):
    from test_ownership import signed_in as sign_in

    owner, other = sign_in(app, *OWNER), sign_in(app, *OTHER)
    paths = [f"/surveys/{SLUG}/charts/smoker.svg", f"/surveys/{SLUG}/charts/age.png", f"/surveys/{SLUG}/chart.svg"]
    for path in paths:
        assert owner.get(path).status_code == 200, path
        response = other.get(path)
        assert response.status_code == 404 and b"Smoking" not in response.get_data(), path
        assert app.test_client().get(path).status_code == 302
    for path in (f"/surveys/{SLUG}/charts/nope.svg", f"/surveys/{SLUG}/charts/smoker.gif",
                 f"/surveys/{SLUG}/charts/smoker%0A.svg", "/surveys/nope/charts/smoker.svg"):
        assert owner.get(path).status_code == 404, path


def test_web_draws_one_whole_survey_chart_at_a_time(signed_in, monkeypatch):
    import survey.core.charts as drawing

    active, most, real = [0], [0], drawing.survey_chart

    def slow(design, rows, *, fmt):
        active[0] += 1
        most[0] = max(most[0], active[0])
        time.sleep(0.2)
        active[0] -= 1
        return real(design, rows, fmt=fmt)

    monkeypatch.setattr(drawing, "survey_chart", slow)
    levels = ["0.9", "0.95", "0.99"]
    clients = [signed_in() for _ in levels]
    barrier = threading.Barrier(len(levels))
    statuses = []

    def fetch(client, level):
        barrier.wait()
        statuses.append(client.get(f"/surveys/{SLUG}/chart.svg?level={level}").status_code)

    threads = [threading.Thread(target=fetch, args=pair) for pair in zip(clients, levels)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert statuses == [200] * len(levels) and most[0] == 1
