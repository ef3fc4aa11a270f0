"""Estimates among those a branched question applies to (display logic, survey/core/branching.py).

Every respondent sends a report for a branched question, randomized from its "does not apply"
value when it did not apply to them, so its ordinary estimates are shares among everyone, one of
them the share θ_na it did not apply to. Among those it applied to:

* a choice or multi option's share is r = θ_o / (1 − θ_na), from the question's own estimates;
* a number's mean is μ = v + (m − v) / a, where m is the mean over everyone (those it did not
  apply to answered the declared value v = min), and a the share it applied to: the sum of the
  earlier question's estimates of the options that show it (its own reports).

Point estimates are these ratios of the unbiased estimates (None when the denominator's
estimate is not positive). The standard error is the delta method's (Casella & Berger 2002,
§5.5.4) with the unknown covariance of the two estimates bounded by Cauchy–Schwarz, so it is
an upper bound: se(r) ≤ (se_o + |r|·se_na)/(1 − θ_na), se(μ) ≤ se_m/a + |m − v|·se_a/a².

The interval is guaranteed rather than asymptotic: r and μ are monotone in each of the two
estimands, so their values at the corners of a box that holds both estimands with probability
≥ 1 − α hold r or μ with the same probability (the projection of a simultaneous confidence set).
For choice and multi the box is the question's own intervals, already simultaneous over its
options by Bonferroni; for a number it is the number's and the earlier question's intervals,
each at level 1 − α/2 (Bonferroni again). Each side is clipped to the feasible range, so the
coverage of every interval here is at least its level for every n, ε and population, as that of
the Clopper–Pearson (1934) intervals it is built from.
Pure: no I/O.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from .estimators import Estimate

SUFFIX = "(among those it applies to)"


def conditional_option(label: str) -> str:
    """Return the option column of an estimate among those a question applies to ("Filter (among …)")."""
    return f"{label} {SUFFIX}".strip()


def is_conditional(option: str) -> bool:
    """Return whether an aggregate row's option names an estimate among those its question applies to."""
    return option.endswith(SUFFIX)


def pair_level(level: float) -> float:
    """Return the level of each of two intervals whose box holds both with probability ≥ level (Bonferroni)."""
    return 1.0 - (1.0 - level) / 2.0


def share_estimates(entry: Mapping, estimates: Sequence[Estimate]) -> list[tuple[str, Estimate]]:
    """Return (option, estimate) among those a branched choice/multi question applies to, per option but the last."""
    na = estimates[entry["not_applicable"]]
    out = []
    for index, (label, own) in enumerate(zip(entry["options"], estimates)):
        if index == entry["not_applicable"]:
            continue
        out.append((conditional_option(label), _ratio_share(own, na)))
    return out


def _ratio_share(own: Estimate, na: Estimate) -> Estimate:
    estimate = std_error = None
    if own.estimate is not None and na.estimate is not None and na.estimate < 1:
        base = 1.0 - na.estimate
        estimate = own.estimate / base
        if own.std_error is not None and na.std_error is not None:
            std_error = (own.std_error + abs(estimate) * na.std_error) / base
    low = _divide(own.ci_low, 1.0 - na.ci_low, 0.0)
    high = _divide(own.ci_high, 1.0 - na.ci_high, 1.0)
    return Estimate(estimate=estimate, std_error=std_error, ci_low=_clip(low, 0.0, 1.0),
                    ci_high=_clip(high, 0.0, 1.0), n=own.n, noisy_share=None)


def applied_share(parent: Mapping, parent_estimates: Sequence[Estimate], values: Sequence[int]) -> Estimate:
    """Return the estimated share the earlier question's ``values`` (its true values, as show_if lists them) hold.

    For a yes/no question the share of yes (value 1) or of no; for a choice question the sum of
    its options' shares, with the sum of their standard errors (a bound) and of their
    simultaneous intervals' ends.
    """
    if parent["kind"] == "yes_no":
        yes = parent_estimates[0]
        if set(values) == {0, 1}:
            return Estimate(1.0, 0.0, 1.0, 1.0, yes.n, None)
        if values[0] == 1:
            return yes
        return Estimate(None if yes.estimate is None else 1.0 - yes.estimate, yes.std_error,
                        1.0 - yes.ci_high, 1.0 - yes.ci_low, yes.n, None)
    chosen = [parent_estimates[index] for index in values]
    missing = any(e.estimate is None for e in chosen)
    return Estimate(None if missing else math.fsum(e.estimate for e in chosen),
                    None if any(e.std_error is None for e in chosen) else math.fsum(e.std_error for e in chosen),
                    _clip(math.fsum(e.ci_low for e in chosen), 0.0, 1.0),
                    _clip(math.fsum(e.ci_high for e in chosen), 0.0, 1.0), chosen[0].n, None)


def mean_estimate(entry: Mapping, mean: Estimate, applied: Estimate) -> tuple[str, Estimate]:
    """Return ("", estimate) of a branched number's mean among those it applies to (``mean`` over everyone)."""
    v, lo, hi = entry["not_applicable"], entry["min"], entry["max"]
    estimate = std_error = None
    if mean.estimate is not None and applied.estimate is not None and applied.estimate > 0:
        estimate = v + (mean.estimate - v) / applied.estimate
        if mean.std_error is not None and applied.std_error is not None:
            std_error = (mean.std_error / applied.estimate
                         + abs(mean.estimate - v) * applied.std_error / applied.estimate ** 2)
    # m ≥ v = min within the clipped interval, so μ grows with m and falls with a.
    low = v + _divide(mean.ci_low - v, applied.ci_high, 0.0)
    high = v + _divide(mean.ci_high - v, applied.ci_low, math.inf)
    return conditional_option(""), Estimate(estimate=estimate, std_error=std_error, ci_low=_clip(low, lo, hi),
                                            ci_high=_clip(high, lo, hi), n=mean.n, noisy_share=None)


def _divide(numerator: float, denominator: float, otherwise: float) -> float:
    return numerator / denominator if denominator > 0 else otherwise


def _clip(value: float, lo: float, hi: float) -> float:
    return min(max(value, lo), hi)


def applied_entries(entry: Mapping) -> list[dict]:
    """Return the codebook entries of a branched question's rows among those it applies to, in their order."""
    common = {"question": entry["id"], "show_if": entry["show_if"], "not_applicable": entry["not_applicable"],
              "interval": "guaranteed-box"}
    if entry["kind"] == "number":
        return [{**common, "option": conditional_option(""), "estimator": (
            f"v + (m - v)/a with v = not_applicable, m the question's mean over everyone and a the sum of the "
            f"estimates of {entry['show_if']['question']!r} for the values in show_if (for a yes/no question: the "
            f"share of yes for value 1, 1 minus it for 0), a's interval the sum of those estimates' intervals "
            f"(simultaneous over the earlier question's options); interval: m's and a's intervals each at level "
            f"1 - (1 - ci_level)/2, the corners [v + (m_low - v)/a_high, v + (m_high - v)/a_low] clipped to "
            f"[min, max]; std_error: se_m/a + |m - v| se_a/a^2 (a bound)")}]
    na = entry["options"][entry["not_applicable"]]
    return [{**common, "option": conditional_option(label), "estimator": (
        f"e/(1 - e_na) with e the row {label!r} and e_na the row {na!r} of this question; interval: "
        f"[low/(1 - low_na), high/(1 - high_na)] from their simultaneous intervals, clipped to [0, 1] "
        f"(1 when 1 - high_na <= 0); std_error: (se + |estimate| se_na)/(1 - e_na) (a bound)")}
        for index, label in enumerate(entry["options"]) if index != entry["not_applicable"]]
