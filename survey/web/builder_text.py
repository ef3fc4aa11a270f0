"""The survey builder's preview in words: one question's numbers, and the survey's summary.

The same sentences appear in the server-rendered page and, through the preview endpoint, in
the page builder.js updates, so that the browser formats no number.
"""

from __future__ import annotations

MECHANISM_NAMES = {"rr": "randomized response", "grr": "generalized randomized response",
                   "oue": "optimized unary encoding", "ss": "subset selection",
                   "sampled": "one option drawn at random, its bit at full ε′",
                   "duchi": "Duchi rounding + randomized response", "piecewise": "piecewise mechanism",
                   "hybrid": "hybrid of the piecewise and Duchi mechanisms"}


def preview_terms(p: dict) -> list[tuple[str, str]]:
    """Return the preview of one question (a question_previews entry) as (term, sentence) pairs."""
    mechanism = f"{MECHANISM_NAMES.get(p['mechanism'], p['mechanism'])} ({p['mechanism']})"
    if p["kind"] == "multi":
        mechanism += ", one bit per option"
    keep = f"{p['keep']:.1%}"
    if p["mechanism"] == "oue":
        kept = f"The chosen option's bit is reported as 1 with probability {keep}."
    elif p["mechanism"] == "ss":
        kept = (f"The report is a set of {p['subset_size']} of the {p['simultaneous_over']} options; "
                f"it holds the true answer with probability {keep}.")
    elif p["mechanism"] == "sampled":
        kept = (f"One option is drawn at random and only its bit is sent, reported as it is with probability "
                f"{p['bit_keep']:.1%}.")
    elif p["mechanism"] == "piecewise":
        kept = (f"The report is one of {p['bins']} levels; with probability {keep} it lies in the narrow band "
                "around the true answer, else anywhere outside it.")
    elif p["mechanism"] == "hybrid":
        a, b = p["ratio_a"], p["ratio_b"]
        kept = (f"With probability {(a - b) / a:.1%} the report is one of {p['bins']} levels, in the narrow band "
                f"around the true answer with probability {a / (a + b):.1%}; otherwise the answer is rounded at "
                "random to the smallest or the largest value, which is reported as itself with probability "
                f"{a * a / (a * a + b * b):.1%}.")
    elif p["mechanism"] == "duchi":
        kept = ("The answer is rounded at random to the smallest or the largest value, which is reported as "
                f"itself with probability {keep}.")
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
    terms = [("Mechanism", f"{mechanism}, ε′ = {p['epsilon']:.3g}")]
    if p.get("sample"):
        terms.append(("Answered by", f"about {p['sample'] / p['questions']:.0%} of respondents: each answers "
                                     f"{p['sample']} of the {p['questions']} questions, drawn at random, "
                                     f"each at ε/{p['sample']} = {p['budget']:.3g}"))
    return [*terms,
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
    if evaluation.design is not None and evaluation.previews is not None:
        lines += recommendation_lines(evaluation.recommendation)
    return {"lines": lines, "warning": evaluation.warning}


def _allocation_words(allocation: str, sample: int | None) -> str:
    if allocation == "split":
        return "Split (every respondent answers every question)"
    return f"Sample with {sample} question{'' if sample == 1 else 's'} per respondent"


def recommendation_lines(found: dict | None) -> list[str]:
    """Return the planner's recommended allocation in words (builder.recommendation's result)."""
    if found is None:
        return ["For the recommended allocation of this many questions, run ldp-survey plan."]
    words = _allocation_words(found["allocation"], found["sample"])
    needs = (f"its least precise question needs {found['respondents']:,} respondents for "
             f"±{found['margin'] * 100:g} points")
    if found["chosen"]:
        return [f"Allocation: yours, {words}, is the one ldp-survey plan recommends; {needs}."]
    line = (f"Recommended allocation (ldp-survey plan): {words}; {needs}. The allocation chosen above "
            f"needs {found['current']:,}.")
    if found["allocation"] == "sample" and not found["equal_weights"]:
        line += " Under Sample every question gets the same share of ε, so all weights must be equal."
    return [line]
