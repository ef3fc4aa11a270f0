"""The survey builder's preview in words: one question's numbers, and the survey's summary.

The same sentences appear in the server-rendered page and, through the preview endpoint, in
the page builder.js updates, so that the browser formats no number.
"""

from __future__ import annotations

MECHANISM_NAMES = {"rr": "randomized response", "grr": "generalized randomized response",
                   "oue": "optimized unary encoding", "duchi": "Duchi rounding + randomized response"}


def preview_terms(p: dict) -> list[tuple[str, str]]:
    """Return the preview of one question (a question_previews entry) as (term, sentence) pairs."""
    mechanism = f"{MECHANISM_NAMES.get(p['mechanism'], p['mechanism'])} ({p['mechanism']})"
    if p["kind"] == "multi":
        mechanism += ", one bit per option"
    keep = f"{p['keep']:.1%}"
    if p["mechanism"] == "oue":
        kept = f"The chosen option's bit is reported as 1 with probability {keep}."
    elif p["kind"] == "multi":
        kept = f"Each option's bit is reported as it is with probability {keep}."
    else:
        kept = f"A true answer is reported as itself with probability {keep}."
    if p["scale"] is not None:
        margin = (f"±{p['half_width']:.1%} of the answer's range, i.e. ±{p['half_width'] * p['scale']:.3g} "
                  "on the mean")
    else:
        margin = f"±{p['half_width'] * 100:.1f} percentage points"
    margin += f" ({p['level']:.0%} interval, worst case"
    margin += f", all {p['simultaneous_over']} options at once)" if p["simultaneous_over"] > 1 else ")"
    return [("Mechanism", f"{mechanism}, ε′ = {p['epsilon']:.3g}"),
            ("Kept", kept),
            ("What someone can learn", f"Someone who thought an answer 50/50 can be at most {p['posterior']:.1%} "
                                       "sure of it after seeing the report."),
            (f"Margin with {p['respondents']:,} respondents", margin),
            (f"Respondents for ±{p['margin'] * 100:g} points", f"{p['respondents_needed']:,}")]


def summary(evaluation) -> dict:
    """Return the survey-wide lines of the preview and its warning, for a builder.Evaluation."""
    if evaluation.design is not None and evaluation.previews is not None:
        lines = [f"Budget ε = {evaluation.design['epsilon']:g} per respondent; the questions together spend "
                 f"ε′ = {evaluation.design['epsilon_spent']:.6g}. Each question's numbers are beside it."]
    elif evaluation.errors:
        count = len(evaluation.errors)
        lines = [f"Fix the {count} marked field{'' if count == 1 else 's'} to see the preview."]
    else:
        lines = ["Press Preview to see each question's privacy and precision."]
    return {"lines": lines, "warning": evaluation.warning}
