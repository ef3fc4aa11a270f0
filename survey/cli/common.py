"""Helpers several command modules share: opening the store, finding a survey, output, options."""

from __future__ import annotations

import functools
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..core.defaults import DEFAULT_PLANNED, DEFAULT_WARN_MARGIN

if TYPE_CHECKING:
    from ..store import Store



class Share(click.FloatRange):
    """A number strictly between 0 and 1; click's FloatRange alone lets NaN through (no comparison with it is true)."""

    def __init__(self):
        super().__init__(0, 1, min_open=True, max_open=True)

    def convert(self, value, param, ctx):
        """Return the number, or fail as click does for one out of the range."""
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number in the range 0<x<1.", param, ctx)
        return number


LEVEL = click.option("--level", default=0.95, show_default=True, type=Share(),
                     help="Confidence level of the intervals, in (0, 1).")

WARN_MARGIN = click.option("--warn-margin", default=DEFAULT_WARN_MARGIN, show_default=True, metavar="H", type=Share(),
                           help="Warn about every question whose expected 95% margin is wider than this share "
                                "(0.10 for ±10 points; for a number, a share of its range).")

PRIOR = click.option("--prior", metavar="PRIOR", default=None,
                     help="With --intervals posterior: the prior, jeffreys (Beta(1/2, 1/2), the default), "
                          "uniform (Beta(1, 1)) or A,B for Beta(A, B); a single choice's options take the "
                          "symmetric Dirichlet(A, ..., A).")


def INTERVALS(command):  # noqa: N802 (a decorator used as the other option constants are)
    """Add --intervals (fixed, anytime or posterior) and --prior; the command gets "posterior-PRIOR" for posterior."""
    @functools.wraps(command)
    def merged(*args, prior, **kwargs):
        kwargs["intervals"] = interval_kind(kwargs["intervals"], prior)
        return command(*args, **kwargs)
    merged = PRIOR(merged)
    return click.option("--intervals", type=click.Choice(["fixed", "anytime", "posterior"]), default="fixed",
                        show_default=True,
                        help="fixed: valid at the planned end (one n fixed in advance); anytime: valid at every "
                             "look, however often you check and whenever you stop (confidence sequences, wider); "
                             "posterior: equal-tailed credible intervals under --prior.")(merged)


def interval_kind(intervals: str, prior: str | None) -> str:
    """Return the interval kind the core reads: "fixed", "anytime" or "posterior-PRIOR"; ClickException if --prior is misused."""
    if intervals != "posterior":
        if prior is not None:
            raise click.ClickException("--prior applies only with --intervals posterior")
        return intervals
    from ..core.posterior import DEFAULT_PRIOR, posterior_kind

    try:
        return posterior_kind(DEFAULT_PRIOR if prior is None else prior)
    except ValueError as error:
        raise click.ClickException(str(error)) from None

PLANNED = click.option("--planned", default=DEFAULT_PLANNED, show_default=True, metavar="N", type=click.IntRange(1, 10**9),
                       help="With --intervals anytime: the respondents planned, fixed before looking, for which "
                            "the anytime intervals are made narrowest (they stay valid at every n).")


SANDBOX = click.option("--sandbox", is_flag=True,
                       help="Read the survey's sandbox (its test answers and simulated respondents) instead of "
                            "its real responses; the two are never mixed.")


def loaded_classes(names) -> tuple[type, ...]:
    """Return the classes (module, name) whose modules are imported: the only ones whose instances can exist.

    So an ``except`` can name the core's and the store's errors without importing their (heavy) modules.
    """
    return tuple(getattr(sys.modules[module], name) for module, name in names if module in sys.modules)


def open_store(db: str, *, must_exist: bool = False) -> Store:
    """Open the database, refusing to create an empty one when ``must_exist``."""
    from ..store import Store
    from ..store.location import is_postgres_url

    if must_exist and db != ":memory:" and not is_postgres_url(db) and not Path(db).is_file():
        raise click.ClickException(f"no database at {db}; create a survey first with "
                                   f"`ldp-survey --db {db} create FILE.toml`")
    return Store(db)


def load_design(store: Store, slug: str) -> dict:
    """Return a survey's design, or fail with the list of slugs the database holds."""
    from ..store import SurveyNotFound

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
