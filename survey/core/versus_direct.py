"""Direct or randomized? The sensitivity bias above which randomized response has the smaller mean squared error.

A direct question's estimate of a share θ from n respondents has variance θ(1 − θ)/n but is off by
the question's sensitivity bias b (respondents who misreport: Blair, Coppock & Moor 2020, "When to
worry about sensitivity bias", APSR 114(4), find it typically under 10 percentage points across
published comparisons); a randomized estimate is unbiased with variance V(θ)/n_rr, V the mechanism's
n·Var (λ(1 − λ)/(p − q)², λ = q + (p − q)θ) and n_rr the reports the question gets (n, or n·m/k
under sample allocation). Comparing mean squared errors (Lensvelt-Mulders, Hox, van der Heijden &
Maas 2005, "Meta-analysis of randomized response research", Sociological Methods & Research 33(3)):

    MSE_direct = θ(1 − θ)/n + b²,  MSE_rr = V(θ)/n_rr  ⇒  b* = √(max(V(θ)/n_rr − θ(1 − θ)/n, 0)),

so randomized response has the smaller MSE exactly when |b| > b*. θ is a stated planning value
(default ½, the direct question's worst case). A single choice's or multiple choice's options are
shares each (one b* per option, at θ for every option). A number's mean is a share x of its range
[min, max]: the direct question's variance is at most x(1 − x) (answers at the two ends), and the
randomized one is taken at the mechanism's worst case over populations (``worst_variance``, as the
planner does), so b* is a share of the range (times max − min in the question's units).
Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .mechanisms import mechanism_for
from .words import fixed_up, number_up

DEFAULT_THETA = 0.5
TYPICAL_BIAS = 0.10
REFERENCE = ("Blair, Coppock & Moor (2020, APSR): sensitivity biases of direct questions are typically under "
             "10 percentage points")


@dataclass(frozen=True)
class BreakEven:
    """One estimand's break-even bias: above ``bias`` (a share, or a share of a number's range) randomize."""

    option: str
    theta: float
    rr_std_error: float
    direct_std_error: float
    bias: float


def break_even_bias(rr_variance: float, direct_variance: float, reports: float, respondents: float) -> float:
    """Return b* = √(max(rr_variance/reports − direct_variance/respondents, 0)), variances as n·Var of one answer."""
    if reports <= 0 or respondents <= 0:
        return math.inf
    return math.sqrt(max(rr_variance / reports - direct_variance / respondents, 0.0))


def check_theta(theta) -> float:
    """Return the planning share θ, or raise ValueError unless it is a number in (0, 1)."""
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not 0 < theta < 1:
        raise ValueError(f"the planning share must be a number in (0, 1), e.g. 0.5, got {theta!r}")
    return float(theta)


def question_break_even(entry: dict, *, respondents: float, share: float = 1.0,
                        theta: float = DEFAULT_THETA) -> list[BreakEven]:
    """Return the break-even bias of each estimand of a design question at ``respondents`` (a ``share`` answer it)."""
    theta = check_theta(theta)
    mechanism = mechanism_for(entry)
    reports = respondents * share
    if entry["kind"] == "number":
        rr_variance, direct_variance = mechanism.worst_variance(), theta * (1 - theta)
    else:
        rr_variance, direct_variance = mechanism.variance_at(theta), theta * (1 - theta)
    labels = {"yes_no": ["yes"], "number": [""]}.get(entry["kind"]) or list(entry["options"])
    rr_error = math.sqrt(rr_variance / reports) if reports > 0 else math.inf
    direct_error = math.sqrt(direct_variance / respondents)
    bias = break_even_bias(rr_variance, direct_variance, reports, respondents)
    return [BreakEven(label, theta, rr_error, direct_error, bias) for label in labels[:mechanism.estimands]]


def bias_words(bias: float, scale: float | None) -> str:
    """Return a break-even bias in words, rounded up: "4.3 percentage points", or "2.6% of the range (1.5)".

    Rounded up, so that randomizing is never said to win at a bias where it does not (4.201 reads 4.3).
    """
    if scale is None:
        return f"{fixed_up(bias * 100, 1)} percentage points"
    return f"{fixed_up(bias * 100, 1)}% of the range ({number_up(bias * scale, 3)})"


def direct_sentence(entries: list[BreakEven], *, respondents: int, scale: float | None = None) -> str:
    """Return the builder's and the CLI's sentence: the bias above which randomizing has the smaller MSE."""
    widest = max(entries, key=lambda entry: entry.bias)
    each = " for each option" if len(entries) > 1 else ""
    verdict = ("below the typical sensitivity bias" if widest.bias < TYPICAL_BIAS else
               "above the typical sensitivity bias: a direct question may well be more accurate")
    theta = f"a true share of {widest.theta:.0%}" if scale is None else "the worst case of the answers"
    return (f"Randomized response has the smaller mean squared error when a direct question would be off by more "
            f"than {bias_words(widest.bias, scale)}{each} (at {respondents:,} respondents and {theta}); this is "
            f"{verdict} (under 10 points: Blair, Coppock & Moor 2020).")
