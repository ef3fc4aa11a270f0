"""Variable names, variable labels and value labels of a survey's exports for SPSS (.sav) and Stata (.dta).

The CSV column names (``codebook.response_columns``) are kept wherever the package accepts
them; a name it refuses (too long: 31 characters for Stata, 64 for SPSS; a reserved word;
a clash once case is ignored, as SPSS ignores it) is shortened and numbered, and every
variable's label says which CSV column it holds, so the files join the codebook either way.
Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .aggregate import CSV_HEADER
from .codebook import response_columns
from .mechanisms import mechanism_for

# Words each package will not take as a variable name (SPSS: IBM SPSS Statistics Command Syntax
# Reference, "Reserved keywords"; Stata: [U] 11.3 "Naming conventions").
RESERVED = {
    "sav": {"all", "and", "by", "eq", "ge", "gt", "le", "lt", "ne", "not", "or", "to", "with"},
    "dta": {"_all", "_b", "byte", "_coef", "_cons", "double", "float", "if", "in", "int", "long", "_n", "_pi",
            "_pred", "_rc", "_skip", "strl", "using", "with"},
}
# Stata takes 32 characters in a variable name, but ReadStat names each value-label set after its variable,
# and a label set's name may hold only 31: so 31 for every variable.
NAME_LIMIT = {"sav": 64, "dta": 31}
LABEL_LIMIT = {"sav": 256, "dta": 80}
FILE_LABEL_LIMIT = {"sav": 64, "dta": 80}

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
    "ci_kind": "Interval: fixed (at one planned n) or anytime (at every look)",
    "ci_planned": "Planned reports an anytime interval is tuned for",
}


@dataclass(frozen=True)
class Variable:
    """One variable of a .sav/.dta file: its name there, the CSV column it holds, its label and value labels."""

    name: str
    column: str
    label: str
    values: dict[int, str]


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def package_names(columns: list[str], fmt: str) -> dict[str, str]:
    """Return each CSV column's variable name in the package ``fmt`` ("sav" or "dta"), unique ignoring case."""
    limit, reserved = NAME_LIMIT[fmt], RESERVED[fmt]
    taken: set[str] = set()
    names = {}
    for column in columns:
        name = re.sub(r"[^A-Za-z0-9_]", "_", column)
        if not re.match(r"[A-Za-z]", name):
            name = "v" + name
        if len(name) > limit:
            name = name[:limit].rstrip("_")
        base, number = name, 1
        while name.lower() in taken or name.lower() in reserved:
            number += 1
            suffix = f"_{number}"
            name = base[: limit - len(suffix)].rstrip("_") + suffix
        taken.add(name.lower())
        names[column] = name
    return names


def file_label(design: dict, fmt: str, what: str) -> str:
    """Return the file's label: the survey's title (or slug) and what the file holds."""
    return _clip(f"{design.get('title') or design['slug']}: {what}", FILE_LABEL_LIMIT[fmt])


def response_variables(design: dict, fmt: str, *, sandbox: bool = False) -> list[Variable]:
    """Return the variables of the noisy reports, in the order of responses.csv."""
    leading = [("response_id", "Response id (random; not the order of arrival)"),
               ("received_day", "Day the response was received (UTC)")]
    if sandbox:
        leading.append(("source", "Sandbox source: test answer or simulated respondent"))
    columns = response_columns(design)
    names = package_names([column for column, _ in leading] + [column["name"] for column in columns], fmt)
    variables = [Variable(names[column], column, label, {}) for column, label in leading]
    questions = {question["id"]: question for question in design["questions"]}
    for column in columns:
        question = questions[column["question"]]
        mechanism = mechanism_for(question)
        text = question.get("text") or question["id"]
        if column["option"] is not None:
            text += f" [{question['options'][column['option']]}]"
        renamed = "" if names[column["name"]] == column["name"] else f" (CSV column {column['name']})"
        label = _clip(f"{text} - randomized report{renamed}", LABEL_LIMIT[fmt])
        if renamed and not label.endswith(renamed):
            label = _clip(f"{column['name']}: {text}", LABEL_LIMIT[fmt])
        variables.append(Variable(names[column["name"]], column["name"], label, mechanism.value_labels()))
    return variables


def aggregate_variables(fmt: str) -> list[Variable]:
    """Return the variables of the estimates, in the order of the aggregates CSV."""
    names = package_names(list(CSV_HEADER), fmt)
    return [Variable(names[column], column, _clip(AGGREGATE_LABELS[column], LABEL_LIMIT[fmt]), {})
            for column in CSV_HEADER]
