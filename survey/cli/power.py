"""`plan --power`, `plan --power-two`, `plan --odds-ratio` and `plan --versus-direct`: the power of a prevalence test
for a yes/no question of a definition, the respondents an odds ratio between two needs, and the sensitivity bias
above which randomizing beats asking directly."""

from __future__ import annotations

import functools

import click

from .common import Share

POWER_OPTIONS = [
    click.option("--power", "one_sample", nargs=3, metavar="Q NULL SHARE", default=None,
                 help="Also: the power of the test that yes/no question Q's share is NULL when it is SHARE, and the "
                      "respondents needed for --target-power (Blair, Imai & Zhou 2015)."),
    click.option("--power-two", "two_sample", nargs=3, metavar="Q SHARE_A SHARE_B", default=None,
                 help="Also: the power of the test that two independent groups of --respondents each (two "
                      "surveys, two waves) share Q's share, when they hold SHARE_A and SHARE_B."),
    click.option("--alpha", default=0.05, show_default=True, type=Share(),
                 help="With --power or --power-two: the test's significance level."),
    click.option("--one-sided", is_flag=True, help="With --power or --power-two: a one-sided test."),
    click.option("--target-power", default=0.8, show_default=True,
                 type=Share(),
                 help="With --power or --power-two: the power the respondents needed are for."),
]


def power_options(command):
    """Add the power options to a command."""
    return functools.reduce(lambda wrapped, option: option(wrapped), reversed(POWER_OPTIONS), command)


def _share(text: str, hint: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise click.BadParameter(f"a share must be a number in [0, 1], got {text!r}", param_hint=hint) from None


def plan_power(design: dict, *, respondents: int, one_sample, two_sample, alpha: float, one_sided: bool,
               target: float) -> list[dict]:
    """Return each requested test's power at ``respondents`` and the respondents it needs (``planning.power_plan``)."""
    from ..core.planning import power_plan

    results = []
    for hint, request in (("--power", one_sample), ("--power-two", two_sample)):
        if request is None:
            continue
        qid, first, second = request
        try:
            results.append(power_plan(design, qid, _share(first, hint), _share(second, hint), respondents=respondents,
                                      two_sample=hint == "--power-two", alpha=alpha, sided=1 if one_sided else 2,
                                      target=target))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint=hint) from exc
    return results


def plan_odds_ratio(defn, odds, shares, level, respondents: int) -> dict:
    """Return what detecting an odds ratio between two yes/no questions needs, and its power at ``respondents``,
    under split allocation."""
    from ..core.design import allocate_split, design_question
    from ..core.crosstab_planning import odds_ratio_power, respondents_for_odds_ratio

    a, b, text = odds
    try:
        ratio = float(text)
    except ValueError:
        raise click.BadParameter(f"the odds ratio must be a number, got {text!r}", param_hint="--odds-ratio") from None
    entries = {question.id: design_question(question, budget)
               for question, budget in zip(defn.questions, allocate_split(defn))}
    for qid in (a, b):
        if qid not in entries:
            raise click.BadParameter(f"{qid!r} is not a question of {defn.slug!r}; its questions are "
                                     f"{', '.join(entries)}", param_hint="--odds-ratio")
    try:
        needed = respondents_for_odds_ratio(entries[a], entries[b], share_a=shares[0], share_b_without_a=shares[1],
                                            odds_ratio=ratio, level=level)
        power = odds_ratio_power(entries[a], entries[b], share_a=shares[0], share_b_without_a=shares[1],
                                 odds_ratio=ratio, respondents=respondents, level=level)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--odds-ratio") from exc
    return {"a": a, "b": b, "odds_ratio": ratio, "share_a": shares[0], "share_b_without_a": shares[1],
            "power": 0.8, "respondents": needed, "at_respondents": respondents, "power_at_respondents": power}


def plan_versus_direct(defn, *, respondents: int, theta: float) -> list[dict]:
    """Return per question its kind, scale, sentence and per-estimand break-even biases (survey's own allocation)."""
    from ..core.planning import question_previews
    from ..core.versus_direct import BreakEven, direct_sentence

    found = []
    for preview in question_previews(defn, respondents=respondents, theta=theta):
        entries = [BreakEven(**entry) for entry in preview["versus_direct"]]
        found.append({"id": preview["id"], "kind": preview["kind"], "scale": preview["scale"],
                      "sentence": direct_sentence(entries, respondents=respondents, scale=preview["scale"]),
                      "estimands": preview["versus_direct"]})
    return found


def echo_versus_direct(found: list[dict], *, respondents: int) -> None:
    """Print plan_versus_direct's result: one line per question (per option) and the reference."""
    from ..core.versus_direct import REFERENCE, bias_words

    click.echo(f"\nDirect or randomized? At {respondents:,} respondents (the survey's own allocation), randomized "
               "response has the smaller mean squared error when a direct question's sensitivity bias exceeds:")
    for question in found:
        for entry in question["estimands"]:
            name = question["id"] + (f" = {entry['option']}" if question["kind"] in ("choice", "multi") else "")
            click.echo(f"  {name}: {bias_words(entry['bias'], question['scale'])} (standard error "
                       f"{entry['rr_std_error']:.4f} randomized, {entry['direct_std_error']:.4f} direct, "
                       f"at a share of {entry['theta']:g})")
    click.echo(f"Typical: {REFERENCE}; MSE comparison as in Lensvelt-Mulders et al. (2005).")
