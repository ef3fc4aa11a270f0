"""Weighted estimates of randomized reports: a hand computation of the weighted estimate and its linearised standard
error, their bias and coverage under an unequal-probability sample, and calibration (generalized raking) through the
known misclassification."""

from __future__ import annotations

import math

import numpy as np
import pytest

from survey.core.answer_rows import ReanalysisError
from survey.core.mechanisms import mechanism_for
from survey.core.reanalysis import binary_codebook
from survey.core.weighted_rows import weighted_files
from survey.core.weighting import Item, Margin, calibrate, calibration_matrix, debiased, estimate, kish, weight_of

P, Q = 0.75, 0.25  # Warner's design with probability 3/4 of the true question


def _files(columns: dict[str, list[str]], weights: list[str] | None = None):
    """Return (codebook, header, rows) of yes/no columns of Warner's (3/4, 1/4) design, with a weight column."""
    book = binary_codebook([(name, "3/4", "1/4") for name in columns])
    header = list(columns) + ([] if weights is None else ["w"])
    cells = list(columns.values()) + ([] if weights is None else [weights])
    return book, header, [list(row) for row in zip(*cells)]


def test_weighted_estimate_and_linearised_se_match_a_hand_computation():
    reports = [1, 0, 1, 1, 0, 0, 1, 0]
    weights = [1.0, 2.0, 0.5, 3.0, 1.5, 2.5, 1.0, 4.0]
    book, header, rows = _files({"drug": [str(r) for r in reports]}, [repr(w) for w in weights])
    weighting, result, _, final = weighted_files(book, header, rows, column="w", level=0.95)
    # By hand: z = (r - q)/(p - q) is -1/2 for a 0 and 3/2 for a 1.
    z = [(r - Q) / (P - Q) for r in reports]
    total = sum(weights)
    theta = sum(w * v for w, v in zip(weights, z)) / total
    u = [w * (v - theta) / total for w, v in zip(weights, z)]
    mean_u = sum(u) / len(u)
    se = math.sqrt(len(u) / (len(u) - 1) * sum((x - mean_u) ** 2 for x in u))
    (row,) = result
    assert row.estimate == pytest.approx(theta, abs=1e-9)
    assert row.std_error == pytest.approx(se, abs=1e-9)
    half = 1.959963984540054 * se
    assert (row.ci_low, row.ci_high) == pytest.approx((max(theta - half, 0), min(theta + half, 1)), abs=1e-9)
    assert weighting.effective_n == pytest.approx(total ** 2 / sum(w * w for w in weights), abs=1e-9)
    assert row.effective_n == pytest.approx(weighting.effective_n, abs=1e-9)
    assert list(final) == weights
    # On paper: the 1s weigh 5.5 and the 0s 10, so theta = (3/2 · 5.5 - 1/2 · 10)/15.5.
    assert theta == pytest.approx((1.5 * 5.5 - 0.5 * 10.0) / 15.5, abs=1e-12)


def test_equal_weights_give_the_unweighted_estimate_and_sample_se():
    z = debiased(np.array([1, 1, 0, 1, 0]), P, Q, (0.0, 1.0))
    theta, se = estimate(np.ones(5), np.ones(5, dtype=bool), z[:, None])
    share = 3 / 5
    assert theta[0] == pytest.approx((share - Q) / (P - Q), abs=1e-12)
    assert se[0] == pytest.approx(math.sqrt(share * (1 - share) / 4) / (P - Q), abs=1e-12)


@pytest.mark.parametrize("cell, words", [("", "missing"), ("-2", "negative"), ("abc", "not a number"),
                                         ("0", "zero"), ("1e999", "too large"), ("nan", "not a number")])
def test_a_bad_weight_is_refused_naming_its_row(cell, words):
    with pytest.raises(ReanalysisError, match=rf"row 7, column 'w': .*{words}"):
        weight_of(cell, 7, "w")


def test_kish_effective_sample_size():
    assert kish(np.array([1.0, 1.0, 1.0])) == pytest.approx(3.0)
    assert kish(np.array([1.0, 3.0])) == pytest.approx(16 / 10)


def _population(rng, size=20_000):
    """A population whose yes/no answer and number are tied to its size measure (so weights matter)."""
    measure = rng.gamma(2.0, 1.0, size) + 0.2
    answer = (rng.random(size) < 0.15 + 0.6 * (measure > np.median(measure))).astype(np.int64)
    return measure, answer


def test_weighted_estimates_are_unbiased_and_cover_under_an_unequal_probability_sample():
    """Probability-proportional-to-size draws with replacement, weights 1/(n p_i), reports by Warner's mechanism:
    the mean of 1,000 estimates lies within 4 SE of the population share and the 95% intervals cover 93–97%."""
    rng = np.random.default_rng(2026)
    measure, answer = _population(rng)
    truth = answer.mean()
    mechanism = mechanism_for({"id": "x", "kind": "yes_no", "mechanism": "rr", "epsilon": 1.0,
                               "flip_threshold": int(0.25 * 2 ** 53)})
    p, q = (float(value) for value in mechanism.probabilities())
    draw = measure / measure.sum()
    n, repetitions = 600, 1000
    estimates, unweighted, covered = [], [], 0
    for _ in range(repetitions):
        picked = rng.choice(measure.size, size=n, p=draw)
        weights = 1 / (n * draw[picked])
        reports = mechanism.randomize(answer[picked], rng=rng)
        values = debiased(reports, p, q, (0.0, 1.0))
        theta, se = estimate(weights, np.ones(n, dtype=bool), values[:, None])
        estimates.append(theta[0])
        unweighted.append(values.mean())
        covered += abs(theta[0] - truth) <= 1.959963984540054 * se[0]
    estimates = np.array(estimates)
    assert abs(estimates.mean() - truth) <= 4 * estimates.std(ddof=1) / math.sqrt(repetitions)
    assert np.mean(unweighted) - truth > 0.1  # without the weights the estimate is far off
    assert 0.93 <= covered / repetitions <= 0.97


def _item(name, reports, present=None):
    reports = np.asarray(reports)
    present = np.ones(reports.size, dtype=bool) if present is None else present
    values = np.where(present, debiased(reports, P, Q, (0.0, 1.0)), 0.0)[:, None]
    return Item(name, "yes_no", "binary", math.log(3), "", ("yes",), present, values, (0.0, 1.0), 1)


def _correlated(rng, n=4000):
    """Reports of a, a copy of a's reports, b tied to a's answers, and c independent of them."""
    a = (rng.random(n) < 0.3).astype(int)
    b = np.where(rng.random(n) < 0.8, a, 1 - a)
    c = (rng.random(n) < 0.5).astype(int)
    flip = lambda truth: np.where(rng.random(n) < P, truth, 1 - truth)  # noqa: E731
    reported = flip(a)
    return [_item("a", reported), _item("copy", reported), _item("b", flip(b)), _item("c", flip(c))]


@pytest.mark.parametrize("method", ["raking", "linear"])
def test_calibration_makes_the_debiased_share_equal_the_margin(method):
    rng = np.random.default_rng(7)
    items = _correlated(rng)
    weights = rng.uniform(0.5, 2.0, items[0].present.size)
    before = {item.question: estimate(weights, item.present, item.values) for item in items}
    margins = [Margin("a", "yes", 0.36)]
    matrix = calibration_matrix(items, margins)
    final = calibrate(weights, matrix, margins, method=method)
    after = {item.question: estimate(final, item.present, item.values, matrix) for item in items}
    assert final.min() > 0 and final.sum() == pytest.approx(weights.sum(), rel=1e-12)
    assert after["a"][0][0] == pytest.approx(0.36, abs=1e-9)
    assert after["a"][1][0] == pytest.approx(0.0, abs=1e-9)  # a known margin has no sampling error
    assert after["copy"][0][0] == pytest.approx(0.36, abs=1e-9)  # the same reports move alike
    # b moves with a, by about the regression slope of b's debiased values on a's; c, independent, hardly moves.
    za, zb = items[0].values[:, 0], items[2].values[:, 0]
    slope = np.cov(zb, za, aweights=weights)[0, 1] / np.cov(za, za, aweights=weights)[0, 1]
    shift = 0.36 - before["a"][0][0]
    moved = after["b"][0][0] - before["b"][0][0]
    assert moved == pytest.approx(slope * shift, rel=0.1)
    assert abs(after["c"][0][0] - before["c"][0][0]) < before["c"][1][0]
    assert after["b"][1][0] < before["b"][1][0]  # calibrating on a correlated question reduces b's error


def test_calibration_to_a_margin_the_reports_cannot_reach_says_why():
    items = [_item("a", [0, 0, 0, 0])]  # every debiased value is -1/2: no weighting gives another estimate
    margins = [Margin("a", "yes", 0.3)]
    with pytest.raises(ReanalysisError, match=r"lie in \[-0.5, -0.5\].*outside what these reports allow"):
        calibrate(np.ones(4), calibration_matrix(items, margins), margins)


def test_calibration_refuses_margins_that_cannot_be_met_together():
    # a and b are the same reports: no weights make one share 0.2 and the other 0.6.
    items = [_item("a", [0, 1, 0, 1, 1]), _item("b", [0, 1, 0, 1, 1])]
    margins = [Margin("a", "yes", 0.2), Margin("b", "yes", 0.6)]
    with pytest.raises(ReanalysisError, match="no positive weights make all of these"):
        calibrate(np.ones(5), calibration_matrix(items, margins), margins)


def test_linear_calibration_refuses_negative_weights_naming_a_row():
    """Debiased values 0, 1 and -3 (a number's reports spread beyond its range): reaching a mean of 0.9 linearly
    needs a negative factor for the rows at -3; raking reaches it with positive weights."""
    values = np.array([0.0] * 90 + [1.0] * 5 + [-3.0] * 5)
    items = [Item("x", "number", "piecewise", 1.0, "", ("",), np.ones(100, dtype=bool), values[:, None],
                  (0.0, 1.0), 1)]
    margins = [Margin("x", "", 0.9)]
    with pytest.raises(ReanalysisError, match=r"x=0.9 would give row 97 the weight factor -1.6.* \(negative "
                                              r"weights for 5 rows\).*use --calibration-method raking"):
        calibrate(np.ones(100), calibration_matrix(items, margins), margins, method="linear")
    raked = calibrate(np.ones(100), calibration_matrix(items, margins), margins)
    assert raked.min() > 0
    assert estimate(raked, items[0].present, items[0].values)[0][0] == pytest.approx(0.9, abs=1e-9)


def test_calibration_among_the_rows_that_answered():
    """Rows that skipped the calibrated question keep their weight (up to the common scale)."""
    present = np.array([True, True, True, False, True, False])
    items = [_item("a", [1, 0, 1, 1, 0, 0], present)]
    margins = [Margin("a", "yes", 0.4)]
    final = calibrate(np.ones(6), calibration_matrix(items, margins), margins)
    assert final[3] == pytest.approx(final[5], rel=1e-12)
    assert estimate(final, present, items[0].values)[0][0] == pytest.approx(0.4, abs=1e-9)


@pytest.mark.parametrize("margin, words", [(Margin("zz", "yes", 0.2), "not a question"),
                                           (Margin("a", "no", 0.2), "its estimands are 'yes'"),
                                           (Margin("a", "yes", 1.2), r"must lie in \[0, 1\]")])
def test_a_margin_of_no_estimand_is_refused(margin, words):
    with pytest.raises(ReanalysisError, match=words):
        calibration_matrix([_item("a", [0, 1])], [margin])


def test_a_margin_of_a_question_nobody_answered_is_refused():
    with pytest.raises(ReanalysisError, match="no response answered 'a'"):
        calibration_matrix([_item("a", [0, 1], np.zeros(2, dtype=bool))], [Margin("a", "yes", 0.5)])


def test_strata_and_clusters_match_a_hand_computation():
    """Two strata of two and three clusters: SE² = Σ_h n_h/(n_h − 1) Σ_i (U_hi − Ū_h)² over cluster totals U."""
    reports = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1]
    weights = [1.0, 2.0, 0.5, 3.0, 1.5, 2.5, 1.0, 4.0, 0.25, 2.0]
    strata = ["a", "a", "a", "a", "b", "b", "b", "b", "b", "b"]
    clusters = ["1", "1", "2", "2", "1", "1", "2", "3", "3", "3"]
    book, header, rows = _files({"drug": [str(r) for r in reports]}, [repr(w) for w in weights])
    header += ["stratum", "psu"]
    rows = [row + [s, c] for row, s, c in zip(rows, strata, clusters)]
    weighting, (row,), _, _ = weighted_files(book, header, rows, column="w", strata="stratum", clusters="psu")
    z = [(r - Q) / (P - Q) for r in reports]
    total = sum(weights)
    theta = sum(w * v for w, v in zip(weights, z)) / total
    u = [w * (v - theta) / total for w, v in zip(weights, z)]
    variance = 0.0
    for stratum in "ab":
        totals = {}
        for value, s, c in zip(u, strata, clusters):
            if s == stratum:
                totals[c] = totals.get(c, 0.0) + value
        mean = sum(totals.values()) / len(totals)
        variance += len(totals) / (len(totals) - 1) * sum((t - mean) ** 2 for t in totals.values())
    assert row.estimate == pytest.approx(theta, abs=1e-9)
    assert row.std_error == pytest.approx(math.sqrt(variance), abs=1e-9)
    assert weighting.as_dict()["strata"] == "stratum" and "clusters (column 'psu')" in weighting.as_dict()["assumption"]
    # One cluster alone in its stratum: no variance can be estimated from it.
    clusters[6:] = ["1"] * 4
    rows = [row[:-1] + [c] for row, c in zip(rows, clusters)]
    with pytest.raises(ReanalysisError, match=r"stratum 'b' \(stratum\) has a single cluster \(row 6\)"):
        weighted_files(book, header, rows, column="w", strata="stratum", clusters="psu")


def test_a_missing_stratum_is_refused_naming_its_row():
    book, header, rows = _files({"drug": ["1", "0", "1"]}, ["1", "2", "3"])
    header.append("stratum")
    rows = [row + [label] for row, label in zip(rows, ["a", "", "a"])]
    with pytest.raises(ReanalysisError, match="row 3, column 'stratum': the stratum is missing"):
        weighted_files(book, header, rows, column="w", strata="stratum")


def test_clustered_standard_errors_cover_under_a_two_stage_sample():
    """Clusters drawn with probability proportional to size (with replacement), 8 members drawn in each, answers
    alike within a cluster: the clustered intervals cover 93–97% over 1,000 samples, the bias is within 4 SE, and
    intervals that ignore the clusters fall short (so the clusters matter here)."""
    from survey.core.weighting import Sampling

    rng = np.random.default_rng(2026)
    clusters, size = 1000, 20
    prevalence = rng.beta(0.2, 0.5, clusters)
    measure = rng.gamma(4, 1, clusters) + 1
    answers = (rng.random((clusters, size)) < prevalence[:, None]).astype(int)
    truth = answers.mean()
    draw = measure / measure.sum()
    m, k, repetitions = 150, 8, 1000
    sampling = Sampling(np.repeat(np.arange(m), k), np.zeros(m, dtype=np.int64))
    estimates, covered, covered_simple = [], 0, 0
    for _ in range(repetitions):
        picked = rng.choice(clusters, size=m, p=draw)
        members = np.argsort(rng.random((m, size)), axis=1)[:, :k]
        true_rows = answers[picked[:, None], members].reshape(-1)
        weights = np.repeat(size / (k * m * draw[picked]), k)
        reports = np.where(rng.random(true_rows.size) < P, true_rows, 1 - true_rows)
        values = debiased(reports, P, Q, (0.0, 1.0))[:, None]
        present = np.ones(values.shape[0], dtype=bool)
        theta, se = estimate(weights, present, values, sampling=sampling)
        _, simple = estimate(weights, present, values)
        estimates.append(theta[0])
        covered += abs(theta[0] - truth) <= 1.959963984540054 * se[0]
        covered_simple += abs(theta[0] - truth) <= 1.959963984540054 * simple[0]
    estimates = np.array(estimates)
    assert abs(estimates.mean() - truth) <= 4 * estimates.std(ddof=1) / math.sqrt(repetitions)
    assert 0.93 <= covered / repetitions <= 0.97
    assert covered_simple / repetitions < 0.9


def test_calibrated_estimates_cover_and_gain_precision():
    """Samples drawn with unequal probabilities, weights raked so that question a's debiased share equals its known
    population share: b's calibrated 95% intervals cover 93–97% over 1,000 samples (bias within 4 SE), and its
    standard errors are smaller than without calibration, b's answers being tied to a's."""
    rng = np.random.default_rng(31)
    size = 20_000
    measure = rng.gamma(3.0, 1.0, size) + 0.5
    a = (rng.random(size) < 0.2 + 0.4 * (measure > np.median(measure))).astype(int)
    b = np.where(rng.random(size) < 0.85, a, 1 - a)
    margin = Margin("a", "yes", float(a.mean()))
    draw = measure / measure.sum()
    n, repetitions = 500, 1000
    estimates, covered, gain = [], 0, []
    for _ in range(repetitions):
        picked = rng.choice(size, size=n, p=draw)
        weights = 1 / (n * draw[picked])
        flip = rng.random((2, n)) < P
        items = [_item("a", np.where(flip[0], a[picked], 1 - a[picked])),
                 _item("b", np.where(flip[1], b[picked], 1 - b[picked]))]
        matrix = calibration_matrix(items, [margin])
        final = calibrate(weights, matrix, [margin])
        theta, se = estimate(final, items[1].present, items[1].values, matrix)
        gain.append(se[0] / estimate(weights, items[1].present, items[1].values)[1][0])
        estimates.append(theta[0])
        covered += abs(theta[0] - b.mean()) <= 1.959963984540054 * se[0]
    estimates = np.array(estimates)
    assert abs(estimates.mean() - b.mean()) <= 4 * estimates.std(ddof=1) / math.sqrt(repetitions)
    assert 0.93 <= covered / repetitions <= 0.97
    assert np.mean(gain) < 0.99  # little: the randomization's noise in both reports hides most of the tie


def test_shares_among_those_a_branched_question_applies_to_cover():
    """A branched choice (options a, b and "does not apply") randomized by k-ary randomized response, rows drawn
    with unequal probabilities: the weighted share of a among those it applies to, Σ w z_a / Σ w (1 − z_na), is
    unbiased (within 4 SE) and its linearised 95% intervals cover 93–97% over 1,000 samples."""
    from survey.core.weighted_applied import with_applied

    rng = np.random.default_rng(44)
    size = 20_000
    measure = rng.gamma(3.0, 1.0, size) + 0.5
    applies = rng.random(size) < 0.3 + 0.4 * (measure > np.median(measure))
    truth = np.where(applies, (rng.random(size) < 0.35).astype(int), 2)
    target = np.mean(truth[truth != 2] == 0)
    keep, other = 0.6, 0.2  # p and q of each option's indicator
    design = {"questions": [{"id": "quit", "kind": "choice", "show_if": {"question": "x", "values": [1]},
                             "not_applicable": 2}]}
    draw = measure / measure.sum()
    n, repetitions = 800, 1000
    estimates, covered = [], 0
    for _ in range(repetitions):
        picked = rng.choice(size, size=n, p=draw)
        weights = 1 / (n * draw[picked])
        kept = rng.random(n) < keep - other
        reports = np.where(kept, truth[picked], rng.integers(0, 3, n))  # kept, else uniform: p = 0.6, q = 0.2
        values = debiased((reports[:, None] == np.arange(3)).astype(int), keep, other, (0.0, 1.0))
        item = Item("quit", "choice", "grr", 1.0, "", ("a", "b", "na"), np.ones(n, dtype=bool), values, (0.0, 1.0),
                    3)
        rows = with_applied(design, [item], [], weights, level=0.95)
        share = rows[0]
        assert share.option == "a (among those it applies to)"
        estimates.append(share.estimate)
        covered += abs(share.estimate - target) <= 1.959963984540054 * share.std_error
    estimates = np.array(estimates)
    assert abs(estimates.mean() - target) <= 4 * estimates.std(ddof=1) / math.sqrt(repetitions)
    assert 0.93 <= covered / repetitions <= 0.97
