"""``ldp-survey check``: recount the stored reports and compare every count kept at insert."""

from __future__ import annotations

import click

from .common import load_design, open_store


@click.command()
@click.argument("slugs", nargs=-1, metavar="[SLUG]...")
@click.pass_obj
def check(db, slugs):
    """Recount the reports and compare the kept counts.

    The dashboard, aggregates, crosstabs and regressions read counts kept current in the
    transaction of every insert (response counts, per-question tallies, report patterns);
    this reads every stored report of each SLUG (every survey when none is named) once,
    released, held and sandbox, and compares. It prints one line per survey and exits with
    status 1, naming each difference, if any count differs from the recount. A full scan:
    at ten million responses it takes a while.

    \b
    Examples:
      ldp-survey check smoking-2026
      ldp-survey check
      ldp-survey --db postgresql://localhost/surveys check smoking-2026 athletes
    """
    from ..store.checks import check_counts

    store = open_store(db, must_exist=True)
    failed = []
    try:
        for slug in slugs or [survey["slug"] for survey in store.list_surveys()]:
            load_design(store, slug)
            read, problems = check_counts(store, slug)
            if problems:
                failed.append(slug)
                click.echo(f"{slug}: {read:,} stored reports recounted; differences:")
                for problem in problems:
                    click.echo(f"  - {problem}")
            else:
                click.echo(f"{slug}: {read:,} stored reports recounted; every kept count agrees")
    finally:
        store.close()
    if failed:
        raise click.ClickException(f"the counts kept at insert differ from a recount for {', '.join(failed)}")
