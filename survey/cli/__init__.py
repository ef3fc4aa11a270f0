"""The ``ldp-survey`` command line: create surveys, serve them, simulate, aggregate and export.

Every command is a thin layer over the core modules; user errors (a bad definition, an
unknown survey, a bad --truth) become one-line messages, never tracebacks.

This package holds the ``main`` group; the commands live in modules by topic:
surveys (definition and lifecycle), results (estimates and exports), accounts (the
``user`` and ``token`` groups) and operations (serve, demo, simulate, backup), with
the helpers they share in common.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import click

from ..core.definition import DefinitionError
from ..core.reports import ReportError
from ..core.simulate import TruthError
from ..store.location import display_location
from ..store import StoreError
from . import accounts, analysis, delivery, operations, results, surveys

DEFAULT_DB = "ldp-survey.db"
USER_ERRORS = (DefinitionError, StoreError, ReportError, TruthError)


def _version() -> str:
    """Return the installed distribution's version, or the one in a source checkout's pyproject.toml."""
    from importlib import metadata

    try:
        return metadata.version("ldp-survey")
    except metadata.PackageNotFoundError:
        import tomllib

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]


class SurveyGroup(click.Group):
    """A click group that turns the core's user errors into ClickException messages."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except USER_ERRORS as exc:
            raise click.ClickException(str(exc)) from exc
        except sqlite3.DatabaseError as exc:
            raise click.ClickException(f"cannot use the database {display_location(ctx.obj)}: {exc}") from exc


@click.group(cls=SurveyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", default=DEFAULT_DB, envvar="LDP_SURVEY_DB", show_default=True, show_envvar=True,
              help="Where surveys, responses and accounts are kept: a SQLite file (the default), or a "
                   "PostgreSQL database as a URL, postgresql://USER@HOST/DBNAME (several servers can share one).")
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


# click lists a group's commands sorted by name (SurveyGroup keeps click's list_commands), so the
# order they are added in does not change `ldp-survey --help`.
for command in (
    surveys.create, surveys.plan, surveys.share, surveys.publish, surveys.close, surveys.reopen, surveys.release,
    surveys.invite, delivery.qr, delivery.mail,
    surveys.duplicate, surveys.delete,
    results.aggregate, results.crosstab, results.export,
    analysis.regress, analysis.analyze, analysis.codebook,
    accounts.user, accounts.token, accounts.uninvite,
    operations.serve, operations.demo, operations.simulate, operations.backup, operations.migrate,
):
    main.add_command(command)
