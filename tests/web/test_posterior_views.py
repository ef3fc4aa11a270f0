"""Posterior (credible) intervals wherever intervals are chosen: the CLI, the results page, its CSV and the API."""

from __future__ import annotations

import json

import pytest

from survey.core.aggregate import aggregate_counts

from conftest import OWNER, command_line
from interval_steps import SLUG, answer, csv_rows, owner_bearer, smokers_and_ill
from test_ownership import signed_in


@pytest.fixture
def answered(accounts, db_path, smoking_survey):
    """The smoking survey with 20 real responses, owned by OWNER."""
    return answer(db_path, smoking_survey["hash"], smokers_and_ill(12, 8))


def test_cli_takes_posterior_intervals_and_a_prior(cli_runner, db_path, answered):
    """`aggregate`/`export --intervals posterior [--prior]` print credible intervals; a misused prior is refused."""
    design, counts = answered
    run = command_line(db_path, cli_runner)
    rows = csv_rows(run("aggregate", SLUG, "--format", "csv", "--intervals", "posterior"))
    assert {(row["ci_kind"], row["ci_planned"]) for row in rows} == {("posterior-jeffreys", "")}
    expected = aggregate_counts(design, counts, intervals="posterior-jeffreys")
    assert [float(row["ci_low"]) for row in rows] == pytest.approx([row.ci_low for row in expected], abs=1e-6)
    uniform = csv_rows(run("export", SLUG, "--aggregates", "--intervals", "posterior", "--prior", "1,1"))
    assert {row["ci_kind"] for row in uniform} == {"posterior-uniform"}
    assert all(0 <= float(row["ci_low"]) <= float(row["ci_high"]) <= 1 for row in uniform if row["kind"] != "number")
    assert "credible intervals under a Jeffreys" in run("aggregate", SLUG, "--intervals", "posterior")
    assert json.loads(run("aggregate", SLUG, "--format", "json", "--intervals", "posterior", "--prior", "2,3")
                      )[0]["ci_kind"] == "posterior-beta(2,3)"
    assert "--prior applies only with --intervals posterior" in run("aggregate", SLUG, "--prior", "1,1", code=1)
    assert "A > 0" in run("aggregate", SLUG, "--intervals", "posterior", "--prior", "0,1", code=1)
    for command in ("aggregate", "export"):
        assert "--intervals posterior" in run(command, "--help")


def test_results_page_offers_credible_intervals(app, answered):
    """?intervals=posterior&prior=uniform shows credible intervals in words; the CSV and charts follow; bad priors 400."""
    client = signed_in(app, *OWNER)
    page = client.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert '<option value="posterior" >credible (posterior under a prior)</option>' in page
    assert '<label for="prior">' in page
    shown = client.get(f"/surveys/{SLUG}/results?intervals=posterior&prior=uniform")
    assert shown.status_code == 200
    page = shown.get_data(as_text=True)
    assert "Shown: 95% credible intervals under a uniform prior." in page
    assert '<option value="posterior" selected>' in page and '<option value="uniform" selected>' in page
    assert "95% credible interval under a uniform prior" in page.split('id="results-title"')[1]
    assert "intervals=posterior-uniform" in page  # the downloads and charts are of the intervals shown
    download = client.get(f"/surveys/{SLUG}/results.csv?intervals=posterior-uniform").get_data(as_text=True)
    assert {row["ci_kind"] for row in csv_rows(download)} == {"posterior-uniform"}
    assert client.get(f"/surveys/{SLUG}/charts/smoker.svg?intervals=posterior-uniform").status_code == 200
    # The form sends a prior with every choice; only posterior intervals read it.
    fixed = client.get(f"/surveys/{SLUG}/results.csv?intervals=fixed&prior=uniform").get_data(as_text=True)
    assert {row["ci_kind"] for row in csv_rows(fixed)} == {"fixed"}
    for bad in ("intervals=posterior&prior=0,1", "intervals=posterior&prior=flat", "intervals=posteriors"):
        assert client.get(f"/surveys/{SLUG}/results?{bad}").status_code == 400


def test_api_results_take_posterior_intervals(app, db_path, answered):
    """/api/surveys/<slug>/results?intervals=posterior&prior=2,3 returns the core's rows, ci_kind naming the prior."""
    design, counts = answered
    body = app.test_client().get(f"/api/surveys/{SLUG}/results?intervals=posterior&prior=2,3",
                                 headers=owner_bearer(db_path)).json
    expected = aggregate_counts(design, counts, intervals="posterior-beta(2,3)")
    assert [(row["ci_low"], row["ci_high"], row["ci_kind"]) for row in body["rows"]] == [
        (row.ci_low, row.ci_high, "posterior-beta(2,3)") for row in expected]
