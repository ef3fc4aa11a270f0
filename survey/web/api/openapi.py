"""The OpenAPI 3.1 description of the read-only API under ``/api/``, served at ``/api/openapi.json``.

It is written by hand beside the routes (``views.py``) and checked both ways against the app's
URL map by the tests, and by a schema-based fuzzer against the running server, so that it
cannot drift from what the server answers. The parameter rules here (level in [0.5, 1),
limit 1..10,000, a cursor of 16 hex digits) are the ones ``views.py`` enforces, and it imports
nothing of them (the views import this module).
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

from ...core.posterior import PRIOR_MAX_LENGTH, PRIOR_PATTERN

# The JSON page of responses: ?limit= from 1 to MAX_LIMIT, DEFAULT_LIMIT when absent.
DEFAULT_LIMIT = 1000
MAX_LIMIT = 10000
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
NUMBER_OR_NULL = {"type": ["number", "null"]}

_SLUG = {
    "name": "slug", "in": "path", "required": True,
    "description": "The survey's slug, as in its address `/s/SLUG`.",
    "schema": {"type": "string", "minLength": 1},
    "examples": {"demo": {"value": "smoking-2026"}},
}
_LEVEL = {
    "name": "level", "in": "query", "required": False,
    "description": "Confidence level of the intervals.",
    "schema": {"type": "number", "minimum": 0.5, "exclusiveMaximum": 1, "default": 0.95},
}
_INTERVALS = {
    "name": "intervals", "in": "query", "required": False,
    "description": "`fixed`: intervals valid at the planned end (one number of responses fixed in advance), as "
                   "before. `anytime`: intervals valid at every look (confidence sequences; Howard et al. 2021, "
                   "Waudby-Smith, Wu & Ramdas 2023): they keep their level however often they are read and "
                   "whenever collection stops, and are wider. `posterior`: equal-tailed credible intervals under "
                   "the `prior` (Jeffreys by default). Each row's `ci_kind` says which.",
    "schema": {"type": "string", "enum": ["fixed", "anytime", "posterior"], "default": "fixed"},
}
_PLANNED = {
    "name": "planned", "in": "query", "required": False,
    "description": "With `intervals=anytime`: the respondents planned, fixed before looking, at which the anytime "
                   "intervals are narrowest (they stay valid at every number of responses).",
    "schema": {"type": "integer", "minimum": 1, "maximum": 1000000000, "default": 1000},
}
_PRIOR = {
    "name": "prior", "in": "query", "required": False,
    "description": "With `intervals=posterior`: the prior, `jeffreys` (Beta(1/2, 1/2)), `uniform` (Beta(1, 1)) or "
                   "`A,B` for Beta(A, B); a single choice's options take the symmetric Dirichlet(A, ..., A).",
    # The form the web checks before parsing (survey.core.posterior.PRIOR_PATTERN): A, B > 0, short.
    "schema": {"type": "string", "default": "jeffreys", "maxLength": PRIOR_MAX_LENGTH, "pattern": PRIOR_PATTERN},
}


def _error(description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


_UNAUTHORIZED = {
    **_error("No token, or an unknown or revoked one."),
    "headers": {"WWW-Authenticate": {"description": 'Always `Bearer realm="ldp-survey"`.',
                                     "schema": {"type": "string"}}},
}
_NOT_FOUND = _error("No such survey, or one the token's researcher may not see (the two are not told apart).")
_BAD_REQUEST = _error("A parameter is out of its domain; the message names it and the bad value.")


def _json(schema_name: str, description: str) -> dict:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema_name}"}}}}


def _operation(operation_id: str, summary: str, description: str, parameters: list, ok: dict, *,
               bad_request: bool = True, survey: bool = True) -> dict:
    responses = {"200": ok, "401": _UNAUTHORIZED}
    if bad_request:
        responses["400"] = _BAD_REQUEST
    if survey:
        responses["404"] = _NOT_FOUND
    return {"get": {"operationId": operation_id, "summary": summary, "description": description,
                    "parameters": parameters, "responses": dict(sorted(responses.items()))}}


_CSV_DESCRIPTION = ("responses.csv: `response_id` (16 hex digits, random), `received_day` (YYYY-MM-DD), then "
                    "one column per report as the codebook lists; an empty cell is a question the respondent "
                    "was not asked. Rows follow the random ids, never the order of arrival.")


def _paths() -> dict:
    csv_ok = {"description": "The noisy reports, streamed.",
              "content": {"text/csv": {"schema": {"type": "string"}, "example": "response_id,received_day,smoker\n"}}}
    page_params = [
        {"name": "format", "in": "query", "required": False,
         "description": "`csv` (the default, also for `Accept: text/csv`) or `json` (also for `Accept: application/json`).",
         "schema": {"type": "string", "enum": ["csv", "json"]}},
        {"name": "limit", "in": "query", "required": False,
         "description": "Rows per JSON page (JSON only).",
         "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}},
        {"name": "cursor", "in": "query", "required": False,
         "description": "The last `response_id` of the previous page, as its `next` link names it (JSON only).",
         "schema": {"type": "string", "pattern": "^[0-9a-f]{16}$"}},
    ]
    return {
        "/api/openapi.json": {"get": {
            "operationId": "openapi", "summary": "This description",
            "description": "The OpenAPI 3.1 description of this API. It needs no token: it describes the "
                           "API and reveals no survey.",
            "security": [],
            "responses": {"200": {"description": "The OpenAPI document.",
                                  "content": {"application/json": {"schema": {"type": "object"}}}}}}},
        "/api/surveys": _operation(
            "listSurveys", "The researcher's surveys",
            "Every survey the token's researcher owns or collaborates on.", [],
            _json("SurveyList", "The surveys."), bad_request=False, survey=False),
        "/api/surveys/{slug}/results": _operation(
            "getResults", "Debiased estimates with intervals",
            "One row per estimand (a yes/no question's share of yes, an option's share, a number's mean) with "
            "its standard error and confidence interval, as `ldp-survey aggregate --format json`: valid at the "
            "planned end, or with `intervals=anytime` at every look.",
            [_SLUG, _LEVEL, _INTERVALS, _PLANNED, _PRIOR], _json("Results", "The estimates.")),
        "/api/surveys/{slug}/crosstab": _operation(
            "getCrosstab", "Crosstab of two questions",
            "Joint shares, conditional shares (B given A), the odds ratio of two yes/no questions and the mean "
            "of a number given A, with delta-method standard errors and Wald intervals, as `ldp-survey "
            "crosstab --format json`. A missing or unknown question, a pair that cannot be crossed, or a "
            "survey whose respondents answer a sample of its questions answers 400 with the reason.",
            [_SLUG,
             {"name": "a", "in": "query", "required": True, "description": "The first question's id.",
              "schema": {"type": "string"}, "examples": {"demo": {"value": "smoker"}}},
             {"name": "b", "in": "query", "required": True, "description": "The second question's id.",
              "schema": {"type": "string"}, "examples": {"demo": {"value": "lung_disease"}}},
             _LEVEL],
            _json("Crosstab", "The crosstab.")),
        "/api/surveys/{slug}/regression": _operation(
            "getRegression", "A yes/no question, or a number's mean, on other questions",
            "As `ldp-survey regress --format json`, every answer randomized and each question's known "
            "misclassification in the model. A yes/no outcome (`model` `logistic`): the logistic regression by "
            "maximum likelihood, per term the log odds ratio, its standard error from the observed "
            "information, z, p and the odds ratio with its interval, and the likelihood-ratio test of all "
            "covariates. A number (`model` `mean`): the reference group's mean and each group's difference, "
            "with sandwich standard errors. With a number covariate, every covariate is replaced by its best "
            "linear prediction from the reports through its mechanism's known noise (regression calibration, "
            "Carroll et al. 2006, ch. 4), slopes per unit, sandwich errors that include the calibration, a Wald "
            "test, and `method` naming the method and where it is approximate. Warnings when the likelihood is flat or an estimate is on the "
            "boundary. An unknown question, a question of another kind, or too few responses answers 400 "
            "with the reason.",
            [_SLUG,
             {"name": "outcome", "in": "query", "required": True,
              "description": "The outcome's id: a yes/no or number question.",
              "schema": {"type": "string"}, "examples": {"demo": {"value": "lung_disease"}}},
             {"name": "covariates", "in": "query", "required": True,
              "description": "The covariates' ids, comma-separated (yes/no or single choice; or "
                             "yes/no and number, by regression calibration).",
              "schema": {"type": "string"}, "examples": {"demo": {"value": "smoker"}}},
             _LEVEL],
            _json("Regression", "The fitted model.")),
        "/api/surveys/{slug}/codebook": _operation(
            "getCodebook", "The codebook",
            "What each column of responses.csv holds, and for each estimand the column, the value, p and q "
            "that recompute it (the same JSON as the codebook.json download).",
            [_SLUG], _json("Codebook", "The codebook."), bad_request=False),
        "/api/surveys/{slug}/results.xlsx": _operation(
            "getResultsWorkbook", "The estimates as a spreadsheet",
            "The estimates at `level` (and `intervals`) and the codebook as an Excel workbook with typed cells.",
            [_SLUG, _LEVEL, _INTERVALS, _PLANNED, _PRIOR],
            {"description": "The workbook.", "content": {XLSX: {"schema": {"type": "string",
                                                                           "contentMediaType": XLSX}}}}),
        "/api/surveys/{slug}/responses": _operation(
            "getResponses", "The noisy reports (CSV or JSON pages)",
            _CSV_DESCRIPTION + " With `format=json` (or `Accept: application/json`) one page of the same rows "
            "as JSON, with a `next` link (also in a `Link: <…>; rel=\"next\"` header) until the last page. "
            "`limit` or `cursor` with CSV answers 400.",
            [_SLUG, *page_params],
            {"description": "The reports: CSV, or one JSON page.",
             "headers": {"Link": {"description": 'The next JSON page, `<URL>; rel="next"`, when there is one.',
                                  "schema": {"type": "string"}}},
             "content": {**csv_ok["content"],
                         "application/json": {"schema": {"$ref": "#/components/schemas/ResponsesPage"}}}}),
        "/api/surveys/{slug}/responses.csv": _operation(
            "getResponsesCsv", "The noisy reports as CSV",
            _CSV_DESCRIPTION + " Always CSV; `format=json` here answers 400 and names the JSON address.",
            [_SLUG, {**page_params[0], "description": "Only `csv` here (JSON is at `/responses?format=json`).",
                     "schema": {"type": "string", "enum": ["csv"]}}],
            csv_ok),
    }


def _schemas() -> dict:
    string, integer, number = {"type": "string"}, {"type": "integer"}, {"type": "number"}
    day = {"type": "string", "format": "date"}
    design_hash = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
    survey = {"type": "object", "additionalProperties": False,
              "required": ["slug", "title", "owner", "responses", "created_day", "design_hash", "status"],
              "properties": {"slug": string, "title": string, "owner": {"type": "string", "format": "email"},
                             "responses": {"type": "integer", "minimum": 0}, "created_day": day,
                             "design_hash": design_hash,
                             "status": {"type": "string", "enum": ["draft", "open", "closed", "archived"]}}}
    aggregate_row = {
        "type": "object", "additionalProperties": False,
        "required": ["question", "option", "kind", "mechanism", "epsilon", "n", "noisy_share", "estimate",
                     "std_error", "ci_low", "ci_high", "ci_level", "text", "consistent", "ci_kind", "ci_planned",
                     "consistent_low", "consistent_high"],
        "properties": {
            "question": string, "option": {"type": "string", "description": "Empty for a number's mean."},
            "kind": {"type": "string", "enum": ["yes_no", "choice", "multi", "number"]},
            "mechanism": {"type": "string", "description": "The randomizer's code, as in the codebook."},
            "epsilon": {"type": "number", "exclusiveMinimum": 0, "description": "The question's realised ε′."},
            "n": {"type": "integer", "minimum": 0},
            "noisy_share": {**NUMBER_OR_NULL, "description": "Share of reports equal to 1; null with no reports."},
            "estimate": {**NUMBER_OR_NULL, "description": "Unbiased and unclipped; null with too few reports."},
            "std_error": NUMBER_OR_NULL,
            "ci_low": NUMBER_OR_NULL,
            "ci_high": {**NUMBER_OR_NULL, "description": "Null for an odds ratio with no upper limit (see note)."},
            "ci_level": {"type": "number", "minimum": 0.5, "exclusiveMaximum": 1},
            "text": string,
            "consistent": {**NUMBER_OR_NULL, "description": "A choice question's consistent view: shares adjusted to "
                                                           "be >= 0 and sum to 1 (Norm-Sub or the iterative Bayesian "
                                                           "update, by a measured rule), inside [consistent_low, "
                                                           "consistent_high]; null for other kinds and with no reports."},
            "consistent_low": {**NUMBER_OR_NULL, "description": "Lower end of the consistent share's interval: the "
                                                               "simultaneous interval tightened by the shares' sum of 1, "
                                                               "so a question's intervals hold together with probability "
                                                               "at least ci_level; null where consistent is."},
            "consistent_high": {**NUMBER_OR_NULL, "description": "Upper end of the consistent share's interval; null "
                                                                "where consistent is."},
            "ci_kind": {"type": "string", "pattern": "^(fixed|anytime|posterior-.+)$",
                        "description": "`fixed`: the interval is valid at the planned end; `anytime`: at every look; "
                                       "`posterior-PRIOR` (`posterior-jeffreys`, `posterior-uniform`, "
                                       "`posterior-beta(A,B)`): an equal-tailed credible interval under that prior."},
            "ci_planned": {"type": ["integer", "null"], "minimum": 1,
                           "description": "The planned respondents an anytime interval is tuned for; null for fixed."},
        }}
    crosstab_row = {
        "type": "object", "additionalProperties": False,
        "required": ["measure", "a_option", "b_option", "estimate", "std_error", "ci_low", "ci_high", "ci_level",
                     "note"],
        "properties": {
            "measure": {"type": "string", "enum": ["joint", "b_given_a", "odds_ratio", "mean_given_a"]},
            "a_option": string, "b_option": string, "estimate": NUMBER_OR_NULL,
            "std_error": {**NUMBER_OR_NULL, "description": "Of the logarithm for an odds ratio."},
            "ci_low": NUMBER_OR_NULL, "ci_high": NUMBER_OR_NULL,
            "ci_level": {"type": "number", "minimum": 0.5, "exclusiveMaximum": 1},
            "note": {"type": "string", "description": "Why the estimate or an interval end is missing, or why an "
                                                   "interval is the whole range."},
        }}
    column = {"type": "object", "required": ["name", "question", "text", "kind", "mechanism", "epsilon", "meaning"],
              "properties": {"name": string, "question": string, "text": string, "kind": string,
                             "mechanism": string, "epsilon": number, "meaning": string}}
    estimand = {"type": "object",
                "required": ["question", "option", "column", "value", "p", "q", "p_exact", "q_exact", "scale",
                             "interval", "simultaneous_over"],
                "properties": {"question": string, "option": string, "column": string,
                               "value": {"type": ["integer", "null"]}, "p": number, "q": number,
                               "p_exact": string, "q_exact": string,
                               "scale": {"type": ["array", "null"], "items": number, "minItems": 2, "maxItems": 2},
                               "interval": string, "simultaneous_over": {"type": "integer", "minimum": 1},
                               "debiased_range": {"type": "array", "items": number, "minItems": 2, "maxItems": 2,
                                                  "description": "The least and greatest debiased value of one "
                                                                 "report: the range of the anytime intervals' bound."},
                               "variance_bound": {"type": "number", "minimum": 0,
                                                  "description": "The largest variance of one report's debiased "
                                                                 "value, over every population."}}}
    return {
        "Error": {"type": "object", "additionalProperties": False, "required": ["error"],
                  "properties": {"error": {"type": "string", "description": "What went wrong, in a sentence."}}},
        "Survey": survey,
        "SurveyList": {"type": "object", "additionalProperties": False, "required": ["surveys"],
                       "properties": {"surveys": {"type": "array", "items": {"$ref": "#/components/schemas/Survey"}}}},
        "AggregateRow": aggregate_row,
        "Release": {
            "type": "object", "additionalProperties": False,
            "required": ["every", "released", "held", "to_go", "local_epsilon", "central_epsilon", "delta",
                         "smallest_release"],
            "description": "Results change only when another `every` responses have arrived; `held` ones wait. "
                           "Anyone who sees only released results is protected by the central (ε, δ) of a batch "
                           "of `every` reports (amplification by shuffling, Feldman, McMillan & Talwar 2021).",
            "properties": {
                "every": {"type": "integer", "minimum": 1, "description": "The release step B."},
                "released": {"type": "integer", "minimum": 0, "description": "Responses in the results."},
                "held": {"type": "integer", "minimum": 0, "description": "Responses waiting for the next release."},
                "to_go": {"type": "integer", "minimum": 0, "description": "Responses still needed for it."},
                "local_epsilon": {"type": "number", "minimum": 0, "description": "Each respondent's realised ε′."},
                "central_epsilon": {"type": "number", "minimum": 0,
                                    "description": "The ε of released results for one respondent (at `delta`)."},
                "delta": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                "smallest_release": {"type": ["integer", "null"], "minimum": 1,
                                     "description": "The size of a release made early, if any."}}},
        "Results": {"type": "object", "additionalProperties": False,
                    "required": ["slug", "title", "design_hash", "responses", "release", "level", "intervals",
                                 "planned", "rows"],
                    "properties": {"slug": string, "title": string, "design_hash": design_hash,
                                   "responses": {"type": "integer", "minimum": 0},
                                   "release": {"$ref": "#/components/schemas/Release"},
                                   "level": {"type": "number", "minimum": 0.5, "exclusiveMaximum": 1},
                                   "intervals": {"type": "string", "pattern": "^(fixed|anytime|posterior-.+)$"},
                                   "planned": {"type": ["integer", "null"], "minimum": 1},
                                   "rows": {"type": "array", "items": {"$ref": "#/components/schemas/AggregateRow"}}}},
        "CrosstabRow": crosstab_row,
        "Crosstab": {"type": "object", "additionalProperties": False,
                     "required": ["slug", "design_hash", "a", "b", "a_text", "b_text", "n", "level", "rows"],
                     "properties": {"slug": string, "design_hash": design_hash, "a": string, "b": string,
                                    "a_text": string, "b_text": string, "n": {"type": "integer", "minimum": 0},
                                    "level": {"type": "number", "minimum": 0.5, "exclusiveMaximum": 1},
                                    "rows": {"type": "array", "items": {"$ref": "#/components/schemas/CrosstabRow"}}}},
        "Regression": {"oneOf": [{"$ref": "#/components/schemas/LogisticRegression"},
                                 {"$ref": "#/components/schemas/MeanModel"}]},
        "MeanModel": {
            "type": "object", "additionalProperties": False,
            "required": ["model", "slug", "design_hash", "outcome", "covariates", "n", "level", "terms", "warnings"],
            "properties": {
                "model": {"const": "mean"}, "slug": string, "design_hash": design_hash, "outcome": string,
                "covariates": {"type": "array", "items": string}, "n": {"type": "integer", "minimum": 0},
                "level": {"type": "number", "minimum": 0.5, "exclusiveMaximum": 1},
                "terms": {"type": "array", "items": {"$ref": "#/components/schemas/MeanTerm"}},
                "warnings": {"type": "array", "items": string},
                "method": {"type": "string", "description": "With a number covariate only: how the model was "
                                                          "fitted, in words (exact covariates, or regression "
                                                          "calibration and where it is approximate)."},
                "per_unit": {"type": "array", "items": string,
                             "description": "With a number covariate only: the terms that are per unit of a number."},
            }},
        "MeanTerm": {
            "type": "object", "additionalProperties": False,
            "required": ["term", "estimate", "std_error", "z", "p_value", "ci_low", "ci_high"],
            "properties": {
                "term": {"type": "string", "description": "`(intercept)`: the reference group's mean; "
                                                          "`QUESTION: OPTION`: that group's difference from it; "
                                                          "`QUESTION` (a number): the change per unit."},
                "estimate": NUMBER_OR_NULL, "std_error": NUMBER_OR_NULL, "z": NUMBER_OR_NULL,
                "p_value": NUMBER_OR_NULL, "ci_low": NUMBER_OR_NULL, "ci_high": NUMBER_OR_NULL,
            }},
        "LogisticRegression": {
            "type": "object", "additionalProperties": False,
            "required": ["model", "slug", "design_hash", "outcome", "covariates", "n", "level", "terms",
                         "log_likelihood", "null_log_likelihood", "lr_statistic", "lr_df", "lr_p_value", "converged",
                         "warnings"],
            "properties": {
                "model": {"const": "logistic"}, "slug": string, "design_hash": design_hash, "outcome": string,
                "covariates": {"type": "array", "items": string}, "n": {"type": "integer", "minimum": 0},
                "level": {"type": "number", "minimum": 0.5, "exclusiveMaximum": 1},
                "terms": {"type": "array", "items": {"$ref": "#/components/schemas/RegressionTerm"}},
                "log_likelihood": number, "null_log_likelihood": number,
                "lr_statistic": {"type": "number", "minimum": 0}, "lr_df": {"type": "integer", "minimum": 0},
                "lr_p_value": {"type": "number", "minimum": 0, "maximum": 1}, "converged": {"type": "boolean"},
                "warnings": {"type": "array", "items": string},
                "method": {"type": "string", "description": "With a number covariate only: how the model was "
                                                          "fitted, in words (exact covariates, or regression "
                                                          "calibration and where it is approximate)."},
                "per_unit": {"type": "array", "items": string,
                             "description": "With a number covariate only: the terms that are per unit of a number."},
                "test": {"type": "string", "enum": ["likelihood-ratio", "Wald"],
                         "description": "With a number covariate only: the test of all covariates together (`lr_*`): "
                                        "likelihood-ratio for exact covariates, Wald on the sandwich errors for "
                                        "calibrated ones."},
            }},
        "RegressionTerm": {
            "type": "object", "additionalProperties": False,
            "required": ["term", "estimate", "std_error", "z", "p_value", "odds_ratio", "ci_low", "ci_high"],
            "properties": {
                "term": {"type": "string", "description": "`(intercept)`, `QUESTION: OPTION` against the first option, "
                                                          "or `QUESTION` for a number, per unit."},
                "estimate": {**NUMBER_OR_NULL, "description": "The log odds ratio."},
                "std_error": {**NUMBER_OR_NULL, "description": "Null when the likelihood is flat."},
                "z": NUMBER_OR_NULL, "p_value": NUMBER_OR_NULL, "odds_ratio": NUMBER_OR_NULL,
                "ci_low": NUMBER_OR_NULL, "ci_high": NUMBER_OR_NULL,
            }},
        "Codebook": {"type": "object",
                     "required": ["survey", "title", "design_hash", "epsilon", "epsilon_spent", "allocation",
                                  "files", "method", "columns", "estimands"],
                     "properties": {"survey": string, "title": string, "design_hash": design_hash,
                                    "epsilon": number, "epsilon_spent": number,
                                    "allocation": {"type": "string", "enum": ["split", "sample"]},
                                    "sample": integer, "files": {"type": "object"}, "method": string,
                                    "columns": {"type": "array", "items": column},
                                    "estimands": {"type": "array", "items": estimand}}},
        "ResponsesPage": {
            "type": "object", "additionalProperties": False,
            "required": ["slug", "design_hash", "responses", "columns", "limit", "rows", "next"],
            "properties": {
                "slug": string, "design_hash": design_hash,
                "responses": {"type": "integer", "minimum": 0,
                              "description": "The number of responses when the page was read."},
                "columns": {"type": "array", "items": string},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                "rows": {"type": "array", "items": {
                    "type": "object", "required": ["response_id", "received_day"],
                    "properties": {"response_id": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
                                   "received_day": day},
                    "additionalProperties": {"type": ["integer", "null"]}}},
                "next": {"type": ["string", "null"], "description": "The next page's address, null on the last."},
            }},
    }


@cache
def query_parameters(rule: str) -> tuple[str, ...]:
    """Return the query parameters the document gives the Flask rule (``/api/surveys/<slug>/results``)."""
    path = _paths().get(rule.replace("<", "{").replace(">", "}"), {})
    return tuple(parameter["name"] for parameter in path.get("get", {}).get("parameters", ())
                 if parameter["in"] == "query")


def package_version() -> str:
    """Return the installed package's version (0.0.0 when run from a tree that is not installed)."""
    try:
        return version("ldp-survey")
    except PackageNotFoundError:
        return "0.0.0"


def openapi_document() -> dict:
    """Return the OpenAPI 3.1 document of the API as a JSON-ready dict."""
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "ldp-survey API",
            "version": package_version(),
            "summary": "Read-only access to a researcher's surveys: debiased estimates, crosstabs, the codebook "
                       "and the noisy reports.",
            "description": "Every operation but this description needs an API token (`ldp-survey token create "
                           "EMAIL`, or the API tokens page) in `Authorization: Bearer TOKEN`; the session cookie "
                           "plays no part. A survey the token's researcher may not see answers 404 exactly as "
                           "one that does not exist. Every error is JSON `{\"error\": MESSAGE}`. Only GET (and "
                           "HEAD) are allowed: any other method answers 405. Nothing here is a true answer: "
                           "respondents' browsers randomize every answer before it is sent.",
            "license": {"name": "MIT", "identifier": "MIT"},
        },
        "servers": [{"url": "/", "description": "The server that serves this document."}],
        "security": [{"bearerToken": []}],
        "paths": _paths(),
        "components": {
            "securitySchemes": {"bearerToken": {"type": "http", "scheme": "bearer",
                                                "description": "A researcher's API token (ldps_…)."}},
            "schemas": _schemas(),
        },
    }
