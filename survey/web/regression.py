"""Researcher regression page: a yes/no question, or a number's mean, on yes/no, single-choice and number questions.

``GET /surveys/<slug>/regression?outcome=Q&covariate=A[&covariate=B…][&level=]`` shows the odds
ratios (or, for a number, the groups' means and differences) with their intervals, the test and
any warning; ``regression.csv`` with the same parameters downloads the terms. The data are the counts of distinct report patterns
kept at insert (``Store.released_patterns``, ``joint_cache``); the models are ``survey.core.modelling``'s.
"""

from __future__ import annotations

from flask import Blueprint, render_template, request

from ..core.mean_model import MeanModel
from ..core.modelling import fit_words, model_questions
from ..core.regression import RegressionError
from ..core.regression_text import method_sentence, regression_to_csv, summary, term_sentence, tests_sentence
from .access import survey_for_researcher
from .auth import login_required
from .forms import LogoutForm
from .joint_cache import joint_result
from .results import csv_response, level_argument

bp = Blueprint("regression", __name__)


def candidates(design: dict) -> tuple[list[dict], list[dict]]:
    """Return the questions that can be the outcome (yes/no, number) and those that can be covariates (yes/no, choice,
    and numbers whose reports show their spread)."""
    from ..core.mechanisms import mechanism_for
    from ..core.number_covariates import number_covariate_problem

    outcomes = [q for q in design["questions"] if q["kind"] in ("yes_no", "number")]
    covariates = [q for q in design["questions"] if mechanism_for(q).categories is not None
                  or (q["kind"] == "number" and number_covariate_problem(q) is None)]
    return outcomes, covariates


def fit(slug: str, design: dict, outcome: str, covariates: list[str], level: float):
    """Return the regression of a survey's outcome on covariates (RegressionError with the reason)."""
    model_questions(design, outcome, covariates)
    return joint_result(slug, design, [outcome, *covariates], ("regression", level),
                        lambda words, counts: fit_words(design, outcome, covariates, words, counts, level=level))


def _requested(design: dict) -> tuple[str, list[str], bool]:
    """Return ?outcome= and the ?covariate= list (defaults: the first yes/no and the next candidate), and whether asked."""
    outcome = request.args.get("outcome", "").strip()
    covariates = [value.strip() for value in request.args.getlist("covariate") if value.strip()]
    asked = bool(outcome or covariates)
    if not asked:
        outcomes, others = candidates(design)
        outcomes = [q for q in outcomes if q["kind"] == "yes_no"] or outcomes
        if outcomes:
            outcome = outcomes[0]["id"]
            covariates = [q["id"] for q in others if q["id"] != outcome][:1]
    return outcome, covariates, asked


@bp.get("/surveys/<slug>/regression")
@login_required
def page(slug):
    """Show the regression form and, for a valid choice, the fitted model; 400 with the reason for a bad one."""
    design = survey_for_researcher(slug)
    level = level_argument()
    outcome, covariates, asked = _requested(design)
    model = error = None
    status = 200
    try:
        model = fit(slug, design, outcome, covariates, level)
    except RegressionError as exc:
        error, status = str(exc), 400 if asked else 200
    outcomes, others = candidates(design)
    return render_template("regression.html", design=design, level=level, outcome=outcome, chosen=covariates,
                           outcomes=outcomes, others=others, model=model, error=error,
                           mean=isinstance(model, MeanModel),
                           summary=summary(model) if model else None,
                           tests=tests_sentence(model) if model else None,
                           method=method_sentence(model) if model else None,
                           sentences=[term_sentence(model, term) for term in model.terms] if model else [],
                           logout_form=LogoutForm()), status


@bp.get("/surveys/<slug>/regression.csv")
@login_required
def csv_download(slug):
    """Download the fitted model's terms as CSV (400 with the reason for a bad choice)."""
    from flask import abort

    design = survey_for_researcher(slug)
    outcome, covariates, _ = _requested(design)
    try:
        model = fit(slug, design, outcome, covariates, level_argument())
    except RegressionError as exc:
        abort(400, description=str(exc))
    return csv_response(regression_to_csv(model), f"{slug}-regression-{outcome}.csv")
