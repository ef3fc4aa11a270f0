"""Describe in plain language how a design protects each answer, from its integer thresholds.

Probabilities come from the exact fractions T/2^53 the browser uses; a percentage is
rounded to as few decimals as keep it honest (never 0% or 100% unless exact).
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

from . import mechanisms as mech
from .planning import posterior_bound

TWO53 = 2**53
_MAX_DECIMALS = 20


def percent(probability: Fraction) -> str:
    """Return a probability as a percentage with the fewest decimals that do not read as 0% or 100%.

    Whole percents when that is honest; otherwise more decimals until the rounded value
    is strictly between 0 and 100 (e.g. "99.9999998%").
    """
    probability = Fraction(probability)
    if not 0 <= probability <= 1:
        raise ValueError(f"probability must be in [0, 1], got {probability}")
    scaled = probability * 100
    for decimals in range(_MAX_DECIMALS + 1):
        step = Fraction(1, 10**decimals)
        rounded = round(scaled / step) * step
        exact_end = probability in (0, 1)
        if exact_end or 0 < rounded < 100:
            break
    value = Decimal(rounded.numerator) / Decimal(rounded.denominator)
    text = format(value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN), "f")
    return f"{text}%"


def format_epsilon(epsilon: float) -> str:
    """Return epsilon to two significant digits, without exponent notation (0.57, 2, 0.0029)."""
    epsilon = float(epsilon)
    if epsilon >= 100:
        return f"{epsilon:.0f}"
    text = f"{epsilon:.2g}"
    if "e" in text:
        text = f"{epsilon:.2e}"
        mantissa, exponent = text.split("e")
        text = format(Decimal(f"{float(mantissa):.2g}e{int(exponent)}"), "f")
    return text


def _fraction(threshold) -> Fraction:
    if isinstance(threshold, bool) or not isinstance(threshold, int) or not 0 <= threshold <= TWO53:
        raise ValueError(f"a threshold must be an integer from 0 to 2^53, got {threshold!r}")
    return Fraction(threshold, TWO53)


def _options(question: dict) -> list:
    options = question.get("options")
    if not isinstance(options, list) or not options:
        raise ValueError(f"question {question.get('id')!r} needs a non-empty options list, got {options!r}")
    return options


def protection_note(question: dict) -> str:
    """Return one or two plain sentences on how this question's answer is randomized on the device."""
    kind, mechanism = question.get("kind"), question.get("mechanism")
    eps = format_epsilon(question["epsilon"])
    if kind == "yes_no" and mechanism == "rr":
        keep = 1 - _fraction(question["flip_threshold"])
        return f"Your answer is kept with probability {percent(keep)} and flipped otherwise (ε′ = {eps})."
    if kind == "choice" and mechanism == "grr":
        others = len(_options(question)) - 1
        keep = _fraction(question["keep_threshold"])
        noun = "option" if others == 1 else "options"
        return (f"Your answer is kept with probability {percent(keep)} and otherwise replaced by "
                f"{'the other option' if others == 1 else f'one of the other {others} {noun} at random'} "
                f"(ε′ = {eps}).")
    if kind == "choice" and mechanism == "oue":
        count = len(_options(question))
        q = _fraction(question["q_threshold"])
        return (f"Your answer is sent as {count} separate marks, one per option: the mark of your "
                f"choice is set with probability 50%, and every other option is marked with probability "
                f"{percent(q)} (ε′ = {eps}).")
    if kind == "choice" and mechanism == "ss":
        count, size = len(_options(question)), question["subset_size"]
        keep = _fraction(question["keep_threshold"])
        return (f"Your answer is sent as a random group of {size} of the {count} options: your choice is in "
                f"the group with probability {percent(keep)}, and the rest of the group is drawn at random "
                f"from the other options (ε′ = {eps}).")
    if kind == "multi" and mechanism == "sampled":
        count = len(_options(question))
        keep = 1 - _fraction(question["flip_threshold"])
        return (f"One of the {count} options is drawn at random, whatever you ticked, and only its tick or "
                f"blank is sent, kept with probability {percent(keep)} and flipped otherwise (ε′ = {eps}).")
    if kind == "multi" and mechanism == "rr":
        count = len(_options(question))
        keep = 1 - _fraction(question["flip_threshold"])
        per_option = question.get("epsilon_per_option")
        detail = f"ε′ = {eps}" if per_option is None else \
            f"ε′ = {format_epsilon(per_option)} per option, {eps} in total"
        subject = "Your tick or blank" if count == 1 else f"Each of the {count} options' tick or blank"
        return f"{subject} is kept with probability {percent(keep)} and flipped otherwise ({detail})."
    if kind == "number" and mechanism == "duchi":
        keep = 1 - _fraction(question["flip_threshold"])
        low, high = question["min"], question["max"]
        return (f"Your number is first rounded at random to the low or high end of {low}–{high} "
                f"(the closer end being more likely), then kept with probability {percent(keep)} "
                f"and flipped to the other end otherwise (ε′ = {eps}).")
    if kind == "number" and mechanism == "piecewise":
        a, b = question["ratio_a"], question["ratio_b"]
        low, high = question["min"], question["max"]
        return f"Your number is replaced by {_piecewise_points(a, b, low, high, ': ')} (ε′ = {eps})."
    if kind == "number" and mechanism == "hybrid":
        a, b = question["ratio_a"], question["ratio_b"]
        low, high = question["min"], question["max"]
        beta, flip = mech.hybrid_branch(a, b)
        return (f"Your number is randomized one of two ways, chosen at random: with probability {percent(beta)} "
                f"it is replaced by {_piecewise_points(a, b, low, high, ' (')}); otherwise it is rounded at "
                f"random to the low or high end "
                f"of {low}–{high} and kept with probability {percent(1 - flip)} (ε′ = {eps}).")
    raise ValueError(f"question {question.get('id')!r} has an unsupported kind/mechanism {kind!r}/{mechanism!r}")


def _piecewise_points(a: int, b: int, low, high, joint: str) -> str:
    """Return the piecewise mechanism's report in words: its a + b points, then (after ``joint``) its band."""
    return (f"one of {a + b} points spread over a range a little wider than {low}–{high}{joint}with probability "
            f"{percent(Fraction(a, a + b))} a point in a narrow band around your number, otherwise a point "
            "anywhere else")


def sample_note(design: dict) -> str | None:
    """Return why a respondent sees only some questions (sample allocation, m < k), or None.

    Each respondent answers m of the k questions at ε/m each, rather than all k at ε/k
    (Arcolezi et al. 2021).
    """
    if design.get("allocation") != "sample":
        return None
    k, m = len(design["questions"]), int(design["sample"])
    if m >= k:
        return None
    each = format_epsilon(max(question["epsilon"] for question in design["questions"]))
    budget = format_epsilon(design["epsilon"])
    shown = "1 question" if m == 1 else f"{m} questions"
    return (f"Each person answers {m} of the {k} questions, chosen at random on your device, so you see only "
            f"{shown} below. Nothing at all is sent about the questions you are not shown. Your privacy loss "
            f"stays at most ε = {budget} in total, shared by fewer answers (ε′ = {each} each), so each answer "
            f"tells the researchers more on average and the survey needs fewer people for the same accuracy. "
            f"Which questions you were given says nothing about your answers.")


def posterior_note(design: dict) -> str:
    """Return the respondent's plain sentence on what everything they send can reveal (MATH: posterior bound)."""
    spent = design["epsilon_spent"]
    sure = percent(Fraction(posterior_bound(spent)))
    return (f"The protection, in plain words: someone who thought it 50/50 whether any answer of yours is "
            f"one thing or another can be at most {sure} sure after seeing everything this page sends "
            f"(privacy loss ε′ = {format_epsilon(spent)}; smaller is safer). Sending the survey a second "
            f"time would weaken this, so this device sends it once.")
