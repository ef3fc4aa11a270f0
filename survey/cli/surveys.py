"""Commands that define surveys and move them through their lifecycle: create, plan, share,
publish, close, reopen, invite, duplicate (``delete`` is in ``holdings``)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..core.defaults import DEFAULT_SHARES
from ..core.words import format_epsilon as eps
from .common import LEVEL, WARN_MARGIN, Share, load_design, open_store
from .power import echo_versus_direct, plan_odds_ratio, plan_power, plan_versus_direct, power_options


def _read_definition(file: Path):
    """Return the text and the validated definition of a TOML file, or fail listing every mistake (with "did you mean")."""
    from ..core.definition import DefinitionError, parse_definition_toml
    from ..core.definition_check import every_mistake

    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.ClickException(f"cannot read {file}: {exc}") from exc
    try:
        return text, parse_definition_toml(text, source=str(file))
    except DefinitionError as exc:
        mistakes = every_mistake(text, source=str(file))
        if len(mistakes) <= 1:
            raise click.ClickException(mistakes[0] if mistakes else str(exc)) from exc
        listed = "\n".join(f"  - {mistake}" for mistake in mistakes)
        raise click.ClickException(f"{len(mistakes)} mistakes in {file}, all of them:\n{listed}") from exc


def _warn_imprecise(defn, *, respondents: int, warn_margin: float, recommended: dict, design=None) -> dict:
    """Print on stderr the warning of every question too imprecise at ``respondents``; return them by id."""
    from ..core.precision import precision_warnings

    found = precision_warnings(defn, respondents=respondents, warn_margin=warn_margin, design=design,
                               recommended=recommended)
    for message in found.values():
        click.echo(f"Warning: {message}", err=True)
    return found


def _print_precision(defn, design: dict, *, respondents: int, warn_margin: float):
    """Print what the survey needs for a ±5-point margin; warn where a question is too imprecise or its protection nominal."""
    from ..core.languages import translation_warnings
    from ..core.planning import DEFAULT_MARGIN, NOMINAL_EPSILON, nominal_warning, plan, plan_allocation

    current = plan_allocation(defn, sample=defn.sample if defn.allocation == "sample" else None,
                              respondents=1000, margin=DEFAULT_MARGIN)
    click.echo(f"Precision: {current.respondents:,} respondents give every estimate a 95% margin of "
               f"±{DEFAULT_MARGIN:g} or better (`ldp-survey plan FILE` compares margins and allocations)")
    best = plan(defn, margin=DEFAULT_MARGIN)["recommended"]
    if (best["allocation"], best["sample"]) == (current.allocation, current.sample):
        click.echo("Recommended allocation: this one (no other needs fewer respondents for that margin)")
    else:
        better = plan_allocation(defn, sample=best["sample"], respondents=1000, margin=DEFAULT_MARGIN)
        chosen = "" if best["sample"] is None else f", sample = {best['sample']}"
        click.echo(f"Recommended allocation: allocation = \"{best['allocation']}\"{chosen} needs "
                   f"{better.respondents:,} respondents for the same margin")
    _warn_imprecise(defn, respondents=respondents, warn_margin=warn_margin, recommended=best, design=design)
    nominal = [nominal_warning(repr(q["id"]), q["epsilon"]) for q in design["questions"] if q["epsilon"] > NOMINAL_EPSILON]
    for warning in [*nominal, *translation_warnings(defn)]:
        click.echo(f"Warning: {warning}", err=True)


def _print_design(design: dict):
    click.echo(f"Survey {design['slug']}: {design['title']}")
    if design.get("allocation") == "sample":
        click.echo(f"Each respondent answers {design['sample']} of the {len(design['questions'])} questions, "
                   "drawn at random on their device (allocation = \"sample\")")
    width = max(len(q["id"]) for q in design["questions"])
    for q in design["questions"]:
        click.echo(f"  {q['id']:<{width}}  {q['kind']:<6}  {q['mechanism']:<9}  epsilon {eps(q['epsilon'], 6)}")
    click.echo(f"Privacy budget per respondent: {eps(design['epsilon_spent'], 6)} spent of {eps(design['epsilon'], 6)}")
    click.echo(f"Respondent page: /s/{design['slug']}")


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--replace", is_flag=True,
              help="Replace the survey with this slug (only while it has no responses).")
@click.option("--owner", metavar="EMAIL",
              help="The researcher account the survey belongs to (default: none; see `share`).")
@click.option("--draft", is_flag=True,
              help="Store it as a draft: invisible to respondents until `publish` (default: open at once).")
@click.option("--respondents", type=click.IntRange(min=1), default=1000, show_default=True,
              help="The respondents you expect: a warning names every question too imprecise at this many.")
@WARN_MARGIN
@click.pass_obj
def create(db, file, replace, owner, draft, respondents, warn_margin):
    """Create a survey from a TOML definition.

    Prints each question's mechanism and realised epsilon, the budget spent and the
    respondent page's path, and warns (on stderr) about every question whose expected
    95% margin at --respondents is wider than --warn-margin, with the respondents it
    needs, and about each text without a translation. Only its owner and collaborators see its results; a survey
    created without --owner is visible to no researcher until `share` gives it one
    (when the database has researcher accounts, a warning on stderr says so).
    The survey is open to respondents at once, or with --draft a draft until `publish`.
    A draft can be replaced freely; an open survey only while it has no responses; a
    closed one not at all.

    \b
    Examples:
      ldp-survey create examples/smoking.toml --owner alice@example.org
      ldp-survey create survey.toml --owner alice@example.org --draft
      ldp-survey --db study.db create survey.toml --replace
      ldp-survey create survey.toml --respondents 5000 --warn-margin 0.05
    """
    from ..core.design import build_design
    from ..core.releases import release_plan_sentence
    from ..store import StoreError

    text, defn = _read_definition(file)
    design = build_design(defn)
    store = open_store(db)
    try:
        store.create_survey(text, design, replace=replace, owner=owner, status="draft" if draft else None)
        status = store.survey_status(design["slug"])
        accounts = owner is None and bool(store.list_users())
    except StoreError as exc:
        exists_unanswered = store.survey_exists(design["slug"]) and not store.received_count(design["slug"])
        hint = "; pass --replace to replace it" if exists_unanswered and not replace else ""
        raise click.ClickException(f"{exc}{hint}") from exc
    finally:
        store.close()
    _print_design(design)
    _print_precision(defn, design, respondents=respondents, warn_margin=warn_margin)
    click.echo(release_plan_sentence(design))
    if status == "draft":
        click.echo(f"Draft: respondents cannot see it until `ldp-survey publish {design['slug']}`")
    if accounts:
        click.echo(f"Warning: no owner: the survey is invisible in the web to every researcher account until "
                   f"`ldp-survey share {design['slug']} EMAIL` (or create it with --owner EMAIL)", err=True)
    elif owner is None:
        click.echo(f"No owner: no researcher sees its results until `ldp-survey share {design['slug']} EMAIL`")
    if design.get("access") == "invite":
        click.echo(f"Invitation only: make links with `ldp-survey invite {design['slug']} --count N --base URL`")
    if design.get("series") and "wave_epsilon" in design:
        click.echo(f"Series {design['series']} in two layers: browsers keep one report per answer (ε∞ = each "
                   f"question's epsilon) and randomize it again in every wave (ε₁ = {eps(design['wave_epsilon'], 6)} "
                   "per wave in all), so waves' reports differ")
    elif design.get("series"):
        click.echo(f"Series {design['series']}: browsers resend their kept report of an unchanged answer in every wave")


@click.command()
@click.argument("slug")
@click.argument("email")
@click.pass_obj
def share(db, slug, email):
    """Let a researcher see a survey's results, exports and actions.

    The researcher becomes a collaborator; a survey without an owner (created without
    --owner, or from an older database) gets them as its owner.

    \b
    Examples:
      ldp-survey share smoking-2026 bob@example.org
    """
    store = open_store(db, must_exist=True)
    try:
        load_design(store, slug)
        role = store.share(slug, email.strip())
    finally:
        store.close()
    click.echo(f"{email.strip()} is now the {role} of {slug}")


def _lifecycle(db: str, slug: str, action: str) -> str:
    store = open_store(db, must_exist=True)
    try:
        load_design(store, slug)
        return getattr(store, f"{action}_survey")(slug)
    finally:
        store.close()


@click.command()
@click.argument("slug")
@click.pass_obj
def publish(db, slug):
    """Open a draft to respondents (draft -> open).

    Its design is then frozen as soon as the first response arrives.

    \b
    Examples:
      ldp-survey publish smoking-2026
    """
    _lifecycle(db, slug, "publish")
    click.echo(f"Published {slug}: respondents can answer at /s/{slug}")


@click.command()
@click.argument("slug")
@click.pass_obj
def close(db, slug):
    """Stop taking responses (open -> closed).

    The respondent page says the survey is closed, and submissions are refused (410);
    the results stay. `reopen` takes responses again.

    \b
    Examples:
      ldp-survey close smoking-2026
    """
    _lifecycle(db, slug, "close")
    click.echo(f"Closed {slug}: it takes no more responses")


@click.command()
@click.argument("slug")
@click.option("--count", required=True, type=click.IntRange(1, 100_000), help="How many links to make.")
@click.option("--base", default="http://127.0.0.1:5000", show_default=True,
              help="The public address respondents reach the server at.")
@click.pass_obj
def invite(db, slug, count, base):
    """Print COUNT single-use invitation links, one per line.

    The survey's definition needs access = "invite". Each link admits one response; an
    unknown token is refused (403), a used one too (409), and neither stores anything.
    Only a hash of each token is kept, apart from the responses: keep the printed links,
    they cannot be shown again. Which invitee answered what can never be told.

    \b
    Examples:
      ldp-survey invite panel-2026 --count 30 --base https://surveys.example.org > links.txt
      ldp-survey --db study.db invite panel-2026 --count 1
    """
    from ..core.invitations import check_base, invitation_links

    try:
        check_base(base)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    store = open_store(db, must_exist=True)
    try:
        load_design(store, slug)
        tokens = store.create_invitations(slug, count)
    finally:
        store.close()
    click.echo("\n".join(invitation_links(base, slug, tokens)))


@click.command()
@click.argument("slug")
@click.option("--now", is_flag=True, help="Release the held responses now, fewer than the step (asks first).")
@click.option("--yes", is_flag=True, help="With --now: do not ask.")
@click.pass_obj
def release(db, slug, now, yes):
    """Show a survey's releases, or release its held responses early.

    Results change only when another release_every responses have arrived (the survey's
    definition; the planner's default halves ε). Until then new responses are held: counted
    here, in no result, export or API answer. Releasing them early protects their respondents
    only by the central ε of that smaller batch, which this command says before asking.

    \b
    Examples:
      ldp-survey release smoking-2026
      ldp-survey release smoking-2026 --now
      ldp-survey --db study.db release smoking-2026 --now --yes
    """
    from ..core.releases import early_release_warning, release_sentence, release_view

    store = open_store(db, must_exist=True)
    try:
        design = load_design(store, slug)
        state = store.release_state(slug)
        view = release_view(design, released=state["released"], held=state["held"],
                            smallest_release=state["smallest_release"])
        if not now:
            click.echo(release_sentence(view))
            return
        if not view.held:
            click.echo("No responses are held: nothing to release.")
            return
        click.echo(early_release_warning(view))
        if not yes:
            click.confirm("Release them now?", abort=True)
        moved = store.release_held(slug)
    finally:
        store.close()
    click.echo(f"Released {moved:,} held response{'' if moved == 1 else 's'} of {slug}")


@click.command()
@click.argument("slug")
@click.pass_obj
def reopen(db, slug):
    """Take responses again (closed -> open).

    \b
    Examples:
      ldp-survey reopen smoking-2026
    """
    _lifecycle(db, slug, "reopen")
    click.echo(f"Reopened {slug}: it takes responses again at /s/{slug}")


@click.command()
@click.argument("slug")
@click.argument("new_slug")
@click.pass_obj
def duplicate(db, slug, new_slug):
    """Copy a survey into a new draft under NEW_SLUG.

    The copy has the same definition (with the slug replaced), owner and collaborators,
    no responses, and a design of its own; edit it with `create --replace`, then
    `publish` it.

    \b
    Examples:
      ldp-survey duplicate smoking-2026 smoking-2027
    """
    from ..core.definition_toml import definition_with_slug

    store = open_store(db, must_exist=True)
    try:
        load_design(store, slug)
        text, design = definition_with_slug(store.get_definition(slug), new_slug)
        store.duplicate_survey(slug, text, design)
    finally:
        store.close()
    click.echo(f"Duplicated {slug} into the draft {new_slug}; publish it with `ldp-survey publish {new_slug}`")




@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--respondents", type=click.IntRange(min=1), default=None,
              help="Respondents to plan for: the expected 95% margin of each question at this many "
                   "(default 1000).")
@click.option("--margin", type=Share(), default=None,
              help="Target margin, a share (0.05 for ±5 points): the respondents each allocation needs "
                   "(default 0.05).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="Output format.")
@click.option("--odds-ratio", "odds", nargs=3, metavar="A B OR", default=None,
              help="Also: the respondents needed to detect this odds ratio between yes/no questions A and B "
                   "(its interval excluding 1 with 80% power), under split allocation.")
@click.option("--shares", nargs=2, type=Share(), default=DEFAULT_SHARES,
              show_default=True, metavar="P_A P_B",
              help="With --odds-ratio: the expected share with A, and with B among those without A.")
@click.option("--versus-direct", is_flag=True,
              help="Also: per question (per option), the sensitivity bias above which randomized response has a "
                   "smaller mean squared error than asking directly, at --respondents under the survey's own "
                   "allocation (typical biases are under 10 points: Blair, Coppock & Moor 2020).")
@click.option("--theta", type=Share(), default=0.5, show_default=True,
              metavar="SHARE",
              help="With --versus-direct: the true share planned for (a number: the direct answers' worst case "
                   "at that share of the range).")
@power_options
@WARN_MARGIN
@LEVEL
def plan(file, respondents, margin, fmt, level, odds, shares, warn_margin, one_sample, two_sample, alpha, one_sided,
         target_power, versus_direct, theta):
    """Plan margins and the respondents a survey needs.

    For `split` and for `sample` with every m: each question's mechanism, realised
    epsilon, expected worst-case margin (interval half-width, a share; for a number, a
    share of its range) at --respondents, and the respondents the survey needs for
    --margin; then the allocation that needs the fewest. Beside each margin, the margin
    of intervals valid at every look (`aggregate --intervals anytime`: check as often as
    you like and stop whenever) at the same respondents. Choice and multi questions
    use intervals simultaneous over their options. A warning (on stderr; `warnings` in
    JSON) names every question whose margin under the survey's own allocation is wider
    than --warn-margin, with the respondents it needs. With --versus-direct, per question
    the bias b* = sqrt(V/n_rr - theta(1 - theta)/n) above which randomizing has the smaller
    mean squared error than a direct question (biased by b, variance theta(1 - theta)/n).

    \b
    Examples:
      ldp-survey plan examples/athletes.toml
      ldp-survey plan survey.toml --respondents 5000
      ldp-survey plan survey.toml --margin 0.03 --format json
      ldp-survey plan examples/smoking.toml --odds-ratio smoker lung_disease 3 --shares 0.22 0.06
      ldp-survey plan survey.toml --respondents 2000 --warn-margin 0.05
      ldp-survey plan examples/smoking.toml --power smoker 0.2 0.3 --respondents 3000
      ldp-survey plan examples/smoking.toml --power-two smoker 0.3 0.2 --one-sided
      ldp-survey plan examples/smoking.toml --versus-direct --respondents 2000
      ldp-survey plan examples/smoking.toml --versus-direct --theta 0.2 --format json
    """
    from ..core.design import build_design
    from ..core.planning import DEFAULT_MARGIN, DEFAULT_RESPONDENTS, plan as make_plan
    from ..core.precision import power_sentence, precision_warnings

    if respondents is not None and margin is not None:
        raise click.UsageError("give --respondents or --margin, not both")
    _, defn = _read_definition(file)
    result = make_plan(defn, respondents=respondents or DEFAULT_RESPONDENTS, margin=margin or DEFAULT_MARGIN,
                       level=level)
    if odds is not None:
        result["odds_ratio"] = plan_odds_ratio(defn, odds, shares, level, result["respondents"])
    if one_sample is not None or two_sample is not None:
        result["power"] = plan_power(build_design(defn), respondents=result["respondents"],
                                     one_sample=one_sample, two_sample=two_sample, alpha=alpha, one_sided=one_sided,
                                     target=target_power)
    if versus_direct:
        result["versus_direct"] = plan_versus_direct(defn, respondents=result["respondents"], theta=theta)
    if fmt == "json":
        result["warnings"] = [{"id": qid, "message": message} for qid, message in precision_warnings(
            defn, respondents=result["respondents"], warn_margin=warn_margin, level=level,
            recommended=result["recommended"]).items()]
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(f"{defn.slug}: epsilon {eps(defn.epsilon, 6)} per respondent; {format(level * 100, 'g')}% intervals; "
               f"margins at {result['respondents']} respondents (at the end, and valid at every look), "
               f"respondents for ±{result['margin']:g}")
    if defn.wave_epsilon is not None:
        click.echo(f"series {defn.series} in two layers: epsilon below is ε∞ per answer value over every wave; each "
                   f"wave randomizes the kept reports again at ε₁ = {eps(defn.wave_epsilon, 6)} in all (per question "
                   "below), which bounds what two linked waves show of a change of answer")
    for allocation in result["allocations"]:
        name = "split" if allocation["sample"] is None else f"sample {allocation['sample']} of {len(defn.questions)}"
        click.echo(f"\n{name}: needs {allocation['respondents']:,} respondents")
        width = max(len(question["id"]) for question in allocation["questions"])
        for question in allocation["questions"]:
            wave = "" if question["wave_epsilon"] is None else f"  ε₁ {eps(question['wave_epsilon'], 4):<8}"
            click.echo(f"  {question['id']:<{width}}  {question['mechanism']:<9}  epsilon {eps(question['epsilon'], 4):<8}"
                       f"{wave}  ±{question['half_width']:.3f} at the end, ±{question['anytime_half_width']:.3f} at every look"
                       f"  {question['respondents']:>12,} respondents")
    if odds is not None:
        detect = result["odds_ratio"]
        click.echo(f"\nTo detect an odds ratio of {detect['odds_ratio']:g} between {detect['a']} and {detect['b']} "
                   f"(share with {detect['a']} {detect['share_a']:g}, with {detect['b']} among the others "
                   f"{detect['share_b_without_a']:g}) with {detect['power']:.0%} power under split: "
                   f"{detect['respondents']:,} respondents; at {detect['at_respondents']:,} respondents the power "
                   f"is {detect['power_at_respondents']:.1%}")
    for power in result.get("power", []):
        click.echo("\n" + power_sentence(power))
    if versus_direct:
        echo_versus_direct(result["versus_direct"], respondents=result["respondents"])
    best = result["recommended"]
    chosen = "split" if best["sample"] is None else f"sample = {best['sample']}"
    click.echo(f"\nRecommended: allocation = \"{best['allocation']}\"" + ("" if best["sample"] is None
                                                                         else f", {chosen}"))
    _warn_imprecise(defn, respondents=result["respondents"], warn_margin=warn_margin, recommended=best)
