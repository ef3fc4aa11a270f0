"""The `revise` command: correct a published survey's text, or give it a new version, from a TOML file."""

from __future__ import annotations

from pathlib import Path

import click

from .common import load_design, open_store


@click.command()
@click.argument("slug")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Say what the change is and what it would do; store nothing.")
@click.pass_obj
def revise(db, slug, file, dry_run):
    """Correct a published survey's text, or start its next version.

    A text change (titles, descriptions, wording of questions and options, thank-you,
    translations) keeps the responses as one data set; the codebook records each wording
    with the day respondents first saw it. A settings change (who may answer: access; the
    panel's link parameters, completion code and redirect) keeps them one data set too and
    is listed with its values before and after. A change to how answers are randomized (options
    added, removed or reordered, mechanism, ε, allocation, release step, branching) of a
    survey with responses starts a new version at the same address: the earlier version is
    kept apart, closed, as SLUG.vN (see `ldp-survey list`), and its results and exports are
    never pooled with the new one's. A survey without responses simply takes the new design.

    \b
    Examples:
      ldp-survey revise habits-2026 habits.toml --dry-run
      ldp-survey revise habits-2026 habits.toml
      ldp-survey --db study.db revise habits-2026 fixed-typo.toml
    """
    from ..core.design import build_design
    from ..core.definition import DefinitionError, parse_definition_toml
    from ..core.revisions import classify_change, describe, done_message, plain, wording_changes
    from ..store import StoreError
    from .surveys import _read_definition

    text, new = _read_definition(file)
    if new.slug != slug:
        raise click.ClickException(f"{file} defines the survey {new.slug!r}, not {slug!r}; a correction keeps the "
                                   "slug (use `ldp-survey duplicate` for a new address)")
    try:
        design = build_design(new)
    except DefinitionError as exc:
        raise click.ClickException(str(exc)) from exc
    store = open_store(db, must_exist=True)
    try:
        load_design(store, slug)
        old = parse_definition_toml(store.get_definition(slug), source=slug)
        revision = classify_change(old, new)
        responses = store.received_count(slug)
        version = store.revision_record(slug)["version"]
        click.echo(describe(revision, responses=responses, version=version,
                            epsilons=(float(old.epsilon), float(new.epsilon))))
        for title, changes in (("Text changes", [plain(change) for change in revision.text_changes]),
                               ("Settings changes", revision.settings_changes),
                               ("Design changes", [plain(change) for change in revision.design_changes])):
            if changes:
                click.echo(f"{title}:")
                for change in changes:
                    click.echo(f"  - {change}")
        for what, before, after in wording_changes(old, new):
            click.echo(f"{what}:\n  now:          {before}\n  after saving: {after}")
        if dry_run:
            click.echo("Nothing was stored (--dry-run).")
            return
        done, number = store.apply_revision(slug, text, design, revision.kind)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        store.close()
    click.echo(done_message(done, number, responses, settings=bool(revision.settings_changes)))
