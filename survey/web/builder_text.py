"""The survey builder's preview in words: one question's numbers, and the survey's summary.

The same sentences appear in the server-rendered page and, through the preview endpoint, in
the page builder.js updates, so that the browser formats no number.
"""

from __future__ import annotations

from ..core.mechanisms import mechanism_for
from ..core.releases import release_plan_sentence
from ..core.versus_direct import BreakEven, direct_sentence
from ..core.words import format_epsilon, percent_up


def mechanism_title(entry: dict) -> str:
    """Return a design entry's mechanism in words for a table of questions, e.g. "subset selection"."""
    return mechanism_for(entry).list_title


def preview_terms(p: dict, entry: dict) -> list[tuple[str, str]]:
    """Return the preview of one question (a question_previews entry, and its design entry) as (term, sentence) pairs."""
    mechanism = mechanism_for(entry)
    name = f"{mechanism.title} ({mechanism.name})"
    if p["kind"] == "multi":
        name += ", one bit per option"
    kept = mechanism.kept_sentence(percent_up(p['keep'], 1))
    if p["scale"] is not None:
        margin = (f"±{p['half_width']:.1%} of the answer's range, i.e. ±{p['half_width'] * p['scale']:.3g} "
                  f"on the mean, at the end; ±{p['anytime_half_width']:.1%} of the range, i.e. "
                  f"±{p['anytime_half_width'] * p['scale']:.3g}, valid at every look")
    else:
        margin = (f"±{p['half_width'] * 100:.1f} percentage points at the end, "
                  f"±{p['anytime_half_width'] * 100:.1f} points valid at every look")
    margin += f" ({p['level']:.0%} interval, worst case"
    margin += f", all {p['simultaneous_over']} options at once)" if p["simultaneous_over"] > 1 else ")"
    terms = [("Mechanism", f"{name}, ε′ = {format_epsilon(p['epsilon'])}")]
    if p.get("wave_epsilon") is not None:
        terms.append(("Per wave", f"ε₁ = {format_epsilon(p['wave_epsilon'])}: ε′ above is what the kept report of one "
                                  "answer reveals over all waves; every wave randomizes it again at ε₁, so two waves' "
                                  "reports differ and what they show of a change of answer is bounded by ε₁"))
    if p.get("sample"):
        terms.append(("Answered by", f"about {p['sample'] / p['questions']:.0%} of respondents: each answers "
                                     f"{p['sample']} of the {p['questions']} questions, drawn at random, "
                                     f"each at ε/{p['sample']} = {format_epsilon(p['budget'])}"))
    return [*terms,
            ("Kept", kept),
            ("What someone can learn", f"Someone who thought an answer 50/50 can be at most {percent_up(p['posterior'], 1)} "
                                       "sure of it after seeing the report."),
            (f"Margin with {p['respondents']:,} respondents", margin),
            (f"Respondents for ±{p['margin'] * 100:g} points", f"{p['respondents_needed']:,}"),
            ("Direct or randomized?", direct_sentence([BreakEven(**entry) for entry in p["versus_direct"]],
                                                      respondents=p["respondents"], scale=p["scale"]))]


def summary(evaluation) -> dict:
    """Return the survey-wide lines of the preview and its warning, for a builder.Evaluation."""
    if evaluation.design is not None and evaluation.previews is not None:
        lines = [f"Budget ε = {format_epsilon(evaluation.design['epsilon'])} per respondent; the questions together spend "
                 f"ε′ = {format_epsilon(evaluation.design['epsilon_spent'])}. Each question's numbers are beside it."]
        if "wave_epsilon" in evaluation.design:
            lines.append(f"Series in two layers: ε∞ = ε′ above per answer value over every wave, and per wave "
                         f"ε₁ = {format_epsilon(evaluation.design['wave_epsilon'])} (the questions together spend "
                         f"{format_epsilon(evaluation.design['wave_epsilon_spent'])}), which bounds what two linked "
                         "waves show of a change of answer.")
    elif evaluation.errors:
        count = len(evaluation.errors)
        lines = [f"Fix the {count} marked field{'' if count == 1 else 's'} to see the preview."]
    else:
        lines = ["Press Preview to see each question's privacy and precision."]
    if evaluation.design is not None and evaluation.previews is not None:
        lines += recommendation_lines(evaluation.recommendation)
        lines.append(release_plan_sentence(evaluation.design))
    return {"lines": lines, "warnings": evaluation.warnings}


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
