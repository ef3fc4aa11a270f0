"""Display logic on the web: the dashboard, results.csv, the API and the codebook give the estimates among those a
question applies to, and the server takes a non-smoker's report of the branched question like any other."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np
import pytest

from survey.core.conditional_shares import is_conditional
from survey.core.simulate import parse_truth, simulate_answers
from survey.store import Store

from conftest import OWNER, create_from_toml
from test_ownership import signed_in

ROOT = Path(__file__).resolve().parents[2]
SLUG = "smoking-branched"


@pytest.fixture
def branched(db_path, accounts):
    """The branched smoking example, owned by OWNER, with 3,000 simulated responses (as real ones)."""
    text = (ROOT / "examples" / "smoking-branched.toml").read_text(encoding="utf-8")
    design = create_from_toml(db_path, text.replace("epsilon = 3.0", "epsilon = 3.0\nrelease_every = 1"))
    truth = parse_truth(design, ["smoker=0.3", "cigarettes=14", "quit=0.5,0.3,0.2"])
    store = Store(db_path)
    try:
        store.share(SLUG, OWNER[0])
        store.add_responses(SLUG, design["hash"], simulate_answers(design, truth, 3000, np.random.default_rng(1)))
        token = store.create_token(OWNER[0])[1]
    finally:
        store.close()
    return {"design": design, "auth": {"Authorization": f"Bearer {token}"}}


EXPECTED = [("cigarettes", "(among those it applies to)"), ("quit", "No (among those it applies to)"),
            ("quit", "Once (among those it applies to)"), ("quit", "More than once (among those it applies to)")]


def test_results_csv_the_api_the_codebook_and_the_dashboard_hold_the_rows_among_those_it_applies_to(app, branched):
    client = signed_in(app, *OWNER)
    rows = list(csv.DictReader(io.StringIO(client.get(f"/surveys/{SLUG}/results.csv").get_data(as_text=True))))
    applied = [(row["question"], row["option"]) for row in rows if is_conditional(row["option"])]
    assert applied == EXPECTED
    for row in rows:
        if is_conditional(row["option"]):
            assert float(row["ci_low"]) <= float(row["estimate"]) <= float(row["ci_high"]) or row["estimate"] == ""
    api = app.test_client().get(f"/api/surveys/{SLUG}/results", headers=branched["auth"]).get_json()
    assert [(r["question"], r["option"]) for r in api["rows"] if is_conditional(r["option"])] == EXPECTED
    book = app.test_client().get(f"/api/surveys/{SLUG}/codebook", headers=branched["auth"]).get_json()
    assert [(e["question"], e["option"]) for e in book["applied_estimands"]] == EXPECTED
    page = client.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "More than once (among those it applies to)" in page
    assert "mean (among those it applies to)" in page
    assert "Among those it applies to, between" in page and "Among those it applies to, the mean answer" in page


def test_the_respondent_page_says_skipped_questions_still_send_a_report(app, branched):
    page = app.test_client().get(f"/s/{SLUG}").get_data(as_text=True)
    note = " ".join(re.search(r'<p id="branching-note">(.*?)</p>', page, re.S).group(1).split())
    assert "this device sends a report for it, drawn at random" in note and "does not apply" in note
    design_json = app.test_client().get(f"/s/{SLUG}/design.json").get_json()
    assert design_json["questions"][1]["show_if"] == {"question": "smoker", "values": [1]}
