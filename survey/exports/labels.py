"""Variable names, variable labels and value labels of a survey's exports for SPSS (.sav) and Stata (.dta).

The CSV column names (``codebook.response_columns``) are kept wherever the package accepts
them; a name it refuses (too long: 27 characters for Stata, 64 for SPSS; a reserved word;
a clash once case is ignored, as SPSS ignores it) is shortened and given a suffix of four
hexadecimal digits of a hash of the CSV name (longer only if two would clash), so a column
keeps its name whatever the other questions; every renamed variable's label says which CSV
column it holds, so the files join the codebook either way.

Stata's limit is the value-label sets': ReadStat names each set after its variable followed by
the count of labelled variables before it, and a set's name may hold 32 characters; a survey
within the definition limits has fewer than 100,000 report columns, so 27 + 5 digits always fit.

Labels are clipped (ending in "…") to what each package keeps: Stata 80 characters for variable
and file labels; SPSS 256 bytes of UTF-8 for a variable label, 120 for a value label and 64 for
the file label (ReadStat would cut them mid-character). A clipped value label ends with its
value ("… =3"), so two options whose labels share a long beginning stay apart.

A survey with several versions (``store.versioning``) ends its files of responses with the variable
``version``, as responses.csv ends with the column (``survey_version`` decides when, from
``Store.versions``): every case holds the file's version number, and every version of the survey
has a value label with its ε, so the files of two versions appended keep both labelled. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ..core.aggregate import CSV_HEADER
from ..core.definition import MAX_OPTIONS, MAX_QUESTIONS
from ..core.mechanisms import mechanism_for
from ..core.words import format_epsilon
from .codebook import VERSION_COLUMN, VERSION_LABEL, response_columns, version_column

# Words each package will not take as a variable name (SPSS: IBM SPSS Statistics Command Syntax
# Reference, "Reserved keywords"; Stata: [U] 11.3 "Naming conventions").
RESERVED = {
    "sav": {"all", "and", "by", "eq", "ge", "gt", "le", "lt", "ne", "not", "or", "to", "with"},
    "dta": {"_all", "_b", "byte", "_coef", "_cons", "double", "float", "if", "in", "int", "long", "_n", "_pi",
            "_pred", "_rc", "_skip", "strl", "using", "with"},
}
# A value-label set's name (ReadStat: the variable's name, then the number of labelled variables before it) may
# hold 32 characters in Stata; SPSS files keep no set names. Report columns number at most one per option of
# every question, plus three leading ones, so the counter has at most MAX_COUNTER_DIGITS digits.
SET_NAME_LIMIT = {"sav": None, "dta": 32}
MAX_COUNTER_DIGITS = len(str(MAX_QUESTIONS * MAX_OPTIONS + 3))
NAME_LIMIT = {"sav": 64, "dta": SET_NAME_LIMIT["dta"] - MAX_COUNTER_DIGITS}
HASH_DIGITS = 4
# SPSS limits count bytes of UTF-8, Stata's characters.
LABEL_LIMIT = {"sav": 256, "dta": 80}
VALUE_LABEL_LIMIT = {"sav": 120, "dta": 8000}  # Stata: 32,000 bytes, so 8,000 characters of up to 4
FILE_LABEL_LIMIT = {"sav": 64, "dta": 80}
IN_BYTES = {"sav": True, "dta": False}

AGGREGATE_LABELS = {
    "question": "Question id",
    "option": "Option (empty for a number's mean)",
    "kind": "Question kind",
    "mechanism": "Randomizer (codebook code)",
    "epsilon": "Realised epsilon of the question",
    "n": "Reports of the question",
    "noisy_share": "Share of reports that are 1",
    "estimate": "Debiased estimate (unclipped)",
    "std_error": "Standard error of the estimate",
    "ci_low": "Lower confidence limit",
    "ci_high": "Upper confidence limit",
    "ci_level": "Confidence level",
    "ci_kind": "Interval: fixed (at one planned n), anytime (at every look) or posterior-PRIOR (credible)",
    "ci_planned": "Planned reports an anytime interval is tuned for",
    "consistent": "Consistent share (>= 0, summing to 1 over a choice)",
    "consistent_low": "Lower limit of the consistent share (all options together)",
    "consistent_high": "Upper limit of the consistent share (all options together)",
}


@dataclass(frozen=True)
class Variable:
    """One variable of a .sav/.dta file: its name there, the CSV column it holds, its label and value labels."""

    name: str
    column: str
    label: str
    values: dict[int, str]


@dataclass(frozen=True)
class SurveyVersion:
    """The version a file's responses were randomized under, and the ε of every version of the survey."""

    number: int
    epsilons: dict[int, float]


def survey_version(versions: list[dict], slug: str) -> SurveyVersion | None:
    """Return the version of ``slug`` among its family's ``versions`` (``Store.versions``), None if there is one only."""
    if len(versions) < 2:
        return None
    own = next(entry for entry in versions if entry["slug"] == slug)
    return SurveyVersion(int(own["version"]), {int(entry["version"]): float(entry["epsilon"]) for entry in versions})


def _size(text: str, fmt: str) -> int:
    """Return the length of a label as the package counts it: bytes of UTF-8 for SPSS, characters for Stata."""
    return len(text.encode("utf-8")) if IN_BYTES[fmt] else len(text)


def _clip(text: str, limit: int, fmt: str, tail: str = "") -> str:
    """Return the text on one line, cut to end in "…" and ``tail`` if it is longer than ``limit`` in ``fmt``."""
    text = " ".join(text.split())
    if _size(text, fmt) <= limit:
        return text
    end = "…" + tail
    keep = limit - _size(end, fmt)
    while _size(text[:keep], fmt) > keep:
        keep -= 1
    return text[:keep].rstrip() + end


def value_labels(values: dict[int, str], fmt: str) -> dict[int, str]:
    """Return a variable's value labels clipped to the package's limit; a clipped one ends with its value."""
    return {value: _clip(text, VALUE_LABEL_LIMIT[fmt], fmt, f" ={value}") for value, text in values.items()}


def _hashed(name: str, column: str, limit: int, digits: int) -> str:
    """Return ``name`` cut to fit ``limit`` with "_" and ``digits`` hexadecimal digits of a hash of the CSV column."""
    tag = hashlib.blake2s(column.encode("utf-8"), digest_size=16).hexdigest()[:digits]
    return f"{name[: limit - digits - 1].rstrip('_')}_{tag}"


def package_names(columns: list[str], fmt: str) -> dict[str, str]:
    """Return each CSV column's variable name in the package ``fmt`` ("sav" or "dta"), unique ignoring case."""
    return dict(zip(columns, package_name_list(columns, fmt)))


def package_name_list(columns: list[str], fmt: str) -> list[str]:
    """Return the columns' variable names in order, unique ignoring case even where two CSV columns share a name."""
    limit, reserved = NAME_LIMIT[fmt], RESERVED[fmt]
    taken: set[str] = set()
    names = []
    for column in columns:
        base = re.sub(r"[^A-Za-z0-9_]", "_", column)
        if not re.match(r"[A-Za-z]", base):
            base = "v" + base
        name, digits = base, HASH_DIGITS
        if len(name) > limit or name.lower() in reserved:
            name = _hashed(base, column, limit, digits)
        while name.lower() in taken or name.lower() in reserved:
            digits += 2
            name = _hashed(base, column, limit, digits)
        taken.add(name.lower())
        names.append(name)
    return names


def file_label(design: dict, fmt: str, what: str) -> str:
    """Return the file's label: the survey's title (or slug) and what the file holds."""
    return _clip(f"{design.get('title') or design['slug']}: {what}", FILE_LABEL_LIMIT[fmt], fmt)


def response_variables(design: dict, fmt: str, *, sandbox: bool = False,
                       version: SurveyVersion | None = None) -> list[Variable]:
    """Return the variables of the noisy reports, in the order of responses.csv (``version`` last, with a version)."""
    leading = [("response_id", "Response id (random; not the order of arrival)"),
               ("received_day", "Day the response was received (UTC)")]
    if sandbox:
        leading.append(("source", "Sandbox source: test answer or simulated respondent"))
    columns = response_columns(design)
    every = [column for column, _ in leading] + [column["name"] for column in columns]
    # The version column's CSV name is never a report column's (``version_column``); by position all the same.
    listed = package_name_list(every + ([version_column(design, sandbox=sandbox)] if version is not None else []),
                               fmt)
    names = dict(zip(every, listed))
    variables = [Variable(names[column], column, label, {}) for column, label in leading]
    questions = {question["id"]: question for question in design["questions"]}
    for column in columns:
        question = questions[column["question"]]
        mechanism = mechanism_for(question)
        text = question.get("text") or question["id"]
        if column["option"] is not None:
            text += f" [{question['options'][column['option']]}]"
        renamed = "" if names[column["name"]] == column["name"] else f" (CSV column {column['name']})"
        label = _clip(f"{text} - randomized report{renamed}", LABEL_LIMIT[fmt], fmt)
        if renamed and not label.endswith(renamed):
            label = _clip(f"{column['name']}: {text}", LABEL_LIMIT[fmt], fmt)
        variables.append(Variable(names[column["name"]], column["name"], label,
                                  value_labels(mechanism.value_labels(), fmt)))
    if version is not None:
        variables.append(version_variable(version, fmt, listed[-1], version_column(design, sandbox=sandbox)))
    return variables


def version_variable(version: SurveyVersion, fmt: str, name: str = VERSION_COLUMN,
                     csv_name: str = VERSION_COLUMN) -> Variable:
    """Return the trailing version variable under ``name`` (``csv_name`` in responses.csv): its label, and each
    version's number labelled with its ε."""
    renamed = "" if name == csv_name else f" (CSV column {csv_name})"
    values = {number: f"version {number} (ε = {format_epsilon(epsilon)})" for number, epsilon in
              sorted(version.epsilons.items())}
    return Variable(name, csv_name, _clip(VERSION_LABEL + renamed, LABEL_LIMIT[fmt], fmt),
                    value_labels(values, fmt))


def aggregate_variables(fmt: str) -> list[Variable]:
    """Return the variables of the estimates, in the order of the aggregates CSV."""
    names = package_names(list(CSV_HEADER), fmt)
    return [Variable(names[column], column, _clip(AGGREGATE_LABELS[column], LABEL_LIMIT[fmt], fmt), {})
            for column in CSV_HEADER]
