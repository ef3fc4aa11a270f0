"""The charts in real Chromium: opened on their own they render (the CSP allows their inline style), and download."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PIL import Image
from werkzeug.security import generate_password_hash

from survey.core.charts import PNG_SCALE
from survey.store import Store
from conftest import RENDERED_TEXT_SIZES_JS, signed_in_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
EMAIL, PASSWORD = "charts@example.org", "charts in chromium"
SLUG = "plain-text-labels"
TEX = "$\\undefinedcommand$"
RTL = "שלום עולם"
DEFINITION = f"""
slug = "{SLUG}"
title = 'Labels that are not markup {TEX}'
epsilon = 4.0
allocation = "split"

[[questions]]
id = "q1"
kind = "choice"
text = 'Which of these {TEX} & <script>alert(1)</script> under_score?'
options = ['{TEX}', "<script>alert(1)</script>", "{RTL}", "a & b"]

[[questions]]
id = "q2"
kind = "yes_no"
text = "Yes or no?"
"""


@pytest.fixture(scope="module")
def charts_survey(live_server, tmp_path_factory):
    """A researcher owning a survey whose texts look like TeX, HTML and right-to-left text, with responses."""
    store = Store(live_server["db"])
    try:
        store.add_user(EMAIL, generate_password_hash(PASSWORD), replace=True)
    finally:
        store.close()
    path = tmp_path_factory.mktemp("charts") / "labels.toml"
    path.write_text(DEFINITION, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "survey", "--db", str(live_server["db"]), "create", str(path),
                    "--owner", EMAIL], check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(REPO)})
    store = Store(live_server["db"])
    try:
        design = store.get_design(SLUG)
        store.add_responses(SLUG, design["hash"], [{"q1": i % 4, "q2": int(i % 3 == 0)} for i in range(60)])
    finally:
        store.close()
    return live_server["origin"]


def assert_drawn(image: Image.Image, what: str, min_dark: int = 300):
    """A chart, not a black (or white) box: mostly white, with dark text pixels."""
    grey = image.convert("L")
    histogram, total = grey.histogram(), grey.size[0] * grey.size[1]
    dark, white = sum(histogram[:96]), sum(histogram[240:])
    assert white > 0.6 * total, f"{what}: only {white / total:.0%} white"
    assert min_dark < dark < 0.2 * total, f"{what}: {dark} dark pixels of {total}"


def test_svg_opened_on_its_own_renders(browser, charts_survey):
    context, page, errors = signed_in_page(browser, charts_survey, EMAIL, PASSWORD)
    response = page.goto(f"{charts_survey}/surveys/{SLUG}/charts/q1.svg")
    assert response.status == 200 and response.headers["content-type"] == "image/svg+xml; charset=utf-8"
    text = page.evaluate("document.documentElement.textContent")
    for label in (TEX, "<script>alert(1)</script>", RTL, "a & b"):
        assert label in text, label
    assert page.evaluate("document.getElementsByTagNameNS('http://www.w3.org/2000/svg', 'script').length") == 0
    box = page.evaluate("(({width, height}) => ({x: 0, y: 0, width, height}))"
                        "(document.documentElement.getBoundingClientRect())")
    assert box["width"] == pytest.approx(720, abs=1)
    assert_drawn(Image.open(io.BytesIO(page.screenshot(clip=box))), "the SVG")
    assert errors == [], "no CSP violation"
    assert "style-src 'unsafe-inline'" in response.headers["content-security-policy"]
    context.close()


def test_png_opened_on_its_own_renders_at_its_size(browser, charts_survey):
    context, page, errors = signed_in_page(browser, charts_survey, EMAIL, PASSWORD)
    svg = ET.fromstring(page.request.get(f"{charts_survey}/surveys/{SLUG}/charts/q1.svg").body())
    # The SVG is sized in points, shown at 96 CSS px per 72 points.
    width, height = (round(float(svg.get(side).removesuffix("pt")) * 96 / 72) for side in ("width", "height"))
    url = f"{charts_survey}/surveys/{SLUG}/charts/q1.png"
    fetched = page.request.get(url)
    assert fetched.status == 200 and fetched.headers["content-type"] == "image/png"
    decoded = Image.open(io.BytesIO(fetched.body()))
    assert decoded.format == "PNG" and decoded.size == (width * PNG_SCALE, height * PNG_SCALE)
    assert_drawn(decoded, "the PNG file")
    page.goto(url)
    assert page.evaluate("[document.images[0].naturalWidth, document.images[0].naturalHeight]") == \
        [width * PNG_SCALE, height * PNG_SCALE]
    page.set_viewport_size({"width": width * PNG_SCALE, "height": height * PNG_SCALE})
    assert_drawn(Image.open(io.BytesIO(page.locator("img").screenshot())), "the PNG in Chromium")
    assert errors == []
    context.close()


def test_dashboard_charts_load_and_download_at_phone_width(browser, charts_survey, tmp_path):
    context, page, errors = signed_in_page(browser, charts_survey, EMAIL, PASSWORD, width=360)
    page.goto(f"{charts_survey}/surveys/{SLUG}/results")
    figures = page.locator("figure.chart")
    assert figures.count() == 2
    # The dashboard's charts are HTML: their labels are page text, shown as they are, never shrunk below 12 px.
    labels = figures.first.locator(".bar-label").all_inner_texts()
    assert labels == [TEX, "<script>alert(1)</script>", RTL, "a & b"]
    sizes = page.evaluate(RENDERED_TEXT_SIZES_JS, "figure.chart")
    assert sizes and min(sizes)[0] >= 12, min(sizes)
    for index in range(figures.count()):
        box = figures.nth(index).bounding_box()
        assert box["width"] <= 360 and box["height"] > 0
        assert_drawn(Image.open(io.BytesIO(figures.nth(index).screenshot())), f"chart {index} in the dashboard", 20)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    for fmt in ("svg", "png"):
        with page.expect_download() as info:
            page.locator("#chart-q1").get_by_role("link", name=re.compile(f"Download {fmt.upper()}")).click()
        download = info.value
        assert download.suggested_filename == f"{SLUG}-q1.{fmt}"
        saved = tmp_path / download.suggested_filename
        download.save_as(saved)
        if fmt == "svg":
            root = ET.parse(saved).getroot()
            assert TEX in "".join(root.itertext())
        else:
            assert_drawn(Image.open(saved), "the downloaded PNG")
    assert errors == []
    context.close()
