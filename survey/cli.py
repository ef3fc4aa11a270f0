"""The ``ldp-survey`` command line: create surveys, serve them, simulate, aggregate and export.

Every command is a thin layer over the core modules; user errors (a bad definition, an
unknown survey, a bad --truth) become one-line messages, never tracebacks.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
import sys
from pathlib import Path

import click
import numpy as np

from .core.definition import DefinitionError, parse_definition_toml
from .core.design import build_design
from .core.reports import ReportError
from .resources import resource_dir
from .core.simulate import (TruthError, batch_count, complete_truth, format_given, format_truth, parse_given,
                       parse_truth, simulate_report_batches)
from .store import Store, StoreError, SurveyClosed, SurveyNotFound

DEFAULT_DB = "ldp-survey.db"
DEMO_SLUG = "smoking-2026"
DEMO_EMAIL = "demo@example.org"
# A plausible population for the demo survey, so the dashboard shows something worth reading.
# Lung disease is three times as common among smokers (18% against 6%), and non-smokers smoke no
# cigarettes, so the crosstabs show a link; DEMO_TRUTH's lung_disease and cigarettes are the
# margins the givens override.
DEMO_TRUTH = {"smoker": "0.22", "lung_disease": "0.0864", "cigarettes": "0.78,0.077,0.066,0.055,0.022",
              "age": "47"}
DEMO_GIVEN = ["lung_disease|smoker=1:0.18", "lung_disease|smoker=0:0.06", "cigarettes|smoker=0:none",
              "cigarettes|smoker=1:0,0.35,0.3,0.25,0.1"]
# At the demo's epsilon (0.57 per yes/no question) the smoker x lung_disease odds ratio (3.4) needs
# about 500,000 respondents for its 95% interval to exclude 1 (about 5 standard errors).
DEMO_RESPONDENTS = 500_000
MIN_PASSWORD_LENGTH = 8
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
USER_ERRORS = (DefinitionError, StoreError, ReportError, TruthError)


def _version() -> str:
    """Return the installed distribution's version, or the one in a source checkout's pyproject.toml."""
    from importlib import metadata

    try:
        return metadata.version("ldp-survey")
    except metadata.PackageNotFoundError:
        import tomllib

        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]


class SurveyGroup(click.Group):
    """A click group that turns the core's user errors into ClickException messages."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except USER_ERRORS as exc:
            raise click.ClickException(str(exc)) from exc
        except sqlite3.DatabaseError as exc:
            raise click.ClickException(f"cannot use the database {ctx.obj!s}: {exc}") from exc


def open_store(db: str, *, must_exist: bool = False) -> Store:
    """Open the database, refusing to create an empty one when ``must_exist``."""
    if must_exist and db != ":memory:" and not Path(db).is_file():
        raise click.ClickException(f"no database at {db}; create a survey first with "
                                   f"`ldp-survey --db {db} create FILE.toml`")
    return Store(db)


def load_design(store: Store, slug: str) -> dict:
    """Return a survey's design, or fail with the list of slugs the database holds."""
    try:
        return store.get_design(slug)
    except SurveyNotFound as exc:
        slugs = [survey["slug"] for survey in store.list_surveys()]
        known = f"; surveys here: {', '.join(slugs)}" if slugs else "; this database has no survey yet"
        raise click.ClickException(f"{exc}{known}") from exc


def echo_formatted(fmt: str, result, *, to_csv, to_json, to_table):
    """Print a result as CSV (no extra newline), indented JSON or an aligned table."""
    if fmt == "csv":
        click.echo(to_csv(result), nl=False)
    elif fmt == "json":
        click.echo(json.dumps(to_json(result), indent=2))
    else:
        click.echo(to_table(result))


def stderr_progress(iterable, *, length: int, label: str):
    """Return a click progress bar on stderr, so stdout stays clean for data."""
    return click.progressbar(iterable, length=length, label=label, file=sys.stderr)


@click.group(cls=SurveyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", default=DEFAULT_DB, envvar="LDP_SURVEY_DB", show_default=True, show_envvar=True,
              type=click.Path(dir_okay=False), help="SQLite database holding surveys, responses and accounts.")
@click.version_option(_version(), "--version", prog_name="ldp-survey")
@click.pass_context
def main(ctx, db):
    """Surveys under local differential privacy.

    Every answer is randomized in the respondent's browser; the server stores only the
    noisy reports and debiases them into estimates with confidence intervals.

    \b
    Examples:
      ldp-survey demo
      ldp-survey --db study.db create examples/smoking.toml
      ldp-survey --db study.db serve --port 8000
    """
    ctx.obj = db


def _print_precision(defn, design: dict):
    """Print what the survey needs for a ±5-point margin, and warn where an answer's protection is nominal."""
    from .core.planning import DEFAULT_MARGIN, NOMINAL_EPSILON, nominal_warning, plan, plan_allocation

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
    for question in design["questions"]:
        if question["epsilon"] > NOMINAL_EPSILON:
            click.echo(f"Warning: {nominal_warning(repr(question['id']), question['epsilon'])}", err=True)


def _print_design(design: dict):
    click.echo(f"Survey {design['slug']}: {design['title']}")
    if design.get("allocation") == "sample":
        click.echo(f"Each respondent answers {design['sample']} of the {len(design['questions'])} questions, "
                   "drawn at random on their device (allocation = \"sample\")")
    width = max(len(q["id"]) for q in design["questions"])
    for q in design["questions"]:
        click.echo(f"  {q['id']:<{width}}  {q['kind']:<6}  {q['mechanism']:<9}  epsilon {q['epsilon']:.6g}")
    click.echo(f"Privacy budget per respondent: {design['epsilon_spent']:.6g} spent of {design['epsilon']:g}")
    click.echo(f"Respondent page: /s/{design['slug']}")


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--replace", is_flag=True,
              help="Replace the survey with this slug (only while it has no responses).")
@click.option("--owner", metavar="EMAIL",
              help="The researcher account the survey belongs to (default: none; see `share`).")
@click.option("--draft", is_flag=True,
              help="Store it as a draft: invisible to respondents until `publish` (default: open at once).")
@click.pass_obj
def create(db, file, replace, owner, draft):
    """Create a survey from a TOML definition.

    Prints each question's mechanism and realised epsilon, the budget spent and the
    respondent page's path. Only its owner and collaborators see its results; a survey
    created without --owner is visible to no researcher until `share` gives it one.
    The survey is open to respondents at once, or with --draft a draft until `publish`.
    A draft can be replaced freely; an open survey only while it has no responses; a
    closed one not at all.

    \b
    Examples:
      ldp-survey create examples/smoking.toml --owner alice@example.org
      ldp-survey create survey.toml --owner alice@example.org --draft
      ldp-survey --db study.db create survey.toml --replace
    """
    text, defn = _read_definition(file)
    design = build_design(defn)
    store = open_store(db)
    try:
        store.create_survey(text, design, replace=replace, owner=owner, status="draft" if draft else None)
        status = store.survey_status(design["slug"])
    except StoreError as exc:
        exists_unanswered = store.survey_exists(design["slug"]) and not store.response_count(design["slug"])
        hint = "; pass --replace to replace it" if exists_unanswered and not replace else ""
        raise click.ClickException(f"{exc}{hint}") from exc
    finally:
        store.close()
    _print_design(design)
    _print_precision(defn, design)
    if status == "draft":
        click.echo(f"Draft: respondents cannot see it until `ldp-survey publish {design['slug']}`")
    if owner is None:
        click.echo(f"No owner: no researcher sees its results until `ldp-survey share {design['slug']} EMAIL`")
    if design.get("access") == "invite":
        click.echo(f"Invitation only: make links with `ldp-survey invite {design['slug']} --count N --base URL`")
    if design.get("series"):
        click.echo(f"Series {design['series']}: browsers resend their kept report of an unchanged answer in every wave")


@main.command()
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


@main.command()
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


@main.command()
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


@main.command()
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
    from .core.invitations import check_base, invitation_links

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


@main.command()
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


@main.command()
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
    from .web.lifecycle import definition_with_slug

    store = open_store(db, must_exist=True)
    try:
        load_design(store, slug)
        text, design = definition_with_slug(store.get_definition(slug), new_slug)
        store.duplicate_survey(slug, text, design)
    finally:
        store.close()
    click.echo(f"Duplicated {slug} into the draft {new_slug}; publish it with `ldp-survey publish {new_slug}`")


@main.command()
@click.argument("slug")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def delete(db, slug, yes):
    """Delete a draft (only a draft: it has no responses).

    \b
    Examples:
      ldp-survey delete smoking-2027
      ldp-survey delete smoking-2027 --yes
    """
    store = open_store(db, must_exist=True)
    try:
        load_design(store, slug)
        status = store.survey_status(slug)
        if status != "draft":
            store.delete_draft(slug)  # raises the StoreError naming the status and what it allows
        if not yes:
            click.confirm(f"Delete the draft {slug}?", abort=True)
        store.delete_draft(slug)
    finally:
        store.close()
    click.echo(f"Deleted the draft {slug}")


def _listen(host: str, port: int):
    """Return a socket listening on host:port, or fail with one clear error line."""
    from .web import server

    try:
        return server.listen(host, port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port} ({exc.strerror or exc}); "
                                   "choose another --port or --host") from exc


def _serve(db: str, host: str, port: int, *, listener=None, workers: int | None = None,
           threads: int | None = None, https: bool = False, per_minute: int | None = None, proxies: int = 0):
    """Serve the app with gunicorn until SIGTERM or Ctrl+C (see survey.web.server).

    ``listener`` is a socket already listening on host:port (bound first, so a busy port
    fails before any work is done); without one it is bound here.
    """
    from .web import create_app, server

    listener = listener or _listen(host, port)
    try:
        # Created once, in the master, before the workers fork: migrations run once, and
        # create_app leaves no SQLite connection open for the workers to inherit.
        # Behind an HTTPS proxy the session cookie (which carries the CSRF token) must be Secure.
        config = {"DATABASE": db, "SESSION_COOKIE_SECURE": https, "HSTS": https, "PROXIES": proxies}
        if per_minute is not None:
            config["MAX_SUBMISSIONS_PER_MINUTE"] = per_minute
        app = create_app(config)
    except BaseException:
        listener.close()
        raise
    message = f"Serving {db} on {server.origin(host, port)}/ (press Ctrl+C to stop)"
    server.serve(app, listener, workers=workers, threads=threads or server.DEFAULT_THREADS,
                 on_ready=lambda: click.echo(message))


HOST = click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
PORT = click.option("--port", default=5000, show_default=True, type=click.IntRange(1, 65535),
                    help="TCP port to listen on.")


@main.command()
@HOST
@PORT
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="Worker processes.  [default: the number of CPUs, at most 8]")
@click.option("--threads", default=8, show_default=True, type=click.IntRange(1, 256),
              help="Threads per worker process.")
@click.option("--https", is_flag=True,
              help="The public address is HTTPS (a TLS proxy in front): send cookies only over HTTPS.")
@click.option("--max-submissions-per-minute", "per_minute", default=120, show_default=True,
              type=click.IntRange(0, 1_000_000),
              help="Submissions one client address may send per minute, across all workers (in memory "
                   "only); beyond it 429. 0 turns the limit off (load tests).")
@click.option("--proxies", default=0, show_default=True, type=click.IntRange(0, 8),
              help="Reverse proxies in front of the server whose X-Forwarded-For to trust, so that the "
                   "flood limit counts each client's own address (never stored). 0: the header is ignored.")
@click.pass_obj
def serve(db, host, port, workers, threads, https, per_minute, proxies):
    """Serve the survey pages and the dashboard (gunicorn).

    The app is loaded once, then --workers processes of --threads threads each answer
    requests. No access log is kept: no client address or user agent is ever logged;
    errors go to stderr. SIGTERM stops gracefully (requests in flight get up to 30
    seconds to finish); Ctrl+C stops at once. GET /healthz answers without touching the
    database, for load balancers.

    \b
    Examples:
      ldp-survey serve
      ldp-survey --db study.db serve --host 0.0.0.0 --port 8000
      ldp-survey --db study.db serve --workers 4 --threads 16
      ldp-survey --db study.db serve --port 8000 --https   # behind a TLS proxy
      ldp-survey --db study.db serve --max-submissions-per-minute 0   # load tests only
      ldp-survey --db study.db serve --https --proxies 1   # behind one proxy (nginx, a load balancer)
    """
    _serve(db, host, port, workers=workers, threads=threads, https=https, per_minute=per_minute, proxies=proxies)


def _simulate_into(store: Store, design: dict, *, n: int, truth: dict, seed: int, batch: int,
                   given: dict | None = None) -> dict:
    """Simulate n respondents into the store and return the full truth used."""
    truth_rng, answer_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    truth = complete_truth(design, truth, truth_rng)
    batches = simulate_report_batches(design, truth, n=n, batch=batch, rng=answer_rng, given=given)
    with stderr_progress(batches, length=batch_count(n, batch), label=f"Simulating {n} respondents") as bar:
        for columns, asked in bar:
            store.add_report_columns(design["slug"], design["hash"], columns, asked=asked)
    return truth


def _seed(seed: int | None) -> int:
    return secrets.randbits(32) if seed is None else seed


SEED = click.option("--seed", type=click.IntRange(min=0), default=None,
                    help="Seed of the simulation (default: random, printed).")


@main.command()
@click.argument("slug")
@click.option("--n", "n", required=True, type=click.IntRange(min=1), help="Number of respondents to simulate.")
@click.option("--truth", "truths", multiple=True, metavar="Q=V",
              help="True population value of question Q (repeatable): yes_no a share in [0,1]; "
                   "choice one probability per option (comma-separated, summing to 1) or an option label; "
                   "multi one inclusion probability per option; number the mean in [min,max]. "
                   "Questions left out get a random truth, printed.")
@click.option("--given", "givens", multiple=True, metavar="B|A=V:P",
              help="Make B depend on A (repeatable): among respondents whose A is V (yes_no: 1 or 0; "
                   "choice: an option label), B's truth is P, written as --truth writes it. "
                   "Other respondents draw B from B's own truth.")
@SEED
@click.option("--batch", default=100_000, show_default=True, type=click.IntRange(min=1),
              help="Respondents stored per transaction.")
@click.pass_obj
def simulate(db, slug, n, truths, givens, seed, batch):
    """Add simulated respondents, randomized as a browser would.

    Prints the truth used, in the Q=V form --truth accepts. Questions are drawn
    independently unless --given links them.

    \b
    Examples:
      ldp-survey simulate smoking-2026 --n 5000 --seed 1
      ldp-survey simulate smoking-2026 --n 2000 --truth smoker=0.3 --truth cigarettes=none
      ldp-survey simulate smoking-2026 --n 100000 --truth smoker=0.22 \\
          --given "lung_disease|smoker=1:0.18" --given "lung_disease|smoker=0:0.06"
    """
    store = open_store(db, must_exist=True)
    try:
        design = load_design(store, slug)
        if store.survey_status(slug) != "open":
            raise SurveyClosed(f"survey {slug!r} is {store.survey_status(slug)} and takes no responses; "
                               f"{'publish' if store.survey_status(slug) == 'draft' else 'reopen'} it first")
        given = parse_truth(design, truths)
        links = parse_given(design, givens)
        seed = _seed(seed)
        truth = _simulate_into(store, design, n=n, truth=given, seed=seed, batch=batch, given=links)
        total = store.response_count(slug)
    finally:
        store.close()
    click.echo(f"Added {n} simulated responses to {slug} (now {total}); seed {seed}")
    click.echo("Truth used:")
    click.echo(format_truth(design, truth))
    if links:
        click.echo("Given:")
        click.echo(format_given(design, links))


LEVEL = click.option("--level", default=0.95, show_default=True,
                     type=click.FloatRange(0, 1, min_open=True, max_open=True),
                     help="Confidence level of the intervals, in (0, 1).")


@main.command()
@click.argument("slug")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table",
              show_default=True, help="Output format.")
@LEVEL
@click.pass_obj
def aggregate(db, slug, fmt, level):
    """Print debiased estimates with confidence intervals.

    \b
    Examples:
      ldp-survey aggregate smoking-2026
      ldp-survey aggregate smoking-2026 --format csv --level 0.99 > estimates.csv
    """
    from .core import aggregate as agg

    store = open_store(db, must_exist=True)
    try:
        design = load_design(store, slug)
        rows = agg.aggregate_counts(design, store.question_counts(slug), level=level)
    finally:
        store.close()
    echo_formatted(fmt, rows, to_csv=agg.rows_to_csv, to_json=agg.rows_to_json, to_table=agg.rows_to_table)


@main.command()
@click.argument("slug")
@click.argument("a")
@click.argument("b")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table",
              show_default=True, help="Output format.")
@LEVEL
@click.pass_obj
def crosstab(db, slug, a, b, fmt, level):
    """Cross two questions: joint and conditional shares, odds ratios.

    Among the respondents who answered both A and B (under sample allocation, those who
    drew both; a survey with sample = 1 has no crosstabs): the share with each pair of options
    (a yes/no question also gets its "no"), the share with B's option among those with A's
    option, the odds ratio of two yes/no questions, and the mean of a number B among those
    with each option of A, each with a normal interval at --level on its delta-method
    standard error (the odds ratio's on the log scale).

    \b
    Examples:
      ldp-survey crosstab smoking-2026 smoker lung_disease
      ldp-survey crosstab smoking-2026 smoker age --format csv > smoker-age.csv
      ldp-survey crosstab smoking-2026 cigarettes lung_disease --format json --level 0.9
    """
    from .core import crosstab as xt

    store = open_store(db, must_exist=True)
    try:
        design = load_design(store, slug)
        questions = {question["id"]: question for question in design["questions"]}
        unknown = [qid for qid in (a, b) if qid not in questions]
        if unknown:
            raise click.ClickException(f"{unknown[0]!r} is not a question of {slug!r}; "
                                       f"its questions are {', '.join(questions)}")
        try:
            xt.check_allocation(design)
            xt.check_pair(questions[a], questions[b])
        except xt.CrosstabError as exc:
            raise click.ClickException(str(exc)) from exc
        words_a, words_b, counts = store.joint_reports(slug, a, b)
    finally:
        store.close()
    table = xt.crosstab(questions[a], questions[b], words_a, words_b, counts, level=level)
    echo_formatted(fmt, table, to_csv=xt.crosstab_to_csv, to_json=xt.crosstab_to_json, to_table=xt.crosstab_to_table)


@main.command()
@click.argument("slug")
@click.option("--aggregates", is_flag=True, help="Export the debiased estimates (CSV).")
@click.option("--responses", is_flag=True,
              help="Export the noisy reports, one row per response, one column per report bit (CSV).")
@click.option("--codebook", is_flag=True,
              help="Export the codebook (JSON): what each responses column means, and how every "
                   "aggregates row follows from it.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="File to write (default: standard output).")
@LEVEL
@click.pass_obj
def export(db, slug, aggregates, responses, codebook, output, level):
    """Export a survey's aggregates, noisy responses or codebook.

    The responses CSV has response_id, received_day, then per question its columns: one
    0/1 column per bit of a bit-list report (sports__run, sports__swim), one column for
    any other report (0/1, or a choice's option index). The codebook explains every
    column and gives, per aggregates row, the column, value, p and q to recompute it.

    \b
    Examples:
      ldp-survey export smoking-2026 --aggregates -o estimates.csv
      ldp-survey export smoking-2026 --responses > reports.csv
      ldp-survey export smoking-2026 --codebook -o codebook.json
    """
    from .core import aggregate as agg
    from .core.codebook import codebook as make_codebook
    from .core.export import responses_csv

    chosen = [name for name, flag in (("--aggregates", aggregates), ("--responses", responses),
                                      ("--codebook", codebook)) if flag]
    if not chosen:
        raise click.UsageError("choose what to export: --aggregates, --responses or --codebook")
    if len(chosen) > 1:
        raise click.UsageError(f"{' and '.join(chosen)} cannot go together: export one file at a time")
    what = chosen[0][2:]
    store = open_store(db, must_exist=True)
    try:
        design = load_design(store, slug)
        if what == "aggregates":
            text = agg.rows_to_csv(agg.aggregate_counts(design, store.question_counts(slug), level=level))
        elif what == "codebook":
            text = json.dumps(make_codebook(design), indent=2, ensure_ascii=False) + "\n"
        else:
            text = responses_csv(design, store.iter_responses(slug))
    finally:
        store.close()
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        with output.open("w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc}") from exc
    click.echo(f"Wrote {what} of {slug} to {output}", err=True)


@main.command()
@click.argument("destination", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_obj
def backup(db, destination):
    """Copy the database to a new file, safely while the server runs.

    Uses SQLite's online backup API: the copy is one consistent snapshot even while
    respondents submit, is checked with PRAGMA integrity_check, and is created readable
    only by its owner. DESTINATION must not exist yet.

    \b
    Examples:
      ldp-survey backup backups/survey-2026-11-22.db
      ldp-survey --db /srv/ldp/ldp-survey.db backup /mnt/backup/ldp-survey.db
    """
    store = open_store(db, must_exist=True)
    try:
        store.backup(destination)
    finally:
        store.close()
    copy = Store(destination, migrate=False)
    try:
        verdict = copy.integrity_check()
        surveys = copy.list_surveys()
    finally:
        copy.close()
    if verdict != "ok":
        raise click.ClickException(f"the copy at {destination} failed its integrity check: {verdict}")
    responses = sum(survey["responses"] for survey in surveys)
    click.echo(f"Backed up {db} to {destination}: {len(surveys)} surveys, {responses} responses, integrity ok")


def _read_definition(file: Path):
    """Return the text and the validated definition of a TOML file, or fail with one clear line."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.ClickException(f"cannot read {file}: {exc}") from exc
    return text, parse_definition_toml(text, source=str(file))


def _plan_odds_ratio(defn, odds, shares, level) -> dict:
    """Return what detecting an odds ratio between two yes/no questions needs, under split allocation."""
    from .core.design import allocate_split, design_question
    from .core.planning import respondents_for_odds_ratio

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
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--odds-ratio") from exc
    return {"a": a, "b": b, "odds_ratio": ratio, "share_a": shares[0], "share_b_without_a": shares[1],
            "power": 0.8, "respondents": needed}


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--respondents", type=click.IntRange(min=1), default=None,
              help="Respondents to plan for: the expected 95% margin of each question at this many "
                   "(default 1000).")
@click.option("--margin", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
              help="Target margin, a share (0.05 for ±5 points): the respondents each allocation needs "
                   "(default 0.05).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="Output format.")
@click.option("--odds-ratio", "odds", nargs=3, metavar="A B OR", default=None,
              help="Also: the respondents needed to detect this odds ratio between yes/no questions A and B "
                   "(its interval excluding 1 with 80% power), under split allocation.")
@click.option("--shares", nargs=2, type=click.FloatRange(0, 1, min_open=True, max_open=True), default=(0.5, 0.2),
              show_default=True, metavar="P_A P_B",
              help="With --odds-ratio: the expected share with A, and with B among those without A.")
@LEVEL
def plan(file, respondents, margin, fmt, level, odds, shares):
    """Plan margins and the respondents a survey needs.

    For `split` and for `sample` with every m: each question's mechanism, realised
    epsilon, expected worst-case margin (interval half-width, a share; for a number, a
    share of its range) at --respondents, and the respondents the survey needs for
    --margin; then the allocation that needs the fewest. Choice and multi questions
    use intervals simultaneous over their options.

    \b
    Examples:
      ldp-survey plan examples/athletes.toml
      ldp-survey plan survey.toml --respondents 5000
      ldp-survey plan survey.toml --margin 0.03 --format json
      ldp-survey plan examples/smoking.toml --odds-ratio smoker lung_disease 3 --shares 0.22 0.06
    """
    from .core.planning import DEFAULT_MARGIN, DEFAULT_RESPONDENTS, plan as make_plan

    if respondents is not None and margin is not None:
        raise click.UsageError("give --respondents or --margin, not both")
    _, defn = _read_definition(file)
    result = make_plan(defn, respondents=respondents or DEFAULT_RESPONDENTS, margin=margin or DEFAULT_MARGIN,
                       level=level)
    if odds is not None:
        result["odds_ratio"] = _plan_odds_ratio(defn, odds, shares, level)
    if fmt == "json":
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(f"{defn.slug}: epsilon {defn.epsilon:g} per respondent; {format(level * 100, 'g')}% intervals; "
               f"margins at {result['respondents']} respondents, respondents for ±{result['margin']:g}")
    for allocation in result["allocations"]:
        name = "split" if allocation["sample"] is None else f"sample {allocation['sample']} of {len(defn.questions)}"
        click.echo(f"\n{name}: needs {allocation['respondents']:,} respondents")
        width = max(len(question["id"]) for question in allocation["questions"])
        for question in allocation["questions"]:
            click.echo(f"  {question['id']:<{width}}  {question['mechanism']:<9}  epsilon {question['epsilon']:<8.4g}"
                       f"  ±{question['half_width']:.3f}  {question['respondents']:>12,} respondents")
    if odds is not None:
        detect = result["odds_ratio"]
        click.echo(f"\nTo detect an odds ratio of {detect['odds_ratio']:g} between {detect['a']} and {detect['b']} "
                   f"(share with {detect['a']} {detect['share_a']:g}, with {detect['b']} among the others "
                   f"{detect['share_b_without_a']:g}) with {detect['power']:.0%} power under split: "
                   f"{detect['respondents']:,} respondents")
    best = result["recommended"]
    chosen = "split" if best["sample"] is None else f"sample = {best['sample']}"
    click.echo(f"\nRecommended: allocation = \"{best['allocation']}\"" + ("" if best["sample"] is None
                                                                         else f", {chosen}"))


@main.group()
def user():
    """Manage researcher accounts.

    \b
    Examples:
      ldp-survey user add alice@example.org
    """


def _read_password() -> str:
    stdin = sys.stdin
    if stdin.isatty():
        return click.prompt("Password", hide_input=True, confirmation_prompt=True)
    return stdin.readline().rstrip("\r\n")


def _checked_password(password: str) -> str:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise click.ClickException(f"the password must have at least {MIN_PASSWORD_LENGTH} characters, "
                                   f"got {len(password)}")
    return password


@user.command("add")
@click.argument("email")
@click.option("--replace", is_flag=True, help="Set a new password if the account exists.")
@click.pass_obj
def user_add(db, email, replace):
    """Create a researcher account.

    The password is prompted twice, or read as one line from stdin when it is not a terminal.

    \b
    Examples:
      ldp-survey user add alice@example.org
      printf '%s\\n' "$PASSWORD" | ldp-survey user add alice@example.org --replace
    """
    from werkzeug.security import generate_password_hash

    email = email.strip()
    if not EMAIL_RE.match(email):
        raise click.BadParameter(f"must look like name@example.org, got {email!r}", param_hint="EMAIL")
    password = _checked_password(_read_password())
    store = open_store(db)
    try:
        store.add_user(email, generate_password_hash(password), replace=replace)
    except StoreError as exc:
        raise click.ClickException(f"{exc}; pass --replace to set a new password") from exc
    finally:
        store.close()
    click.echo(f"Saved researcher account {email}")


@user.command("passwd")
@click.argument("email")
@click.pass_obj
def user_passwd(db, email):
    """Set a researcher's password and end every session of the account.

    The password is prompted twice, or read as one line from stdin when it is not a terminal.

    \b
    Examples:
      ldp-survey user passwd alice@example.org
      printf '%s\\n' "$PASSWORD" | ldp-survey user passwd alice@example.org
    """
    from werkzeug.security import generate_password_hash

    password = _checked_password(_read_password())
    store = open_store(db, must_exist=True)
    try:
        store.set_password(email.strip(), generate_password_hash(password))
    finally:
        store.close()
    click.echo(f"Set a new password for {email.strip()}; its earlier sessions have ended")


@user.command("list")
@click.pass_obj
def user_list(db):
    """List the researcher accounts and how many surveys each owns.

    \b
    Examples:
      ldp-survey user list
    """
    store = open_store(db, must_exist=True)
    try:
        users = store.list_users()
    finally:
        store.close()
    if not users:
        click.echo("No researcher accounts yet; add one with `ldp-survey user add EMAIL`")
        return
    width = max(len(account["email"]) for account in users)
    for account in users:
        click.echo(f"{account['email']:<{width}}  since {account['created_day']}  owns {account['surveys']}")


@user.command("remove")
@click.argument("email")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def user_remove(db, email, yes):
    """Delete a researcher account.

    The surveys it owned keep their data but have no owner until `share` gives them one.

    \b
    Examples:
      ldp-survey user remove bob@example.org
      ldp-survey user remove bob@example.org --yes
    """
    if not yes:
        click.confirm(f"Delete the account {email.strip()}?", abort=True)
    store = open_store(db, must_exist=True)
    try:
        store.remove_user(email.strip())
    finally:
        store.close()
    click.echo(f"Removed the account {email.strip()}")


@main.group()
def token():
    """Manage researchers' API tokens for scripts and notebooks.

    A token is sent as `Authorization: Bearer TOKEN` to the read-only JSON API under /api/.

    \b
    Examples:
      ldp-survey token create alice@example.org --name laptop
      ldp-survey token list alice@example.org
      ldp-survey token revoke alice@example.org laptop
    """


def _account_id(store: Store, email: str) -> int:
    account = store.get_user(email.strip())
    if account is None:
        raise click.ClickException(f"no researcher account {email.strip()!r}")
    return account["id"]


@token.command("create")
@click.argument("email")
@click.option("--name", "label", metavar="LABEL", help="A label to tell the token apart (default: token-N).")
@click.pass_obj
def token_create(db, email, label):
    """Make a new API token for a researcher and print it, once.

    Only its SHA-256 hash is stored: keep the printed token, it cannot be shown again.
    A new password does not revoke tokens; `token revoke` does, and so does `user remove`.

    \b
    Examples:
      ldp-survey token create alice@example.org --name notebook
    """
    store = open_store(db, must_exist=True)
    try:
        record, secret = store.create_token(email.strip(), label)
    finally:
        store.close()
    click.echo(secret)
    click.echo(f"Created API token {record['label']!r} (id {record['id']}) for {record['email']}; "
               "it is shown only this once", err=True)


@token.command("list")
@click.argument("email")
@click.pass_obj
def token_list(db, email):
    """List a researcher's API tokens: id, label and creation day (never the token).

    \b
    Examples:
      ldp-survey token list alice@example.org
    """
    store = open_store(db, must_exist=True)
    try:
        tokens = store.list_tokens(_account_id(store, email))
    finally:
        store.close()
    if not tokens:
        click.echo(f"No API tokens for {email.strip()}; make one with `ldp-survey token create {email.strip()}`")
        return
    width = max(len(record["label"]) for record in tokens)
    for record in tokens:
        click.echo(f"{record['id']:>4}  {record['label']:<{width}}  created {record['created_day']}")


@token.command("revoke")
@click.argument("email")
@click.argument("which", metavar="LABEL|ID")
@click.pass_obj
def token_revoke(db, email, which):
    """Revoke one of a researcher's API tokens, by label or id; requests with it get 401 at once.

    \b
    Examples:
      ldp-survey token revoke alice@example.org notebook
      ldp-survey token revoke alice@example.org 3
    """
    store = open_store(db, must_exist=True)
    try:
        record = store.revoke_token(_account_id(store, email), which)
    finally:
        store.close()
    click.echo(f"Revoked API token {record['label']!r} (id {record['id']}) of {email.strip()}")


@main.command()
@HOST
@PORT
@click.option("--respondents", default=DEMO_RESPONDENTS, show_default=True, type=click.IntRange(min=1),
              help="Simulated respondents the demo survey should have (enough for the smoking x "
                   "lung_disease odds ratio's interval to exclude 1).")
@SEED
@click.option("--no-serve", is_flag=True, help="Prepare the database and print the login, but do not serve.")
@click.option("--force", is_flag=True,
              help="Add the demo to a database that already holds other surveys.")
@click.pass_obj
def demo(db, host, port, respondents, seed, no_serve, force):
    """Set up and serve the example survey with simulated data.

    Rerunning is safe: the survey is created once and only topped up to --respondents.
    The account demo@example.org gets a fresh random password each run, printed.
    A database holding other surveys is refused (the demo would add simulated
    respondents and an account with a printed password to it) unless --force is given.
    Serving is as with `serve` (default workers and threads).

    \b
    Examples:
      ldp-survey demo
      ldp-survey --db demo.db demo --respondents 20000 --port 8000
      ldp-survey --db study.db demo --force --no-serve
    """
    from werkzeug.security import generate_password_hash

    from .web.server import origin

    # Bind first, so a busy port fails before the database is touched.
    listener = None if no_serve else _listen(host, port)
    try:
        password, count = _prepare_demo(db, respondents=respondents, seed=seed, force=force,
                                        hash_password=generate_password_hash)
    except BaseException:
        if listener is not None:
            listener.close()
        raise
    base = origin(host, port)
    click.echo(f"\nDatabase: {db} ({DEMO_SLUG}, {count} responses)")
    click.echo(f"Respondent page: {base}/s/{DEMO_SLUG}")
    click.echo(f"Dashboard:       {base}/surveys/{DEMO_SLUG}/results")
    click.echo(f"Log in as:       {DEMO_EMAIL}")
    click.echo(f"Password:        {password}")
    if listener is not None:
        _serve(db, host, port, listener=listener)


def _prepare_demo(db: str, *, respondents: int, seed: int | None, force: bool, hash_password) -> tuple[str, int]:
    """Create and top up the demo survey, reset the demo account; return its password and the response count."""
    store = open_store(db)
    try:
        others = sorted(survey["slug"] for survey in store.list_surveys() if survey["slug"] != DEMO_SLUG)
        if others and not force:
            raise click.ClickException(
                f"{db} already holds other surveys ({', '.join(others)}) and the demo would add simulated "
                f"respondents and the {DEMO_EMAIL} account to it; use its own database "
                f"(ldp-survey --db demo.db demo) or pass --force")
        if not store.survey_exists(DEMO_SLUG):
            text = (resource_dir("examples") / "smoking.toml").read_text(encoding="utf-8")
            defn = parse_definition_toml(text, source="examples/smoking.toml")
            store.create_survey(text, build_design(defn))
        design = load_design(store, DEMO_SLUG)
        missing = respondents - store.response_count(DEMO_SLUG)
        if missing > 0:
            qids = {q["id"] for q in design["questions"]}
            given = parse_truth(design, [f"{q}={v}" for q, v in DEMO_TRUTH.items() if q in qids])
            links = parse_given(design, [spec for spec in DEMO_GIVEN
                                         if {spec.split("|")[0], spec.split("|")[1].split("=")[0]} <= qids])
            seed = _seed(seed)
            truth = _simulate_into(store, design, n=missing, truth=given, seed=seed, batch=100_000, given=links)
            click.echo(f"Simulated {missing} respondents (seed {seed}) with this truth:")
            click.echo(format_truth(design, truth))
            click.echo(format_given(design, links))
        password = secrets.token_urlsafe(12)
        store.add_user(DEMO_EMAIL, hash_password(password), replace=True)
        store.share(DEMO_SLUG, DEMO_EMAIL)
        return password, store.response_count(DEMO_SLUG)
    finally:
        store.close()
