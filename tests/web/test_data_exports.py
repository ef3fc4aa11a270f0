"""The data is the same everywhere: the API serves responses.csv (and JSON pages of it), labels are exact in every
CSV, the codebook and the API, and the spreadsheet download holds them as text cells, never formulas."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from openpyxl import load_workbook

from survey.core.aggregate import CSV_HEADER
from survey.exports.spreadsheet import MIMETYPE, results_workbook
from survey.store import Store

from conftest import OTHER, OWNER, create_from_toml, definition, domain_answers
from test_ownership import signed_in

SLUG = "labels"
LABELS = ["-10% or more", "=1+1", "+5", "@home", "plain, with a comma"]
LABELS_TOML = f"""
slug = "{SLUG}"
release_every = 1
title = "Labels"
epsilon = 3
allocation = "sample"
sample = 2

[[questions]]
id = "change"
kind = "choice"
text = "How did it change?"
options = {json.dumps(LABELS)}

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"

""" + definition("age")


def answers(design: dict, index: int) -> dict:
    """Return a valid response that skips one question (sample = 2 of 3), varied by index."""
    picks = {question["id"]: index * (number + 1) for number, question in enumerate(design["questions"])}
    answer = domain_answers(design, **picks)
    del answer[design["questions"][index % 3]["id"]]
    return answer


@pytest.fixture
def labels(db_path, accounts):
    """The labels survey, owned by OWNER, with 2,500 responses (three CSV chunks of 1,000 rows)."""
    design = create_from_toml(db_path, LABELS_TOML)
    store = Store(db_path)
    try:
        store.share(SLUG, OWNER[0])
        store.add_responses(SLUG, design["hash"], [answers(design, index) for index in range(2500)])
        token = store.create_token(OWNER[0])[1]
        other = store.create_token(OTHER[0])[1]
    finally:
        store.close()
    return {"design": design, "mine": {"Authorization": f"Bearer {token}"},
            "theirs": {"Authorization": f"Bearer {other}"}}


def test_the_api_serves_responses_csv_byte_for_byte_and_streams_it(app, labels):
    exported = signed_in(app, *OWNER).get(f"/surveys/{SLUG}/responses.csv")
    assert exported.status_code == 200
    body = exported.get_data()
    assert body.count(b"\r\n") == 2501
    api = app.test_client()
    for path, headers in ((f"/api/surveys/{SLUG}/responses", {}),
                          (f"/api/surveys/{SLUG}/responses", {"Accept": "text/csv"}),
                          (f"/api/surveys/{SLUG}/responses", {"Accept": "*/*"}),
                          (f"/api/surveys/{SLUG}/responses?format=csv", {"Accept": "application/json"}),
                          (f"/api/surveys/{SLUG}/responses.csv", {})):
        response = api.get(path, headers={**labels["mine"], **headers}, buffered=False)
        assert response.status_code == 200 and response.mimetype == "text/csv", path
        assert response.headers["Content-Disposition"] == f'attachment; filename="{SLUG}-responses.csv"'
        # Streamed: no length is known up front, and the body comes in chunks of 1,000 rows as they are read.
        assert "Content-Length" not in response.headers and response.is_streamed
        chunks = [bytes(chunk) for chunk in response.response if chunk]
        response.close()
        assert [chunk.count(b"\r\n") for chunk in chunks] == [1001, 1000, 500], path
        assert b"".join(chunks) == body, path


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def cells(row: dict, header: list[str]) -> list[str]:
    """Return a JSON row as the CSV writes it: in the header's order, "" for null."""
    return ["" if row[name] is None else str(row[name]) for name in header]


def test_json_pages_hold_the_rows_of_responses_csv_in_random_id_order(app, labels):
    api = app.test_client()
    rows = csv_rows(api.get(f"/api/surveys/{SLUG}/responses.csv", headers=labels["mine"]).get_data(as_text=True))
    header, rows = rows[0], rows[1:]
    assert [row[0] for row in rows] == sorted(row[0] for row in rows)  # the random ids' order, not arrival
    seen, pages, url = [], 0, f"/api/surveys/{SLUG}/responses?limit=1000"
    while url:
        page = api.get(url, headers={**labels["mine"], "Accept": "application/json"})
        assert page.status_code == 200 and page.is_json, page.get_data(as_text=True)
        body = page.json
        assert body["columns"] == header and body["responses"] == 2500 and body["limit"] == 1000
        assert body["design_hash"] == labels["design"]["hash"]
        assert len(body["rows"]) == (1000 if body["next"] else 500)
        if body["next"]:
            assert page.headers["Link"] == f'<{body["next"]}>; rel="next"'
        seen.extend(body["rows"])
        pages, url = pages + 1, body["next"]
    assert pages == 3
    assert all(sorted(row) == sorted(header) for row in seen)
    assert [cells(row, header) for row in seen] == rows
    assert any(cell is None for row in seen for cell in row.values())  # a question not asked is null
    small = api.get(f"/api/surveys/{SLUG}/responses?format=json&limit=7", headers=labels["mine"]).json
    assert small["next"].startswith(f"/api/surveys/{SLUG}/responses?") and "format=json" in small["next"]
    assert [cells(row, header) for row in small["rows"]] == rows[:7]
    following = api.get(small["next"], headers=labels["mine"]).json
    assert [row["response_id"] for row in following["rows"]] == [row[0] for row in rows[7:14]]


@pytest.mark.parametrize("query, fragment", [
    ("?format=xml", "format must be csv or json"),
    ("?format=json&limit=0", "limit must be a whole number from 1 to 10000"),
    ("?format=json&limit=10001", "limit must be"),
    ("?format=json&limit=ten", "limit must be"),
    ("?format=json&limit=%C2%B2", "limit must be"),
    ("?format=json&cursor=zz", "cursor must be"),
    ("?limit=5", "limit and cursor page the JSON"),
    (".csv?format=json", "responses.csv is CSV"),
])
def test_bad_response_queries_are_400_with_a_reason(app, labels, query, fragment):
    response = app.test_client().get(f"/api/surveys/{SLUG}/responses{query}", headers=labels["mine"])
    assert response.status_code == 400 and response.is_json and fragment in response.json["error"], response.json


def test_the_new_routes_are_404_for_another_researcher(app, labels):
    api = app.test_client()
    for path in ("/responses", "/responses.csv", "/responses?format=json", "/results.xlsx"):
        theirs = api.get(f"/api/surveys/{SLUG}{path}", headers=labels["theirs"])
        missing = api.get(f"/api/surveys/nope{path}", headers=labels["theirs"])
        assert theirs.status_code == missing.status_code == 404 and theirs.json == {"error": "not found"}, path
        assert api.get(f"/api/surveys/{SLUG}{path}").status_code == 401


def test_labels_are_identical_in_results_csv_the_codebook_and_the_api(app, labels):
    client, api = signed_in(app, *OWNER), app.test_client()
    results = list(csv.DictReader(io.StringIO(client.get(f"/surveys/{SLUG}/results.csv").get_data(as_text=True))))
    book = client.get(f"/surveys/{SLUG}/codebook.json").json
    api_book = api.get(f"/api/surveys/{SLUG}/codebook", headers=labels["mine"]).json
    api_rows = api.get(f"/api/surveys/{SLUG}/results", headers=labels["mine"]).json["rows"]
    expected = [("change", label) for label in LABELS] + [("smoker", "yes"), ("age", "")]
    for source in (results, book["estimands"], api_book["estimands"], api_rows):
        assert [(row["question"], row["option"]) for row in source] == expected
    # A merge on (question, option) matches every row, as a pandas merge would.
    by_key = {(e["question"], e["option"]): e for e in book["estimands"]}
    assert all((row["question"], row["option"]) in by_key for row in results)
    # The realised epsilon is the same number in the CSV, the codebook and the API.
    epsilons = {column["question"]: column["epsilon"] for column in book["columns"]}
    for row, api_row in zip(results, api_rows):
        assert float(row["epsilon"]) == api_row["epsilon"] == epsilons[row["question"]]
        assert row["epsilon"] == repr(api_row["epsilon"])


def test_results_xlsx_holds_labels_as_text_and_numbers_as_numbers(app, labels):
    client, api = signed_in(app, *OWNER), app.test_client()
    api_rows = api.get(f"/api/surveys/{SLUG}/results?level=0.9", headers=labels["mine"]).json["rows"]
    book = api.get(f"/api/surveys/{SLUG}/codebook", headers=labels["mine"]).json
    for response in (client.get(f"/surveys/{SLUG}/results.xlsx?level=0.9"),
                     api.get(f"/api/surveys/{SLUG}/results.xlsx?level=0.9", headers=labels["mine"])):
        assert response.status_code == 200 and response.mimetype == MIMETYPE
        assert response.headers["Content-Disposition"] == f'attachment; filename="{SLUG}-results.xlsx"'
        with zipfile.ZipFile(io.BytesIO(response.get_data())) as archive:
            sheets = [archive.read(name) for name in archive.namelist() if name.startswith("xl/worksheets/")]
        assert len(sheets) == 4 and not any(b"<f>" in sheet or b"<f " in sheet for sheet in sheets)  # no formula
        workbook = load_workbook(io.BytesIO(response.get_data()))
        assert workbook.sheetnames == ["estimates", "estimands", "columns", "about"]
        sheet = list(workbook["estimates"].iter_rows())
        assert [cell.value for cell in sheet[0]] == CSV_HEADER
        assert len(sheet) == len(api_rows) + 1
        for cells, row in zip(sheet[1:], api_rows):
            for name, cell in zip(CSV_HEADER, cells):
                if name in ("question", "option", "kind", "mechanism", "ci_kind"):
                    if row[name] == "":  # a number's option: an empty cell, as the CSV's empty field
                        assert cell.value is None and row["kind"] == "number"
                    else:
                        assert cell.data_type == "s" and cell.value == row[name], (name, cell.value)
                elif row[name] is None:
                    assert cell.value is None
                else:
                    # openpyxl writes 16 significant digits (a spreadsheet shows 15); the CSV and the API are exact.
                    assert cell.data_type == "n" and cell.value == float(f"{row[name]:.16g}"), (name, cell.value)
        formula = next(cells[1] for cells in sheet if cells[1].value == "=1+1")
        assert formula.data_type == "s"
        estimands = list(workbook["estimands"].iter_rows(values_only=True))
        keys = list(estimands[0])
        assert [(entry[keys.index("question")], entry[keys.index("option")] or "") for entry in estimands[1:]] == [
            (e["question"], e["option"]) for e in book["estimands"]]
        about = dict(workbook["about"].iter_rows(min_row=2, values_only=True))
        assert about["design_hash"] == book["design_hash"] and about["epsilon_spent"] == float(f"{book['epsilon_spent']:.16g}")
    assert api.get(f"/api/surveys/{SLUG}/results.xlsx?level=2", headers=labels["mine"]).status_code == 400


def test_the_workbook_replaces_characters_xlsx_cannot_hold():
    from survey.core.aggregate import aggregate
    from survey.core.definition import parse_definition
    from survey.core.design import build_design
    from survey.exports.codebook import codebook

    design = build_design(parse_definition({
        "slug": "ctl", "title": "T", "epsilon": 1.0,
        "questions": [{"id": "q", "kind": "choice", "text": "?", "options": ["a\x01b", "\tc"]}]}))
    workbook = load_workbook(io.BytesIO(results_workbook(aggregate(design, []), codebook(design))))
    options = [row[1] for row in workbook["estimates"].iter_rows(min_row=2, values_only=True)]
    assert options == ["a\ufffdb", "\tc"]
    assert [row[5] for row in workbook["estimates"].iter_rows(min_row=2, values_only=True)] == [0, 0]
