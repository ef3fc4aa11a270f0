"""The regression page, its CSV and the API's regression: the same model as `ldp-survey regress`, for the
survey's owner only, with the reason for a bad choice."""

from __future__ import annotations

import json
from functools import partial

import pytest

from survey.store import Store

from conftest import OTHER, OWNER, command_line
from test_ownership import signed_in

SLUG = "smoking-2026"


@pytest.fixture
def simulated(db_path, accounts, cli_runner):
    """The smoking survey with 4,000 responses in which lung disease goes with smoking (simulated as real ones)."""
    import numpy as np

    from survey.core.simulate import complete_truth, parse_given, parse_truth, simulate_report_batches

    store = Store(db_path)
    try:
        design = store.get_design(SLUG)
        rng = np.random.default_rng(5)
        truth = complete_truth(design, parse_truth(design, ["smoker=0.3"]), rng)
        given = parse_given(design, ["lung_disease|smoker=1:0.4", "lung_disease|smoker=0:0.1"])
        for columns, asked in simulate_report_batches(design, truth, n=4000, batch=4000, rng=rng, given=given):
            store.add_report_columns(SLUG, design["hash"], columns, asked=asked)
    finally:
        store.close()

    return partial(command_line(db_path, cli_runner), "regress", SLUG)


def test_the_page_shows_the_model_and_its_csv_is_the_command_lines(app, simulated):
    owner = signed_in(app, *OWNER)
    results = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert f'href="/surveys/{SLUG}/regression?level=0.95"' in results
    page = owner.get(f"/surveys/{SLUG}/regression")  # a default model: the first yes/no on the next candidate
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "Logistic regression of smoker on lung_disease" in text
    chosen = owner.get(f"/surveys/{SLUG}/regression?outcome=lung_disease&covariate=smoker&level=0.9")
    text = chosen.get_data(as_text=True)
    assert chosen.status_code == 200 and "smoker: yes" in text and "Download the coefficients (CSV)" in text
    assert "the odds of lung_disease are" in text
    download = owner.get(f"/surveys/{SLUG}/regression.csv?outcome=lung_disease&covariate=smoker&level=0.9")
    assert download.status_code == 200 and download.mimetype == "text/csv"
    expected = simulated("lung_disease", "smoker", "--format", "csv", "--level", "0.9")
    assert download.get_data(as_text=True) == expected.replace("\n", "\r\n")  # the runner reads CRLF as LF
    assert signed_in(app, *OTHER).get(f"/surveys/{SLUG}/regression").status_code == 404


@pytest.mark.parametrize("query, message", [
    ("outcome=lung_disease&covariate=nobody", "&#39;nobody&#39; is not a question"),
    ("outcome=lung_disease&covariate=age", "carry the number&#39;s mean but not its spread"),
    ("outcome=lung_disease&covariate=cigarettes&covariate=age", "beside a number covariate only yes/no and number"),
    ("outcome=lung_disease", "at least one covariate"),
    ("outcome=cigarettes&covariate=smoker", "the outcome must be a yes/no question (a logistic regression) or a number"),
])
def test_a_bad_choice_answers_400_with_the_reason(app, simulated, query, message):
    page = signed_in(app, *OWNER).get(f"/surveys/{SLUG}/regression?{query}")
    assert page.status_code == 400 and message in page.get_data(as_text=True)


def test_the_api_gives_the_command_lines_json(app, db_path, simulated):
    store = Store(db_path)
    try:
        token = store.create_token(OWNER[0])[1]
    finally:
        store.close()
    headers = {"Authorization": f"Bearer {token}"}
    client = app.test_client()
    response = client.get(f"/api/surveys/{SLUG}/regression?outcome=lung_disease&covariates=smoker,cigarettes",
                          headers=headers)
    assert response.status_code == 200
    body = response.json
    assert body.pop("slug") == SLUG and len(body.pop("design_hash")) == 64
    assert body == json.loads(simulated("lung_disease", "smoker", "cigarettes", "--format", "json"))
    bad = client.get(f"/api/surveys/{SLUG}/regression?outcome=lung_disease&covariates=", headers=headers)
    assert bad.status_code == 400 and "at least one covariate" in bad.json["error"]


def test_a_numbers_mean_by_covariates_on_the_page_and_in_the_api(app, db_path, simulated):
    page = signed_in(app, *OWNER).get(f"/surveys/{SLUG}/regression?outcome=age&covariate=smoker")
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and "Mean of age on smoker" in text and "Mean or difference" in text
    store = Store(db_path)
    try:
        token = store.create_token(OWNER[0])[1]
    finally:
        store.close()
    response = app.test_client().get(f"/api/surveys/{SLUG}/regression?outcome=age&covariates=smoker,lung_disease",
                                     headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    body = response.json
    assert body.pop("slug") == SLUG and len(body.pop("design_hash")) == 64 and body["model"] == "mean"
    assert body == json.loads(simulated("age", "smoker", "lung_disease", "--format", "json"))



def _with_zero_p(fit):
    """Return the fit with its intercept's and its LR test's p set to 0.0 (as a float underflow gives for a strong effect)."""
    from dataclasses import replace

    terms = (replace(fit.terms[0], p_value=0.0), *fit.terms[1:])
    return replace(fit, terms=terms, lr_p_value=0.0)


def test_a_tiny_p_reads_below_a_thousandth_and_the_lr_test_is_explained(app, simulated, monkeypatch):
    """Issue 27: "p < 0.001", never "p 0", on the page and in `regress`; the LR test has a sentence beside the Wald p."""
    import re

    from survey.core import regression_text
    from survey.web import regression as page

    real = page.fit
    monkeypatch.setattr(page, "fit", lambda *args: _with_zero_p(real(*args)))
    text = signed_in(app, *OWNER).get(f"/surveys/{SLUG}/regression?outcome=lung_disease&covariate=smoker").get_data(
        as_text=True)
    cells = re.findall(r'<td class="num">([^<]*)</td>\s*</tr>', text)  # the last cell of each row: p
    assert cells[0] == "&lt; 0.001" and all(re.fullmatch(r"&lt; 0\.001|[01]\.\d{3}|–", cell) for cell in cells), cells
    assert "likelihood-ratio test of every covariate together: chi-square" in text and ", p &lt; 0.001;" in text
    assert 'id="tests-sentence">The likelihood-ratio p asks whether all the covariates together' in text
    monkeypatch.undo()
    real_table = regression_text.regression_to_table
    monkeypatch.setattr(regression_text, "regression_to_table", lambda fit: real_table(_with_zero_p(fit)))
    table = simulated("lung_disease", "smoker")
    intercept = next(line for line in table.splitlines() if line.startswith("(intercept)"))
    assert "< 0.001" in intercept and not re.search(r"\s0(\s|$)", intercept), intercept
    assert "a Wald test" in table and "p < 0.001" in table
