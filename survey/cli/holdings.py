"""Commands that show what the database holds and end surveys' lives: list, archive, unarchive,
delete-on, purge and delete.

The store is imported inside each command, so ``ldp-survey --help`` loads none of it.
"""

from __future__ import annotations

import csv
import io
import json

import click

LIST_FIELDS = ("slug", "title", "status", "owner", "released", "held", "sandbox", "version", "created",
               "delete_after")


def _open(db: str):
    """Open an existing database (imported here, so the command line starts without the store)."""
    from .common import open_store

    return open_store(db, must_exist=True)


def listing_rows(surveys: list[dict]) -> list[dict]:
    """Return the rows of `list`: one per survey, with the fields of LIST_FIELDS."""
    return [{"slug": s["slug"], "title": s["title"], "status": s["status"], "owner": s["owner"],
             "released": s["responses"], "held": s["held"], "sandbox": s["sandbox"], "version": s["version"],
             "created": s["created_day"], "delete_after": s["delete_after"]} for s in surveys]


def _table(rows: list[dict]) -> str:
    """Return the rows as an aligned text table (an empty owner or date shows as -)."""
    cells = [[str(name) for name in LIST_FIELDS]]
    cells += [["-" if row[name] is None else str(row[name]) for name in LIST_FIELDS] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(LIST_FIELDS))]
    numeric = {"released", "held", "sandbox", "version"}
    return "\n".join("  ".join(cell.rjust(width) if name in numeric else cell.ljust(width)
                               for cell, width, name in zip(line, widths, LIST_FIELDS)).rstrip()
                     for line in cells)


def _csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=LIST_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


@click.command("list")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True,
              help="An aligned table, CSV or JSON.")
@click.option("--all", "show_all", is_flag=True, help="Include archived surveys (left out by default).")
@click.pass_obj
def list_surveys(db, fmt, show_all):
    """List the surveys the database holds.

    One row per survey: slug, title, status (draft, open, closed or archived), owner
    (- when none: see `share`), responses released and held for the next release,
    sandbox responses (test and simulated), version, creation day and deletion date.
    The counts are the kept tallies (no scan of responses). Archived surveys are
    listed only with --all.

    \b
    Examples:
      ldp-survey list
      ldp-survey --db study.db list --all
      ldp-survey list --format json > surveys.json
    """
    store = _open(db)
    try:
        rows = listing_rows(store.list_surveys(archived=show_all))
    finally:
        store.close()
    if fmt == "json":
        click.echo(json.dumps({"surveys": rows}, indent=2))
    elif fmt == "csv":
        click.echo(_csv(rows), nl=False)
    elif rows:
        click.echo(_table(rows))
    else:
        click.echo("No surveys" + ("" if show_all else " (archived ones are listed with --all)"))


def _change(db: str, slug: str, method: str, *args):
    """Call a store method on a survey that must exist (a clear message names the surveys held if not)."""
    from .common import load_design

    store = _open(db)
    try:
        load_design(store, slug)
        return getattr(store, method)(slug, *args)
    finally:
        store.close()


@click.command()
@click.argument("slug")
@click.pass_obj
def archive(db, slug):
    """Archive a survey: read-only, hidden from `list`.

    Archived, it is closed and hidden from `list` and the web's survey list.

    It takes no responses (its respondent page says it is closed) and cannot be reopened
    or edited; its results and exports stay. `unarchive` brings it back, closed.

    \b
    Examples:
      ldp-survey archive smoking-2026
      ldp-survey list --all
    """
    _change(db, slug, "archive_survey")
    click.echo(f"Archived {slug}: read-only, listed only with `ldp-survey list --all`")


@click.command()
@click.argument("slug")
@click.pass_obj
def unarchive(db, slug):
    """Bring an archived survey back to the lists, closed.

    `reopen` then takes responses again.

    \b
    Examples:
      ldp-survey unarchive smoking-2026
    """
    _change(db, slug, "unarchive_survey")
    click.echo(f"Unarchived {slug}: it is closed; `ldp-survey reopen {slug}` takes responses again")


@click.command("delete-on")
@click.argument("slug")
@click.argument("day", required=False, metavar="[YYYY-MM-DD]")
@click.option("--clear", is_flag=True, help="Remove the survey's deletion date.")
@click.pass_obj
def delete_on(db, slug, day, clear):
    """Set or clear the day `purge --due` deletes a survey.

    From that day the survey is deleted with all its data.

    The date is shown on the survey's dashboard and in its codebook; nothing happens on
    that day unless the operator runs `ldp-survey purge --due` (e.g. daily from cron).

    \b
    Examples:
      ldp-survey delete-on smoking-2026 2027-06-30
      ldp-survey delete-on smoking-2026 --clear
    """
    if clear == (day is not None):
        raise click.UsageError("give a day as YYYY-MM-DD, or --clear")
    chosen = _change(db, slug, "set_deletion_date", None if clear else day)
    click.echo(f"{slug} has no deletion date" if chosen is None
               else f"{slug} will be deleted by `ldp-survey purge --due` from {chosen}")


@click.command()
@click.option("--due", is_flag=True, required=True,
              help="Delete the surveys whose deletion date is today (UTC) or earlier (required).")
@click.option("--dry-run", is_flag=True, help="Print what would be deleted, and delete nothing.")
@click.pass_obj
def purge(db, due, dry_run):
    """Delete the surveys whose deletion date has come.

    Each is deleted with all its data.

    Only surveys given a date with `delete-on` (or on their dashboard) are
    touched; each deleted survey is printed. Meant to run unattended, e.g. daily:
    `0 3 * * * ldp-survey --db /srv/study.db purge --due`.

    \b
    Examples:
      ldp-survey purge --due --dry-run
      ldp-survey --db study.db purge --due
    """
    store = _open(db)
    try:
        slugs = store.due_for_deletion()
        for slug in slugs:
            if not dry_run:
                store.delete_survey(slug)
            click.echo(f"{'Would delete' if dry_run else 'Deleted'} {slug}")
    finally:
        store.close()
    if not slugs:
        click.echo("No survey is due for deletion")


@click.command()
@click.argument("slug")
@click.option("--with-responses", is_flag=True,
              help="Delete a survey in any status with all its data: responses (released and held), sandbox, "
                   "invitations, collaborators. Without it only a draft is deleted.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def delete(db, slug, with_responses, yes):
    """Delete a draft, or any survey with --with-responses.

    With --with-responses every row of the survey is deleted, and its
    earlier versions (SLUG.v1, SLUG.v2, ...) with it.

    Nothing of a deleted survey stays in the database. Export its data package first
    (`ldp-survey export SLUG`) if it is to be kept anywhere.

    \b
    Examples:
      ldp-survey delete smoking-2027
      ldp-survey delete smoking-2026 --with-responses
      ldp-survey --db study.db delete smoking-2026 --with-responses --yes
    """
    from ..store import StoreError
    from .common import load_design

    store = _open(db)
    try:
        load_design(store, slug)
        status = store.survey_status(slug)
        if not with_responses:
            if status != "draft":
                try:
                    store.delete_draft(slug)  # raises the StoreError naming the status and what it allows
                except StoreError as exc:
                    raise click.ClickException(f"{exc}; pass --with-responses to delete it with all its data") from exc
            if not yes:
                click.confirm(f"Delete the draft {slug}?", abort=True)
            store.delete_draft(slug)
            what, also = "the draft", ""
        else:
            survey = next(s for s in store.list_surveys() if s["slug"] == slug)
            kept = [v for v in store.versions(slug) if v["slug"] in store.kept_versions(slug)]
            versions = "".join(f", its earlier version {v['slug']} with {v['responses']:,} "
                               f"response{'' if v['responses'] == 1 else 's'}" for v in kept)
            if not yes:
                click.confirm(f"Delete {slug} ({survey['status']}) with {survey['responses']:,} released, "
                              f"{survey['held']:,} held and {survey['sandbox']:,} sandbox responses{versions}, "
                              "its invitations and collaborators? This cannot be undone", abort=True)
            store.delete_survey(slug)
            what = "the survey"
            also = " and its earlier version" + ("s " if len(kept) > 1 else " ") + ", ".join(v["slug"] for v in kept) \
                if kept else ""
    finally:
        store.close()
    click.echo(f"Deleted {what} {slug}{also}" + (" and all its data" if with_responses else ""))
