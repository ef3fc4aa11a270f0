"""The crosstab page and its CSV: numbers, errors, access, and accessibility in Chromium."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest
from werkzeug.security import generate_password_hash

from survey.core.crosstab import crosstab, crosstab_to_csv
from survey.core.simulate import complete_truth, parse_given, parse_truth, simulate_columns
from survey.store import Store

from test_accessibility import RULES

SLUG = "smoking-2026"
EMAIL, PASSWORD = "x@example.org", "crosstab pages"
HEADER = b"measure,a_option,b_option,estimate,std_error,ci_low,ci_high,ci_level\r\n"


def fill(db_path, n=40000, seed=1):
    """Add n simulated respondents whose lung disease depends on smoking; return the design."""
    store = Store(db_path)
    try:
        design = store.get_design(SLUG)
        rng = np.random.default_rng(seed)
        truth = complete_truth(design, parse_truth(design, ["smoker=0.3"]), rng)
        given = parse_given(design, ["lung_disease|smoker=1:0.4", "lung_disease|smoker=0:0.1"])
        store.add_report_columns(SLUG, design["hash"], simulate_columns(design, truth, n, rng, given=given))
    finally:
        store.close()
    return design


def add_researcher(db_path, share=True):
    store = Store(db_path)
    try:
        store.add_user(EMAIL, generate_password_hash(PASSWORD), replace=True)
        if share:
            store.share(SLUG, EMAIL)
    finally:
        store.close()


def login(client):
    page = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    assert client.post("/login", data={"csrf_token": token, "email": EMAIL, "password": PASSWORD}).status_code == 302


def expected(db_path, a, b, level=0.95):
    store = Store(db_path)
    try:
        design = store.get_design(SLUG)
        questions = {q["id"]: q for q in design["questions"]}
        return crosstab(questions[a], questions[b], *store.joint_reports(SLUG, a, b), level=level)
    finally:
        store.close()


@pytest.fixture
def web(client, db_path, smoking_survey):
    fill(db_path)
    add_researcher(db_path)
    login(client)
    return client


def shown(row) -> str:
    """Return a share cell as the page shows it: percentages with the dashboard's decimals (issue 27)."""
    from survey.core.readout import share_decimals, share_text

    digits = share_decimals(row.ci_low, row.ci_high)
    return f"{share_text(row.estimate, digits)} [{share_text(row.ci_low, digits)}, {share_text(row.ci_high, digits)}]"


def test_page_shows_the_numbers(web, db_path):
    response = web.get(f"/surveys/{SLUG}/crosstab?a=smoker&b=lung_disease")
    assert response.status_code == 200
    text = html.unescape(response.get_data(as_text=True))
    table = expected(db_path, "smoker", "lung_disease")
    assert "n = 40000 respondents answered both" in text
    for measure in ("joint", "b_given_a"):
        row = table.get(measure, "yes", "yes")
        assert shown(row) in text
    yes, no = table.get("b_given_a", "yes", "yes"), table.get("b_given_a", "no", "yes")
    odds = table.get("odds_ratio", "", "")
    assert odds.ci_low > 1
    sentence = (f"Among those who said yes to smoker, {yes.estimate * 100:.1f}% [{yes.ci_low * 100:.1f}%, "
                f"{yes.ci_high * 100:.1f}%] said yes to lung_disease, against {no.estimate * 100:.1f}% "
                f"[{no.ci_low * 100:.1f}%, {no.ci_high * 100:.1f}%] among those who said no; odds ratio "
                f"{odds.estimate:.2f} [{odds.ci_low:.2f}, {odds.ci_high:.2f}].")
    assert sentence in text
    assert '<th scope="col"' in response.get_data(as_text=True) and '<th scope="row">' in text
    assert '<label for="a">' in text and '<label for="b">' in text


def test_page_with_a_choice_and_a_number(web, db_path):
    text = html.unescape(web.get(f"/surveys/{SLUG}/crosstab?a=cigarettes&b=smoker&level=0.9").get_data(as_text=True))
    row = expected(db_path, "cigarettes", "smoker", level=0.9).get("b_given_a", "none", "yes")
    assert shown(row) in text
    text = html.unescape(web.get(f"/surveys/{SLUG}/crosstab?a=smoker&b=age").get_data(as_text=True))
    row = expected(db_path, "smoker", "age").get("mean_given_a", "yes")
    assert f"[{row.ci_low:.2f}, {row.ci_high:.2f}]" in text and "the mean of age is" in text


def test_csv_download(web, db_path):
    response = web.get(f"/surveys/{SLUG}/crosstab.csv?a=smoker&b=lung_disease&level=0.99")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert response.data.startswith(HEADER)
    assert response.data == crosstab_to_csv(expected(db_path, "smoker", "lung_disease", level=0.99)).encode()
    assert "attachment" in response.headers["Content-Disposition"]


@pytest.mark.parametrize("query, fragment", [
    ("a=smoker&b=nope", "'nope' is not a question of this survey; the questions are smoker, lung_disease"),
    ("a=nope", "'nope' is not a question of this survey"),
    ("a=smoker&b=smoker", "choose two different questions"),
    ("a=age&b=smoker", "put it second"),
])
def test_bad_pairs_are_400_with_a_message(web, query, fragment):
    page = web.get(f"/surveys/{SLUG}/crosstab?{query}")
    assert page.status_code == 400
    assert fragment in html.unescape(page.get_data(as_text=True))
    assert '<label for="a">' in page.get_data(as_text=True)  # the form stays, to choose again
    download = web.get(f"/surveys/{SLUG}/crosstab.csv?{query}")
    assert download.status_code == 400 and fragment in download.get_data(as_text=True)


@pytest.mark.parametrize("query, a, b", [("", "smoker", "lung_disease"), ("a=cigarettes", "cigarettes", "smoker"),
                                         ("b=smoker", "lung_disease", "smoker"), ("a=age", None, None)])
def test_a_question_left_out_is_the_first_that_can_be_crossed(web, db_path, query, a, b):
    """The page opens on a pair with its numbers (yes/no first), never on an error; the CSV follows the same pair."""
    response = web.get(f"/surveys/{SLUG}/crosstab?{query}")
    text = html.unescape(response.get_data(as_text=True))
    if a is None:
        assert response.status_code == 400 and "no question can be crossed with 'age'" in text
        return
    assert response.status_code == 200 and 'role="alert"' not in text
    assert f"<h2>{a} × {b}</h2>" in text
    row = expected(db_path, a, b).get("b_given_a", *(("yes", "yes") if b != "smoker" or a == "lung_disease"
                                                     else ("none", "yes")))
    assert shown(row) in text
    assert f'<option value="{a}" selected>' in text.replace("  ", " ")
    download = web.get(f"/surveys/{SLUG}/crosstab.csv?{query}")
    assert download.data == crosstab_to_csv(expected(db_path, a, b)).encode()


def test_sign_in_and_access_are_required(client, db_path, smoking_survey):
    for path in (f"/surveys/{SLUG}/crosstab?a=smoker&b=lung_disease", f"/surveys/{SLUG}/crosstab.csv?a=smoker&b=age"):
        assert client.get(path).status_code == 302
    add_researcher(db_path, share=False)
    login(client)
    for path in (f"/surveys/{SLUG}/crosstab?a=smoker&b=lung_disease", f"/surveys/{SLUG}/crosstab.csv?a=smoker&b=age",
                 "/surveys/nope/crosstab?a=smoker&b=age"):
        assert client.get(path).status_code == 404


def test_results_page_links_to_crosstabs(web):
    text = html.unescape(web.get(f"/surveys/{SLUG}/results").get_data(as_text=True))
    assert f'href="/surveys/{SLUG}/crosstab?a=smoker&b=lung_disease&level=0.95">Crosstabs</a>' in text


# Accessibility (axe-core in Chromium), at phone and desktop widths




@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("width", [360, 1280])
def test_crosstab_page_is_accessible(browser, live_server, width):
    from axe_playwright_python.sync_playwright import Axe

    fill(live_server["db"], n=5000, seed=width)
    add_researcher(live_server["db"])
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    origin = live_server["origin"]
    page.goto(f"{origin}/login")
    page.get_by_label("Email").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile("/surveys$"))
    axe = Axe()
    for query in ("a=smoker&b=lung_disease", "a=cigarettes&b=lung_disease", "a=smoker&b=age", "a=smoker&b=smoker"):
        page.goto(f"{origin}/surveys/{SLUG}/crosstab?{query}")
        results = axe.run(page, options=RULES).response
        assert [f"{v['id']}: {v['nodes'][0]['target']}" for v in results["violations"]] == [], query
        # Wide tables scroll inside their wrapper; the page itself never scrolls sideways.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), query
    page.get_by_label("Second question (columns)").select_option("cigarettes")
    page.get_by_role("button", name="Show crosstab").click()
    page.wait_for_url(re.compile("b=cigarettes"))
    assert page.get_by_role("heading", name="smoker × cigarettes").is_visible()
    assert errors == [] or all("400" in line for line in errors)
    context.close()
