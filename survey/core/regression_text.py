"""A fitted model as CSV, JSON, a plain-text table and sentences (the CLI, the page and the API share them).

CSV: REGRESSION_HEADER for a logistic regression, MEAN_HEADER for a number's mean model, one line
per term, CRLF; numbers with 6 significant digits (p-values reach 1e-30), an empty field when
missing. The intercept is the reference group's odds, or its mean. A model with a number covariate
(``number_covariates``) adds a last line naming its method.
Pure: no I/O.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import asdict

from .aggregate import CSV_LINE_TERMINATOR, aligned_lines, json_value
from .mean_model import MeanModel
from .number_covariates import NumberMeanModel, NumberRegression
from .regression import Regression
from .words import format_p, p_text

REGRESSION_HEADER = ["term", "estimate", "std_error", "z", "p_value", "odds_ratio", "ci_low", "ci_high", "ci_level"]
MEAN_HEADER = ["term", "estimate", "std_error", "z", "p_value", "ci_low", "ci_high", "ci_level"]


def _number(value: float) -> str:
    return "" if value is None or not math.isfinite(value) else format(value, ".6g")


def regression_to_csv(fit: Regression | MeanModel) -> str:
    """Return the terms as CSV (see the module docstring)."""
    header = MEAN_HEADER if isinstance(fit, MeanModel) else REGRESSION_HEADER
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=CSV_LINE_TERMINATOR)
    writer.writerow(header)
    for term in fit.terms:
        writer.writerow([term.term, *(_number(getattr(term, name)) for name in header[1:-1]), format(fit.level, "g")])
    return out.getvalue()


def regression_to_json(fit: Regression | MeanModel) -> dict:
    """Return the fit as a JSON-ready dict: which model ("logistic" or "mean"), its fit statistics, warnings, terms."""
    body = {"model": "mean" if isinstance(fit, MeanModel) else "logistic"}
    body.update({key: value for key, value in asdict(fit).items() if key != "terms"})
    body = {key: list(value) if isinstance(value, tuple) else json_value(value) for key, value in body.items()}
    body["terms"] = [{key: json_value(value) for key, value in asdict(term).items()} for term in fit.terms]
    return body


def regression_to_table(fit: Regression | MeanModel) -> str:
    """Return an aligned plain-text table with the model and its test above, warnings below, no final newline."""
    if isinstance(fit, MeanModel):
        cells = [["term", "mean_or_difference", "std_error", "p_value", "ci_low", "ci_high"]]
        names = ("estimate", "std_error", "p_value", "ci_low", "ci_high")
    else:
        cells = [["term", "log_odds", "std_error", "p_value", "odds_ratio", "ci_low", "ci_high"]]
        names = ("estimate", "std_error", "p_value", "odds_ratio", "ci_low", "ci_high")
    for term in fit.terms:
        cells.append([term.term, *((format_p(term.p_value) if name == "p_value" else _number(getattr(term, name)))
                                   or "-" for name in names)])
    lines = aligned_lines(cells, ["<", *[">"] * len(names)])
    lines[0:0] = [summary(fit), *([tests_sentence(fit)] if tests_sentence(fit) else [])]
    lines += [f"Warning: {warning}." for warning in fit.warnings]
    if getattr(fit, "method", ""):
        lines.append(method_sentence(fit))
    return "\n".join(lines)


def method_sentence(fit: Regression | MeanModel) -> str:
    """Return how a model with number covariates was fitted, in one sentence ("" for the others)."""
    method = getattr(fit, "method", "")
    return f"Method: {method}." if method else ""


def summary(fit: Regression | MeanModel) -> str:
    """Return the model and its test in a sentence."""
    if isinstance(fit, NumberMeanModel):
        return (f"Mean of {fit.outcome} on {', '.join(fit.covariates)}: n = {fit.n} responses that answered all of "
                f"them; the intercept is the mean where every covariate is 0, each other term the change of the "
                f"mean per unit of a number (or for a yes), the others held equal; {format(fit.level * 100, 'g')}% "
                "intervals on sandwich standard errors.")
    if isinstance(fit, NumberRegression):
        return (f"Logistic regression of {fit.outcome} on {', '.join(fit.covariates)}: n = {fit.n} responses that "
                f"answered all of them; {fit.test} test of every covariate together: chi-square "
                f"{fit.lr_statistic:.2f} on {fit.lr_df} df, {p_text(fit.lr_p_value)}; "
                f"{format(fit.level * 100, 'g')}% Wald intervals for the odds ratios, a number's per unit.")
    if isinstance(fit, MeanModel):
        return (f"Mean of {fit.outcome} by {', '.join(fit.covariates)}: n = {fit.n} responses that answered all of "
                f"them; the intercept is the reference group's mean, each other term a group's difference from "
                f"it with the other covariates held equal; {format(fit.level * 100, 'g')}% intervals on sandwich "
                "standard errors.")
    return (f"Logistic regression of {fit.outcome} on {', '.join(fit.covariates)}: n = {fit.n} responses that "
            f"answered all of them; likelihood-ratio test of every covariate together: chi-square "
            f"{fit.lr_statistic:.2f} on {fit.lr_df} df, {p_text(fit.lr_p_value)}; "
            f"{format(fit.level * 100, 'g')}% Wald intervals for the odds ratios.")


def tests_sentence(fit: Regression | MeanModel) -> str:
    """Return what the two kinds of p-value test, in one plain sentence ("" for a mean model, which has no LR test)."""
    if isinstance(fit, MeanModel):
        return ""
    if isinstance(fit, NumberRegression) and fit.test != "likelihood-ratio":
        return ("The Wald p of all terms together asks whether the covariates together tell anything about the "
                "outcome; the p beside each term asks the same of that one term alone.")
    return ("The likelihood-ratio p asks whether all the covariates together tell anything about the outcome; "
            "the p beside each term (a Wald test) asks the same of that one term alone.")


def term_sentence(fit: Regression | MeanModel, term) -> str:
    """Return one covariate's odds ratio, or difference of means, in plain words."""
    if term.term == "(intercept)" or not math.isfinite(term.ci_low):
        return ""
    name, _, label = term.term.partition(": ")
    share = format(fit.level * 100, 'g')
    if term.term in getattr(fit, "per_unit", ()):
        if isinstance(fit, MeanModel):
            return (f"Each 1 more of {term.term} goes with a mean {fit.outcome} {term.estimate:+.4g}, other "
                    f"covariates held equal ({share}% interval {term.ci_low:+.4g} to {term.ci_high:+.4g}).")
        return (f"Each 1 more of {term.term} multiplies the odds of {fit.outcome} by {term.odds_ratio:.4g}, other "
                f"covariates held equal ({share}% interval {term.ci_low:.4g} to {term.ci_high:.4g}).")
    if isinstance(fit, MeanModel):
        return (f"Those whose true answer to {name} is {label} have a mean {fit.outcome} {term.estimate:+.2f} "
                f"from the reference group, other covariates held equal ({format(fit.level * 100, 'g')}% "
                f"interval {term.ci_low:+.2f} to {term.ci_high:+.2f}).")
    return (f"Among those whose true answer to {name} is {label}, the odds of {fit.outcome} are "
            f"{term.odds_ratio:.2f} times those of the reference group, other covariates held equal "
            f"({format(fit.level * 100, 'g')}% interval {term.ci_low:.2f} to {term.ci_high:.2f}).")
