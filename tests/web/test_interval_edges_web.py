"""The regression page and API at an edge: forty identical responses at ε = 4 (2 per question) to a yes/no and a number.

Before: the mean of the number by the yes/no came out with standard errors of 0 and intervals such as
[115.652, 115.652] (a point), warned only as "nearly unidentified". Now no term has a point interval,
the page shows "–" for what it cannot give and says why, and the JSON holds null, never NaN.
"""

from __future__ import annotations

import json

import numpy as np

from survey.core import codec
from survey.core.mechanisms import mechanism_for
from survey.store import Store

from conftest import OWNER, create_from_toml, released_at_once
from test_ownership import signed_in

SLUG = "edges-2026"
DEFINITION = released_at_once(f"""slug = "{SLUG}"
title = "Edges"
epsilon = 4.0
[[questions]]
id = "ill"
kind = "yes_no"
text = "Ill?"
[[questions]]
id = "visits"
kind = "number"
text = "How many visits?"
min = 0
max = 100
mechanism = "duchi"
""")


def test_identical_reports_give_no_point_interval_on_the_regression_page_or_api(app, db_path, accounts):
    design = create_from_toml(db_path, DEFINITION, source="test_interval_edges_web.py")
    store = Store(db_path)
    try:
        assert store.share(SLUG, OWNER[0]) == "owner"
        highest = [mechanism_for(question).highest for question in design["questions"]]
        columns = [codec.encode_column(question, [top] * 40) for question, top in zip(design["questions"], highest)]
        store.add_report_columns(SLUG, design["hash"], columns)
        token = store.create_token(OWNER[0])[1]
    finally:
        store.close()
    page = signed_in(app, *OWNER).get(f"/surveys/{SLUG}/regression?outcome=visits&covariate=ill")
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and "the reports show no spread" in text, text[-1500:]
    response = app.test_client().get(f"/api/surveys/{SLUG}/regression?outcome=visits&covariates=ill",
                                     headers={"Authorization": f"Bearer {token}"})
    body = json.loads(response.get_data(as_text=True))
    assert response.status_code == 200 and "NaN" not in response.get_data(as_text=True)
    for term in body["terms"]:
        assert term["ci_low"] is None or term["ci_high"] - term["ci_low"] > 1e-6, term
    assert any("no spread" in warning for warning in body["warnings"])
    assert np.isfinite([term["estimate"] for term in body["terms"]]).all()
