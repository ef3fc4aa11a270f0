"""Commands that read a survey's results: aggregate, crosstab, export (aggregates, responses, codebook)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .common import LEVEL, SANDBOX, echo_formatted, load_design, open_store


@click.command()
@click.argument("slug")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table",
              show_default=True, help="Output format.")
@LEVEL
@SANDBOX
@click.pass_obj
def aggregate(db, slug, fmt, level, sandbox):
    """Print debiased estimates with confidence intervals.

    Of the real responses only, or with --sandbox of the test answers and simulated
    respondents only.

    \b
    Examples:
      ldp-survey aggregate smoking-2026
      ldp-survey aggregate smoking-2026 --format csv --level 0.99 > estimates.csv
      ldp-survey aggregate smoking-2026 --sandbox
    """
    from ..core import aggregate as agg

    store = open_store(db, must_exist=True)
    try:
        design = load_design(store, slug)
        rows = agg.aggregate_counts(design, store.question_counts(slug, sandbox=sandbox), level=level)
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


@click.command()
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
@SANDBOX
@click.pass_obj
def export(db, slug, aggregates, responses, codebook, output, level, sandbox):
    """Export a survey's aggregates, noisy responses or codebook.

    The responses CSV has response_id, received_day, then per question its columns: one
    0/1 column per bit of a bit-list report (sports__run, sports__swim), one column for
    any other report (0/1, or a choice's option index). The codebook explains every
    column and gives, per aggregates row, the column, value, p and q to recompute it,
    and says how many simulated responses the real files leave out.
    With --sandbox, the files are of those instead (the responses CSV then has a source
    column after received_day: test or simulated).

    \b
    Examples:
      ldp-survey export smoking-2026 --aggregates -o estimates.csv
      ldp-survey export smoking-2026 --responses > reports.csv
      ldp-survey export smoking-2026 --codebook -o codebook.json
      ldp-survey export smoking-2026 --responses --sandbox -o simulated.csv
    """
    from ..core import aggregate as agg
    from ..core.codebook import codebook as make_codebook, simulated_note
    from ..core.export import responses_csv

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
        simulated = 0 if sandbox else store.sandbox_counts(slug)["simulated"]
        if what == "aggregates":
            counts = store.question_counts(slug, sandbox=sandbox)
            text = agg.rows_to_csv(agg.aggregate_counts(design, counts, level=level))
        elif what == "codebook":
            text = json.dumps(make_codebook(design, simulated=simulated, sandbox=sandbox), indent=2,
                              ensure_ascii=False) + "\n"
        else:
            text = responses_csv(design, store.iter_responses(slug, sandbox=sandbox), sandbox=sandbox)
    finally:
        store.close()
    if simulated:
        click.echo(f"Note: {simulated_note(simulated)}.", err=True)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        with output.open("w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc}") from exc
    click.echo(f"Wrote {what} of {slug} to {output}", err=True)
