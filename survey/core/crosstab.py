"""Crosstabs of two questions: joint shares, conditional shares, odds ratios, conditional means.

Every estimand of a question is an indicator I whose report bit R is 1 with probability
q + Δ·[I], Δ = p − q (Warner 1965 randomized response: the answer; generalized RR, Wang et
al. 2017: [report = option]; unary encodings and ``multi``: the option's bit; Duchi, Jordan &
Wainwright 2013: the randomized-rounding bit, whose mean is the scaled mean; the piecewise
mechanism, Wang et al. 2019: the reported level R = (k + 1/2)/levels in (0, 1), not a bit, whose
mean is q + Δ·(the scaled number), so second moments of R_B are kept apart; the hybrid mechanism,
Wang et al. 2019: the same for its levels' values R(L), Duchi's two among them, codec.level_values). Two questions A
and B are randomized independently, so for one respondent

    E[R_A R_B] = q_A q_B + q_A Δ_B P(I_B) + q_B Δ_A P(I_A) + Δ_A Δ_B P(I_A ∧ I_B)

and the indicator-product estimator

    π̂(I_A ∧ I_B) = (mean(R_A R_B) − q_A q_B − q_A Δ_B f̂_B − q_B Δ_A f̂_A) / (Δ_A Δ_B)

is unbiased, with f̂ = (mean(R) − q)/Δ. For two randomized-response (or two generalized-RR)
questions it equals the inversion of the Kronecker product of their response matrices.
(f̂_A, f̂_B, π̂) is linear in the means of the per-respondent vector (R_A R_B, R_A, R_B), so
its covariance is exactly that of those means, estimated from their sample covariance;
conditional shares, the log odds ratio and conditional means follow by the delta method
(descriptive standard errors). The intervals are not Wald intervals but those of
``survey.core.crosstab_bounds``, which hold at every n; the odds ratio's is built from the two
conditional shares of B's yes.

Inputs are the distinct report pairs with their counts, as ``Store.joint_reports`` returns
them, or one row per respondent (no counts). Pure numpy/scipy: no Flask, no SQL, no I/O.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field, fields

import numpy as np
from scipy.special import ndtri

from . import codec
from . import crosstab_bounds as bounds
from .aggregate import CSV_LINE_TERMINATOR, aligned_lines, format_decimal, json_value, table_number
from .design import response_probabilities

CSV_HEADER = ["measure", "a_option", "b_option", "estimate", "std_error", "ci_low", "ci_high", "ci_level"]
MEASURES = ("joint", "b_given_a", "odds_ratio", "mean_given_a")


class CrosstabError(ValueError):
    """Two questions cannot be crossed (a number as the first question, the same question twice)."""


@dataclass
class CrosstabRow:
    """One measure of a crosstab, with its delta-method standard error and an interval that holds at every n.

    ``joint``: the share with A's option and B's option. ``b_given_a``: the share with
    B's option among those with A's option. ``odds_ratio``: of two yes/no questions (options
    empty), the odds of B's yes among A's yes over those among A's no; its standard error is that of the log odds ratio. ``mean_given_a``:
    the mean of the number B among those with A's option (b_option empty). ``estimate`` is
    None when not estimable, with the reason in ``note``; intervals of shares and means are
    clipped to the feasible range, estimates are not.
    """

    measure: str
    a_option: str
    b_option: str
    estimate: float | None
    std_error: float | None
    ci_low: float | None
    ci_high: float | None
    ci_level: float
    note: str = ""


@dataclass
class Crosstab:
    """The crosstab of questions ``a`` and ``b`` over the n respondents who answered both."""

    a: str
    b: str
    a_text: str
    b_text: str
    a_kind: str
    b_kind: str
    a_levels: list[str]
    b_levels: list[str]
    n: int
    level: float
    rows: list[CrosstabRow] = field(default_factory=list)

    def get(self, measure: str, a_option: str, b_option: str = "") -> CrosstabRow | None:
        """Return the row of one measure and pair of options, or None."""
        for row in self.rows:
            if (row.measure, row.a_option, row.b_option) == (measure, a_option, b_option):
                return row
        return None


def _levels(question: dict) -> list[str]:
    """Return the labels of a question's levels: yes_no includes the complement "no"."""
    kind = question["kind"]
    if kind == "yes_no":
        return ["yes", "no"]
    if kind == "number":
        return [""]
    return list(question["options"])


def check_pair(question_a: dict, question_b: dict):
    """Raise CrosstabError unless A and B can be crossed (two distinct questions, A not a number)."""
    if question_a["id"] == question_b["id"]:
        raise CrosstabError(f"choose two different questions, got {question_a['id']!r} twice")
    if question_a["kind"] == "number":
        raise CrosstabError(f"{question_a['id']!r} is a number question; put it second (B) to get its mean "
                            "among each option of the first question")


def check_allocation(design: dict):
    """Raise CrosstabError when no respondent can have answered two questions (sample allocation, m = 1).

    Under ``sample`` allocation with m ≥ 2 a pair is answered by about the fraction
    m(m−1)/(k(k−1)) of respondents (Arcolezi et al. 2021); the crosstab uses exactly those.
    """
    if design.get("allocation") == "sample" and int(design["sample"]) < 2:
        k = len(design["questions"])
        raise CrosstabError(f"this survey has no crosstabs: each respondent answers only 1 of its {k} questions "
                            "(allocation = \"sample\", sample = 1), so no respondent answered two questions")


def default_pair(design: dict, a: str = "", b: str = "") -> tuple[str, str] | None:
    """Return the first pair of question ids that can be crossed, keeping ``a`` or ``b`` when given, else None.

    Yes/no questions come first (their crosstab reads as "among those who said yes ..."), then
    the other kinds in the design's order; a number can only be the second question.
    """
    questions = design.get("questions", [])
    ordered = sorted(questions, key=lambda question: question["kind"] != "yes_no")
    firsts = [question for question in ordered if question["id"] == a] if a else ordered
    seconds = [question for question in ordered if question["id"] == b] if b else ordered
    for first in firsts:
        for second in seconds:
            try:
                check_pair(first, second)
            except CrosstabError:
                continue
            return first["id"], second["id"]
    return None


def sampled_pair_note(design: dict) -> str | None:
    """Return the sentence saying which respondents a crosstab of a sample-allocation survey uses, or None under split."""
    if design.get("allocation") != "sample":
        return None
    k, m = len(design["questions"]), int(design["sample"])
    return (f"Each respondent answered {m} of the {k} questions, chosen at random, so a crosstab uses only the "
            f"respondents who happened to answer both: about {m * (m - 1) / (k * (k - 1)):.0%} of them.")


def estimator_map(p_a: float, q_a: float, p_b: float, q_b: float) -> tuple[np.ndarray, np.ndarray]:
    """Return (J, c) with (f̂_A, f̂_B, π̂) = J·(mean(R_A R_B), mean(R_A), mean(R_B)) + c, the debiasing of a pair."""
    delta_a, delta_b = p_a - q_a, p_b - q_b
    jacobian = np.array([[0.0, 1 / delta_a, 0.0],
                         [0.0, 0.0, 1 / delta_b],
                         [1 / (delta_a * delta_b), -q_b / (delta_a * delta_b), -q_a / (delta_a * delta_b)]])
    offset = np.array([-q_a / delta_a, -q_b / delta_b, q_a * q_b / (delta_a * delta_b)])
    return jacobian, offset


def crosstab(question_a: dict, question_b: dict, words_a, words_b, counts=None, *, level=0.95) -> Crosstab:
    """Return the crosstab of two design questions from their joint reports.

    ``words_a``/``words_b`` hold the integer words (``survey.core.codec``) of each distinct report
    pair, ``counts`` how many respondents gave it (``Store.joint_reports``); without counts
    every row is one respondent.
    """
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1), e.g. 0.95, got {level!r}")
    check_pair(question_a, question_b)
    ind_a = codec.indicators(question_a, words_a).astype(float)
    ind_b = codec.indicators(question_b, words_b).astype(float)
    if ind_a.shape[0] != ind_b.shape[0]:
        raise ValueError(f"{ind_a.shape[0]} reports of {question_a['id']!r} but {ind_b.shape[0]} "
                         f"of {question_b['id']!r}")
    weights = (np.ones(ind_a.shape[0]) if counts is None
               else np.asarray(counts, dtype=float).reshape(-1))
    if weights.shape[0] != ind_a.shape[0]:
        raise ValueError("counts must have one entry per report pair")
    n = int(round(weights.sum()))
    result = Crosstab(a=question_a["id"], b=question_b["id"], a_text=question_a.get("text", ""),
                      b_text=question_b.get("text", ""), a_kind=question_a["kind"], b_kind=question_b["kind"],
                      a_levels=_levels(question_a), b_levels=_levels(question_b), n=n, level=float(level))
    z = float(ndtri(0.5 + level / 2))
    p_a, q_a = response_probabilities(question_a)
    p_b, q_b = response_probabilities(question_b)
    # Means of R_A (per indicator), R_B, and R_A R_B (per pair of indicators).
    total = max(weights.sum(), 1.0)
    mean_a = weights @ ind_a / total
    mean_b = weights @ ind_b / total
    mean_ab = (ind_a * weights[:, None]).T @ ind_b / total
    # Second moments of R_B: equal to the first for 0/1 indicators, not for a piecewise or hybrid level in (0, 1).
    mean_b2 = weights @ (ind_b * ind_b) / total
    mean_ab2 = (ind_a * weights[:, None]).T @ (ind_b * ind_b) / total
    jacobian, offset = estimator_map(p_a, q_a, p_b, q_b)
    pairs = {}
    for i in range(ind_a.shape[1]):
        for j in range(ind_b.shape[1]):
            x, y, zb = float(mean_ab[i, j]), float(mean_a[i]), float(mean_b[j])
            xb2, zb2 = float(mean_ab2[i, j]), float(mean_b2[j])
            theta = jacobian @ np.array([x, y, zb]) + offset
            cov = None
            if n >= 2:
                moments = np.array([[xb2 - x * x, x * (1 - y), xb2 - x * zb],
                                    [x * (1 - y), y * (1 - y), x - y * zb],
                                    [xb2 - x * zb, x - y * zb, zb2 - zb * zb]]) / (n - 1)
                cov = jacobian @ moments @ jacobian.T
            pairs[i, j] = _Pair(theta, cov, n, z, level)
    factors = ((ind_a - q_a) / (p_a - q_a), (ind_b - q_b) / (p_b - q_b), weights,
               bounds.factor_range(question_a, p_a, q_a), bounds.factor_range(question_b, p_b, q_b))
    intervals = _Intervals(factors, pairs, question_a, question_b, float(level))
    labels_a = _indicator_labels(question_a)
    labels_b = _indicator_labels(question_b)
    measures = {measure: [] for measure in MEASURES}
    for i, label_a in enumerate(labels_a):
        for j, label_b in enumerate(labels_b):
            _pair_rows(measures, pairs[i, j], intervals.at(i, j), question_a, question_b, label_a, label_b)
    for measure in MEASURES:
        result.rows.extend(measures[measure])
    return result


def _indicator_labels(question: dict) -> list[str]:
    kind = question["kind"]
    if kind == "yes_no":
        return ["yes"]
    if kind == "number":
        return [""]
    return list(question["options"])


# Each level of a question as a linear function (constant, coefficient of f) of its indicator
# share f, and each joint cell as (constant, coefficients of f_A, f_B, π).
_YES = (0.0, 1.0)
_NO = (1.0, -1.0)

WHOLE_RANGE_NOTE = ("the share with {a} = {option} may be 0, so the reports rule out no value at this level: "
                    "the interval is the whole range")
MISSED_NOTE = "the reports are unlikely under every possible value at this level (a rare event): the interval is the whole range"
NO_UPPER_NOTE = "no upper limit: a cell of the 2×2 table may be 0"


class _Pair:
    """(f_A, f_B, π) of one indicator pair with its covariance: point estimates and delta-method standard errors."""

    def __init__(self, theta, cov, n, z, level):
        self.theta, self.cov, self.n, self.z, self.level = theta, cov, n, z, float(level)

    def cell(self, side_a, side_b):
        """Return (value, gradient) of P(A side ∧ B side), each side _YES or _NO."""
        # P(A yes ∧ B yes) = π; A yes ∧ B no = f_A − π; A no ∧ B yes = f_B − π; both no = 1 − f_A − f_B + π.
        const = 0.0
        grad = np.zeros(3)
        if side_a is _YES and side_b is _YES:
            grad[2] = 1
        elif side_a is _YES:
            grad[:] = (1, 0, -1)
        elif side_b is _YES:
            grad[:] = (0, 1, -1)
        else:
            const, grad[:] = 1.0, (-1, -1, 1)
        return const + float(grad @ self.theta), grad

    def margin_a(self, side_a):
        """Return (value, gradient) of A's share on one side."""
        const, coef = side_a
        return const + coef * float(self.theta[0]), np.array([coef, 0.0, 0.0])

    def ratio(self, side_a, side_b):
        """Return (value, gradient) of the cell over A's margin, or (None, None) when the margin is not positive."""
        value, grad = self.cell(side_a, side_b)
        margin, margin_grad = self.margin_a(side_a)
        if self.n == 0 or not margin > 0:
            return None, None
        return value / margin, (grad * margin - value * margin_grad) / margin ** 2

    def se(self, grad) -> float | None:
        """Return the delta-method standard error of a function with this gradient (None below 2 respondents)."""
        if self.cov is None or grad is None:
            return None
        se = math.sqrt(max(float(grad @ self.cov @ grad), 0.0))
        return se if math.isfinite(se) else None


class _Intervals:
    """The guaranteed intervals of every cell, conditional share and mean (crosstab_bounds), by indicator pair."""

    def __init__(self, factors, pairs, question_a, question_b, level):
        factors_a, factors_b, weights, range_a, range_b = factors
        self.n = int(round(float(weights.sum())))
        self.joint, self.conditional, self.odds = {}, {}, {}
        if self.n == 0:
            return
        flags = [(yes_a, side_a, yes_b, side_b) for yes_a, side_a in _side_flags(question_a)
                 for yes_b, side_b in _side_flags(question_b)]
        cells = bounds.Cells(factors_a, factors_b, weights, range_a, range_b,
                             [(yes_a, yes_b) for yes_a, _, yes_b, _ in flags])
        seeds = np.full((len(flags), *cells.shape), np.nan)
        for k, (_, side_a, _, side_b) in enumerate(flags):
            for (i, j), pair in pairs.items():
                value, _ = pair.ratio(side_a, side_b)
                seeds[k, i, j] = np.nan if value is None or not math.isfinite(value) else value
        self.joint, self.conditional, self.odds = bounds.table_intervals(
            cells, level, seeds.ravel(), joint=question_b["kind"] != "number",
            odds=question_a["kind"] == "yes_no" and question_b["kind"] == "yes_no")

    def at(self, i, j):
        """Return the intervals of indicator pair (i, j) as plain floats, keyed by kind and sides."""
        if self.n == 0:
            return None
        view = {}
        for name, table in (("joint", self.joint), ("conditional", self.conditional), ("odds", self.odds)):
            for key, (low, high, flag) in table.items():
                view[name, *key] = (float(low[i, j]), float(high[i, j]), bool(flag[i, j]))
        return view


def _side_flags(question: dict):
    """Return the (is "yes", side) levels of a question: yes_no gives yes and no."""
    if question["kind"] == "yes_no":
        return [(True, _YES), (False, _NO)]
    return [(True, _YES)]


def _sides(question: dict, label: str):
    """Return the (label, side) levels an indicator stands for: yes_no gives yes and no."""
    if question["kind"] == "yes_no":
        return [("yes", _YES), ("no", _NO)]
    return [(label, _YES)]


def _finite(value):
    """Return a float value, or None when it is missing or not finite."""
    return value if value is not None and math.isfinite(value) else None


def _pair_rows(measures, pair: _Pair, view, question_a, question_b, label_a, label_b):
    number_b = question_b["kind"] == "number"
    level = pair.level
    for a_option, side_a in _sides(question_a, label_a):
        for b_option, side_b in ([("", _YES)] if number_b else _sides(question_b, label_b)):
            key = (side_a is _YES, side_b is _YES)
            if not number_b:
                value, grad = pair.cell(side_a, side_b)
                if view is None:
                    measures["joint"].append(CrosstabRow("joint", a_option, b_option, None, None, 0.0, 1.0, level,
                                                         "no respondent answered both questions"))
                else:
                    low, high, missed = view["joint", *key]
                    measures["joint"].append(CrosstabRow("joint", a_option, b_option, _finite(value),
                                                         pair.se(grad), low, high, level,
                                                         MISSED_NOTE if missed else ""))
            measure = "mean_given_a" if number_b else "b_given_a"
            lo, hi = (float(question_b["min"]), float(question_b["max"])) if number_b else (0.0, 1.0)
            ratio, ratio_grad = pair.ratio(side_a, side_b)
            if view is None:
                measures[measure].append(CrosstabRow(measure, a_option, b_option, None, None, lo, hi, level,
                                                     "no respondent answered both questions"))
                continue
            low, high, whole = view["conditional", *key]
            notes = []
            if ratio is None:
                notes.append(f"no estimate: the estimated share with {question_a['id']} = {a_option} is not positive")
            if whole:
                notes.append(WHOLE_RANGE_NOTE.format(a=question_a["id"], option=a_option))
            se = pair.se(ratio_grad)
            estimate = None if ratio is None else _finite(lo + (hi - lo) * ratio)
            measures[measure].append(CrosstabRow(measure, a_option, b_option, estimate,
                                                 None if se is None else _finite((hi - lo) * se),
                                                 lo + (hi - lo) * low, lo + (hi - lo) * high, level,
                                                 "; ".join(notes)))
    if question_a["kind"] == "yes_no" and question_b["kind"] == "yes_no":
        measures["odds_ratio"].append(_odds_ratio(pair, view))


def _odds_ratio(pair: _Pair, view) -> CrosstabRow:
    """Return the odds ratio π00π11/(π01π10): its interval from those of the two conditional shares of B's yes.

    With c1 = P(B yes | A yes) in [l1, h1] and c0 = P(B yes | A no) in [l0, h0], each at level
    1 − α/2, the odds ratio lies in [odds(l1)/odds(h0), odds(h1)/odds(l0)] (crosstab_bounds),
    with no upper limit when h1 = 1 or l0 = 0. The estimate and the standard error of its
    logarithm (delta method) are descriptive.
    """
    if view is None:
        return CrosstabRow("odds_ratio", "", "", None, None, None, None, pair.level,
                           "no respondent answered both questions")
    ci_low, ci_high = odds_ratio_bounds(view["odds", True, True][:2], view["odds", False, True][:2])
    notes = []
    if ci_high is None:
        notes.append(NO_UPPER_NOTE)
    cells = [pair.cell(side_a, side_b) for side_a in (_NO, _YES) for side_b in (_NO, _YES)]
    estimate = se = None
    if any(not value > 0 for value, _ in cells):
        notes.insert(0, "no estimate: an estimated cell of the 2×2 table is not positive")
    else:
        (p00, g00), (p01, g01), (p10, g10), (p11, g11) = cells
        log_or = math.log(p00) + math.log(p11) - math.log(p01) - math.log(p10)
        se = pair.se(g00 / p00 + g11 / p11 - g01 / p01 - g10 / p10)
        if abs(log_or) < 700:
            estimate = math.exp(log_or)
        else:
            notes.insert(0, "no estimate: the estimated odds ratio is too large or too small to write")
    return CrosstabRow("odds_ratio", "", "", estimate, se, ci_low, ci_high, pair.level, "; ".join(notes))


def odds_ratio_bounds(share_yes, share_no) -> tuple[float, float | None]:
    """Return (low, high) of the odds ratio from the intervals of P(B | A yes) and P(B | A no); high None: no upper limit."""
    (l1, h1), (l0, h0) = share_yes, share_no
    low = 0.0 if not (l1 > 0 and h0 < 1) else _finite(_odds(l1) / _odds(h0))
    high = None if not (h1 < 1 and l0 > 0) else _finite(_odds(h1) / _odds(l0))
    return (0.0 if low is None else low), high


def _odds(share: float) -> float:
    """Return share/(1 − share), the odds of a share in [0, 1] (infinite at 1)."""
    return math.inf if share >= 1 else share / (1 - share)


def crosstab_to_csv(table: Crosstab) -> str:
    """Return the crosstab CSV: CSV_HEADER, then one line per row, CRLF, 6 decimals, empty when missing.

    Option labels are written exactly as the crosstab JSON holds them (stdlib quoting only).

    An odds ratio's std_error is that of its logarithm.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=CSV_LINE_TERMINATOR)
    writer.writerow(CSV_HEADER)
    for row in table.rows:
        writer.writerow([row.measure, row.a_option, row.b_option, format_decimal(row.estimate),
                         format_decimal(row.std_error), format_decimal(row.ci_low), format_decimal(row.ci_high),
                         format(row.ci_level, "g")])
    return buffer.getvalue()


def crosstab_to_json(table: Crosstab) -> dict:
    """Return the crosstab as a JSON-ready dict: the two questions, n, the level and the rows."""
    return {"a": table.a, "b": table.b, "a_text": table.a_text, "b_text": table.b_text, "n": table.n,
            "level": table.level,
            "rows": [{f.name: json_value(getattr(row, f.name)) for f in fields(CrosstabRow)}
                     for row in table.rows]}


def crosstab_to_table(table: Crosstab) -> str:
    """Return an aligned plain-text table (4 decimals, "-" when missing), no final newline."""
    header = ["measure", "a_option", "b_option", "estimate", "std_error", "ci_low", "ci_high", "note"]
    cells = [header]
    for row in table.rows:
        cells.append([row.measure, row.a_option or "-", row.b_option or "-"]
                     + [table_number(getattr(row, name)) for name in header[3:7]] + [row.note])
    lines = aligned_lines(cells, ["<", "<", "<", ">", ">", ">", ">", "<"])
    lines.insert(0, f"{table.a} x {table.b}: n = {table.n} respondents answered both; "
                    f"{format(table.level * 100, 'g')}% intervals that hold at every n, one cell at a time; "
                    "std_error is descriptive (delta method), of the logarithm for the odds ratio; "
                    "an odds ratio's empty ci_high means no upper limit")
    return "\n".join(lines)
