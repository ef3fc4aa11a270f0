"""`plan --power` and `plan --power-two`: the power of a prevalence test for a yes/no question of a definition."""

from __future__ import annotations

import functools

import click

POWER_OPTIONS = [
    click.option("--power", "one_sample", nargs=3, metavar="Q NULL SHARE", default=None,
                 help="Also: the power of the test that yes/no question Q's share is NULL when it is SHARE, and the "
                      "respondents needed for --target-power (Blair, Imai & Zhou 2015)."),
    click.option("--power-two", "two_sample", nargs=3, metavar="Q SHARE_A SHARE_B", default=None,
                 help="Also: the power of the test that two independent groups of --respondents each (two "
                      "surveys, two waves) share Q's share, when they hold SHARE_A and SHARE_B."),
    click.option("--alpha", default=0.05, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True),
                 help="With --power or --power-two: the test's significance level."),
    click.option("--one-sided", is_flag=True, help="With --power or --power-two: a one-sided test."),
    click.option("--target-power", default=0.8, show_default=True,
                 type=click.FloatRange(0, 1, min_open=True, max_open=True),
                 help="With --power or --power-two: the power the respondents needed are for."),
]


def power_options(command):
    """Add the power options to a command."""
    return functools.reduce(lambda wrapped, option: option(wrapped), reversed(POWER_OPTIONS), command)


def _share(text: str, hint: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise click.BadParameter(f"a share must be a number in [0, 1], got {text!r}", param_hint=hint) from None
    if not 0 <= value <= 1:
        raise click.BadParameter(f"a share must be in [0, 1], got {text}", param_hint=hint)
    return value


def plan_power(defn, design: dict, *, respondents: int, one_sample, two_sample, alpha: float, one_sided: bool,
               target: float) -> list[dict]:
    """Return each requested test's power at ``respondents`` and the respondents it needs for ``target``."""
    from ..core.mechanisms import mechanism_for
    from ..core.planning import power_one_sample, power_two_sample, respondents_for_power

    questions = {question["id"]: question for question in design["questions"]}
    answering = (int(design["sample"]) / len(design["questions"]) if design.get("allocation") == "sample" else 1.0)
    sided = 1 if one_sided else 2
    results = []
    for hint, request in (("--power", one_sample), ("--power-two", two_sample)):
        if request is None:
            continue
        qid, first, second = request
        if qid not in questions:
            raise click.BadParameter(f"{qid!r} is not a question of {defn.slug!r}", param_hint=hint)
        if questions[qid]["kind"] != "yes_no":
            raise click.BadParameter(f"{qid!r} is a {questions[qid]['kind']} question: the power is for a yes/no "
                                     "question's share", param_hint=hint)
        first, second = _share(first, hint), _share(second, hint)
        if first == second:
            raise click.BadParameter("the two shares are equal: there is nothing to detect", param_hint=hint)
        p, q = mechanism_for(questions[qid]).response_probabilities()
        if hint == "--power":
            def power_at(n, null=first, share=second):
                return power_one_sample(p, q, null=null, alternative=share, n=n * answering, alpha=alpha, sided=sided)
        else:
            def power_at(n, share_a=first, share_b=second):
                return power_two_sample(p, q, share_a=share_a, share_b=share_b, n=n * answering, alpha=alpha,
                                        sided=sided)
        try:
            needed = respondents_for_power(power_at, target)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint=hint) from exc
        results.append({"test": "one_sample" if hint == "--power" else "two_sample", "question": qid,
                        "shares": [first, second], "alpha": alpha, "sided": sided, "p": p, "q": q,
                        "respondents": respondents, "answering": answering,
                        "power": power_at(respondents), "target_power": target, "respondents_needed": needed})
    return results


def power_sentence(result: dict) -> str:
    """Return one power result in words."""
    first, second = result["shares"]
    sided = "one-sided" if result["sided"] == 1 else "two-sided"
    if result["test"] == "one_sample":
        test = f"that {result['question']}'s share is {first:g} when it is {second:g}"
        people = f"{result['respondents']:,} respondents"
        needed = f"{result['respondents_needed']:,} respondents"
    else:
        test = f"that two groups share {result['question']}'s share when they hold {first:g} and {second:g}"
        people = f"{result['respondents']:,} respondents per group"
        needed = f"{result['respondents_needed']:,} respondents per group"
    asked = "" if result["answering"] == 1 else f" ({result['answering']:.0%} of them asked it)"
    return (f"Power of the {sided} test at level {result['alpha']:g} {test}, at {people}{asked}: "
            f"{result['power']:.1%}; for {result['target_power']:.0%} power: {needed}.")
