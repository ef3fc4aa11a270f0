"""Plan a survey's precision: expected interval half-widths and the respondents a margin needs.

Every estimand is an indicator whose report is 1 with probability q + (p − q)·[true], so
its unbiased estimate has variance λ(1 − λ)/(n(p − q)²) with λ = q + θ(p − q). The plan
uses the worst case over the unknown θ (λ as close to 1/2 as its range allows) and the
normal approximation to the Clopper–Pearson interval, at ``z`` for one estimand or at
``z`` Bonferroni-corrected over the d options of a choice or multi question (simultaneous
intervals, as the aggregates report them). For a number the half-width is a share of
its range [min, max]. Under ``sample`` allocation each respondent answers m of the k
questions at ε/m each, so a question gets about n·m/k reports (Warner 1965; Wang et
al. 2017; Duchi et al. 2013). A level mechanism's report is a level, not a bit: its worst case
is over populations of answers, the noise of its reports plus the spread of the answers
(``LevelMechanism.worst_variance``; Wang et al. 2019), and its interval is not a normal one but
survey.core.bounded_mean's, valid at every n: the plan evaluates that interval itself at the
worst-case variance of the report's level value R, centred in R's range (``level_half_width``),
and searches the reports a margin needs. Beside it, ``anytime_half_width`` is the
half-width of the interval valid at every look (``survey.core.anytime``) at the same n, with its
boundary tuned for that n: it does not depend on the data, only on each report's range. Pure: no I/O.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, replace
from fractions import Fraction

from scipy.stats import norm

from .definition import DefinitionError, SurveyDefinition
from .anytime import half_width as anytime_width
from .design import MIN_QUESTION_EPSILON, allocate_split, design_question, response_probabilities, wave_share
from .bounded_mean import mean_interval
from .mechanisms import LevelMechanism, mechanism_for
from .mechanisms.common import worst_case_spread
from .versus_direct import DEFAULT_THETA, question_break_even
from .words import format_epsilon, percent_up

DEFAULT_MARGIN = 0.05
DEFAULT_RESPONDENTS = 1000
DEFAULT_LEVEL = 0.95
# Above this ε′ an answer's protection is nominal: someone who thought it 50/50 can be
# more than 98% sure after seeing the report (posterior bound e^ε/(1 + e^ε)).
NOMINAL_EPSILON = 4.0


@dataclass(frozen=True)
class QuestionPlan:
    """The precision of one question under one allocation."""

    id: str
    mechanism: str
    epsilon: float
    half_width: float
    respondents: int
    simultaneous_over: int
    anytime_half_width: float = math.inf
    # A series under two layers: the question's per-wave ε₁ (its ``epsilon`` is then ε∞ per answer value).
    wave_epsilon: float | None = None


@dataclass(frozen=True)
class AllocationPlan:
    """The plan of every question under ``split``, or ``sample`` with ``sample`` questions per respondent."""

    allocation: str
    sample: int | None
    questions: tuple[QuestionPlan, ...]

    @property
    def respondents(self) -> int:
        """The respondents the whole survey needs: enough for its least precise question."""
        return max(question.respondents for question in self.questions)


def z_value(level: float, simultaneous_over: int = 1) -> float:
    """Return the two-sided normal quantile for ``level``, Bonferroni-corrected over that many intervals."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return float(norm.ppf(1 - (1 - level) / (2 * simultaneous_over)))


def half_width(p: float, q: float, reports: float, *, level: float = DEFAULT_LEVEL,
               simultaneous_over: int = 1) -> float:
    """Return the expected worst-case half-width of an indicator's interval from ``reports`` reports."""
    if reports <= 0:
        return math.inf
    return z_value(level, simultaneous_over) * math.sqrt(worst_case_spread(p, q) / reports) / abs(p - q)


def reports_needed(p: float, q: float, margin: float, *, level: float = DEFAULT_LEVEL,
                   simultaneous_over: int = 1) -> int:
    """Return the reports an indicator needs for a worst-case half-width of at most ``margin``."""
    if not 0 < margin < 1:
        raise ValueError(f"the margin must be a share in (0, 1), e.g. 0.05, got {margin!r}")
    z = z_value(level, simultaneous_over)
    return math.ceil(z * z * worst_case_spread(p, q) / (margin * margin * (p - q) ** 2))


def posterior_bound(epsilon: float) -> float:
    """Return how sure someone who thought an answer 50/50 can be after one report: e^ε/(1 + e^ε).

    The posterior bound of ε-differential privacy from even prior odds (Dimitrakakis, eq. 3.6.2).
    """
    if not math.isfinite(epsilon) or epsilon < 0:
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    return 1 / (1 + math.exp(-epsilon))


def plan_question(question: dict, *, respondents: int, margin: float, share: float = 1.0,
                  level: float = DEFAULT_LEVEL) -> QuestionPlan:
    """Return the plan of one design question when a ``share`` of the respondents answer it."""
    simultaneous = len(question["options"]) if question["kind"] in ("choice", "multi") else 1
    if not 0 < margin < 1:
        raise ValueError(f"the margin must be a share in (0, 1), e.g. 0.05, got {margin!r}")
    mechanism = mechanism_for(question)
    reports = respondents * share
    if isinstance(mechanism, LevelMechanism):
        width = math.inf if reports <= 0 else level_half_width(mechanism, reports, level)
        needed = level_reports_needed(mechanism, margin, level)
    else:
        variance = mechanism.worst_variance()
        z = z_value(level, simultaneous)
        width = math.inf if reports <= 0 else z * math.sqrt(variance / reports)
        needed = math.ceil(z * z * variance / (margin * margin))
    return QuestionPlan(
        id=question["id"], mechanism=question["mechanism"], epsilon=float(question["epsilon"]),
        half_width=width, respondents=math.ceil(needed / share), simultaneous_over=simultaneous,
        anytime_half_width=anytime_half_width(question, reports, level=level, simultaneous_over=simultaneous),
        wave_epsilon=question["wave"]["epsilon"] if "wave" in question else None)


def level_half_width(mechanism: LevelMechanism, reports: float, level: float = DEFAULT_LEVEL) -> float:
    """Return the half-width, as a share of the range, of a level mechanism's interval from ``reports`` reports.

    The interval of survey.core.bounded_mean (as the estimator computes it) for tallies whose
    level value R has its mean at the middle of R's range and the largest variance any population
    can give; the reports are rounded to a whole number (at least 1).
    """
    return _level_half_width(mechanism, max(1, round(reports)), float(level))


@functools.lru_cache(maxsize=4096)
def _level_half_width(mechanism: LevelMechanism, n: int, level: float) -> float:
    """Return level_half_width at a whole n (cached: the planner asks again for each allocation)."""
    least, most = mechanism.report_variance_range()
    low, high = (float(value) for value in mechanism.report_range())
    centre = (low + high) / 2
    most = min(most, (high - low) ** 2 / 4)
    ci_low, ci_high = mean_interval(n * centre, n * (most + centre * centre), n, low=low, high=high, level=level,
                                    variance=(least, most))
    p, q = mechanism.probabilities()
    return (ci_high - ci_low) / (2 * float(p - q))


def level_reports_needed(mechanism: LevelMechanism, margin: float, level: float = DEFAULT_LEVEL) -> int:
    """Return the fewest reports whose level_half_width is at most ``margin`` (bisection; the width falls with n)."""
    z = z_value(level)
    high = max(1, math.ceil(z * z * mechanism.worst_variance() / (margin * margin)))
    while level_half_width(mechanism, high, level) > margin:
        high *= 2
    low = 0
    while high - low > 1:
        middle = (low + high) // 2
        if level_half_width(mechanism, middle, level) > margin:
            low = middle
        else:
            high = middle
    return high


def anytime_half_width(question: dict, reports: float, *, level: float = DEFAULT_LEVEL,
                       simultaneous_over: int = 1) -> float:
    """Return the half-width valid at every look after ``reports`` reports, tuned for them (a share of a number's range)."""
    if reports <= 0:
        return math.inf
    mechanism = mechanism_for(question)
    low, high = mechanism.debiased_range()
    lo, hi = mechanism.estimand_range()
    return anytime_width(reports, spread=(high - low) / (hi - lo), level=level, planned=reports,
                         simultaneous_over=simultaneous_over, variance=mechanism.worst_variance())


def allocation_budgets(defn: SurveyDefinition, sample: int | None) -> tuple[list[Fraction], float]:
    """Return each question's exact budget and the share of respondents answering it, under split or sample m."""
    k = len(defn.questions)
    if sample is None:
        return allocate_split(defn), 1.0
    if not 1 <= sample <= k:
        raise ValueError(f"sample must be from 1 to {k}, got {sample!r}")
    return [Fraction(defn.epsilon) / sample] * k, sample / k


def question_planner(*, respondents: int, margin: float, level: float = DEFAULT_LEVEL):
    """Return plan(question, budget, share) -> QuestionPlan, designing each question shape once per budget.

    A question's design, and so its plan, depends only on its kind, options, range,
    decline flag and mechanism and its budget, so questions of one shape share it: surveys of many
    similar questions plan in the time of a few designs. ``wave_budget`` is a series' per-wave
    budget under two layers (None: one layer), whose layer the precision includes.
    """
    cache: dict = {}

    def planned(question, budget: Fraction, share: float, wave_budget: Fraction | None = None) -> QuestionPlan:
        key = (question.kind, len(question.options or ()), question.min, question.max, question.decline,
               question.mechanism, budget, share, wave_budget)
        if key not in cache:
            cache[key] = plan_question(design_question(question, budget, wave_budget), respondents=respondents,
                                       margin=margin, share=share, level=level)
        return replace(cache[key], id=question.id)

    return planned


def plan_allocation(defn: SurveyDefinition, *, sample: int | None, respondents: int, margin: float,
                    level: float = DEFAULT_LEVEL, planner=None) -> AllocationPlan:
    """Return the plan of a definition under ``split`` (sample None) or ``sample`` of m questions.

    ``planner`` (from question_planner, for these respondents, margin and level) lets
    several allocations share their question designs.
    """
    planner = planner or question_planner(respondents=respondents, margin=margin, level=level)
    budgets, share = allocation_budgets(defn, sample)
    questions = tuple(planner(question, budget, share, wave_share(defn, budget))
                      for question, budget in zip(defn.questions, budgets))
    return AllocationPlan(allocation="split" if sample is None else "sample", sample=sample, questions=questions)


def _samples(defn: SurveyDefinition) -> list[int | None]:
    """Return the allocations to compare, in the order ties are broken: split, then sample m = k..1."""
    return [None, *range(len(defn.questions), 0, -1)]


def plan(defn: SurveyDefinition, *, respondents: int = DEFAULT_RESPONDENTS, margin: float = DEFAULT_MARGIN,
         level: float = DEFAULT_LEVEL) -> dict:
    """Return the plan of every allocation (split, and sample with every m) and the recommended one.

    The recommendation is the allocation whose least precise question needs the fewest
    respondents (ties go to split, then to larger m, which keeps more crosstabs possible).
    Allocations at which a question's forced mechanism is impossible are left out (the
    first such error is raised when none is left).
    """
    planner = question_planner(respondents=respondents, margin=margin, level=level)
    allocations = []
    refused = None
    for sample in _samples(defn):
        try:
            allocations.append(plan_allocation(defn, sample=sample, respondents=respondents, margin=margin,
                                               level=level, planner=planner))
        except DefinitionError as exc:
            refused = refused or exc
    if not allocations:
        raise refused
    best = min(allocations, key=lambda allocation: allocation.respondents)
    return {
        "survey": defn.slug, "epsilon": defn.epsilon, "wave_epsilon": defn.wave_epsilon, "level": level,
        "respondents": respondents, "margin": margin,
        "recommended": {"allocation": best.allocation, "sample": best.sample},
        "allocations": [{"allocation": a.allocation, "sample": a.sample, "respondents": a.respondents,
                         "questions": [asdict(question) for question in a.questions]} for a in allocations],
    }


def recommend(defn: SurveyDefinition, *, respondents: int = DEFAULT_RESPONDENTS, margin: float = DEFAULT_MARGIN,
              level: float = DEFAULT_LEVEL) -> dict | None:
    """Return plan()'s choice among the allocations build_design accepts: {"allocation", "sample", "respondents"}.

    Allocations that give a question less than the minimum budget, or too little for its
    forced mechanism, are left out (None when none is left). The survey builder shows it beside the allocation being edited.
    """
    planner = question_planner(respondents=respondents, margin=margin, level=level)
    best = None
    for sample in _samples(defn):
        budgets, _ = allocation_budgets(defn, sample)
        if min(budgets) < MIN_QUESTION_EPSILON:
            continue
        try:
            needed = plan_allocation(defn, sample=sample, respondents=respondents, margin=margin, level=level,
                                     planner=planner).respondents
        except DefinitionError:
            continue
        if best is None or needed < best["respondents"]:
            best = {"allocation": "split" if sample is None else "sample", "sample": sample, "respondents": needed}
    return best


def nominal_warning(subject: str, epsilon: float) -> str:
    """Return the warning that ``subject``'s ε is so large that its protection is nominal (CLI and builder)."""
    return (f"{subject} has epsilon {format_epsilon(epsilon, 3)}: someone who thought an answer 50/50 can be "
            f"{percent_up(posterior_bound(epsilon), 2)} sure of it after seeing the report, so its protection is nominal")


def question_previews(defn: SurveyDefinition, *, respondents: int = DEFAULT_RESPONDENTS,
                      margin: float = DEFAULT_MARGIN, level: float = DEFAULT_LEVEL,
                      design: dict | None = None, theta: float = DEFAULT_THETA) -> list[dict]:
    """Return, per question under the definition's own allocation, what the survey builder previews.

    Each entry: the mechanism and realised ε′, ``keep`` (the chance a true answer, or under
    OUE and multi the true option's bit, is reported as itself: p), ``posterior`` (how sure
    someone who thought an answer 50/50 can be after its report, e^ε′/(1 + e^ε′)), the
    expected worst-case ``half_width`` at ``respondents`` (a share of [min, max] for a
    number, whose range is ``scale``) and the ``anytime_half_width`` valid at every look
    there, the ``respondents_needed`` for ``margin``, ``versus_direct`` (per estimand, the sensitivity
    bias above which randomizing beats asking directly at planning share ``theta``:
    ``survey.core.versus_direct``), and
    whether the protection is ``nominal`` (ε′ above NOMINAL_EPSILON); under a series' two layers,
    ``wave_epsilon``, the question's per-wave ε₁ (else None), ε′ being ε∞ per answer value. The definition
    must be one build_design accepts; ``design``, its build_design result when the caller has
    it, saves designing every question again.
    """
    sample = defn.sample if defn.allocation == "sample" else None
    budgets, share = allocation_budgets(defn, sample)
    entries = design["questions"] if design is not None else [
        design_question(question, budget, wave_share(defn, budget)) for question, budget in zip(defn.questions, budgets)]
    previews = []
    for question, entry in zip(defn.questions, entries):
        planned = plan_question(entry, respondents=respondents, margin=margin, share=share, level=level)
        previews.append({
            "id": question.id, "kind": question.kind, "mechanism": entry["mechanism"], "epsilon": entry["epsilon"],
            "keep": response_probabilities(entry)[0], "posterior": posterior_bound(entry["epsilon"]),
            "respondents": respondents, "margin": margin, "level": level, "half_width": planned.half_width,
            "respondents_needed": planned.respondents, "simultaneous_over": planned.simultaneous_over,
            "anytime_half_width": planned.anytime_half_width,
            "versus_direct": [asdict(found) for found in question_break_even(entry, respondents=respondents,
                                                                             share=share, theta=theta)],
            "scale": None if question.kind != "number" else question.max - question.min,
            "nominal": entry["epsilon"] > NOMINAL_EPSILON,
            # Only under two layers, so that other previews are unchanged.
            **({"wave_epsilon": planned.wave_epsilon} if planned.wave_epsilon is not None else {})})
    return previews


# Power of a prevalence test, as Blair, Imai & Zhou (2015, JASA, section 5) define it for a yes/no question
# randomized with known (p, q): the estimate's standard error at a share π is √(λ(1 − λ)/n)/(p − q),
# λ = q + (p − q)π (the inverse of their Fisher information c²/(λ(1 − λ)), c = p − q); the test rejects when
# the estimate passes the null's critical value(s) computed with the null's standard error, and the power is
# the chance of that under the alternative's normal law.

def prevalence_std_error(p: float, q: float, share: float, n: float) -> float:
    """Return the standard error of the debiased share from n reports when the true share is ``share``."""
    if not 0 <= share <= 1:
        raise ValueError(f"a share must be in [0, 1], got {share!r}")
    if n <= 0:
        raise ValueError(f"the respondents must be more than 0, got {n!r}")
    reported = q + (p - q) * share
    return math.sqrt(reported * (1 - reported) / n) / abs(p - q)


def _rejection_power(null: float, alternative: float, se_null: float, se_alternative: float, *,
                     alpha: float, sided: int) -> float:
    if sided == 2:
        z = float(norm.ppf(1 - alpha / 2))
        low, high = null - z * se_null, null + z * se_null
        return float(norm.cdf(low, alternative, se_alternative) + norm.sf(high, alternative, se_alternative))
    z = float(norm.ppf(1 - alpha))
    if alternative >= null:
        return float(norm.sf(null + z * se_null, alternative, se_alternative))
    return float(norm.cdf(null - z * se_null, alternative, se_alternative))


def _check_test(alpha: float, sided: int) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"the significance level must be in (0, 1), got {alpha!r}")
    if sided not in (1, 2):
        raise ValueError(f"a test is one- or two-sided (1 or 2), got {sided!r}")


def power_one_sample(p: float, q: float, *, null: float, alternative: float, n: float, alpha: float = 0.05,
                     sided: int = 2) -> float:
    """Return the power of the test of share = ``null`` when the true share is ``alternative`` (n reports).

    One-sided tests look in the alternative's direction.
    """
    _check_test(alpha, sided)
    return _rejection_power(null, alternative, prevalence_std_error(p, q, null, n),
                            prevalence_std_error(p, q, alternative, n), alpha=alpha, sided=sided)


def power_two_sample(p: float, q: float, *, share_a: float, share_b: float, n: float, alpha: float = 0.05,
                     sided: int = 2) -> float:
    """Return the power of the test of equal shares in two independent groups of n reports each.

    Under the null both groups hold ``share_b``'s share (Blair, Imai & Zhou's default null).
    """
    _check_test(alpha, sided)
    se_alternative = math.hypot(prevalence_std_error(p, q, share_a, n), prevalence_std_error(p, q, share_b, n))
    se_null = math.sqrt(2) * prevalence_std_error(p, q, share_b, n)
    return _rejection_power(0.0, share_a - share_b, se_null, se_alternative, alpha=alpha, sided=sided)


def respondents_for_power(power_at, target: float, *, most: int = 10**9) -> int:
    """Return the smallest n with ``power_at(n) >= target`` (power grows with n), or raise if even ``most`` is short."""
    if not 0 < target < 1:
        raise ValueError(f"the power must be in (0, 1), got {target!r}")
    if power_at(most) < target:
        raise ValueError(f"even {most:,} respondents do not reach {target:.0%} power: the two shares are too close")
    low, high = 1, most
    while low < high:
        middle = (low + high) // 2
        if power_at(middle) >= target:
            high = middle
        else:
            low = middle + 1
    return low


def power_plan(design: dict, question: str, first: float, second: float, *, respondents: int,
               two_sample: bool = False, alpha: float = 0.05, sided: int = 2, target: float = 0.8) -> dict:
    """Return the power of a prevalence test of a design's yes/no question at ``respondents`` and those needed.

    One group (``two_sample`` false): the test that the share is ``first`` when it is ``second``.
    Two independent groups of ``respondents`` each: that they share it when they hold ``first`` and
    ``second``. Under sample allocation only the share m/k of respondents asked the question
    counts. ValueError names an unknown question, one of another kind, or equal shares.
    """
    questions = {entry["id"]: entry for entry in design["questions"]}
    if question not in questions:
        raise ValueError(f"{question!r} is not a question of {design['slug']!r}")
    entry = questions[question]
    if entry["kind"] != "yes_no":
        raise ValueError(f"{question!r} is a {entry['kind']} question: the power is for a yes/no question's share")
    answering = int(design["sample"]) / len(design["questions"]) if design.get("allocation") == "sample" else 1.0
    p, q = mechanism_for(entry).response_probabilities()
    return prevalence_power(p, q, question, first, second, respondents=respondents, answering=answering,
                            two_sample=two_sample, alpha=alpha, sided=sided, target=target)


def prevalence_power(p: float, q: float, question: str, first: float, second: float, *, respondents: int,
                     answering: float = 1.0, two_sample: bool = False, alpha: float = 0.05, sided: int = 2,
                     target: float = 0.8) -> dict:
    """Return a prevalence test's power for a yes/no item of design (p, q) at ``respondents``, of whom the share
    ``answering`` is asked it, and the respondents needed for ``target`` (see ``power_plan``)."""
    for share in (first, second):
        if not 0 <= share <= 1:
            raise ValueError(f"a share must be in [0, 1], got {share:g}")
    if first == second:
        raise ValueError("the two shares are equal: there is nothing to detect")

    def power_at(n):
        if two_sample:
            return power_two_sample(p, q, share_a=first, share_b=second, n=n * answering, alpha=alpha, sided=sided)
        return power_one_sample(p, q, null=first, alternative=second, n=n * answering, alpha=alpha, sided=sided)

    return {"test": "two_sample" if two_sample else "one_sample", "question": question, "shares": [first, second],
            "alpha": alpha, "sided": sided, "p": p, "q": q, "respondents": respondents, "answering": answering,
            "power": power_at(respondents), "target_power": target,
            "respondents_needed": respondents_for_power(power_at, target)}
