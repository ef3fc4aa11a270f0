"""The codebook of a survey's exports: what each column of responses.csv holds, and how
every row of the aggregates CSV follows from those columns.

``response_columns`` names the columns of responses.csv (after ``response_id`` and
``received_day``): one per report bit of a bit-vector question (OUE choice, multi), named
``QID__LABEL`` with LABEL the option label slugified (lowercase ASCII letters, digits and
``_``), or ``QID__option_I`` (I the option's index counting from 0) when the slug is empty,
looks like such a fallback, or would clash with another column; one column ``QID`` for a
scalar report (0/1 for rr and duchi, the option index for grr, the output level for
piecewise and hybrid). Names depend only on the
design, so they are stable.

``codebook`` returns the JSON-ready codebook: per column its meaning in words, and per row
of the aggregates CSV (``estimands``, in the same order) the column, the value of it that
counts as 1, the probabilities p and q that a report has that value when the true answer
has the property and when it has not (floats, and the exact fractions as strings), the
``scale`` of a number's mean, the interval method and the Bonferroni multiplicity (and, as
``design``, the public design itself, from which ``reanalysis`` rebuilds every mechanism), so that
with ā the share of reports holding ``value`` among the n non-empty cells of ``column``:

- estimate = (ā − q)/(p − q), mapped to min + (max − min)·estimate for a number;
- std_error = √(b(1 − b)/(n − 1))/|p − q| with b = ā clipped to [min(p, q), max(p, q)] (never a
  false 0 when every report is equal), times (max − min) for a number;
- ci_low, ci_high = the Clopper & Pearson (1934) interval on the count of 1s at level
  1 − (1 − ci_level)/simultaneous_over, mapped through the same maps and clipped to
  [0, 1] (or [min, max]); one wholly beyond an end is moved inside keeping its width (capped
  at the whole range), so it is never a single point.

With ``ci_kind`` "anytime" the interval is instead the confidence sequence of
``survey.core.anytime``, from the estimand's ``debiased_range`` [a, b] (the least and greatest
debiased value of one report) and ``variance_bound`` (the largest variance of one), at
α = (1 − ci_level)/simultaneous_over and tuned for the ci_planned respondents' reports.

A piecewise or hybrid number does not reduce to one indicator: its estimand has ``value`` null,
``levels``, ``interval`` "bounded-mean" (with ``report_range`` and ``report_variance``) and an ``estimator`` sentence giving the formula from
its column of output levels; a hybrid number's estimand also lists ``level_values``, the
exact value R of each output level as a fraction.

Pure: imports neither Flask nor the database.
"""

from __future__ import annotations

import re
import unicodedata
from fractions import Fraction

from ..core.aggregate import estimand_labels
from ..core.branching import is_branched
from ..core.conditional_shares import applied_entries
from ..core.codec import is_bit_vector
from ..core.design import release_every
from ..core.mechanisms import BITS, INDEX, mechanism_for
from ..core.releases import batch_epsilon
from ..core.shuffling import DEFAULT_DELTA

INTERVAL_METHOD = "clopper-pearson"
APPLIED_NOTE = (". A question shown only when an earlier answer makes it apply (its design entry has show_if) is "
                "followed by rows among those it applies to, whose option ends with \"(among those it applies "
                "to)\": they are described, in the same order, by applied_estimands")
# The trailing ``version`` column of a survey with several versions, in words: responses.csv's field in
# datapackage.json and the SPSS and Stata files' variable label (``labels.version_variable``) say the same.
VERSION_COLUMN = "version"
VERSION_TITLE = "Survey version"
VERSION_LABEL = "Survey version (design) this response was randomized under"
VERSION_NOTE = "versions are kept apart, never pooled (codebook.json's version)"
_FALLBACK_RE = re.compile(r"option_[0-9]+")


def slugify(label: str) -> str:
    """Return an option label as lowercase ASCII letters, digits and single underscores ("" if none remain)."""
    ascii_text = unicodedata.normalize("NFKD", label).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "_", ascii_text.lower()).strip("_")


def version_column(design: dict, *, sandbox: bool = False) -> str:
    """Return the name of the trailing version column: ``version``, unless a column of the file already has that name.

    A question may be called ``version``; the version column is then ``survey_version`` (or
    ``survey_version_2``…), so no two columns of responses.csv share a name.
    """
    taken = {"response_id", "received_day", *(["source"] if sandbox else [])}
    taken.update(column["name"] for column in response_columns(design))
    name, suffix = VERSION_COLUMN, 1
    while name in taken:
        name = "survey_" + VERSION_COLUMN if suffix == 1 else f"survey_{VERSION_COLUMN}_{suffix}"
        suffix += 1
    return name


def response_columns(design: dict) -> list[dict]:
    """Return the report columns of responses.csv in design order: ``{"name", "question", "option"}``.

    ``option`` is the option's index for a bit of a bit-vector report, None for a scalar
    report. Every name is unique and differs from ``response_id`` and ``received_day``.
    """
    taken = {"response_id", "received_day"}
    taken.update(question["id"] for question in design["questions"] if not is_bit_vector(question))
    candidates = []
    for question in design["questions"]:
        if is_bit_vector(question):
            for index, label in enumerate(question["options"]):
                slug = slugify(label)
                if not slug or _FALLBACK_RE.fullmatch(slug):
                    slug = None
                candidates.append((question["id"], index, slug))
    seen: dict[str, int] = {}
    for qid, _, slug in candidates:
        if slug is not None:
            name = f"{qid}__{slug}"
            seen[name] = seen.get(name, 0) + 1
    bit_names = {}
    for qid, index, slug in candidates:
        name = f"{qid}__{slug}" if slug is not None else None
        if name is None or seen[name] > 1 or name in taken:
            name = f"{qid}__option_{index}"
        # A fallback can only clash with a scalar question named like it; number such clashes apart.
        base, extra = name, 1
        while name in taken:
            extra += 1
            name = f"{base}_{extra}"
        taken.add(name)
        bit_names[(qid, index)] = name
    columns = []
    for question in design["questions"]:
        qid = question["id"]
        if is_bit_vector(question):
            columns.extend({"name": bit_names[(qid, index)], "question": qid, "option": index}
                           for index in range(len(question["options"])))
        else:
            columns.append({"name": qid, "question": qid, "option": None})
    return columns


def exact_probabilities(question: dict) -> list[tuple[Fraction, Fraction]]:
    """Return per indicator of the question the exact (p, q) as fractions (``Mechanism.probabilities``)."""
    mechanism = mechanism_for(question)
    return [mechanism.probabilities()] * mechanism.estimands


def _exact(value: Fraction, denominators) -> str:
    """Return ``value`` as "numerator/denominator" over the first of the denominators that is a multiple of its own.

    The mechanism lists them (``Mechanism.exact_denominators``): the browser's 2^53 for a
    threshold, (d − 1)·2^53 or d·2^53 for a probability shared among options, a + b for a level's.
    """
    for denominator in denominators:
        if denominator % value.denominator == 0:
            return f"{(value * denominator).numerator}/{denominator}"
    raise AssertionError(f"{value} is over none of {denominators}")


def simulated_note(simulated: int) -> str:
    """Return the sentence saying how many simulated responses the files of the real responses leave out."""
    return (f"{simulated} simulated response{'' if simulated == 1 else 's'} of this survey "
            f"{'is' if simulated == 1 else 'are'} kept in its sandbox, apart from the real responses: "
            "none is in these files (`ldp-survey export --sandbox` exports them)")


def _release_entry(design: dict) -> dict:
    """Return the codebook's account of the release step and the central ε it gives readers of the results."""
    step = release_every(design)
    local = float(design["epsilon_spent"])
    central = batch_epsilon(local, step)
    return {"every": step, "central_epsilon": central, "delta": DEFAULT_DELTA,
            "note": ("results change only when another `every` responses have arrived; anyone who sees only "
                     "released results learns about one respondent at most what (central_epsilon, delta)-DP "
                     "allows (amplification by shuffling, Feldman, McMillan & Talwar 2021), while each "
                     "report on its own is epsilon_spent-LDP" if step > 1 else
                     "results change after every response: readers of the results are protected by "
                     "epsilon_spent, the local guarantee")}


def _waves_entry(design: dict) -> dict:
    """Return what a series' two layers mean for its reports: both epsilons and what a linked observer learns."""
    return {"series": design["series"], "layers": 2, "wave_epsilon": float(design["wave_epsilon"]),
            "wave_epsilon_spent": float(design["wave_epsilon_spent"]),
            "note": ("a wave of a series in two layers (Erlingsson, Pihur & Korolova 2014): each device keeps one "
                     "report per possible answer, made by the question's mechanism at its epsilon (epsilon_inf, "
                     "over every wave), and each wave sends the kept report randomized again by the question's "
                     "per-wave layer at its wave_epsilon (epsilon_1); p and q below are those of the two layers "
                     "composed, which the estimates debias. Two waves' reports of one respondent are not "
                     "identical, and what they show of a change of answer is bounded by wave_epsilon_spent")}


def codebook(design: dict, *, simulated: int = 0, sandbox: bool = False, delete_after: str | None = None,
             revisions: dict | None = None) -> dict:
    """Return the JSON-ready codebook of a survey's design (see the module docstring).

    ``simulated``, when not 0, adds ``simulated_kept_apart``: how many simulated responses the
    real files leave out. ``delete_after``, when set, adds ``deletion_date``: the day from which
    the survey and all its data are deleted from the server. With ``sandbox`` the codebook is of the sandbox's export, whose rows
    also have a source (test answers and simulated responses, never real ones). ``revisions``
    (``Store.revision_record``) adds the survey's version and its dated wording history.
    """
    columns_by_question: dict[str, list[dict]] = {}
    for column in response_columns(design):
        columns_by_question.setdefault(column["question"], []).append(column)
    columns, estimands, applied = [], [], []
    for question in design["questions"]:
        qid, kind = question["id"], question["kind"]
        mechanism = mechanism_for(question)
        probabilities = exact_probabilities(question)
        p, q = probabilities[0]
        own = columns_by_question[qid]
        meanings = mechanism.meanings(p, q)
        for column, meaning in zip(own, meanings):
            columns.append({"name": column["name"], "question": qid, "text": question.get("text", ""),
                            "kind": kind, "mechanism": mechanism.name, "epsilon": float(question["epsilon"]),
                            "meaning": meaning})
        labels = estimand_labels(question)
        simultaneous = len(labels) if kind in ("choice", "multi") else 1
        for index, label in enumerate(labels):
            if mechanism.report == BITS:
                column, value = own[index]["name"], 1
            elif mechanism.report == INDEX:
                column, value = own[0]["name"], index
            else:
                column, value = own[0]["name"], 1
            p, q = probabilities[index]
            denominators = mechanism.exact_denominators()
            entry = {
                "question": qid, "option": label, "column": column, "value": value,
                "p": float(p), "q": float(q),
                "p_exact": _exact(p, denominators), "q_exact": _exact(q, denominators),
                "scale": [question["min"], question["max"]] if kind == "number" else None,
                "interval": INTERVAL_METHOD, "simultaneous_over": simultaneous,
                "debiased_range": list(mechanism.debiased_range()),
                "variance_bound": mechanism.debiased_variance(),
            }
            entry.update(mechanism.codebook_fields())
            estimands.append(entry)
        if is_branched(question):
            applied.extend(applied_entries(question))
    responses = ("responses.csv: response_id, received_day, then the columns below in order; "
                 "an empty cell is a question the respondent was not asked")
    if sandbox:
        responses = ("responses.csv of the sandbox: response_id, received_day, source (\"test\": an answer given "
                     "in test mode; \"simulated\": a simulated respondent; never a real response), then the "
                     "columns below in order; an empty cell is a question the respondent was not asked")
    step = release_every(design)
    if step > 1 and not sandbox:
        responses += (f". Responses are released {step:,} at a time: this file holds released responses only, and "
                      "received_day is the day of a response's release, so no day splits a release")
    sampled = {}
    if design.get("allocation") == "sample":
        m, k = int(design["sample"]), len(design["questions"])
        sampled = {"allocation": "sample", "sample": m}
        responses += (f". Each respondent was asked {m} of the {k} questions, drawn uniformly at random on "
                      f"their device, so every row has empty cells for the other {k - m}; each estimand's n "
                      "counts only the respondents asked its question")
    corrected = _revision_entries(revisions or {}, sandbox)
    if "version" in corrected:
        column = version_column(design)
        responses += (f". Every row ends with {column} = {corrected['version']['number']}, as does every case "
                      f"of the SPSS and Stata files of the responses (variable {column}, each value labelled "
                      "with its version's ε)")
    book = {
        "survey": design["slug"],
        "title": design.get("title", ""),
        "design_hash": design["hash"],
        "epsilon": float(design["epsilon"]),
        "epsilon_spent": float(design["epsilon_spent"]),
        "allocation": design.get("allocation", "split"),
        **sampled,
        "release": _release_entry(design),
        **({"waves": _waves_entry(design)} if "wave_epsilon" in design else {}),
        **({"data": "sandbox", "leading_columns": ["response_id", "received_day", "source"]} if sandbox else {}),
        **({"simulated_kept_apart": {"responses": simulated, "note": simulated_note(simulated)}}
           if simulated else {}),
        **({"deletion_date": {"day": delete_after, "note": "from this day (UTC) the survey and all its data are "
                              "deleted from the server that collected them; copies such as this file are not"}}
           if delete_after else {}),
        "files": {
            "responses": responses,
            "aggregates": "the aggregates CSV: one row per estimand below, in the same order, with the same "
                          "question and option (a number's option is empty); labels are written exactly, "
                          "never altered for spreadsheets (results.xlsx is the spreadsheet download). The "
                          "intervals of a choice or multi question's options are simultaneous: all of them "
                          "hold together with probability ci_level (Bonferroni over simultaneous_over). "
                          "consistent, consistent_low and consistent_high (single choice only) are the consistent "
                          "view: shares adjusted to be >= 0 and sum to 1, with intervals that hold for all "
                          "options together" + (APPLIED_NOTE if applied else ""),
        },
        "method": ("For each estimand, with n the non-empty cells of its column and a the share of them "
                   "equal to value: estimate = (a - q)/(p - q); std_error = sqrt(b(1 - b)/(n - 1))/|p - q| with b = a "
                   "clipped to [min(p, q), max(p, q)] (never a false 0 when every report is equal); "
                   "the interval is Clopper-Pearson on the count of 1s at level "
                   "1 - (1 - ci_level)/simultaneous_over, mapped through the same map (its ends swapped when "
                   "p < q) to x1 <= x2 and clipped to [0, 1], except that one wholly beyond an end (x1 >= 1 or "
                   "x2 <= 0) is moved inside keeping its width c = min(x2 - x1, 1): [1 - c, 1] or [0, c], never "
                   "a point (it misses every feasible share already, so coverage is unchanged). "
                   "A number (scale = [min, max]) maps estimate and interval by min + (max - min)x and "
                   "multiplies std_error by max - min. Estimates are unbiased and left unclipped. "
                   "An estimand whose value is null is not one indicator; its estimator field says how "
                   "it is computed. Rows whose ci_kind is posterior-PRIOR (jeffreys: Beta(1/2, 1/2), uniform: "
                   "Beta(1, 1), beta(A,B)) hold equal-tailed credible intervals instead: the ci_level central "
                   "quantiles of the posterior of the estimand's x in [0, 1], proportional to "
                   "x^(A-1)(1-x)^(B-1) lambda^k (1-lambda)^(n-k) with lambda = q + (p - q)x and k = "
                   "noisy_share*n (a single choice's options: B = (d - 1)A, the marginal of the symmetric "
                   "Dirichlet(A, ..., A), each option given its own count), or for an estimand whose value is "
                   "null (a level report) x^(A-1)(1-x)^(B-1) exp(-(x - e)^2/(2 s^2)) with e and s the estimate and "
                   "std_error divided by max - min after subtracting min (a normal approximation), mapped by "
                   "min + (max - min)x (survey.core.posterior; the rows among those a branched question "
                   "applies to stay fixed). Rows whose ci_kind is anytime hold intervals valid at every look "
                   "(confidence sequences: Howard et al. 2021; Waudby-Smith, Wu & Ramdas 2023) instead: "
                   "estimate ± h(n) clipped to the feasible range (one wholly beyond an end is moved "
                   "inside keeping its width, never a point), with alpha = (1 - ci_level)/"
                   "simultaneous_over, [a, b] the estimand's debiased_range, v its variance_bound and m the "
                   "reports planned for the question (ci_planned, times sample/k under sample allocation); "
                   "h(n) is Hoeffding's normal mixture "
                   "(b - a)sqrt((n/4 + rho)log((n/4 + rho)/(rho alpha^2)))/n with rho = (m/4)/(r - 1), "
                   "r = -W_{-1}(-alpha^2/e) (Lambert W), or Bennett's discrete mixture s/n with s the root "
                   "of sum_j w_j exp(l_j s - v n psi(l_j)) = 2/alpha, psi(l) = (exp(l c) - 1 - l c)/c^2, "
                   "c = b - a, l_j = l* 2^(j/2) for j = -8..8, l* = sqrt(2 log(2/alpha)/(v m)) and w_j "
                   "proportional to 1/((|j| + 1)(|j| + 2)), summing to 1, used instead where it is at least "
                   "5% narrower at n = m (survey.core.anytime). "
                   "For a single-choice question, with lo and hi its options' intervals: "
                   "consistent_low = max(lo, 1 - (sum of the other options' hi)) and consistent_high = "
                   "min(hi, 1 - (sum of the other options' lo)), the range of each share over the shares "
                   "that sum to 1 within every interval (left as lo and hi when sum(lo) > 1 or sum(hi) < 1); "
                   "consistent sums to 1, lies within them, and is Norm-Sub, the projection of the estimates "
                   "onto the simplex (Wang et al. 2020), when d·sqrt(r(1 - r)/n)/(p - q) < 0.05 with "
                   "r = q + (p - q)/d, else the iterative Bayesian update (Agrawal & Aggarwal 2001) of the "
                   "option counts from uniform shares, stopped when their deviance falls to k·d, "
                   "k = 0.2 + 0.4·d·sqrt(r(1 - r)/n)/(p - q) kept within [0.25, 0.4] (at most 100,000 iterations); either is then projected "
                   "onto those intervals' shares summing to 1 (survey.core.consistent.consistent_view)."),
        "columns": columns,
        "estimands": estimands,
        **({"applied_estimands": applied} if applied else {}),
        # The public design (as design.json serves it): with it, `ldp-survey analyze` recomputes every
        # number of the dashboard from responses.csv and this file alone, through the same code.
        "design": (revisions or {}).get("hashed_design", design),
    }
    book.update(corrected)
    return book


def _revision_entries(record: dict, sandbox: bool) -> dict:
    """Return the codebook's "version" (of a survey with several) and "wording_history" (of a corrected one)."""
    entries = {}
    if record.get("of", 1) > 1 and not sandbox:
        entries["version"] = {
            "number": record["version"], "of": record["of"], "survey": record["public_slug"],
            "note": "a change to how answers are randomized made a new version under the same address; each "
                    "version is its own data set with its own design, and versions are never pooled"}
    if record.get("wording_history"):
        entries["wording_history"] = {
            **record["wording_history"],
            "note": "what each respondent saw is known by date: each wording with the day (UTC) from which "
                    "respondents saw it, until the next; on a day with two wordings either may have been seen. "
                    "The randomization did not change, so all responses are one data set; design is the design "
                    "as first published, whose hash the reports carry"}
    return entries
