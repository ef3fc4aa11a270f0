"""Anytime-valid intervals wherever intervals are shown: the results page, its downloads, the CLI and the API."""

from __future__ import annotations

import json

import numpy as np
import pytest

from survey.core.aggregate import aggregate_counts, rows_to_table

from conftest import OWNER, command_line
from interval_steps import SLUG, answer, csv_rows, owner_bearer, smokers_and_ill
from test_ownership import signed_in


@pytest.fixture
def answered(accounts, db_path, smoking_survey):
    """The smoking survey with 50 real responses, owned by OWNER."""
    return answer(db_path, smoking_survey["hash"], smokers_and_ill(30, 20))


def test_rows_say_which_intervals_they_hold(answered):
    """Anytime rows keep the estimates, carry ci_kind and ci_planned, and are wider than the fixed ones here."""
    design, counts = answered
    fixed = aggregate_counts(design, counts)
    anytime = aggregate_counts(design, counts, intervals="anytime", planned=400)
    assert {(row.ci_kind, row.ci_planned) for row in fixed} == {("fixed", None)}
    assert {(row.ci_kind, row.ci_planned) for row in anytime} == {("anytime", 400)}
    for kept, watched in zip(fixed, anytime):
        assert (kept.estimate, kept.std_error, kept.n) == (watched.estimate, watched.std_error, watched.n)
        assert watched.ci_high - watched.ci_low >= kept.ci_high - kept.ci_low - 1e-12
    assert "valid at every look" in rows_to_table(anytime).splitlines()[0]
    assert "Clopper-Pearson" in rows_to_table(fixed).splitlines()[0]
    with pytest.raises(ValueError, match="fixed or anytime"):
        aggregate_counts(design, counts, intervals="always")
    with pytest.raises(ValueError, match="planned"):
        aggregate_counts(design, counts, intervals="anytime", planned=0)


def test_cli_aggregate_and_export_take_intervals(cli_runner, db_path, answered):
    """`aggregate` and `export --aggregates` print anytime intervals with --intervals anytime, fixed by default."""
    design, counts = answered
    run = command_line(db_path, cli_runner)
    default = csv_rows(run("aggregate", SLUG, "--format", "csv"))
    assert {(row["ci_kind"], row["ci_planned"]) for row in default} == {("fixed", "")}
    watched = csv_rows(run("aggregate", SLUG, "--format", "csv", "--intervals", "anytime", "--planned", "400"))
    assert {(row["ci_kind"], row["ci_planned"]) for row in watched} == {("anytime", "400")}
    expected = aggregate_counts(design, counts, intervals="anytime", planned=400)
    assert [float(row["ci_high"]) for row in watched] == pytest.approx([row.ci_high for row in expected], abs=1e-6)
    exported = csv_rows(run("export", SLUG, "--aggregates", "--intervals", "anytime", "--planned", "400"))
    assert exported == watched
    rows = json.loads(run("aggregate", SLUG, "--format", "json", "--intervals", "anytime"))
    assert {(row["ci_kind"], row["ci_planned"]) for row in rows} == {("anytime", 1000)}
    assert "valid at every look" in run("aggregate", SLUG, "--intervals", "anytime")
    for command in ("aggregate", "export"):
        assert "--intervals anytime" in run(command, "--help")
    assert "sometimes" in run("aggregate", SLUG, "--intervals", "sometimes", code=2)


def test_results_page_offers_both_and_says_which_is_shown(app, answered):
    """The page defaults to ranges valid at the planned end and says so; ?intervals=anytime shows the other kind."""
    client = signed_in(app, *OWNER)
    page = client.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "Shown: ranges valid at the planned end." in page
    assert '<option value="fixed" selected>valid at the planned end</option>' in page
    assert '<option value="anytime" >valid at every look</option>' in page
    assert "intervals=anytime" not in page
    watched = client.get(f"/surveys/{SLUG}/results?intervals=anytime&planned=400")
    assert watched.status_code == 200
    page = watched.get_data(as_text=True)
    assert "Shown: ranges valid at every look." in page and "400 planned respondents" in page
    assert '<option value="anytime" selected>valid at every look</option>' in page
    assert "valid at every look" in page.split('id="results-title"')[1]
    design, counts = answered
    first = aggregate_counts(design, counts, intervals="anytime", planned=400)[0]
    from survey.core.readout import share_decimals, share_text

    digits = share_decimals(first.ci_low, first.ci_high)  # shares read as the dashboard's percentages (issue 27)
    assert f"[{share_text(first.ci_low, digits)}, {share_text(first.ci_high, digits)}]" in page
    # The charts and the downloads linked from the page are of the intervals shown.
    assert "intervals=anytime&amp;planned=400" in page
    download = client.get(f"/surveys/{SLUG}/results.csv?intervals=anytime&planned=400").get_data(as_text=True)
    assert {(row["ci_kind"], row["ci_planned"]) for row in csv_rows(download)} == {("anytime", "400")}
    fixed = client.get(f"/surveys/{SLUG}/results.csv").get_data(as_text=True)
    assert {row["ci_kind"] for row in csv_rows(fixed)} == {"fixed"}
    chart = client.get(f"/surveys/{SLUG}/charts/smoker.svg?intervals=anytime&planned=400")
    assert chart.status_code == 200 and b"anytime-valid" in chart.data
    for bad in ("intervals=always", "intervals=anytime&planned=0", "intervals=anytime&planned=ten"):
        assert client.get(f"/surveys/{SLUG}/results?{bad}").status_code == 400


def test_api_results_take_intervals_and_planned(app, db_path, answered):
    """/api/surveys/<slug>/results?intervals=anytime&planned=N: every row says ci_kind and ci_planned."""
    design, counts = answered
    client = app.test_client()
    headers = owner_bearer(db_path)
    default = client.get(f"/api/surveys/{SLUG}/results", headers=headers).json
    assert default["intervals"] == "fixed" and default["planned"] is None
    assert {(row["ci_kind"], row["ci_planned"]) for row in default["rows"]} == {("fixed", None)}
    body = client.get(f"/api/surveys/{SLUG}/results?intervals=anytime&planned=400", headers=headers).json
    assert body["intervals"] == "anytime" and body["planned"] == 400
    expected = aggregate_counts(design, counts, intervals="anytime", planned=400)
    assert [(row["ci_low"], row["ci_high"]) for row in body["rows"]] == [(row.ci_low, row.ci_high) for row in expected]
    refused = client.get(f"/api/surveys/{SLUG}/results?intervals=sometimes", headers=headers)
    assert refused.status_code == 400 and "intervals" in refused.json["error"]
    workbook = client.get(f"/api/surveys/{SLUG}/results.xlsx?intervals=anytime&planned=400", headers=headers)
    assert workbook.status_code == 200


def test_the_codebook_rederives_the_anytime_intervals(answered):
    """From the codebook's debiased_range, variance_bound and simultaneous_over and the row's n, estimate and ci_planned."""
    import math

    from scipy.special import lambertw, logsumexp

    from survey.exports.codebook import codebook

    design, counts = answered
    book = codebook(design)
    rows = aggregate_counts(design, counts, intervals="anytime", planned=400)
    assert "ci_kind is anytime" in book["method"]

    def hoeffding(n, alpha, spread, planned):
        ratio = -lambertw(-alpha ** 2 / math.e, -1).real
        rho = (planned / 4) / (ratio - 1)
        time = n / 4 + rho
        return spread * math.sqrt(time * math.log(time / (rho * alpha ** 2))) / n

    def bennett(n, alpha, spread, variance, planned):
        steps = np.arange(-8, 9)
        weights = 1 / ((abs(steps) + 1) * (abs(steps) + 2))
        weights = weights / weights.sum()
        lambdas = math.sqrt(2 * math.log(2 / alpha) / (variance * planned)) * 2.0 ** (steps / 2)
        psi = (np.exp(lambdas * spread) - 1 - lambdas * spread) / spread ** 2
        low, high = 0.0, 1e6
        for _ in range(200):
            middle = (low + high) / 2
            if logsumexp(np.log(weights) + lambdas * middle - variance * n * psi) >= math.log(2 / alpha):
                high = middle
            else:
                low = middle
        return high / n

    for estimand, row in zip(book["estimands"], rows, strict=True):
        low, high = estimand["debiased_range"]
        lo, hi = estimand["scale"] or (0, 1)
        alpha = (1 - row.ci_level) / estimand["simultaneous_over"]
        variance, planned = estimand["variance_bound"], row.ci_planned
        half = hoeffding(row.n, alpha, high - low, planned)
        if bennett(planned, alpha, high - low, variance, planned) < 0.95 * hoeffding(planned, alpha, high - low,
                                                                                      planned):
            half = bennett(row.n, alpha, high - low, variance, planned)
        ci_low, ci_high = row.estimate - half, row.estimate + half
        width = min(ci_high - ci_low, hi - lo)  # wholly beyond an end: moved inside, keeping its width
        ci_low, ci_high = (hi - width if ci_low >= hi else ci_low), (lo + width if ci_high <= lo else ci_high)
        assert row.ci_low == pytest.approx(min(max(ci_low, lo), hi), abs=1e-9)
        assert row.ci_high == pytest.approx(min(max(ci_high, lo), hi), abs=1e-9)
