"""Commands that read a survey's results: aggregate, crosstab, export (aggregates, responses, codebook)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..core.defaults import DEFAULT_PLANNED, FIXED
from .common import (
    INTERVALS,
    LEVEL,
    PLANNED,
    SANDBOX,
    echo_formatted,
    load_design,
    open_store,
)


@click.command()
@click.argument("slug")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table",
              show_default=True, help="Output format.")
@LEVEL
@INTERVALS
@PLANNED
@SANDBOX
@click.pass_obj
def aggregate(db, slug, fmt, level, intervals, planned, sandbox):
    """Print debiased estimates with confidence intervals.

    Of the real responses only, or with --sandbox of the test answers and simulated
    respondents only. The intervals are valid at the planned end by default; with
    --intervals anytime they are valid at every look (check after every response and
    stop whenever you like), tuned for --planned respondents; with --intervals posterior
    they are equal-tailed credible intervals under --prior (Jeffreys by default); the
    ci_kind column says which ("fixed", "anytime" or "posterior-PRIOR").

    \b
    Examples:
      ldp-survey aggregate smoking-2026
      ldp-survey aggregate smoking-2026 --format csv --level 0.99 > estimates.csv
      ldp-survey aggregate smoking-2026 --intervals anytime --planned 2000
      ldp-survey aggregate smoking-2026 --intervals posterior --prior uniform
      ldp-survey aggregate smoking-2026 --sandbox
    """
    from ..core import aggregate as agg

    store = open_store(db, must_exist=True)
    try:
        design = load_design(store, slug)
        rows = agg.aggregate_counts(design, store.question_counts(slug, sandbox=sandbox), level=level,
                                    intervals=intervals, planned=planned)
    finally:
        store.close()
    echo_formatted(fmt, rows, to_csv=agg.rows_to_csv, to_json=agg.rows_to_json, to_table=agg.rows_to_table)


@click.command()
@click.argument("slug")
@click.argument("a")
@click.argument("b")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table",
              show_default=True, help="Output format.")
@LEVEL
@SANDBOX
@click.pass_obj
def crosstab(db, slug, a, b, fmt, level, sandbox):
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
      ldp-survey crosstab smoking-2026 smoker lung_disease --sandbox
    """
    from ..core import crosstab as xt

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
        words_a, words_b, counts = store.joint_reports(slug, a, b, sandbox=sandbox)
    finally:
        store.close()
    table = xt.crosstab(questions[a], questions[b], words_a, words_b, counts, level=level)
    echo_formatted(fmt, table, to_csv=xt.crosstab_to_csv, to_json=xt.crosstab_to_json, to_table=xt.crosstab_to_table)


EXPORT_SUFFIXES = {".csv": "csv", ".json": "json", ".sav": "sav", ".dta": "dta", ".xlsx": "xlsx"}
EXPORT_FORMATS = {"aggregates": ("csv", "sav", "dta", "xlsx"), "responses": ("csv", "sav", "dta"),
                  "codebook": ("json",)}
BINARY_FORMATS = ("sav", "dta", "xlsx")


def export_format(what: str, fmt: str | None, output: Path | None) -> str:
    """Return an export's format from --format, else the suffix of -o (an unknown one refused), else its first format.

    A known suffix that --format or what is exported contradicts is refused; with --format, a suffix export
    does not know (estimates.data) is taken as the user's choice.
    """
    allowed = EXPORT_FORMATS[what]
    listed = ", ".join(f"{name} (.{name})" for name in allowed)
    suffix = output.suffix.lower() if output is not None else ""
    implied = EXPORT_SUFFIXES.get(suffix)
    if suffix and implied is None and fmt is None:
        raise click.UsageError(f"cannot write --{what} to {output.name}: export does not write {suffix} files; "
                               f"--{what} is written as {listed}")
    if fmt is not None and implied is not None and fmt != implied:
        raise click.UsageError(f"--format {fmt} contradicts the suffix of {output.name} ({implied}): "
                               f"name the file {output.stem}.{fmt} or leave out --format")
    fmt = fmt or implied or allowed[0]
    if fmt not in allowed:
        hint = "" if what == "codebook" else " (JSON: `ldp-survey aggregate --format json`, or the API)"
        raise click.UsageError(f"--{what} cannot be written as {fmt}: {listed}{hint}")
    if fmt in BINARY_FORMATS and output is None:
        raise click.UsageError(f"the {fmt} format is binary: name it with -o FILE.{fmt}")
    return fmt


@click.command()
@click.argument("slug")
@click.option("--aggregates", is_flag=True, help="Export the debiased estimates (CSV, or SPSS/Stata with --format).")
@click.option("--responses", is_flag=True,
              help="Export the noisy reports, one row per response, one column per report bit "
                   "(CSV, or SPSS/Stata with --format).")
@click.option("--codebook", is_flag=True,
              help="Export the codebook (JSON): what each responses column means, and how every "
                   "aggregates row follows from it.")
@click.option("--package", "package", type=click.Path(file_okay=False, path_type=Path),
              help="Write a Frictionless Data Package into this directory: datapackage.json, responses.csv, "
                   "aggregates.csv and codebook.json.")
@click.option("--format", "fmt", type=click.Choice(["csv", "sav", "dta", "xlsx"]),
              help="File format of --aggregates or --responses: csv, sav (SPSS) or dta (Stata, version 15), "
                   "with variable and value labels, or for --aggregates xlsx (the estimates and the codebook "
                   "as a workbook). Default: from the suffix of -o (.csv, .sav, .dta, .xlsx; without --format any "
                   "other suffix is refused), else csv.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="File to write (default: standard output; required for sav and dta).")
@LEVEL
@INTERVALS
@PLANNED
@SANDBOX
@click.pass_obj
def export(db, slug, aggregates, responses, codebook, package, fmt, output, level, intervals, planned, sandbox):
    """Export the estimates, noisy reports, codebook or a data package.

    The responses CSV has response_id, received_day, then per question its columns: one
    0/1 column per bit of a bit-list report (sports__run, sports__swim), one column for
    any other report (0/1, or a choice's option index). The codebook explains every
    column and gives, per aggregates row, the column, value, p and q to recompute it,
    and says how many simulated responses the real files leave out.
    SPSS (.sav) and Stata (.dta) files hold the same cells, with each question's text as
    the variable label and what each report value means as value labels; a column name
    Stata cannot take (more than 31 characters, or a word it reserves) is shortened
    or renamed, and its label names the CSV column. --aggregates can also be an XLSX
    workbook (-o FILE.xlsx): the estimates, estimands, columns and codebook fields, as the
    results.xlsx download. The format comes from --format, else from the suffix of -o; a
    suffix export does not write (.xls, .parquet, ...; accepted only with --format) or one
    that contradicts --format or what is exported (a .csv name for the codebook) is
    refused, so no file silently holds another format than its name says.
    --package writes all of it with a datapackage.json that describes every column's
    type and range (Frictionless Data), for tools that load or validate data packages.
    The responses CSV (alone or in --package) is written as the database reads it, a page
    at a time, in constant memory at any size; an SPSS or Stata file of the responses is
    built in memory by its library and refused beyond 1,000,000 responses
    ($LDP_SURVEY_STATFILE_MAX_ROWS): export the CSV instead.
    With --sandbox, the files are of those instead (the responses then have a source
    column after received_day: test or simulated). The estimates' intervals are valid at
    the planned end, or with --intervals anytime at every look (tuned for --planned
    respondents), or with --intervals posterior credible intervals under --prior; their
    ci_kind and ci_planned columns say which.

    \b
    Examples:
      ldp-survey export smoking-2026 --aggregates -o estimates.csv
      ldp-survey export smoking-2026 --aggregates --intervals anytime --planned 2000 -o watched.csv
      ldp-survey export smoking-2026 --aggregates --intervals posterior --prior 1,1 -o credible.csv
      ldp-survey export smoking-2026 --responses > reports.csv
      ldp-survey export smoking-2026 --responses -o reports.sav
      ldp-survey export smoking-2026 --aggregates --format dta -o estimates.dta
      ldp-survey export smoking-2026 --aggregates -o estimates.xlsx
      ldp-survey export smoking-2026 --codebook -o codebook.json
      ldp-survey export smoking-2026 --package smoking-data/
      ldp-survey export smoking-2026 --responses --sandbox -o simulated.csv
    """
    chosen = [name for name, flag in (("--aggregates", aggregates), ("--responses", responses),
                                      ("--codebook", codebook), ("--package", package)) if flag]
    if not chosen:
        raise click.UsageError("choose what to export: --aggregates, --responses, --codebook or --package")
    if len(chosen) > 1:
        raise click.UsageError(f"{' and '.join(chosen)} cannot go together: export one thing at a time")
    what = chosen[0][2:]
    if what == "package":
        if output is not None or fmt is not None:
            raise click.UsageError("--package writes a directory of its own: leave out -o and --format")
        _export_package(db, slug, package, level, sandbox, intervals=intervals, planned=planned)
        return
    fmt = export_format(what, fmt, output)
    store = open_store(db, must_exist=True)
    try:
        design = load_design(store, slug)
        simulated = 0 if sandbox else store.sandbox_counts(slug)["simulated"]
        content = _export_content(store, design, what, fmt, level, sandbox, simulated, intervals=intervals,
                                  planned=planned)
        if output is None:
            for chunk in _chunks(content):
                click.echo(chunk, nl=False)
        else:
            _write_file(output, content)
    finally:
        store.close()
    if simulated:
        from ..exports.codebook import simulated_note

        click.echo(f"Note: {simulated_note(simulated)}.", err=True)
    if output is not None:
        click.echo(f"Wrote {what} of {slug} to {output}", err=True)


def _chunks(content):
    """Return an export's content as an iterable of chunks: itself if it is text or bytes, else its chunks."""
    return [content] if isinstance(content, (str, bytes)) else content


def _export_content(store, design: dict, what: str, fmt: str, level: float, sandbox: bool, simulated: int, *,
                    intervals: str = FIXED, planned: int = DEFAULT_PLANNED):
    """Return one export's content: text for csv and json, bytes for sav, dta and xlsx, chunks of text for responses.csv.

    The responses are read page by page (``Store.iter_response_lines``), so responses.csv is
    written in constant memory whatever the survey's size.
    """
    from ..core import aggregate as agg
    from ..exports.codebook import codebook as make_codebook

    slug = design["slug"]
    if what == "codebook":
        return json.dumps(make_codebook(design, simulated=simulated, sandbox=sandbox,
                                        delete_after=store.retention(slug)["delete_after"],
                                        revisions=store.revision_record(slug)), indent=2,
                          ensure_ascii=False) + "\n"
    if what == "aggregates":
        rows = agg.aggregate_counts(design, store.question_counts(slug, sandbox=sandbox), level=level,
                                    intervals=intervals, planned=planned)
        if fmt == "csv":
            return agg.rows_to_csv(rows)
        if fmt == "xlsx":
            from ..exports.spreadsheet import results_workbook

            return results_workbook(rows, make_codebook(design, simulated=simulated, sandbox=sandbox,
                                                        revisions=store.revision_record(slug)))
        from ..exports.statfiles import aggregates_file

        return aggregates_file(design, rows, fmt)
    if fmt == "csv":
        return _responses_chunks(store, design, sandbox)
    from ..exports.statfiles import StatfileTooLarge, responses_file_from_lines

    try:
        return responses_file_from_lines(design, _response_pages(store, design, sandbox), fmt, sandbox=sandbox,
                                         rows=_stored_rows(store, slug, sandbox),
                                         version=None if sandbox else _file_version(store, slug))
    except StatfileTooLarge as exc:
        raise click.ClickException(str(exc)) from exc


def _response_pages(store, design: dict, sandbox: bool):
    """Return the store's pages of response lines (``Store.iter_response_lines``) in responses.csv's columns."""
    from ..exports.export import line_cells

    return store.iter_response_lines(design["slug"], line_cells(design), sandbox=sandbox)


def _responses_chunks(store, design: dict, sandbox: bool):
    """Return responses.csv as chunks of text, each a page of lines the store made (``Store.iter_response_chunks``)."""
    from ..exports.export import csv_from_chunks, line_cells

    return csv_from_chunks(design, store.iter_response_chunks(design["slug"], line_cells(design), sandbox=sandbox),
                           sandbox=sandbox, version=None if sandbox else _csv_version(store, design["slug"]))


def _file_version(store, slug: str):
    """Return the version the files of responses carry last (``labels.survey_version``), or None for a survey with one."""
    from ..exports.labels import survey_version

    return survey_version(store.versions(slug), slug)


def _csv_version(store, slug: str) -> int | None:
    """Return the version responses.csv carries in its last column, or None for a survey with one version."""
    version = _file_version(store, slug)
    return version.number if version is not None else None


def _stored_rows(store, slug: str, sandbox: bool) -> int:
    """Return how many rows an export of the responses (or of the sandbox) holds."""
    return sum(store.sandbox_counts(slug).values()) if sandbox else store.response_count(slug)


def _write_file(path: Path, content) -> None:
    """Write text (UTF-8, line ends as given), bytes, or an iterable of text chunks to ``path``, or fail with the reason."""
    try:
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            with path.open("w", encoding="utf-8", newline="") as handle:
                for chunk in _chunks(content):
                    handle.write(chunk)
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc}") from exc


def _export_package(db, slug: str, directory: Path, level: float, sandbox: bool, *, intervals: str = "fixed",
                    planned: int = 1000) -> None:
    """Write the Frictionless Data Package of a survey into ``directory`` (made if missing)."""
    from ..core import aggregate as agg
    from ..exports.codebook import codebook as make_codebook, simulated_note
    from ..exports.datapackage import package_files

    store = open_store(db, must_exist=True)
    try:
        design = load_design(store, slug)
        simulated = 0 if sandbox else store.sandbox_counts(slug)["simulated"]
        rows = agg.aggregate_counts(design, store.question_counts(slug, sandbox=sandbox), level=level,
                                    intervals=intervals, planned=planned)
        contents = package_files(design, rows, _responses_chunks(store, design, sandbox),
                                 make_codebook(design, simulated=simulated, sandbox=sandbox,
                                               delete_after=store.retention(slug)["delete_after"],
                                               revisions=store.revision_record(slug)), sandbox=sandbox,
                                 version=None if sandbox else _csv_version(store, slug))
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise click.ClickException(f"cannot make the directory {directory}: {exc}") from exc
        for name, content in contents.items():
            _write_file(directory / name, content)
    finally:
        store.close()
    if simulated:
        click.echo(f"Note: {simulated_note(simulated)}.", err=True)
    click.echo(f"Wrote the data package of {slug} to {directory}: {', '.join(contents)}", err=True)
