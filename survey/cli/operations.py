"""Commands that run or fill a database: serve, demo, simulate, backup.

simulate lives here, next to demo, rather than with the survey commands: it writes synthetic
respondents into a database (a testing and demonstration tool, not part of a survey's
lifecycle), and demo is built on the same simulation helper (_simulate_into).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .common import load_design, open_store, stderr_progress

if TYPE_CHECKING:
    from ..store import Store

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


HOST = click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
PORT = click.option("--port", default=5000, show_default=True, type=click.IntRange(1, 65535),
                    help="TCP port to listen on.")


SEED = click.option("--seed", type=click.IntRange(min=0), default=None,
                    help="Seed of the simulation (default: random, printed).")


def _listen(host: str, port: int):
    """Return a socket listening on host:port, or fail with one clear error line."""
    from ..web import server

    try:
        return server.listen(host, port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port} ({exc.strerror or exc}); "
                                   "choose another --port or --host") from exc


def _serve(db: str, host: str, port: int, *, listener=None, workers: int | None = None,
           threads: int | None = None, https: bool = False, per_minute: int | None = None, proxies: int = 0,
           flood_store: str | None = None):
    """Serve the app with gunicorn until SIGTERM or Ctrl+C (see survey.web.server).

    ``listener`` is a socket already listening on host:port (bound first, so a busy port
    fails before any work is done); without one it is bound here.
    """
    from ..web import create_app, server
    from ..web.flood import FloodStoreError
    from ..web.secret import SecretKeyError

    listener = listener or _listen(host, port)
    try:
        # Created once, in the master, before the workers fork: migrations run once, and
        # create_app leaves no SQLite connection open for the workers to inherit.
        # Behind an HTTPS proxy the session cookie (which carries the CSRF token) must be Secure.
        config = {"DATABASE": db, "SESSION_COOKIE_SECURE": https, "HSTS": https, "PROXIES": proxies}
        if per_minute is not None:
            config["MAX_SUBMISSIONS_PER_MINUTE"] = per_minute
        if flood_store is not None:
            config["FLOOD_STORE"] = flood_store
        app = create_app(config)
    except (FloodStoreError, SecretKeyError) as exc:
        listener.close()
        raise click.ClickException(str(exc)) from exc
    except BaseException:
        listener.close()
        raise
    message = f"Serving {db} on {server.origin(host, port)}/ (press Ctrl+C to stop)"
    server.serve(app, listener, workers=workers, threads=threads or server.DEFAULT_THREADS,
                 on_ready=lambda: click.echo(message))


@click.command()
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
              help="Submissions one client address may send per minute, across all workers (and all "
                   "servers with --flood-store database); beyond it 429. 0 turns the limit off (load tests).")
@click.option("--flood-store", type=click.Choice(["memory", "database"]), default=None,
              help="Where the flood limit counts: in this server's memory, or in the database every server "
                   "of it shares (only a keyed hash of each address, deleted within two minutes).  [default: "
                   "$LDP_SURVEY_FLOOD_STORE, else database for a postgresql:// URL, memory for a SQLite file]")
@click.option("--proxies", default=0, show_default=True, type=click.IntRange(0, 8),
              help="Reverse proxies in front of the server whose X-Forwarded-For to trust, so that the "
                   "flood limit counts each client's own address (never stored). 0: the header is ignored.")
@click.pass_obj
def serve(db, host, port, workers, threads, https, per_minute, proxies, flood_store):
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
      ldp-survey --db postgresql://ldp@db.internal/ldp serve --https --proxies 1   # one of several servers
    """
    _serve(db, host, port, workers=workers, threads=threads, https=https, per_minute=per_minute, proxies=proxies,
           flood_store=flood_store)


def _simulate_into(store: Store, design: dict, *, n: int, truth: dict, seed: int, batch: int,
                   given: dict | None = None, source: str | None = None) -> dict:
    """Simulate n respondents into the store (with ``source``, into the survey's sandbox) and return the full truth used."""
    import numpy as np

    from ..core.simulate import batch_count, complete_truth, simulate_report_batches
    from ..store.ids import sorted_id_blocks

    truth_rng, answer_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    truth = complete_truth(design, truth, truth_rng)
    batches = simulate_report_batches(design, truth, n=n, batch=batch, rng=answer_rng, given=given)
    # Ids in increasing order, batch after batch: each batch is one sweep of the table's pages
    # (survey.store.ids.sorted_id_blocks), so the rate stays that of a small table at ten million.
    blocks = sorted_id_blocks(n, batch)
    with stderr_progress(batches, length=batch_count(n, batch), label=f"Simulating {n} respondents") as bar:
        for (columns, asked), ids in zip(bar, blocks):
            store.add_report_columns(design["slug"], design["hash"], columns, asked=asked, source=source, ids=ids)
    return truth


def _seed(seed: int | None) -> int:
    return secrets.randbits(32) if seed is None else seed


@click.command()
@click.argument("slug")
@click.option("--n", "n", type=click.IntRange(min=1), help="Number of respondents to simulate.")
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
@click.option("--alongside-real", is_flag=True,
              help="Simulate into the sandbox of a survey that already has real responses (refused without it).")
@click.option("--clear", is_flag=True, help="Delete the survey's simulated respondents instead of adding any.")
@click.pass_obj
def simulate(db, slug, n, truths, givens, seed, batch, alongside_real, clear):
    """Add simulated respondents to a survey's sandbox.

    Each is randomized as a browser would. They are never in the dashboard's results, the
    exports, the API or the response count (read them with `aggregate --sandbox`,
    `crosstab --sandbox` or `export --sandbox`), and they never freeze a draft's design,
    so a draft can be simulated before it is published. A survey that already has real
    responses is refused unless --alongside-real is given. --clear deletes them.
    Prints the truth used, in the Q=V form --truth accepts. Questions are drawn
    independently unless --given links them.

    \b
    Examples:
      ldp-survey simulate smoking-2026 --n 5000 --seed 1
      ldp-survey simulate smoking-2026 --n 2000 --truth smoker=0.3 --truth cigarettes=none
      ldp-survey simulate smoking-2026 --n 100000 --truth smoker=0.22 \\
          --given "lung_disease|smoker=1:0.18" --given "lung_disease|smoker=0:0.06"
      ldp-survey simulate smoking-2026 --n 500 --alongside-real
      ldp-survey simulate --clear smoking-2026
    """
    from ..core.simulate import format_given, format_truth, parse_given, parse_truth

    if clear and (n is not None or truths or givens):
        raise click.UsageError("--clear deletes the simulated respondents; it takes no --n, --truth or --given")
    if not clear and n is None:
        raise click.UsageError("give --n, the number of respondents to simulate (or --clear to delete them)")
    store = open_store(db, must_exist=True)
    try:
        design = load_design(store, slug)
        if clear:
            deleted = store.clear_sandbox(slug, "simulated")
            click.echo(f"Deleted {deleted} simulated responses from {slug}; its {store.received_count(slug)} "
                       "real responses are untouched")
            return
        real = store.received_count(slug)
        if real and not alongside_real:
            raise click.ClickException(
                f"survey {slug!r} has {real} real response{'' if real == 1 else 's'}; nothing was simulated. "
                "Simulated respondents would be kept apart from them (in its sandbox, never in its results), "
                "but a survey collecting real answers is rarely the one to simulate: to do it anyway, pass "
                "--alongside-real")
        given = parse_truth(design, truths)
        links = parse_given(design, givens)
        seed = _seed(seed)
        truth = _simulate_into(store, design, n=n, truth=given, seed=seed, batch=batch, given=links,
                               source="simulated")
        simulated = store.sandbox_counts(slug)["simulated"]
    finally:
        store.close()
    click.echo(f"Added {n} simulated responses to the sandbox of {slug} (now {simulated} simulated, kept apart "
               f"from its {real} real responses); seed {seed}")
    click.echo(f"Read them with `ldp-survey aggregate {slug} --sandbox`; delete them with "
               f"`ldp-survey simulate --clear {slug}`")
    click.echo("Truth used:")
    click.echo(format_truth(design, truth))
    if links:
        click.echo("Given:")
        click.echo(format_given(design, links))


@click.command()
@click.argument("destination", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_obj
def backup(db, destination):
    """Copy the database into a new SQLite file.

    Safe while the server runs. From SQLite, with SQLite's online backup API: the copy is one consistent snapshot even
    while respondents submit, and is checked with PRAGMA integrity_check. From PostgreSQL, a
    logical copy into a new SQLite file that `migrate --to` loads back, each survey checked
    to read the same in the copy (PostgreSQL's own pg_dump and point-in-time recovery work
    too). The file is created readable only by its owner. DESTINATION must not exist yet.

    \b
    Examples:
      ldp-survey backup backups/survey-2026-11-22.db
      ldp-survey --db /srv/ldp/ldp-survey.db backup /mnt/backup/ldp-survey.db
      ldp-survey --db postgresql://ldp@db.example.org/ldp backup /mnt/backup/ldp.db
    """
    from ..store import Store

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


@click.command()
@click.option("--to", "target", required=True, metavar="URL_OR_FILE",
              help="The new database: postgresql://USER@HOST/DBNAME (empty) or a SQLite file that does not exist.")
@click.pass_obj
def migrate(db, target):
    """Copy everything into a new database, checked.

    Copies every survey, response and account, then checks the copy. Moves a study from the embedded SQLite file to PostgreSQL (or back): accounts and
    API tokens (as hashes), surveys with their status, owners, collaborators, invitations,
    join links and acknowledged submission ids, every released and held report and the
    sandbox. Counts are made anew on the new database from the copied reports; then every
    survey's aggregates CSV, counts and responses per day are compared, and any difference
    is an error. Stop the servers first (or close the surveys): responses that arrive
    during the copy are not in it. The source is left as it is.

    \b
    Examples:
      ldp-survey --db ldp-survey.db migrate --to postgresql://ldp@db.example.org/ldp
      LDP_SURVEY_DB=ldp-survey.db ldp-survey migrate --to postgresql://ldp:secret@127.0.0.1:5432/ldp
      ldp-survey --db postgresql://ldp@db.example.org/ldp migrate --to restored.db
    """
    from ..store.copying import copy_database
    from ..store.location import display_location

    store = open_store(db, must_exist=True)
    try:
        surveys = store.list_surveys()
        total = sum(store.received_count(s["slug"]) + sum(store.sandbox_counts(s["slug"]).values())
                    for s in surveys)
        with stderr_progress(None, length=max(total, 1), label="Copying responses") as bar:
            result = copy_database(store, target, progress=bar.update)
    finally:
        store.close()
    click.echo(f"Copied {result['surveys']} surveys and {result['responses']} released responses from "
               f"{display_location(db)} to {display_location(target)}; every survey's aggregates, counts and "
               "responses per day are identical in the copy")


@click.command()
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

    The demo survey's simulated respondents are its real responses (they are the demo's
    content, so its dashboard, exports and API show them), unlike `simulate`, which keeps
    simulated respondents in a survey's sandbox. Rerunning is safe: the survey is created once and only topped up to --respondents.
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

    from ..web.server import origin

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
    from ..core.definition import parse_definition_toml
    from ..core.design import build_design
    from ..core.simulate import format_given, format_truth, parse_given, parse_truth
    from ..resources import resource_dir

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
        missing = respondents - store.received_count(DEMO_SLUG)
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
        return password, store.received_count(DEMO_SLUG)
    finally:
        store.close()
