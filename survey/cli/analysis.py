"""Commands for the analyses beyond estimates: regression on a survey, re-analysis from files, codebooks of
other designs."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..core.words import format_epsilon
from .common import (LEVEL, PRIOR, SANDBOX, echo_formatted, interval_kind, load_design, loaded_classes, open_store,
                     stderr_progress)
from .files import open_responses, read_codebook
from .weighted import is_weighted, run_weighted, weight_options

# A file larger than this (bytes, about 1,000,000 rows of the example survey) shows a progress bar on stderr
# while it is read (about 1 s per 1,000,000 rows of plain CSV; a chunk of lines it cannot parse in numpy is
# read row by row, about 2 s per 100,000 rows).
PROGRESS_FROM = 45_000_000

# What a re-analysis refuses in the data (looked up among the imported modules: an aggregate never imports the
# regression's).
DATA_ERRORS = (("survey.core.answer_rows", "ReanalysisError"), ("survey.core.regression", "RegressionError"),
               ("survey.core.crosstab", "CrosstabError"))

FORMAT = click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table",
                      show_default=True, help="Output format.")


def _echo_regression(fit, fmt: str) -> None:
    from ..core.regression_text import regression_to_csv, regression_to_json, regression_to_table

    echo_formatted(fmt, fit, to_csv=regression_to_csv, to_json=regression_to_json, to_table=regression_to_table)
    if fmt != "table":
        for warning in fit.warnings:
            click.echo(f"Warning: {warning}.", err=True)


@click.command()
@click.argument("slug")
@click.argument("outcome")
@click.argument("covariates", nargs=-1, required=True)
@FORMAT
@LEVEL
@SANDBOX
@click.pass_obj
def regress(db, slug, outcome, covariates, fmt, level, sandbox):
    """Regress a yes/no question, or a number's mean, on others.

    Each COVARIATE is a yes/no or single-choice question, its first option the reference,
    or a number. Every answer is randomized, so the model uses each question's known
    misclassification (van den Hout & van der Heijden 2002), from the counts of the distinct
    report patterns of the respondents who answered all of them. With a number covariate
    (beside yes/no and number ones only), each covariate is replaced by its best linear
    prediction from the reports through its mechanism's known noise: regression calibration
    (Carroll et al. 2006, ch. 4), with sandwich standard errors that include its uncertainty;
    exact for a number's mean, an approximation for a logistic regression (the output says so). A yes/no OUTCOME gets a logistic
    regression by maximum likelihood: each term's log odds ratio, standard error (observed
    information), p-value and odds ratio with its interval, the likelihood-ratio test of all
    covariates together, warnings when the likelihood is flat or an estimate is on the
    boundary. A number OUTCOME gets a model of its mean: the reference group's mean and each
    group's difference from it, with sandwich standard errors. A multiple-choice question
    cannot enter (the docs say why).

    \b
    Examples:
      ldp-survey regress smoking-2026 lung_disease smoker cigarettes
      ldp-survey regress smoking-2026 lung_disease smoker --format csv > model.csv
      ldp-survey regress smoking-2026 lung_disease smoker --level 0.9 --format json
      ldp-survey regress smoking-2026 age smoker lung_disease
      ldp-survey regress smoking-2026 lung_disease age smoker
    """
    from ..core.modelling import fit_words, model_questions
    from ..core.regression import RegressionError

    store = open_store(db, must_exist=True)
    try:
        design = load_design(store, slug)
        try:
            model_questions(design, outcome, list(covariates))
            words, counts = store.joint_patterns(slug, [outcome, *covariates], sandbox=sandbox)
            fit = fit_words(design, outcome, list(covariates), words, counts, level=level)
        except RegressionError as exc:
            raise click.ClickException(str(exc)) from exc
    finally:
        store.close()
    _echo_regression(fit, fmt)


class _Files:
    """The two files a re-analysis reads: responses.csv (streamed, in bounded memory) and the codebook (checked)."""

    def __init__(self, responses: Path, codebook: Path):
        from ..exports.codebook_check import check_codebook
        from ..core.reanalysis import ReanalysisError

        self.responses, self.codebook_path = responses, codebook
        self.book = read_codebook(codebook)
        try:
            check_codebook(self.book)
        except ReanalysisError as exc:
            raise click.ClickException(f"{codebook}: {exc}") from exc

    def run(self, analysis, *args, **kwargs):
        """Call ``analysis(book, header, rows, ...)`` over the responses, turning data errors into messages."""
        from ..exports.codebook_check import DESIGN_ERRORS

        try:
            size = self.responses.stat().st_size
            with self.responses.open("rb") as handle:
                if size <= PROGRESS_FROM:
                    header, rows = open_responses(handle, self.responses)
                    return analysis(self.book, header, rows, *args, **kwargs)
                with stderr_progress(None, length=size, label=f"Reading {self.responses.name}") as bar:
                    header, rows = open_responses(handle, self.responses, progress=_Advance(bar))
                    return analysis(self.book, header, rows, *args, **kwargs)
        except OSError as exc:
            raise click.ClickException(f"cannot read {self.responses}: {exc.strerror or exc}") from exc
        except DESIGN_ERRORS as exc:  # the data errors are ValueErrors too
            if isinstance(exc, loaded_classes(DATA_ERRORS)):
                raise click.ClickException(f"{self.responses}: {exc}") from exc
            if self.book["design"] is None:
                raise
            # A design that hashes right but that ldp-survey did not make (edited, then re-hashed).
            raise click.ClickException(f"{self.codebook_path}: its design cannot be used ({type(exc).__name__}: "
                                       f"{exc}); export the codebook again") from exc


class _Advance:
    """Move a progress bar to the bytes the file has been read up to."""

    def __init__(self, bar):
        self.bar, self.done = bar, 0

    def __call__(self, position: int) -> None:
        self.bar.update(position - self.done)
        self.done = position


ANALYSES = ("aggregate", "crosstab", "regress", "power")
INTERVALS = click.option("--intervals", type=click.Choice(["fixed", "posterior"]), default="fixed", show_default=True,
                         help="With aggregate: fixed: confidence intervals valid at the planned end; posterior: "
                              "equal-tailed credible intervals under --prior, as `ldp-survey aggregate "
                              "--intervals posterior` gives them.")


def _check_posterior(analysis: str, weighted: bool) -> None:
    """Refuse posterior intervals where they are not defined: beyond aggregate, and for weighted estimates."""
    if analysis != "aggregate":
        raise click.UsageError(f"--intervals posterior goes with aggregate only, not {analysis}")
    if weighted:
        raise click.ClickException(
            "--intervals posterior cannot go with --weights, --calibrate, --strata or --clusters: posterior "
            "intervals are not defined for weighted estimates here (the posterior is that of the unweighted "
            "counts of reports); leave out either the weighting or --intervals posterior")


@click.command()
@click.argument("responses", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("analysis", type=click.Choice(ANALYSES))
@click.argument("names", nargs=-1)
@click.option("--codebook", "codebook_path", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The codebook of the responses: exported by ldp-survey, or written by `ldp-survey codebook "
                   "--binary` for data of another design.")
@FORMAT
@LEVEL
@INTERVALS
@PRIOR
@weight_options
def analyze(responses, analysis, names, codebook_path, fmt, level, intervals, prior, **weighting):
    """Re-analyse exported files alone: no database, no server.

    RESPONSES is a responses.csv (exported, downloaded or published) and --codebook its
    codebook. ANALYSIS is `aggregate` (every estimate), `crosstab A B` (two questions
    crossed), `regress OUTCOME COVARIATE...` (as `ldp-survey regress`) or `power Q NULL
    SHARE` (the power the data had to show that yes/no item Q's share is not NULL when it
    is SHARE, at significance level 1 − --level, and the respondents needed for 80%:
    Blair, Imai & Zhou 2015). With a codebook exported by ldp-survey, which carries the survey's design,
    every number is the dashboard's, byte for byte. With a codebook of another design
    (`ldp-survey codebook --binary`), its yes/no items are estimated from their (p, q),
    and exact columns it declares can be covariates (each distinct value a category, or a
    number entering linearly: `codebook --exact-number`).

    \b
    Examples:
      ldp-survey analyze responses.csv aggregate --codebook codebook.json
      ldp-survey analyze responses.csv crosstab smoker lung_disease --codebook codebook.json
      ldp-survey analyze responses.csv regress lung_disease smoker cigarettes --codebook codebook.json
      ldp-survey analyze survey.csv regress drug_use sex age_group --codebook forced.json --format csv
      ldp-survey analyze survey.csv regress drug_use sex age --codebook forced.json
      ldp-survey analyze survey.csv power drug_use 0.1 0.2 --codebook forced.json

    With --weights COLUMN (a column of design weights) and/or --calibrate (known population
    margins), aggregate gives weighted estimates with linearised standard errors (of a
    stratified, clustered sample with --strata and --clusters), Kish's effective sample size
    and the weighting used (see the how-to "Survey weights and calibration"):

    \b
      ldp-survey analyze responses.csv aggregate --codebook codebook.json --weights w
      ldp-survey analyze responses.csv aggregate --codebook codebook.json --weights w \\
          --calibrate smoker=0.23 --calibrate colour=red:0.5,green:0.3,blue:0.2
      ldp-survey analyze responses.csv aggregate --codebook codebook.json \\
          --calibrate colour=margins.csv --format csv --out weighted/
      ldp-survey analyze survey.csv aggregate --codebook forced.json --weights w \\
          --strata region --clusters school

    With --intervals posterior, aggregate gives equal-tailed credible intervals under
    --prior (Jeffreys' Beta(1/2, 1/2) by default), the same as `ldp-survey aggregate
    --intervals posterior` (ci_kind "posterior-PRIOR"; see the how-to "Posterior intervals
    under a stated prior"); an item of another design gets the exact posterior through its
    P and Q. Not with the weighting options:

    \b
      ldp-survey analyze responses.csv aggregate --codebook codebook.json --intervals posterior
      ldp-survey analyze survey.csv aggregate --codebook warner.json --intervals posterior --prior 2,3
    """
    from ..core import reanalysis

    if analysis == "crosstab" and len(names) != 2:
        raise click.UsageError("crosstab takes two questions: crosstab A B")
    if analysis == "regress" and len(names) < 2:
        raise click.UsageError("regress takes an outcome and at least one covariate: regress OUTCOME COVARIATE...")
    if analysis == "power" and len(names) != 3:
        raise click.UsageError("power takes a yes/no item and two shares: power Q NULL SHARE")
    if analysis == "aggregate" and names:
        raise click.UsageError(f"aggregate takes no question names, got {' '.join(names)}")
    intervals = interval_kind(intervals, prior)  # a bad --prior, or --prior without posterior, is refused first
    weighted = is_weighted(analysis, **weighting)
    if intervals != "fixed":
        _check_posterior(analysis, weighted)
    files = _Files(responses, codebook_path)
    if weighted:
        run_weighted(files, fmt, level, **weighting)
    elif analysis == "aggregate":
        from ..core import aggregate as agg

        rows = files.run(reanalysis.aggregate_files, level=level, intervals=intervals)
        echo_formatted(fmt, rows, to_csv=agg.rows_to_csv, to_json=agg.rows_to_json, to_table=agg.rows_to_table)
    elif analysis == "crosstab":
        from ..core import crosstab as xt

        table = files.run(reanalysis.crosstab_files, *names, level=level)
        echo_formatted(fmt, table, to_csv=xt.crosstab_to_csv, to_json=xt.crosstab_to_json,
                       to_table=xt.crosstab_to_table)
    elif analysis == "power":
        try:
            null, share = float(names[1]), float(names[2])
        except ValueError:
            raise click.UsageError(f"the shares must be numbers in [0, 1], got {names[1]} and {names[2]}") from None
        from ..core.precision import power_sentence

        result = files.run(reanalysis.power_files, names[0], null, share, alpha=1 - level)
        click.echo(json.dumps(result, indent=2) if fmt == "json" else power_sentence(result))
    else:
        _echo_regression(files.run(reanalysis.regression_files, names[0], list(names[1:]), level=level), fmt)


@click.command()
@click.option("--binary", "items", multiple=True, nargs=3, metavar="COLUMN P Q",
              help="A randomized yes/no column and its design: P = P(report 1 | true yes), Q = P(report 1 | "
                   "true no), as decimals or fractions (repeatable).")
@click.option("--exact", "exact", multiple=True, metavar="COLUMN",
              help="A column asked directly, not randomized (a regression covariate, each value a category; "
                   "repeatable).")
@click.option("--exact-number", "numbers", multiple=True, metavar="COLUMN",
              help="A number asked directly, not randomized (a regression covariate entering linearly; repeatable).")
@click.option("--title", default="", help="The data set's title.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="File to write (default: standard output).")
def codebook(items, exact, numbers, title, output):
    """Write the codebook of yes/no data of another randomized design.

    For a published data set or a survey run elsewhere: name each randomized column with
    its design's P and Q, and `ldp-survey analyze` then estimates and regresses it
    (crosstabs need a design made by this product). Prints each item's realised ε, the ln
    of its largest likelihood ratio. Common designs: Warner with probability t of the
    true question, P = t, Q = 1 − t; forced response with probability t truthful, f of a
    forced yes, P = t + f, Q = f; the unrelated question asked with probability t, its
    yes-rate u, P = t + (1 − t)u, Q = (1 − t)u; crosswise coded 1 for "same", the innocuous
    statement true with probability u, P = 1 − u, Q = u (P < Q is fine; P = Q carries no
    information and is refused).

    \b
    Examples:
      ldp-survey codebook --binary drug_use 0.75 0.25 -o warner.json
      ldp-survey codebook --binary cheated 5/6 1/6 --exact sex --exact age_group -o forced.json
      ldp-survey codebook --binary cheated 5/6 1/6 --exact sex --exact-number age -o forced.json
      ldp-survey analyze survey.csv --codebook forced.json aggregate
    """
    from ..core.reanalysis import BINARY, ReanalysisError, binary_codebook

    if not items:
        raise click.UsageError("describe at least one randomized column: --binary COLUMN P Q")
    try:
        book = binary_codebook(list(items), title=title, exact=list(exact), numbers=list(numbers))
    except ReanalysisError as exc:
        raise click.ClickException(str(exc)) from exc
    for column in book["columns"]:
        if column["mechanism"] == BINARY:
            shown = "unbounded: a report rules an answer out" if column["epsilon"] is None else \
                format_epsilon(column["epsilon"], 4)
            click.echo(f"{column['name']}: realised epsilon {shown}", err=True)
    text = json.dumps(book, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc}") from exc
    click.echo(f"Wrote the codebook to {output}", err=True)
