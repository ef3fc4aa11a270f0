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
``scale`` of a number's mean, the interval method and the Bonferroni multiplicity, so that
with ā the share of reports holding ``value`` among the n non-empty cells of ``column``:

- estimate = (ā − q)/(p − q), mapped to min + (max − min)·estimate for a number;
- std_error = √(ā(1 − ā)/(n − 1))/(p − q), times (max − min) for a number;
- ci_low, ci_high = the Clopper & Pearson (1934) interval on the count of 1s at level
  1 − (1 − ci_level)/simultaneous_over, mapped through the same maps and clipped to
  [0, 1] (or [min, max]).

A piecewise or hybrid number does not reduce to one indicator: its estimand has ``value`` null,
``levels``, ``interval`` "student-t" and an ``estimator`` sentence giving the formula from
its column of output levels; a hybrid number's estimand also lists ``level_values``, the
exact value R of each output level as a fraction.

Pure: imports neither Flask nor the database.
"""

from __future__ import annotations

import re
import unicodedata
from fractions import Fraction

from .codec import is_bit_vector, level_count, level_values
from .mechanisms import TWO53, multi_sampled_probabilities, piecewise_probabilities, ss_probabilities

INTERVAL_METHOD = "clopper-pearson"
LEVEL_INTERVAL_METHOD = "student-t"
_FALLBACK_RE = re.compile(r"option_[0-9]+")


def slugify(label: str) -> str:
    """Return an option label as lowercase ASCII letters, digits and single underscores ("" if none remain)."""
    ascii_text = unicodedata.normalize("NFKD", label).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "_", ascii_text.lower()).strip("_")


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
    """Return per indicator of the question the exact (p, q) as fractions (see design.response_probabilities)."""
    mechanism = question["mechanism"]
    if mechanism in ("rr", "duchi"):
        flip = Fraction(question["flip_threshold"], TWO53)
        pair = (1 - flip, flip)
    elif mechanism == "grr":
        keep = Fraction(question["keep_threshold"], TWO53)
        pair = (keep, (1 - keep) / (len(question["options"]) - 1))
    elif mechanism == "oue":
        pair = (Fraction(1, 2), Fraction(question["q_threshold"], TWO53))
    elif mechanism == "ss":
        pair = ss_probabilities(question["keep_threshold"], len(question["options"]), question["subset_size"])
    elif mechanism == "sampled":
        pair = multi_sampled_probabilities(question["flip_threshold"], len(question["options"]))
    elif mechanism in ("piecewise", "hybrid"):
        pair = piecewise_probabilities(question["ratio_a"], question["ratio_b"])
    else:
        raise ValueError(f"unknown mechanism {mechanism!r}")
    count = len(question["options"]) if question["kind"] in ("choice", "multi") else 1
    return [pair] * count


def _exact(value: Fraction, denominator: int) -> str:
    """Return ``value`` as "numerator/denominator" over the given denominator (a multiple of its own)."""
    numerator = value * denominator
    assert numerator.denominator == 1
    return f"{numerator.numerator}/{denominator}"


def _fraction_text(question: dict, value: Fraction) -> str:
    """Return a probability as the browser's integer threshold over 2^53 (GRR's and SS's q over (d − 1)·2^53,
    a sampled multi report's p and q over d·2^53).

    A piecewise or hybrid number's p and q are a/(a + b) and b/(a + b), over a + b.
    """
    if question["mechanism"] in ("piecewise", "hybrid"):
        return _exact(value, question["bins"])
    if value.denominator <= TWO53 and TWO53 % value.denominator == 0:
        return _exact(value, TWO53)
    d = len(question["options"])
    denominator = d * TWO53 if question["mechanism"] == "sampled" else (d - 1) * TWO53
    return _exact(value, denominator)


def _num(value: Fraction) -> str:
    return format(float(value), ".6g")


def _meanings(question: dict, p: Fraction, q: Fraction) -> list[str]:
    kind, mechanism = question["kind"], question["mechanism"]
    if kind == "yes_no":
        return [f"1 if the randomized report says yes, 0 if it says no; the true answer is kept with "
                f"probability {_num(p)} and flipped with probability {_num(q)}"]
    if kind == "number" and mechanism == "piecewise":
        lo, hi, a, b = question["min"], question["max"], question["ratio_a"], question["ratio_b"]
        return [f"the output level k in 0..{a + b - 1} of the discretised piecewise mechanism: the answer x in "
                f"{lo}..{hi} was rounded at random to a grid point i in 0..{a} with mean {a}(x - {lo})/{hi - lo}, "
                f"then k was uniform on i..i+{b - 1} with probability {a}/{a + b}, else uniform on the other "
                f"{a} levels; R = (k + 1/2)/{a + b} has mean q + (p - q)(x - {lo})/{hi - lo}"]
    if kind == "number" and mechanism == "hybrid":
        lo, hi, a, b = question["min"], question["max"], question["ratio_a"], question["ratio_b"]
        g = a + b
        return [f"the output level L in 0..{g + 1} of the hybrid mechanism: with probability {a - b}/{a} "
                f"(the piecewise branch) L = k in 0..{g - 1}, the answer x in {lo}..{hi} rounded at random to a "
                f"grid point i in 0..{a} with mean {a}(x - {lo})/{hi - lo}, then k uniform on i..i+{b - 1} with "
                f"probability {a}/{g}, else uniform on the other {a} levels; otherwise (the Duchi branch) x was "
                f"rounded to 1 with probability (x - {lo})/{hi - lo}, else to 0, that bit flipped with probability "
                f"{b * b}/{a * a + b * b}, and L = {g} + bit. The level's value R (level_values: (k + 1/2)/{g} for "
                f"k < {g}, {a * b}/{g * g} for L = {g}, {a * a + a * b + b * b}/{g * g} for L = {g + 1}) "
                f"has mean q + (p - q)(x - {lo})/{hi - lo} in either branch"]
    if kind == "number":
        lo, hi = question["min"], question["max"]
        return [f"0 or 1: the answer x in {lo}..{hi} was rounded to 1 with probability (x - {lo})/{hi - lo}, "
                f"else to 0, and that bit kept with probability {_num(p)} and flipped with probability "
                f"{_num(q)}; the share of 1s estimates (mean - {lo})/{hi - lo}"]
    options = question["options"]
    if mechanism == "grr":
        listing = ", ".join(f"{index} = {label!r}" for index, label in enumerate(options))
        return [f"the index of the option the randomized report names ({listing}); the true option is "
                f"reported with probability {_num(p)}, each other option with probability {_num(q)}"]
    if mechanism == "oue":
        return [f"1 if the randomized report's bit for option {label!r} is set; it is 1 with probability "
                f"{_num(p)} when {label!r} is the true answer and {_num(q)} when it is not"
                for label in options]
    if mechanism == "ss":
        return [f"1 if option {label!r} is in the randomized report's subset of {question['subset_size']} "
                f"options; it is 1 with probability {_num(p)} when {label!r} is the true answer and {_num(q)} "
                f"when it is not" for label in options]
    if mechanism == "sampled":
        return [f"1 if the report drew option {label!r} (each with probability 1/{len(options)}) and its "
                f"randomized selected bit is 1; it is 1 with probability {_num(p)} when {label!r} was selected "
                f"and {_num(q)} when it was not" for label in options]
    per_option = question.get("epsilon_per_option")
    spent = "" if per_option is None else f" (epsilon {format(per_option, '.6g')} for this option's bit)"
    return [f"1 if the randomized report says option {label!r} was selected, else 0; the true yes/no of "
            f"this option is kept with probability {_num(p)} and flipped with probability {_num(q)}{spent}"
            for label in options]


def _level_estimator(question: dict) -> str:
    """Return how a piecewise or hybrid number's mean follows from its column of output levels."""
    if question["mechanism"] == "hybrid":
        values = "with L the n non-empty cells of the column, R = level_values[L]"
    else:
        values = f"with k the n non-empty cells of the column, R = (k + 1/2)/{question['bins']}"
    return (f"not one indicator: {values}, "
            "r = mean(R) and s² = the sample variance of R (divisor n - 1): noisy_share = r; "
            "estimate = (r - q)/(p - q); "
            "std_error = s/(sqrt(n)(p - q)); the interval is estimate ± t(n - 1, 1 - (1 - ci_level)/2)·std_error "
            "(Student's t quantile), clipped to [0, 1]; then mapped by min + (max - min)x "
            "and std_error multiplied by max - min (Wang et al. 2019)")


def codebook(design: dict) -> dict:
    """Return the JSON-ready codebook of a survey's design (see the module docstring)."""
    columns_by_question: dict[str, list[dict]] = {}
    for column in response_columns(design):
        columns_by_question.setdefault(column["question"], []).append(column)
    columns, estimands = [], []
    for question in design["questions"]:
        qid, kind, mechanism = question["id"], question["kind"], question["mechanism"]
        probabilities = exact_probabilities(question)
        p, q = probabilities[0]
        own = columns_by_question[qid]
        meanings = _meanings(question, p, q)
        for column, meaning in zip(own, meanings):
            columns.append({"name": column["name"], "question": qid, "text": question.get("text", ""),
                            "kind": kind, "mechanism": mechanism, "epsilon": float(question["epsilon"]),
                            "meaning": meaning})
        if kind == "yes_no":
            labels = ["yes"]
        elif kind == "number":
            labels = [""]
        else:
            labels = list(question["options"])
        simultaneous = len(labels) if kind in ("choice", "multi") else 1
        for index, label in enumerate(labels):
            if is_bit_vector(question):
                column, value = own[index]["name"], 1
            elif mechanism == "grr":
                column, value = own[0]["name"], index
            else:
                column, value = own[0]["name"], 1
            p, q = probabilities[index]
            entry = {
                "question": qid, "option": label, "column": column, "value": value,
                "p": float(p), "q": float(q),
                "p_exact": _fraction_text(question, p), "q_exact": _fraction_text(question, q),
                "scale": [question["min"], question["max"]] if kind == "number" else None,
                "interval": INTERVAL_METHOD, "simultaneous_over": simultaneous,
            }
            if mechanism in ("piecewise", "hybrid"):
                entry.update(value=None, interval=LEVEL_INTERVAL_METHOD, levels=level_count(question),
                             estimator=_level_estimator(question))
            if mechanism == "hybrid":
                entry["level_values"] = [f"{value.numerator}/{value.denominator}" for value in level_values(question)]
            estimands.append(entry)
    responses = ("responses.csv: response_id, received_day, then the columns below in order; "
                 "an empty cell is a question the respondent was not asked")
    sampled = {}
    if design.get("allocation") == "sample":
        m, k = int(design["sample"]), len(design["questions"])
        sampled = {"allocation": "sample", "sample": m}
        responses += (f". Each respondent was asked {m} of the {k} questions, drawn uniformly at random on "
                      f"their device, so every row has empty cells for the other {k - m}; each estimand's n "
                      "counts only the respondents asked its question")
    return {
        "survey": design["slug"],
        "title": design.get("title", ""),
        "design_hash": design["hash"],
        "epsilon": float(design["epsilon"]),
        "epsilon_spent": float(design["epsilon_spent"]),
        "allocation": design.get("allocation", "split"),
        **sampled,
        "files": {
            "responses": responses,
            "aggregates": "the aggregates CSV: one row per estimand below, in the same order; a text cell "
                          "starting with =, +, -, @, a tab or a carriage return is prefixed with '. The "
                          "intervals of a choice or multi question's options are simultaneous: all of them "
                          "hold together with probability ci_level (Bonferroni over simultaneous_over)",
        },
        "method": ("For each estimand, with n the non-empty cells of its column and a the share of them "
                   "equal to value: estimate = (a - q)/(p - q); std_error = sqrt(a(1 - a)/(n - 1))/(p - q); "
                   "the interval is Clopper-Pearson on the count of 1s at level "
                   "1 - (1 - ci_level)/simultaneous_over, mapped through the same map and clipped to [0, 1]. "
                   "A number (scale = [min, max]) maps estimate and interval by min + (max - min)x and "
                   "multiplies std_error by max - min. Estimates are unbiased and left unclipped. "
                   "An estimand whose value is null is not one indicator; its estimator field says how "
                   "it is computed."),
        "columns": columns,
        "estimands": estimands,
    }
