"""Researcher crosstab page: two questions crossed, with joint and conditional shares and odds ratios.

``GET /surveys/<slug>/crosstab?a=Q&b=Q[&level=]`` shows the tables and a plain-words summary (a
question left out is the first that can be crossed, yes/no first: ``default_pair``);
``GET /surveys/<slug>/crosstab.csv?a=Q&b=Q[&level=]`` downloads the same rows. The joint
counts are the report patterns kept at insert (``Store.released_patterns``, ``joint_cache``); the
estimates from ``survey.core.crosstab`` (post-processing of noisy reports only).
"""

from __future__ import annotations

from flask import Blueprint, Response, render_template, request

from ..core.crosstab import (CrosstabError, check_allocation, check_pair, crosstab, crosstab_to_csv, default_pair,
                             sampled_pair_note)
from .access import survey_for_researcher
from .auth import login_required
from .forms import LogoutForm
from .joint_cache import joint_result
from .results import csv_response, level_argument

bp = Blueprint("crosstab", __name__)


class _BadPair(Exception):
    def __init__(self, message: str, requested: bool = True):
        super().__init__(message)
        self.requested = requested


def _pair(design: dict):
    """Return the questions named by ?a= and ?b= (the first pair that can be crossed for any left out).

    Raises _BadPair with a message for the researcher for an unknown question or a pair that cannot be crossed.
    """
    questions = {question["id"]: question for question in design["questions"]}
    a, b = request.args.get("a", "").strip(), request.args.get("b", "").strip()
    try:
        check_allocation(design)
    except CrosstabError as exc:
        raise _BadPair(str(exc), bool(a or b)) from exc
    for value in (a, b):
        if value and value not in questions:
            raise _BadPair(f"{value!r} is not a question of this survey; the questions are {', '.join(questions)}")
    if not (a and b):
        pair = default_pair(design, a, b)
        if pair is None:
            which = f"no question can be crossed with {a or b!r}" if a or b else \
                "this survey has no two questions that can be crossed"
            raise _BadPair(f"{which} (a number question can only be the second)", bool(a or b))
        a, b = pair
    try:
        check_pair(questions[a], questions[b])
    except CrosstabError as exc:
        raise _BadPair(str(exc)) from exc
    return questions[a], questions[b]


def crosstab_table(slug: str, design: dict, question_a: dict, question_b: dict, level: float):
    """Return the crosstab of two questions of a survey's released responses, from its report patterns (cached)."""
    return joint_result(slug, design, [question_a["id"], question_b["id"]], ("crosstab", level),
                        lambda words, counts: crosstab(question_a, question_b, *words, counts, level=level))


def _percent(row) -> str:
    return f"{row.estimate * 100:.1f}% [{row.ci_low * 100:.1f}%, {row.ci_high * 100:.1f}%]"


def _usable(row) -> bool:
    return row is not None and row.estimate is not None and row.ci_low is not None and row.ci_high is not None


def summary(table) -> str | None:
    """Return the crosstab in plain words when A is a yes/no question, else None.

    E.g. "Among those who said yes to smoker, 18.0% [12.3%, 23.7%] said yes to lung_disease,
    against 6.0% [4.9%, 7.1%] among those who said no; odds ratio 3.44 [2.20, 5.37]."
    """
    if table.a_kind != "yes_no" or table.n == 0:
        return None
    if table.b_kind == "number":
        yes, no = table.get("mean_given_a", "yes"), table.get("mean_given_a", "no")
        if not (_usable(yes) and _usable(no)):
            return None
        return (f"Among those who said yes to {table.a}, the mean of {table.b} is {yes.estimate:.2f} "
                f"[{yes.ci_low:.2f}, {yes.ci_high:.2f}], against {no.estimate:.2f} [{no.ci_low:.2f}, "
                f"{no.ci_high:.2f}] among those who said no.")
    option = "yes" if table.b_kind == "yes_no" else table.b_levels[0]
    yes, no = table.get("b_given_a", "yes", option), table.get("b_given_a", "no", option)
    if not (_usable(yes) and _usable(no)):
        return None
    said = "said yes to" if table.b_kind == "yes_no" else f"chose “{option}” for"
    text = (f"Among those who said yes to {table.a}, {_percent(yes)} {said} {table.b}, "
            f"against {_percent(no)} among those who said no")
    odds = table.get("odds_ratio", "", "")
    if odds is not None:
        if odds.estimate is not None and odds.ci_low is not None:
            upper = "no upper limit" if odds.ci_high is None else f"{odds.ci_high:.2f}"
            text += f"; odds ratio {odds.estimate:.2f} [{odds.ci_low:.2f}, {upper}]"
        else:
            text += "; the odds ratio has no estimate (an estimated cell is not positive)"
    return text + "."


@bp.get("/surveys/<slug>/crosstab")
@login_required
def page(slug):
    """Show the crosstab of two questions (a default pair when none is named); 400 with a message for a bad pair."""
    design = survey_for_researcher(slug)
    level = level_argument()
    error = table = None
    status = 200
    try:
        question_a, question_b = _pair(design)
        table = crosstab_table(slug, design, question_a, question_b, level)
    except _BadPair as exc:
        error, status = str(exc), 400 if exc.requested else 200
    cells = {} if table is None else {(row.measure, row.a_option, row.b_option): row for row in table.rows}
    return render_template("crosstab.html", design=design, table=table, cells=cells, error=error, level=level,
                           a=table.a if table else request.args.get("a", ""),
                           b=table.b if table else request.args.get("b", ""),
                           summary=None if table is None else summary(table), logout_form=LogoutForm(),
                           sampled_note=sampled_pair_note(design)), status


@bp.get("/surveys/<slug>/crosstab.csv")
@login_required
def csv_download(slug):
    """Download the crosstab rows as CSV (measure,a_option,b_option,estimate,std_error,ci_low,ci_high,ci_level)."""
    design = survey_for_researcher(slug)
    level = level_argument()
    try:
        question_a, question_b = _pair(design)
    except _BadPair as exc:
        return Response(f"Error: {exc}\n", status=400, mimetype="text/plain")
    table = crosstab_table(slug, design, question_a, question_b, level)
    return csv_response(crosstab_to_csv(table), f"{slug}-{question_a['id']}-{question_b['id']}-crosstab.csv")
