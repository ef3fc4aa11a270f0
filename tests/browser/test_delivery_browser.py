"""The link, delivered, in Chromium: the copy button puts the survey's link on the clipboard and says so (or selects
it where there is no clipboard API), by mouse and keyboard; the QR code as rendered decodes to the link; the sections
pass axe at 360 px."""

from __future__ import annotations

import io

import pytest
import zxingcpp
from PIL import Image
from playwright.sync_api import expect
from werkzeug.security import generate_password_hash

from survey.store import Store
from survey.web.secret import link_tokens, load_secret_key
from conftest import PANEL_TOML, create_from_toml, signed_in_page
from test_accessibility import axe, violations  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EMAIL, PASSWORD = "sharer@example.org", "hand out the link"
SLUG = "smoking-2026"


@pytest.fixture(scope="module")
def origin(live_server):
    """The live server, with the smoking survey and the invitation-only panel shared with the researcher."""
    db = live_server["db"]
    create_from_toml(db, PANEL_TOML)
    store = Store(db)
    try:
        store.add_user(EMAIL, generate_password_hash(PASSWORD), replace=True)
        store.share(SLUG, EMAIL)
        store.share("panel", EMAIL)
        store.add_addresses("panel", ["someone@example.org"], link_tokens(load_secret_key(str(db))))
    finally:
        store.close()
    return live_server["origin"]


def results_page(browser, origin, *, width=1280, clipboard=True):
    """Return (context, page, errors) on the smoking survey's results, with clipboard permissions or with no API."""
    context, page, errors = signed_in_page(browser, origin, EMAIL, PASSWORD, width=width)
    if clipboard:
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin)
    else:
        page.add_init_script("Object.defineProperty(Navigator.prototype, 'clipboard', {get: () => undefined});")
    page.goto(f"{origin}/surveys/{SLUG}/results#share-link")
    return context, page, errors


def test_the_copy_button_puts_the_link_on_the_clipboard_and_says_copied(browser, origin):
    context, page, errors = results_page(browser, origin)
    try:
        link = f"{origin}/s/{SLUG}"
        assert page.get_by_label("The survey's link").input_value() == link
        button = page.get_by_role("button", name="Copy link")
        button.click()
        status = page.locator("#survey-link-status")
        assert status.get_attribute("role") == "status"
        expect(status).to_have_text("Copied")
        assert page.evaluate("navigator.clipboard.readText()") == link
        # By keyboard: clear the clipboard, focus the button, press Enter.
        page.evaluate("navigator.clipboard.writeText('')")
        page.evaluate("document.getElementById('survey-link-status').textContent = ''")
        button.focus()
        page.keyboard.press("Enter")
        expect(status).to_have_text("Copied")
        assert page.evaluate("navigator.clipboard.readText()") == link
        assert errors == []
    finally:
        context.close()


def test_without_a_clipboard_api_the_link_is_selected_and_the_status_says_how_to_copy(browser, origin):
    context, page, errors = results_page(browser, origin, clipboard=False)
    try:
        assert page.evaluate("navigator.clipboard") is None
        page.get_by_role("button", name="Copy link").click()
        expect(page.locator("#survey-link-status")).to_contain_text("press Ctrl+C")
        selected = page.evaluate("""() => { const f = document.getElementById('survey-link');
            return [document.activeElement === f, f.value.substring(f.selectionStart, f.selectionEnd)]; }""")
        assert selected == [True, f"{origin}/s/{SLUG}"]
        assert errors == []
    finally:
        context.close()


def test_the_rendered_qr_code_decodes_to_the_link_and_the_sections_pass_axe_at_360px(browser, origin, axe):  # noqa: F811
    context, page, errors = results_page(browser, origin, width=360)
    try:
        image = page.get_by_role("img", name=f"QR code of the survey's link, {origin}/s/{SLUG}")
        image.scroll_into_view_if_needed()
        expect(image).to_have_js_property("complete", True)
        assert image.evaluate("img => img.naturalWidth") > 0
        shot = Image.open(io.BytesIO(image.screenshot()))
        assert [r.text for r in zxingcpp.read_barcodes(shot)] == [f"{origin}/s/{SLUG}"]
        assert page.evaluate("document.documentElement.scrollWidth") <= 360, "no sideways scrolling at 360 px"
        assert violations(axe, page) == []
        page.goto(f"{origin}/surveys/panel/results#email-invitations")
        assert page.get_by_label("CSV file with an “email” column").is_visible()
        assert page.get_by_role("button", name="Send invitations").count() == 1
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        assert violations(axe, page) == []
        assert errors == []
    finally:
        context.close()
