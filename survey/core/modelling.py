"""Fit the model an outcome calls for, from report patterns: logistic regression for a yes/no outcome, the
mean model for a number; the covariates are yes/no and single-choice questions either way, or, with a number among
them, yes/no and number questions by regression calibration (``number_covariates``).
Pure: no I/O.
"""

from __future__ import annotations

import numpy as np

from . import codec
from .mean_model import MeanModel, mean_model, unbiased_values
from .regression import Regression, RegressionError, logistic_regression, question_variable


def fit_reports(questions: list[dict], reports: list, counts, *, level: float = 0.95) -> Regression | MeanModel:
    """Fit ``questions[0]`` on the others from each pattern's wire-format reports (``reports[i]`` per question)."""
    outcome, covariates = questions[0], questions[1:]
    if outcome["kind"] in ("yes_no", "number") and any(question["kind"] == "number" for question in covariates):
        from .number_covariates import fit_question_columns

        return fit_question_columns(questions, reports, counts, level=level)
    variables = [question_variable(question, column) for question, column in zip(covariates, reports[1:])]
    if outcome["kind"] == "number":
        return mean_model(outcome["id"], unbiased_values(outcome, reports[0]), variables, counts, level=level)
    if outcome["kind"] != "yes_no":
        raise RegressionError(f"the outcome {outcome['id']!r} is a {outcome['kind']} question: the outcome must be "
                              "a yes/no question (a logistic regression) or a number (a model of its mean)")
    return logistic_regression(question_variable(outcome, reports[0]), variables, counts, level=level)


def model_questions(design: dict, outcome: str, covariates: list[str]) -> list[dict]:
    """Return the design questions of a model, outcome first, or raise RegressionError saying what is wrong."""
    questions = {question["id"]: question for question in design["questions"]}
    names = [outcome, *covariates]
    if not outcome or not covariates:
        raise RegressionError("choose an outcome (yes/no or number) and at least one covariate")
    unknown = [qid for qid in names if qid not in questions]
    if unknown:
        raise RegressionError(f"{unknown[0]!r} is not a question of this survey; its questions are "
                              f"{', '.join(questions)}")
    if len(set(names)) != len(names):
        raise RegressionError("a question appears twice among the outcome and the covariates")
    if design.get("allocation") == "sample" and int(design["sample"]) < len(names):
        raise RegressionError(f"each respondent answers {design['sample']} question(s) at random, so nobody "
                              f"answered all {len(names)} of these")
    return [questions[qid] for qid in names]


def fit_words(design: dict, outcome: str, covariates: list[str], words: list, counts, *,
              level: float = 0.95) -> Regression | MeanModel:
    """Fit the model from the distinct report patterns of a survey: ``words`` the codec words of each pattern,
    per question of [outcome, *covariates] (as ``Store.joint_patterns`` returns them), ``counts`` how many
    respondents sent each."""
    chosen = model_questions(design, outcome, covariates)
    reports = [[codec.decode_report(question, row) for row in np.asarray(column).tolist()]
               for question, column in zip(chosen, words)]
    return fit_reports(chosen, reports, counts, level=level)
