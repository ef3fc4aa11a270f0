"""Aggregate the noisy reports of a survey into one debiased row per estimate.

``aggregate`` reads wire-format answers once and counts them per question with numpy
(``count_reports``); ``aggregate_counts`` debiases counts (``question_rows``), whether
counted here or kept by the store; ``rows_to_csv``,
``rows_to_json`` and ``rows_to_table`` format the rows for export, the API and the
terminal. Everything here is post-processing of noisy reports and costs no privacy. It
imports neither Flask nor the database.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
from dataclasses import dataclass, fields
from typing import Iterable

import numpy as np

from . import branching, codec, conditional_shares, posterior, words
from .anytime import DEFAULT_PLANNED, FIXED, check_kind, check_planned
from .estimators import Estimate
from .mechanisms import BITS, INDEX, LEVEL, mechanism_for

CSV_HEADER = ["question", "option", "kind", "mechanism", "epsilon", "n", "noisy_share", "estimate",
              "std_error", "ci_low", "ci_high", "ci_level", "ci_kind", "ci_planned", "consistent", "consistent_low",
              "consistent_high"]
CSV_LINE_TERMINATOR = "\r\n"
_MISSING = object()
_ROW_TYPES = (list, tuple, np.ndarray)
_INT_TYPES = (int, np.integer)


@dataclass
class AggregateRow:
    """One estimate: a yes_no question's share of yes, a choice/multi option's share, or a mean.

    ``epsilon`` is the question's realised epsilon; ``noisy_share`` the share of reports
    equal to 1 (naming the option, or with its bit set); ``estimate`` is unbiased and
    unclipped; ``ci_low``/``ci_high`` are clipped to the feasible range. ``consistent`` is
    a choice question's consistent view (shares ≥ 0 summing to 1: ``Mechanism.consistent``) and
    ``consistent_low``/``consistent_high`` its interval, the row's simultaneous intervals (of either
    kind) tightened by the sum (``estimators.simplex_intervals``): together they hold for all options
    with the same probability. All three are None for other kinds and when there are no reports.
    ``ci_kind`` says which interval ci_low/ci_high hold: "fixed" (valid at one n fixed in advance:
    Clopper-Pearson or Student's t) or "anytime" (a confidence sequence, valid at every n at once,
    ``survey.core.anytime``), whose boundary is tuned for ``ci_planned`` reports (None for a fixed interval),
    or "posterior-PRIOR" (an equal-tailed credible interval under the prior it names, ``survey.core.posterior``).
    """

    question: str
    option: str
    kind: str
    mechanism: str
    epsilon: float
    n: int
    noisy_share: float | None
    estimate: float | None
    std_error: float | None
    ci_low: float
    ci_high: float
    ci_level: float
    text: str = ""
    consistent: float | None = None
    ci_kind: str = FIXED
    ci_planned: int | None = None
    consistent_low: float | None = None
    consistent_high: float | None = None


@dataclass(frozen=True)
class QuestionCounts:
    """The number n of reports to one question and, per option (one entry for rr/duchi), its 1s.

    For a piecewise number ``ones`` holds the sum of its levels and the sum of their squares; for
    a hybrid number the same of its levels' integer scores (``codec.level_scores``).
    """

    n: int
    ones: np.ndarray


def aggregate(design: dict, answers: Iterable[dict], *, level=0.95, intervals=FIXED,
              planned=DEFAULT_PLANNED) -> list[AggregateRow]:
    """Return the debiased rows of a survey, in question order and option order.

    ``answers`` are noisy ``{QID: REPORT}`` mappings in the wire format, read once; a
    question absent from an answer does not count towards that question's n.
    """
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1), e.g. 0.95, got {level!r}")
    return aggregate_counts(design, count_reports(design, answers), level=level, intervals=intervals,
                            planned=planned)


def aggregate_counts(design: dict, counts, *, level=0.95, intervals=FIXED, planned=DEFAULT_PLANNED
                     ) -> list[AggregateRow]:
    """Return the debiased rows of a survey from its counts, in question order and option order.

    ``counts`` maps each question id to a QuestionCounts, or to a pair (n, ones per
    indicator) as ``Store.question_counts`` returns it. ``intervals`` is "fixed" (valid at one
    n fixed in advance), "anytime" (valid at every n; its boundary tuned for ``planned`` reports) or
    "posterior"/"posterior-PRIOR" (credible intervals, ``survey.core.posterior``; the rows among those
    a branched question applies to keep fixed intervals).
    """
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1), e.g. 0.95, got {level!r}")
    intervals = check_intervals(intervals)
    planned = check_planned(planned)
    rows = []
    counts = {question["id"]: _as_counts(counts[question["id"]]) for question in design["questions"]}
    for question in design["questions"]:
        rows.extend(question_rows(question, counts[question["id"]], level=level, intervals=intervals,
                                  planned=planned, answering=answering_share(design)))
        if branching.is_branched(question):
            own = rows[-len(estimand_labels(question)):]
            applied = intervals
            if posterior.kind_prior(intervals) is not None:
                applied = FIXED
                own = question_rows(question, counts[question["id"]], level=level, intervals=FIXED)
            rows.extend(applied_rows(design, question, counts, own, level=level, intervals=applied, planned=planned))
    return rows


def check_intervals(intervals) -> str:
    """Return the interval kind: "fixed", "anytime", or "posterior-PRIOR" ("posterior" names the default prior)."""
    prior = posterior.kind_prior(intervals)
    return check_kind(intervals) if prior is None else posterior.posterior_kind(prior)


def _as_counts(entry) -> QuestionCounts:
    if isinstance(entry, QuestionCounts):
        return entry
    return QuestionCounts(n=int(entry[0]), ones=np.asarray(entry[1], dtype=np.int64))


def applied_rows(design: dict, question: dict, counts: dict, own: list, *, level, intervals=FIXED,
                 planned=DEFAULT_PLANNED) -> list[AggregateRow]:
    """Return a branched question's rows among those it applies to (``survey.core.conditional_shares``).

    A choice or multi question's from its own rows (``own``: simultaneous intervals); a number's
    from its mean and the earlier question's estimates, each at level 1 − α/2.
    """
    answering = answering_share(design)
    if question["kind"] != "number":
        estimates = [Estimate(row.estimate, row.std_error, row.ci_low, row.ci_high, row.n, row.noisy_share)
                     for row in own]
        pairs = conditional_shares.share_estimates(question, estimates)
    else:
        parent = next(q for q in design["questions"] if q["id"] == question["show_if"]["question"])
        half = conditional_shares.pair_level(level)

        def estimates_of(entry):
            tallies = counts[entry["id"]]
            ones = [int(count) for count in tallies.ones]
            if intervals == FIXED:
                return mechanism_for(entry).estimates(ones, tallies.n, half)
            return mechanism_for(entry).anytime_estimates(ones, tallies.n, half, planned * answering)

        applied = conditional_shares.applied_share(parent, estimates_of(parent), question["show_if"]["values"])
        pairs = [conditional_shares.mean_estimate(question, estimates_of(question)[0], applied)]
    return [_row(question, option, estimate, level, (None, None, None), intervals,
                 None if intervals == FIXED else planned) for option, estimate in pairs]


def answering_share(design: dict) -> float:
    """Return the share of respondents asked each question: 1 under split, m/k under sample allocation."""
    if design.get("allocation") != "sample":
        return 1.0
    return int(design["sample"]) / len(design["questions"])


def count_reports(design: dict, answers: Iterable[dict]) -> dict[str, QuestionCounts]:
    """Return each question's report count and 1s per option, checking every report's domain."""
    buckets = [(question["id"], []) for question in design["questions"]]
    for answer in answers:
        for qid, bucket in buckets:
            report = answer.get(qid, _MISSING)
            if report is not _MISSING:
                bucket.append(report)
    return {question["id"]: _count_question(question, bucket)
            for question, (_, bucket) in zip(design["questions"], buckets)}


def _count_question(question: dict, reports: list) -> QuestionCounts:
    mechanism = mechanism_for(question)
    width = mechanism.estimands if mechanism.report == BITS else None
    values = _report_array(question["id"], reports, width=width, highest=mechanism.highest,
                           domain=mechanism.domain())
    if mechanism.report == LEVEL:
        ones = codec.tally(question, values)
    elif mechanism.report == BITS:
        ones = values.sum(axis=0)
    elif mechanism.report == INDEX:
        ones = np.bincount(values, minlength=mechanism.estimands)
    else:
        ones = np.array([np.count_nonzero(values)])
    return QuestionCounts(n=len(reports), ones=ones)


def _report_array(qid: str, reports: list, *, width: int | None, highest: int, domain: str) -> np.ndarray:
    """Return the reports as an integer array (one row of ``width`` bits each, if given), or raise."""
    shape = (len(reports),) if width is None else (len(reports), width)
    if not reports:
        return np.zeros(shape, dtype=np.int64)
    if width is None:
        scalars = reports
        well_typed = True
    else:
        well_typed = all(issubclass(kind, _ROW_TYPES) for kind in set(map(type, reports)))
        scalars = itertools.chain.from_iterable(reports) if well_typed else ()
    well_typed = well_typed and all(issubclass(kind, _INT_TYPES) and kind is not bool
                                    for kind in set(map(type, scalars)))
    values = None
    if well_typed and _rows_fit(reports, width):
        try:
            values = np.array(reports, dtype=np.int64)
        except OverflowError:
            values = None
    if values is None or values.shape != shape or values.min() < 0 or values.max() > highest:
        bad = next((report for report in reports if not _report_fits(report, width, highest)), reports[0])
        raise ValueError(f"reports to {qid!r} must be {domain}, got {bad!r}")
    return values


def _rows_fit(reports: list, width: int | None) -> bool:
    return width is None or all(len(report) == width for report in reports)


def _report_fits(report, width: int | None, highest: int) -> bool:
    def fits(value):
        return isinstance(value, _INT_TYPES) and not isinstance(value, bool) and 0 <= value <= highest
    if width is None:
        return fits(report)
    return isinstance(report, _ROW_TYPES) and len(report) == width and all(fits(bit) for bit in report)


def question_rows(question: dict, counts: QuestionCounts, *, level, intervals=FIXED,
                  planned=DEFAULT_PLANNED, answering: float = 1.0) -> list[AggregateRow]:
    """Return the debiased rows of one design question from its counts, with ``intervals`` fixed or anytime.

    An anytime interval is tuned for the reports ``planned`` respondents give the question: all
    of them, or the share ``answering`` asked it under sample allocation (as the planner counts).
    """
    kind, n = question["kind"], counts.n
    ones = [int(count) for count in counts.ones]
    mechanism = mechanism_for(question)
    intervals = check_intervals(intervals)
    prior = posterior.kind_prior(intervals)
    if intervals == FIXED:
        estimates = mechanism.estimates(ones, n, level)
    elif prior is not None:
        estimates = mechanism.posterior_estimates(ones, n, level, prior)
    else:
        estimates = mechanism.anytime_estimates(ones, n, level, planned * answering)
    labels = estimand_labels(question)
    # A credible interval is not a simultaneous confidence interval: the consistent view stays the fixed one's.
    simultaneous = mechanism.estimates(ones, n, level) if prior is not None and kind == "choice" else estimates
    view = mechanism.consistent(ones, n, simultaneous) if kind == "choice" and n > 0 else None
    return [_row(question, label, estimate, level,
                 (None, None, None) if view is None else (view.shares[index], view.lows[index], view.highs[index]),
                 intervals, None if intervals == FIXED or prior is not None else planned)
            for index, (label, estimate) in enumerate(zip(labels, estimates))]


def estimand_labels(question: dict) -> list[str]:
    """Return the option label of each of a question's rows: "yes", its options, or "" for a number's mean."""
    if question["kind"] == "yes_no":
        return ["yes"]
    if question["kind"] == "number":
        return [""]
    return list(question["options"])


def _row(question: dict, option: str, estimate: Estimate, level, consistent: tuple, intervals=FIXED,
         planned=None) -> AggregateRow:
    return AggregateRow(
        question=question["id"], option=option, kind=question["kind"], mechanism=question["mechanism"],
        epsilon=float(question["epsilon"]), n=estimate.n, noisy_share=estimate.noisy_share,
        estimate=estimate.estimate, std_error=estimate.std_error, ci_low=estimate.ci_low,
        ci_high=estimate.ci_high, ci_level=float(level), text=question.get("text", ""),
        consistent=consistent[0], consistent_low=consistent[1], consistent_high=consistent[2], ci_kind=intervals,
        ci_planned=planned)


def format_decimal(value) -> str:
    """Return a number with 6 decimals ("0.571429", never "-0.000000"), or "" for None/nan."""
    if value is None or math.isnan(value):
        return ""
    text = f"{value:.6f}"
    return text[1:] if text == "-0.000000" else text


def rows_to_csv(rows: Iterable[AggregateRow]) -> str:
    """Return the aggregates CSV: CSV_HEADER, then one line per row, lines ended by CRLF.

    Numbers: epsilon exactly as the codebook and the API hold it (the realised ε′, a float
    written as ``repr``: 0.49999999999999967, never rounded up past its true value); noisy_share,
    estimate, std_error, ci_low and ci_high with 6 decimals (``format_decimal``); n as an
    integer; ci_level as ``format(level, "g")`` ("0.95"); ci_kind "fixed", "anytime" or "posterior-PRIOR" and
    ci_planned the planned reports an anytime interval is tuned for (empty for a fixed one);
    consistent, consistent_low and consistent_high (a choice question's consistent view and its
    interval) with 6 decimals;
    an empty field for a missing value. Fields are quoted only when needed (csv.QUOTE_MINIMAL);
    text is written exactly as the codebook and the API hold it (``=1+1`` stays ``=1+1``: the
    spreadsheet download, ``survey.exports.spreadsheet``, is the one for spreadsheets).
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=CSV_LINE_TERMINATOR)
    writer.writerow(CSV_HEADER)
    for row in rows:
        writer.writerow([
            row.question, row.option, row.kind, row.mechanism,
            repr(float(row.epsilon)), str(int(row.n)),
            format_decimal(row.noisy_share), format_decimal(row.estimate), format_decimal(row.std_error),
            format_decimal(row.ci_low), format_decimal(row.ci_high), format(row.ci_level, "g"),
            row.ci_kind, "" if row.ci_planned is None else str(int(row.ci_planned)),
            format_decimal(row.consistent), format_decimal(row.consistent_low), format_decimal(row.consistent_high),
        ])
    return buffer.getvalue()


def rows_to_json(rows: Iterable[AggregateRow]) -> list[dict]:
    """Return the rows as JSON-ready dicts: every AggregateRow field, None for a missing number."""
    return [{field.name: json_value(getattr(row, field.name)) for field in fields(AggregateRow)}
            for row in rows]


def json_value(value):
    """Return a value ready for JSON: a plain float or int, None for a missing (nan) number."""
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


_TABLE_COLUMNS = [("question", "<"), ("option", "<"), ("mechanism", "<"), ("epsilon", ">"), ("n", ">"),
                  ("noisy_share", ">"), ("estimate", ">"), ("std_error", ">"), ("ci_low", ">"),
                  ("ci_high", ">"), ("consistent", ">"), ("consistent_low", ">"), ("consistent_high", ">")]


def format_epsilon(value: float) -> str:
    """Return an epsilon for people: rounded up to 6 significant digits ("0.5" for the realised 0.49999999999999967)."""
    return words.format_epsilon(value, 6)


def shown_option(row: AggregateRow) -> str:
    """Return a row's option for people: "mean" for a number's row (its option is "" in the data)."""
    if row.kind == "number":
        return f"mean {row.option}" if row.option else "mean"
    return row.option


def rows_to_table(rows: Iterable[AggregateRow]) -> str:
    """Return an aligned plain-text table of the rows (4 decimals, "-" for a missing value), no final newline.

    Epsilon has 6 significant digits (``format_epsilon``) and a number's option reads "mean".

    The title line names the confidence level of the first row; ``consistent`` is the
    consistent view of a choice question, ``consistent_low``/``consistent_high`` its interval.
    """
    rows = list(rows)
    cells = [[name for name, _ in _TABLE_COLUMNS]]
    for row in rows:
        cells.append([row.question, shown_option(row), row.mechanism, format_epsilon(row.epsilon), str(row.n)]
                     + [table_number(getattr(row, name)) for name, _ in _TABLE_COLUMNS[5:]])
    lines = aligned_lines(cells, [align for _, align in _TABLE_COLUMNS])
    if rows:
        lines.insert(0, interval_title(rows[0]))
    return "\n".join(lines)


def interval_title(row: AggregateRow) -> str:
    """Return the title line naming the rows' intervals: their level, and fixed-n or valid at every look."""
    level = format(row.ci_level * 100, "g")
    if row.ci_kind == FIXED:
        return (f"{level}% Clopper-Pearson intervals "
                "(simultaneous over the options of a choice or multi question)")
    if posterior.kind_prior(row.ci_kind) is not None:
        return (f"{level}% equal-tailed credible intervals under {posterior.kind_prior(row.ci_kind).words()} "
                "(a symmetric Dirichlet prior over a single choice's options; one option at a time, not simultaneous)")
    return (f"{level}% anytime-valid intervals, valid at every look (confidence sequences tuned for "
            f"{row.ci_planned:,} reports; simultaneous over the options of a choice or multi question)")


def aligned_lines(cells: list[list[str]], aligns: list[str]) -> list[str]:
    """Return the lines of a plain-text table: the header row, a rule of dashes, then the rows, each column padded."""
    widths = [max(len(line[i]) for line in cells) for i in range(len(aligns))]
    lines = [" ".join(f"{cell:{align}{width}}" for cell, align, width in zip(line, aligns, widths)).rstrip()
             for line in cells]
    lines.insert(1, " ".join("-" * width for width in widths))
    return lines


def table_number(value) -> str:
    """Return a number for a plain-text table: 4 decimals ("0.5714", never "-0.0000"), "-" when missing."""
    if value is None or math.isnan(value):
        return "-"
    text = f"{value:.4f}"
    return text[1:] if text == "-0.0000" else text
