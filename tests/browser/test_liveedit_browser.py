"""In Chromium (issue 27, the first "Done when"): a typo in a question of an open survey with 200 responses is fixed
through the builder; the results and every export keep the 200 responses and the codebook shows both wordings with
their days; changing ε makes version 2, which the results page shows apart from version 1, and responses.csv
carries the version. Screenshots of the confirmation and the version view at 360 and 1280 px go to
/work/shots/liveedit/ (or $LDP_SURVEY_SHOTS)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from werkzeug.security import generate_password_hash

from survey.core.simulate import complete_truth, simulate_answers
from survey.store import Store
from survey.store.ids import today

from conftest import signed_in_page
from test_accessibility import axe, violations  # noqa: F401 (the axe fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLUG = "smoking-2026"
OWNER = ("liveedit-owner@example.org", "owner of the live survey")
RESPONSES = 200
SHOTS = Path(os.environ.get("LDP_SURVEY_SHOTS", "/work/shots/liveedit"))


@pytest.fixture(scope="module")
def owned(live_server):
    """The live server's smoking survey (open, released at once), owned by OWNER, with 200 simulated respondents."""
    store = Store(live_server["db"])
    try:
        store.add_user(OWNER[0], generate_password_hash(OWNER[1]), replace=True)
        assert store.share(SLUG, OWNER[0]) == "owner"
        design = store.get_design(SLUG)
        rng = np.random.default_rng(27)
        answers = simulate_answers(design, complete_truth(design, {}, rng), RESPONSES, rng)
        store.add_responses(SLUG, design["hash"], answers)
    finally:
        store.close()


def _shot(page, name: str, selector: str | None = None):
    """Save a screenshot of the page (or one element) at its width into SHOTS."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    target = page.locator(selector) if selector else page
    target.screenshot(path=str(SHOTS / name), **({} if selector else {"full_page": True}))


def _fits(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def _get(page, origin: str, path: str) -> bytes:
    response = page.request.get(origin + path)
    assert response.ok, (path, response.status)
    return response.body()


def _rows(body: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(body.decode("utf-8"))))


def _review(page, origin: str, **fields):
    """Open the builder on the survey from its dashboard, change fields, press Review and save changes."""
    page.goto(f"{origin}/surveys/{SLUG}/results#manage")
    page.get_by_role("link", name="Correct or change the survey").click()
    assert page.locator("h1").inner_text() == f"Edit survey {SLUG}"
    for selector, value in fields.items():
        page.locator(selector).fill(value)
    page.get_by_role("button", name="Review and save changes").click()
    page.wait_for_url(re.compile("/surveys/build$"))
    assert page.locator("h1").inner_text().startswith("Save changes to")


def test_fix_a_typo_then_change_epsilon(browser, live_server, owned, axe):
    origin = live_server["origin"]
    context, page, errors = signed_in_page(browser, origin, *OWNER, width=1280)
    page.goto(f"{origin}/surveys/build?edit={SLUG}")
    old_text = page.locator("#questions-0-text").input_value()
    new_text = old_text.replace("Do you smoke", "Do you currently smoke")
    assert new_text != old_text

    _review(page, origin, **{"#questions-0-text": new_text})
    kind = page.locator("#revision-kind").inner_text()
    assert f"Text only: the {RESPONSES} responses stay one data set" in kind
    assert page.locator("#text-changes").inner_text() == "Question smoker: wording"
    assert page.locator("#design-changes").count() == 0
    assert "Do you currently smoke" in page.locator("#wording-changes").inner_text()
    assert violations(axe, page) == []
    _shot(page, "edit-confirm-text-1280.png")
    page.set_viewport_size({"width": 360, "height": 800})
    assert _fits(page), "the confirmation fits 360 px"
    _shot(page, "edit-confirm-text-360.png")
    # Back to editing, by keyboard at 360 px: the builder shows the unsaved wording again; nothing was stored.
    page.get_by_role("button", name="Save the correction").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "back-to-editing-button"
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/surveys/build\?edit={SLUG}$"))
    assert page.locator("#questions-0-text").input_value() == new_text
    assert "not saved yet" in page.locator("#unsaved-note").inner_text()
    assert _fits(page), "the builder brought back fits 360 px"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "edit-back-to-editing-360.png"))  # the first screen: the form's notes
    page.set_viewport_size({"width": 1280, "height": 900})
    page.get_by_role("button", name="Review and save changes").click()
    page.wait_for_url(re.compile("/surveys/build$"))
    assert f"Text only: the {RESPONSES} responses stay one data set" in page.locator("#revision-kind").inner_text()
    page.get_by_role("button", name="Save the correction").click()
    page.wait_for_url(re.compile(f"/surveys/{SLUG}/results$"))
    assert "Wording corrected" in page.locator(".flash").inner_text()
    assert f"{RESPONSES} responses" in page.locator("main").inner_text()

    # Every export keeps the 200 responses; the codebook shows both wordings with their days.
    assert len(_rows(_get(page, origin, f"/surveys/{SLUG}/responses.csv"))) == RESPONSES + 1
    book = json.loads(_get(page, origin, f"/surveys/{SLUG}/codebook.json"))
    assert [(entry["from"], entry["text"]) for entry in book["wording_history"]["questions"]["smoker"]][-1] == (
        today(), new_text)
    assert book["wording_history"]["questions"]["smoker"][0]["text"] == old_text
    aggregates = _rows(_get(page, origin, f"/surveys/{SLUG}/results.csv"))
    n_column = aggregates[0].index("n")
    assert {row[n_column] for row in aggregates[1:] if row[0] == "smoker"} == {str(RESPONSES)}
    package = zipfile.ZipFile(io.BytesIO(_get(page, origin, f"/surveys/{SLUG}/package.zip")))
    member = next(name for name in package.namelist() if name.endswith("/responses.csv"))
    assert len(_rows(package.read(member))) == RESPONSES + 1
    for fmt in ("sav", "dta", "xlsx"):
        assert _get(page, origin, f"/surveys/{SLUG}/responses.{fmt}" if fmt != "xlsx" else
                    f"/surveys/{SLUG}/results.xlsx")

    # Changing ε makes version 2, shown apart from version 1.
    _review(page, origin, **{"#epsilon": "1"})
    kind = page.locator("#revision-kind").inner_text()
    assert "(ε 2 → 1)" in kind and "version 2, shown apart from version 1" in kind
    assert "Survey privacy budget ε" in page.locator("#design-changes").inner_text()
    _shot(page, "edit-confirm-version-1280.png")
    page.set_viewport_size({"width": 360, "height": 800})
    assert _fits(page)
    _shot(page, "edit-confirm-version-360.png")
    page.get_by_role("button", name="Start version 2").click()
    page.wait_for_url(re.compile(f"/surveys/{SLUG}/results$"))
    versions = page.locator("#versions")
    assert "Version 1: ε = 2, 200 responses" in versions.inner_text()
    assert "Version 2 (current): ε = 1, 0 responses" in versions.inner_text()
    assert violations(axe, page) == []
    assert _fits(page), "the version view fits 360 px"
    _shot(page, "versions-360.png", "#versions")
    page.set_viewport_size({"width": 1280, "height": 900})
    _shot(page, "versions-1280.png")
    page.get_by_role("link", name="Version 1: ε = 2, 200 responses").click()
    page.wait_for_url(re.compile(rf"/surveys/{re.escape(SLUG)}\.v1/results$"))
    assert "These results are of version 1 only" in page.locator("#versions").inner_text()
    assert f"{RESPONSES} responses" in page.locator("main").inner_text()
    _shot(page, "version-1-results-1280.png")

    first = _rows(_get(page, origin, f"/surveys/{SLUG}.v1/responses.csv"))
    assert first[0][-1] == "version" and len(first) == RESPONSES + 1 and {row[-1] for row in first[1:]} == {"1"}
    assert _rows(_get(page, origin, f"/surveys/{SLUG}/responses.csv"))[0][-1] == "version"
    assert json.loads(_get(page, origin, f"/s/{SLUG}/design.json"))["epsilon"] == 1
    assert errors == []
    context.close()
