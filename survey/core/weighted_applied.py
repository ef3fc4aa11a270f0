"""Weighted estimates among those a branched question applies to (``conditional_shares`` for design weights).

The unweighted rows divide two unbiased estimates and bound the standard error by Cauchy–Schwarz;
with weights, each is a ratio of weighted totals of the reports' debiased values, linearised
exactly like the other weighted estimates (Wolter 2007, ch. 6), so its standard error is not a bound:

* a choice or multi option's share among those it applies to is Σ w z_o / Σ w (1 − z_na);
* a number's mean is μ = v + (m − v)/A, m the weighted mean over everyone and A the weighted
  estimate of the share it applies to (the earlier question's values that show it), with the
  linearised value (z − m)/(A·W_m) − (m − v)(y − A)/(A²·W_A) per row.

The interval is estimate ± z·SE, Bonferroni over a choice's options, inside the feasible range and never a
point (``weighting.wald_interval``).
Pure: numpy only.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

from .branching import is_branched
from .conditional_shares import conditional_option
from .weighting import Item, WeightedRow, kish, linear_errors, wald_interval


def with_applied(design: dict, items: list[Item], rows: list[WeightedRow], weights: np.ndarray, *, level: float,
                 calibration=None, sampling=None) -> list[WeightedRow]:
    """Return the rows with each branched question's rows among those it applies to after its own."""
    by_id = {item.question: item for item in items}
    out = []
    for question in design["questions"]:
        out += [row for row in rows if row.question == question["id"]]
        if is_branched(question):
            parts = (weights, level, calibration, sampling)
            if question["kind"] == "number":
                parent = by_id[question["show_if"]["question"]]
                out.append(_mean_row(question, by_id[question["id"]], parent, *parts))
            else:
                out += _share_rows(question, by_id[question["id"]], *parts)
    return out


def _row(item: Item, label: str, value, error, weights, level: float, simultaneous: int) -> WeightedRow:
    """Return a row among those the question applies to, its interval clipped to the feasible range."""
    lo, hi = item.feasible
    if value is None or error is None:
        low, high = lo, hi
    else:
        z = NormalDist().inv_cdf(1 - (1 - level) / (2 * simultaneous))
        error, low, high = wald_interval(value, error, z, lo, hi)
    return WeightedRow(item.question, conditional_option(label), item.kind, item.mechanism, item.epsilon,
                       int(np.count_nonzero(item.present)), kish(weights[item.present]), value, error, low, high,
                       level, False, item.text)


def _share_rows(question: dict, item: Item, weights, level, calibration, sampling) -> list[WeightedRow]:
    """Return a branched choice's (or multi's) option shares among those it applies to."""
    values, answered = item.values, item.present
    na = question["not_applicable"]
    base = answered * (1.0 - values[:, na])
    total = float(weights @ base)
    rows = []
    for index, label in enumerate(item.labels):
        if index == na:
            continue
        if total <= 0 or not answered.any():
            rows.append(_row(item, label, None, None, weights, level, item.simultaneous))
            continue
        ratio = float(weights @ (answered * values[:, index])) / total
        linear = (answered * values[:, index] - ratio * base)[:, None]
        error = None if weights.size < 2 else float(linear_errors(weights, linear, total, calibration, sampling)[0])
        rows.append(_row(item, label, ratio, error, weights, level, item.simultaneous))
    return rows


def _mean_row(question: dict, item: Item, parent: Item, weights, level, calibration, sampling) -> WeightedRow:
    """Return a branched number's mean among those it applies to: v + (m − v)/A."""
    v = float(question["not_applicable"])
    shown = question["show_if"]["values"]
    if parent.kind == "yes_no":
        yes = parent.values[:, 0]
        share = np.ones_like(yes) if set(shown) == {0, 1} else (yes if shown[0] == 1 else 1.0 - yes)
    else:
        share = parent.values[:, list(shown)].sum(axis=1)
    w_mean, w_share = float(weights @ item.present), float(weights @ parent.present)
    if not w_mean or not w_share:
        return _row(item, "", None, None, weights, level, 1)
    mean = float(weights @ (item.present * item.values[:, 0])) / w_mean
    applied = float(weights @ (parent.present * share)) / w_share
    if applied <= 0:
        return _row(item, "", None, None, weights, level, 1)
    linear = (item.present * (item.values[:, 0] - mean) / (applied * w_mean)
              - (mean - v) * parent.present * (share - applied) / (applied ** 2 * w_share))
    error = None if weights.size < 2 else float(linear_errors(weights, linear[:, None], 1.0, calibration,
                                                              sampling)[0])
    return _row(item, "", v + (mean - v) / applied, error, weights, level, 1)
