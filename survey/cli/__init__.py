"""The ``ldp-survey`` command line: create surveys, serve them, simulate, aggregate and export.

Every command is a thin layer over the core modules; user errors (a bad definition, an
unknown survey, a bad --truth) become one-line messages, never tracebacks.

This package holds the ``main`` group; the commands live in modules by topic:
surveys (definition and lifecycle), holdings (listing, archiving
and deleting), results (estimates and exports), accounts (the
``user`` and ``token`` groups) and operations (serve, demo, simulate, backup), with
the helpers they share in common.

Start-up stays light: importing this package loads click and the command modules, which import
the core, the store, numpy, scipy, pandas and the web app only inside the commands that use them
(tests/cli/test_startup.py), so ``ldp-survey --version`` and ``--help`` load none of them.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import click

from . import accounts, analysis, checking, delivery, holdings, interviews, operations, results, revising, surveys
from .common import loaded_classes

DEFAULT_DB = "ldp-survey.db"
# The user errors of the core and the store, by module and name (looked up among the imported modules, so that
# a command imports only what it uses).
USER_ERRORS = (("survey.core.definition", "DefinitionError"), ("survey.store.errors", "StoreError"),
               ("survey.core.reports", "ReportError"), ("survey.core.simulate", "TruthError"))


def _version() -> str:
    """Return the installed distribution's version, or the one in a source checkout's pyproject.toml."""
    from importlib import metadata

    try:
        return metadata.version("ldp-survey")
    except metadata.PackageNotFoundError:
        import tomllib

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]


def _print_version(ctx, param, value) -> None:
    """Print ``ldp-survey, version X`` and exit (the version is looked up only when asked for)."""
    if value and not ctx.resilient_parsing:
        click.echo(f"ldp-survey, version {_version()}")
        ctx.exit()


class SurveyGroup(click.Group):
    """A click group that turns the core's user errors into ClickException messages."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except Exception as exc:
            if isinstance(exc, loaded_classes(USER_ERRORS)):
                raise click.ClickException(str(exc)) from exc
            if isinstance(exc, sqlite3.DatabaseError):
                from ..store.location import display_location

                raise click.ClickException(f"cannot use the database {display_location(ctx.obj)}: {exc}") from exc
            raise


@click.group(cls=SurveyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", default=DEFAULT_DB, envvar="LDP_SURVEY_DB", show_default=True, show_envvar=True,
              help="Where surveys, responses and accounts are kept: a SQLite file (the default), or a "
                   "PostgreSQL database as a URL, postgresql://USER@HOST/DBNAME (several servers can share one).")
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
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


# click lists a group's commands sorted by name (SurveyGroup keeps click's list_commands), so the
# order they are added in does not change `ldp-survey --help`.
for command in (
    surveys.create, surveys.plan, surveys.share, surveys.publish, surveys.close, surveys.reopen, surveys.release,
    surveys.invite, interviews.interview, delivery.qr, delivery.mail,
    surveys.duplicate, revising.revise, holdings.delete,
    holdings.list_surveys, holdings.archive, holdings.unarchive, holdings.delete_on, holdings.purge,
    results.aggregate, results.crosstab, results.export,
    analysis.regress, analysis.analyze, analysis.codebook,
    accounts.user, accounts.token, accounts.uninvite,
    operations.serve, operations.demo, operations.simulate, operations.backup, operations.migrate,
    checking.check,
):
    main.add_command(command)
