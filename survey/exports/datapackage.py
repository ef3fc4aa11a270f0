"""The Frictionless Data Package of a survey's exports: ``datapackage.json`` with a Table Schema per CSV.

It describes the files an export directory holds (``ldp-survey export --package``, or the
results page's zip): ``responses.csv`` (the noisy reports), ``aggregates.csv`` (the estimates)
and ``codebook.json``, so that generic tools (frictionless, the Data Package readers for R and
pandas) can load and validate them with the right types: each report column an integer in the
range its randomizer can send, the question's text as its title and the codebook's meaning as
its description (Frictionless Data, Data Package and Table Schema specifications).
Pure: no I/O.
"""

from __future__ import annotations

import json
from typing import Iterable

from ..core.aggregate import CSV_HEADER, AggregateRow, rows_to_csv
from ..core.mechanisms import mechanism_for
from .codebook import VERSION_LABEL, VERSION_NOTE, VERSION_TITLE, codebook, version_column
from .labels import AGGREGATE_LABELS

FILES = {"responses": "responses.csv", "aggregates": "aggregates.csv", "codebook": "codebook.json"}
_AGGREGATE_TYPES = {"question": "string", "option": "string", "kind": "string", "mechanism": "string",
                    "n": "integer", "ci_level": "number", "ci_kind": "string",
                    "ci_planned": "integer"}


def _csv_resource(name: str, title: str, description: str, schema: dict) -> dict:
    return {"name": name, "path": FILES[name], "title": title, "description": description,
            "profile": "tabular-data-resource", "format": "csv", "mediatype": "text/csv", "encoding": "utf-8",
            "dialect": {"delimiter": ",", "lineTerminator": "\r\n", "header": True}, "schema": schema}


def responses_schema(design: dict, *, sandbox: bool = False, version: int | None = None) -> dict:
    """Return the Table Schema of responses.csv: ids, days, then each report column with its range and meaning."""
    book = codebook(design, sandbox=sandbox)
    questions = {question["id"]: question for question in design["questions"]}
    fields = [{"name": "response_id", "type": "string", "title": "Response id",
               "description": "16 random hex digits; rows follow them, never the order of arrival.",
               "constraints": {"required": True, "unique": True, "pattern": "[0-9a-f]{16}"}},
              {"name": "received_day", "type": "date", "title": "Day received (UTC)",
               "constraints": {"required": True}}]
    if sandbox:
        fields.append({"name": "source", "type": "string", "title": "Sandbox source",
                       "constraints": {"required": True, "enum": ["test", "simulated"]}})
    for column in book["columns"]:
        mechanism = mechanism_for(questions[column["question"]])
        fields.append({"name": column["name"], "type": "integer", "title": column["text"] or column["question"],
                       "description": column["meaning"],
                       "constraints": {"minimum": 0, "maximum": mechanism.highest}})
    if version is not None:
        fields.append({"name": version_column(design, sandbox=sandbox), "type": "integer", "title": VERSION_TITLE,
                       "description": f"{VERSION_LABEL}; {VERSION_NOTE}.",
                       "constraints": {"required": True, "enum": [version]}})
    return {"fields": fields, "primaryKey": ["response_id"], "missingValues": [""]}


def aggregates_schema() -> dict:
    """Return the Table Schema of the aggregates CSV (an empty number is a missing estimate)."""
    fields = []
    for column in CSV_HEADER:
        field = {"name": column, "type": _AGGREGATE_TYPES.get(column, "number"), "title": AGGREGATE_LABELS[column]}
        if column in ("question", "kind", "mechanism", "epsilon", "n", "ci_level", "ci_kind"):
            field["constraints"] = {"required": True}
        fields.append(field)
    return {"fields": fields, "missingValues": [""]}


def data_package(design: dict, *, sandbox: bool = False, version: int | None = None) -> dict:
    """Return the JSON-ready ``datapackage.json`` of a survey's export directory."""
    title = design.get("title") or design["slug"]
    what = "test answers and simulated respondents of the sandbox (never real responses)" if sandbox else \
        "the noisy reports as respondents' browsers sent them (randomized: never a true answer)"
    return {
        "profile": "data-package",
        "name": design["slug"].lower() + ("-sandbox" if sandbox else ""),
        "title": title,
        "description": (f"Survey {design['slug']!r} under local differential privacy: {what}, the debiased "
                        "estimates with confidence intervals, and the codebook that recomputes every estimate "
                        f"from the reports. Design {design['hash']}."),
        "resources": [
            _csv_resource("responses", "Noisy reports", "One row per response; an empty cell is a question the "
                          "respondent was not asked. codebook.json says what each value means.",
                          responses_schema(design, sandbox=sandbox, version=version)),
            _csv_resource("aggregates", "Estimates", "One row per estimand, in codebook.json's order.",
                          aggregates_schema()),
            {"name": "codebook", "path": FILES["codebook"], "title": "Codebook", "format": "json",
             "mediatype": "application/json", "encoding": "utf-8",
             "description": "What each column of responses.csv holds, and the column, value, p and q that "
                            "recompute each row of aggregates.csv."},
        ],
    }


def package_files(design: dict, rows: Iterable[AggregateRow], responses_chunks: Iterable[str], book: dict, *,
                  sandbox: bool = False, version: int | None = None) -> dict[str, str | Iterable[str]]:
    """Return every file of the package by name: responses.csv as the given chunks of text (streamed, never
    held whole: ``export.csv_from_lines``), the aggregates, the codebook and ``datapackage.json`` as text."""
    def as_json(value) -> str:
        return json.dumps(value, indent=2, ensure_ascii=False) + "\n"

    return {FILES["responses"]: responses_chunks,
            FILES["aggregates"]: rows_to_csv(rows),
            FILES["codebook"]: as_json(book), "datapackage.json": as_json(data_package(design, sandbox=sandbox, version=version))}
