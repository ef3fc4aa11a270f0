"""Web editor tests: a signed-in researcher previews (stores nothing) and creates surveys from TOML."""

from __future__ import annotations

import html
import io
import re
from pathlib import Path

import pytest
from werkzeug.security import generate_password_hash

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.core.words import format_epsilon
from survey.store import Store
from survey.web.forms import DEFINITION_TEMPLATE

SLUG = "smoking-2026"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TOKEN_RE = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"')


def surveys(db_path) -> list[str]:
    store = Store(db_path)
    try:
        return [s["slug"] for s in store.list_surveys()]
    finally:
        store.close()


@pytest.fixture
def researcher(client, db_path):
    """Return a test client (CSRF on) signed in as a researcher."""
    store = Store(db_path)
    store.add_user("r@example.org", generate_password_hash("correct horse"))
    store.close()
    token = TOKEN_RE.search(client.get("/login").get_data(as_text=True)).group(1)
    response = client.post("/login", data={"csrf_token": token, "email": "r@example.org",
                                           "password": "correct horse"})
    assert response.status_code == 302
    return client


def page_token(client) -> str:
    page = client.get("/surveys/new")
    assert page.status_code == 200
    return TOKEN_RE.search(page.get_data(as_text=True)).group(1)


def submit(client, button="preview", definition="", upload=None, token=True):
    data = {"definition": definition, button: "x"}
    if token:
        data["csrf_token"] = page_token(client)
    if upload is not None:
        data["upload"] = upload
    return client.post("/surveys/new", data=data, content_type="multipart/form-data")


def text(response) -> str:
    return html.unescape(response.get_data(as_text=True))


def textarea_text(response) -> str:
    """Return the text the definition textarea shows (the parser drops one leading newline)."""
    inner = re.search(r"<textarea\b[^>]*>(.*?)</textarea>", response.get_data(as_text=True), re.S).group(1)
    return html.unescape(inner.removeprefix("\r\n").removeprefix("\n"))


def definition_error(response) -> str:
    """Return the error shown next to the textarea, checking it is announced and linked."""
    page = response.get_data(as_text=True)
    textarea = re.search(r"<textarea\b[^>]*>", page).group(0)
    assert 'aria-invalid="true"' in textarea
    assert re.search(r'aria-describedby="[^"]*\bdefinition-error\b', textarea)
    error = re.search(r'<p class="field-error" id="definition-error" role="alert">(.*?)</p>', page, re.S)
    assert error, "the error is next to the textarea, with role=alert"
    return html.unescape(error.group(1))


def smoking_text(smoking_toml) -> str:
    return smoking_toml.read_text(encoding="utf-8")


def test_new_survey_requires_sign_in(client, db_path):
    response = client.get("/surveys/new")
    assert response.status_code == 302 and response.headers["Location"].startswith("/login")
    assert response.headers["Location"].endswith("next=/surveys/new")
    token = TOKEN_RE.search(client.get("/login").get_data(as_text=True)).group(1)
    response = client.post("/surveys/new", data={"csrf_token": token, "definition": DEFINITION_TEMPLATE,
                                                  "create": "x"})
    assert response.status_code == 302 and response.headers["Location"].startswith("/login")
    assert surveys(db_path) == []


def test_form_is_prefilled_with_a_template_of_all_four_kinds(researcher):
    page = text(researcher.get("/surveys/new"))
    for kind in ("yes_no", "choice", "multi", "number"):
        assert f'kind = "{kind}"' in page
    assert 'enctype="multipart/form-data"' in page
    assert "New survey" in text(researcher.get("/surveys"))
    design = build_design(parse_definition_toml(DEFINITION_TEMPLATE))
    assert {q["kind"] for q in design["questions"]} == {"yes_no", "choice", "multi", "number"}


def test_preview_shows_mechanisms_and_epsilons_and_stores_nothing(researcher, db_path, smoking_toml):
    definition = smoking_text(smoking_toml)
    design = build_design(parse_definition_toml(definition))
    response = submit(researcher, "preview", definition)
    assert response.status_code == 200
    page = text(response)
    assert "Nothing is stored yet" in page
    rows = re.findall(r"<tr>\s*<th scope=\"row\"><code>(\w+)</code></th>\s*<td[^>]*>(\w+)</td>\s*<td[^>]*><code>(\w+)</code>",
                      page)
    assert rows == [(q["id"], q["kind"], q["mechanism"]) for q in design["questions"]]
    assert "<code>ss</code> <span class=\"muted\">(subset selection)</span>" in page, "every mechanism is named"
    assert "()" not in page
    for question in design["questions"]:  # privacy figures are rounded up (survey.core.words)
        assert format_epsilon(question["epsilon"]) in page
        assert format_epsilon(question["epsilon_nominal"]) in page
    assert format_epsilon(design["epsilon_spent"]) in page and "budget ε = 2" in page
    assert "sent with a chance of" in page, "the preview shows the respondent's note of each question"
    assert textarea_text(response) == definition, "the textarea keeps the previewed text"
    assert surveys(db_path) == []


def test_create_stores_a_draft_and_redirects_then_design_json_serves_it_once_published(researcher, db_path,
                                                                                       smoking_toml):
    definition = smoking_text(smoking_toml)
    response = submit(researcher, "create", definition)
    assert response.status_code == 302 and response.headers["Location"] == f"/surveys/{SLUG}/results"
    assert surveys(db_path) == [SLUG]
    results = researcher.get(f"/surveys/{SLUG}/results")
    assert results.status_code == 200 and "Draft created" in text(results) and f"share /s/{SLUG}" in text(results)
    assert researcher.get(f"/s/{SLUG}/design.json").status_code == 404, "a draft is not visible yet"
    token = TOKEN_RE.search(results.get_data(as_text=True)).group(1)
    assert researcher.post(f"/surveys/{SLUG}/publish", data={"csrf_token": token, "confirm": "yes"}).status_code == 302
    served = researcher.get(f"/s/{SLUG}/design.json").json
    assert served == build_design(parse_definition_toml(definition, source="the definition"))
    store = Store(db_path)
    assert store.get_definition(SLUG) == definition
    store.close()


def test_invalid_toml_shows_the_error_and_keeps_the_text(researcher, db_path):
    definition = 'slug = "broken\ntitle = "x"\n'
    response = submit(researcher, "create", definition)
    assert response.status_code == 422
    error = definition_error(response)
    assert error.startswith("the definition: not valid TOML") and "line 1" in error
    assert textarea_text(response) == definition
    assert surveys(db_path) == []


@pytest.mark.parametrize("button", ["preview", "create"])
def test_validation_error_names_the_question_and_field(researcher, db_path, smoking_toml, button):
    definition = smoking_text(smoking_toml).replace("max = 90", "max = 10")
    response = submit(researcher, button, definition)
    assert response.status_code == 422
    error = definition_error(response)
    assert "question 'age'" in error and "field 'max'" in error and "greater than min (18)" in error
    assert "Nothing is stored yet" not in text(response)
    assert surveys(db_path) == []


def test_empty_definition_is_an_error(researcher, db_path):
    response = submit(researcher, "create", "   \n")
    assert response.status_code == 422 and "Type a survey definition" in definition_error(response)
    assert surveys(db_path) == []


def test_duplicate_slug_is_a_form_error(researcher, db_path, smoking_toml, smoking_survey):
    response = submit(researcher, "create", smoking_text(smoking_toml).replace("Smoking and", "Other"))
    assert response.status_code == 422
    assert definition_error(response) == "This address is not available; choose another slug."
    store = Store(db_path)
    assert store.get_design(SLUG) == smoking_survey, "the existing survey is untouched"
    store.close()


def test_sample_allocation_with_unequal_weights_is_refused_beside_the_field(researcher, db_path):
    definition = (EXAMPLES / "athletes.toml").read_text(encoding="utf-8").replace(
        'id = "hours"', 'id = "hours"\nweight = 2', 1)
    response = submit(researcher, "create", definition)
    assert response.status_code == 422
    error = definition_error(response)
    assert "question 'hours', field 'weight'" in error and 'only under allocation = "split"' in error
    assert surveys(db_path) == []


@pytest.mark.parametrize("token", [None, "forged-token"])
def test_post_without_a_valid_csrf_token_is_rejected(researcher, db_path, smoking_toml, token):
    data = {"definition": smoking_text(smoking_toml), "create": "x"}
    if token:
        data["csrf_token"] = token
    response = researcher.post("/surveys/new", data=data)
    assert response.status_code == 400 and "security token" in text(response)
    assert surveys(db_path) == []


def test_uploaded_file_wins_over_the_textarea(researcher, db_path, smoking_toml):
    upload = (io.BytesIO(smoking_toml.read_bytes()), "smoking.toml")
    response = submit(researcher, "preview", DEFINITION_TEMPLATE, upload=upload)
    assert response.status_code == 200
    page = text(response)
    assert "Preview: Smoking and lung health" in page and "my-survey" not in page
    assert textarea_text(response) == smoking_text(smoking_toml), "the file's text replaces the textarea's"
    assert surveys(db_path) == []

    upload = (io.BytesIO(smoking_toml.read_bytes()), "smoking.toml")
    response = submit(researcher, "create", DEFINITION_TEMPLATE, upload=upload)
    assert response.status_code == 302 and surveys(db_path) == [SLUG]
    store = Store(db_path)
    assert store.get_design(SLUG)["title"] == "Smoking and lung health"
    store.close()


@pytest.mark.parametrize("name,content,message", [
    ("smoking.txt", b'slug = "x"', "must be a .toml file"),
    ("smoking.toml", b"title = \"\xff\"", "must be UTF-8 text"),
])
def test_bad_upload_is_a_field_error(researcher, db_path, name, content, message):
    response = submit(researcher, "create", DEFINITION_TEMPLATE, upload=(io.BytesIO(content), name))
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert re.search(r'<p class="field-error" id="upload-error" role="alert">[^<]*' + re.escape(message), page)
    assert re.search(r'<input\b[^>]*aria-invalid="true"[^>]*type="file"|<input\b[^>]*type="file"[^>]*aria-invalid="true"',
                     page)
    assert surveys(db_path) == []


def test_a_taken_slug_says_the_same_whoever_owns_it(researcher, db_path, smoking_toml):
    """Another researcher's draft, another's open survey and one's own open survey: one neutral answer, no oracle."""
    from survey.store import SLUG_TAKEN

    store = Store(db_path)
    try:
        store.add_user("else@example.org", generate_password_hash("x", method="pbkdf2:sha256:1000"))
        base = smoking_text(smoking_toml)
        for slug, owner, status in (("their-draft", "else@example.org", "draft"),
                                    ("their-open", "else@example.org", "open"), ("mine-open", "r@example.org", "open")):
            text_of = base.replace(f'"{SLUG}"', f'"{slug}"')
            store.create_survey(text_of, build_design(parse_definition_toml(text_of)), owner=owner, status=status)
    finally:
        store.close()
    answers = set()
    for slug in ("their-draft", "their-open", "mine-open"):
        response = submit(researcher, "create", base.replace(f'"{SLUG}"', f'"{slug}"').replace("Smoking and", "Mine"))
        assert response.status_code == 422
        answers.add(definition_error(response))
        assert "already exists" not in text(response) and "draft" not in definition_error(response)
    assert answers == {SLUG_TAKEN}
    assert sorted(surveys(db_path)) == ["mine-open", "their-draft", "their-open"], "nothing was stored or replaced"
