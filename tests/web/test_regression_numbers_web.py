"""A number covariate on the regression page and in the API (regression calibration): offered when its reports
show its spread, fitted as `ldp-survey regress` fits it, its method named; refused with the reason otherwise."""

from __future__ import annotations

import json
from functools import partial

import numpy as np
import pytest

from survey.store import Store

from conftest import OWNER, command_line, create_from_toml, definition
from test_ownership import signed_in

SLUG = "numbers-2026"
DEFINITION = "\n" + definition("years_ill") + """
[[questions]]
id = "visits"
kind = "number"
text = "How many visits?"
min = 0
max = 10
mechanism = "duchi"
"""


@pytest.fixture
def numbers(db_path, accounts, cli_runner):
    """The survey with 3,000 simulated responses (stored as real ones), owned by OWNER; a runner of `regress`."""
    from survey.core.simulate import complete_truth, parse_truth, simulate_report_batches

    design = create_from_toml(db_path, DEFINITION, source="test_regression_numbers_web.py")
    store = Store(db_path)
    try:
        assert store.share(SLUG, OWNER[0]) == "owner"
        rng = np.random.default_rng(8)
        truth = complete_truth(design, parse_truth(design, ["years=5"]), rng)
        for columns, asked in simulate_report_batches(design, truth, n=3000, batch=3000, rng=rng):
            store.add_report_columns(SLUG, design["hash"], columns, asked=asked)
        token = store.create_token(OWNER[0])[1]
    finally:
        store.close()

    regress = partial(command_line(db_path, cli_runner), "regress", SLUG)
    return regress, {"Authorization": f"Bearer {token}"}


def test_the_page_offers_a_number_whose_reports_show_its_spread_and_names_the_method(app, numbers):
    owner = signed_in(app, *OWNER)
    form = owner.get(f"/surveys/{SLUG}/regression").get_data(as_text=True)
    assert 'id="covariate-years"' in form and 'id="covariate-visits"' not in form
    page = owner.get(f"/surveys/{SLUG}/regression?outcome=ill&covariate=years")
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and 'id="method-sentence"' in text
    assert "Method: regression calibration (Carroll, Ruppert, Stefanski &amp; Crainiceanu 2006, ch. 4)" in text
    assert "an approximation for a logistic regression" in text and "Each 1 more of years multiplies the odds" in text
    download = owner.get(f"/surveys/{SLUG}/regression.csv?outcome=ill&covariate=years")
    assert download.get_data(as_text=True) == numbers[0]("ill", "years", "--format", "csv").replace("\n", "\r\n")


def test_the_api_gives_the_command_lines_json_with_the_method(app, numbers):
    regress, headers = numbers
    response = app.test_client().get(f"/api/surveys/{SLUG}/regression?outcome=ill&covariates=years", headers=headers)
    assert response.status_code == 200
    body = response.json
    assert body.pop("slug") == SLUG and len(body.pop("design_hash")) == 64
    assert body == json.loads(regress("ill", "years", "--format", "json"))
    assert body["test"] == "Wald" and body["per_unit"] == ["years"] and "regression calibration" in body["method"]


@pytest.mark.parametrize("query, message", [
    ("outcome=ill&covariate=visits", "carry the number&#39;s mean but not its spread"),
    ("outcome=years&covariate=visits", "carry the number&#39;s mean but not its spread"),
])
def test_a_number_that_cannot_be_calibrated_answers_400_with_the_reason(app, numbers, query, message):
    page = signed_in(app, *OWNER).get(f"/surveys/{SLUG}/regression?{query}")
    assert page.status_code == 400 and message in page.get_data(as_text=True)
