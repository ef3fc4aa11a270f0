"""The survey builder without JavaScript (Flask test client): every step is a submit button the server applies.

Each test reads the form's fields back from the page, as a browser would, and posts them with the button pressed.
"""

from __future__ import annotations

import html
import re
import math
from html.parser import HTMLParser

import pytest

from survey.cli import main
from survey.core.definition import (DECLINE_LABEL, MAX_OPTIONS, QUESTION_FIELDS, SURVEY_FIELDS, Question,
                               parse_definition, parse_definition_toml)
from survey.core.definition_toml import dump_definition
from survey.core.design import build_design
from survey.core.planning import plan, posterior_bound, question_previews, reports_needed
from survey.core.words import format_epsilon, percent_up
from survey.store import Store
from survey.web.builder import recommendation

from conftest import OTHER, OWNER

LEGEND = re.compile(r"<legend>Question <span data-number>(\d+)</span>: <span data-kind-name>([^<]+)</span></legend>")
TOKEN_RE = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"')


class FormFields(HTMLParser):
    """Collect the named fields of one form (by id) and its action buttons, as a browser would submit them."""

    def __init__(self, form_id: str):
        super().__init__(convert_charrefs=True)
        self.form_id, self.inside, self.fields, self.buttons = form_id, False, {}, []
        self._textarea = self._select = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.inside = attrs.get("id") == self.form_id
        if not self.inside:
            return
        if tag == "input" and "name" in attrs:
            if attrs.get("type") == "checkbox" and "checked" not in attrs:
                return  # an unticked box is not submitted
            self.fields[attrs["name"]] = attrs.get("value", "")
        elif tag == "textarea":
            self._textarea = attrs["name"]
            self.fields[self._textarea] = ""
        elif tag == "select":
            self._select = attrs["name"]
        elif tag == "option" and self._select and ("selected" in attrs or self._select not in self.fields):
            self.fields[self._select] = attrs["value"]
        elif tag == "button" and attrs.get("name") == "action":
            self.buttons.append(attrs["value"])

    def handle_endtag(self, tag):
        if tag == "form":
            self.inside = False
        elif tag == "textarea":
            self._textarea = None
        elif tag == "select":
            self._select = None

    def handle_data(self, data):
        if self._textarea:
            # An HTML parser drops one newline right after <textarea>, as browsers do.
            text = data if self.fields[self._textarea] else data.removeprefix("\r\n").removeprefix("\n")
            self.fields[self._textarea] += text


def fields(response, form_id="builder") -> dict:
    parser = FormFields(form_id)
    parser.feed(response.get_data(as_text=True))
    return parser.fields


def buttons(response) -> list[str]:
    parser = FormFields("builder")
    parser.feed(response.get_data(as_text=True))
    return parser.buttons


def press(client, response, action, **changes):
    """Post the page's builder form with ``changes`` applied and the button ``action`` pressed."""
    data = {**fields(response), **changes, "action": action}
    return client.post("/surveys/build", data=data)


def page(response) -> str:
    return html.unescape(response.get_data(as_text=True))


def field_error(response, name) -> str:
    """Return the error beside a field, checking the field is marked invalid and points at it."""
    body = response.get_data(as_text=True)
    control = re.search(rf'<(?:input|textarea|select)\b[^>]*\bid="{re.escape(name)}"[^>]*>', body).group(0)
    assert 'aria-invalid="true"' in control, control
    assert re.search(rf'aria-describedby="[^"]*\b{re.escape(name)}-error\b', control), control
    error = re.search(rf'<p class="field-error" id="{re.escape(name)}-error">(.*?)</p>', body, re.S).group(1)
    assert error.strip(), f"no error beside {name}"
    assert f'href="#{name}"' in body, "the error summary links to the field"
    return html.unescape(error)


def without_token(values: dict) -> dict:
    return {name: value for name, value in values.items() if name != "csrf_token"}


def stored_definition(db_path, slug) -> str:
    store = Store(db_path)
    try:
        return store.get_definition(slug)
    finally:
        store.close()


def stored(db_path) -> dict:
    store = Store(db_path)
    try:
        return {s["slug"]: s for s in store.list_surveys()}
    finally:
        store.close()


@pytest.fixture
def owner(app, accounts):
    from test_ownership import signed_in

    return signed_in(app, *OWNER)


def shown(response, index: int) -> list[str]:
    """Return the named controls of question ``index`` a researcher sees (not in a hidden field), in page order."""
    body = response.get_data(as_text=True)
    fieldset = re.search(rf'<fieldset class="question" id="questions-{index}".*?</fieldset>', body, re.S).group(0)
    visible = re.sub(r'<div [^>]*\shidden>.*?</div>', "", fieldset, flags=re.S)
    return [name.removeprefix(f"questions-{index}-")
            for name in re.findall(r'<(?:input|textarea|select)\b[^>]*\bname="([^"]+)"', visible)]


def build_every_kind(client):
    """Build, through the no-JS buttons, a survey with one question of every kind; return the last page."""
    response = client.get("/surveys/build")
    assert response.status_code == 200
    assert shown(response, 0) == ["kind", "id", "text", "weight", "show_if", "show_if_equals"]
    response = press(client, response, "add:choice", **{
        "title": "Habits", "slug": "habits", "description": 'A "quoted" \\ description\nover two lines',
        "epsilon": "2", "questions-0-id": "smoker", "questions-0-text": "Do you smoke?"})
    assert response.status_code == 200
    assert 'autofocus' in re.search(r'<input\b[^>]*id="questions-1-id"[^>]*>', response.get_data(as_text=True)).group(0)
    response = press(client, response, "add:multi", **{
        "questions-1-id": "transport", "questions-1-text": "How do you travel?",
        "questions-1-options": "walk\r\n  bicycle \r\n\r\ncar", "questions-1-weight": "0.5"})
    response = press(client, response, "add:number", **{
        "questions-2-id": "pets", "questions-2-text": "Which pets?", "questions-2-options": "dog\ncat"})
    response = press(client, response, "preview", **{
        "questions-3-id": "age", "questions-3-text": "How old are you?", "questions-3-min": "18",
        "questions-3-max": "90"})
    assert response.status_code == 200, field_errors_of(response)
    return response


def field_errors_of(response) -> list[str]:
    return re.findall(r'<p class="field-error" id="([^"]+)-error">([^<]+)</p>', response.get_data(as_text=True))


EXPECTED = {"slug": "habits", "title": "Habits", "description": 'A "quoted" \\ description\nover two lines',
            "epsilon": 2.0, "allocation": "split",
            "questions": [{"id": "smoker", "kind": "yes_no", "text": "Do you smoke?", "weight": 1.0},
                          {"id": "transport", "kind": "choice", "text": "How do you travel?", "weight": 0.5,
                           "options": ["walk", "bicycle", "car"]},
                          {"id": "pets", "kind": "multi", "text": "Which pets?", "weight": 1.0,
                           "options": ["dog", "cat"]},
                          {"id": "age", "kind": "number", "text": "How old are you?", "weight": 1.0,
                           "min": 18, "max": 90}]}


def test_the_builder_requires_sign_in(client, db_path, accounts):
    for path in ("/surveys/build", "/surveys/build?edit=smoking-2026"):
        response = client.get(path)
        assert response.status_code == 302 and response.headers["Location"].startswith("/login")
    token = TOKEN_RE.search(client.get("/login").get_data(as_text=True)).group(1)
    for path in ("/surveys/build", "/surveys/build/import"):
        response = client.post(path, data={"csrf_token": token, "action": "save"})
        assert response.status_code == 302 and response.headers["Location"].startswith("/login")
    response = client.post("/surveys/build/preview.json", data={"csrf_token": token})
    assert response.status_code == 401 and response.json == {"error": "sign in first"}


def test_build_every_kind_preview_and_save_a_draft(owner, db_path):
    response = build_every_kind(owner)
    defn = parse_definition(EXPECTED)
    previews = question_previews(defn, respondents=1000, margin=0.05)
    body = page(response)
    for index, numbers in enumerate(previews):
        block = re.search(rf'id="questions-{index}-preview"[^>]*>(.*?)</div>', body, re.S).group(1)
        assert f"ε′ = {format_epsilon(numbers['epsilon'], 3)}" in block
        assert f"{numbers['respondents_needed']:,}" in block
        assert f"at most {percent_up(numbers['posterior'], 1)} sure" in block
    assert "reported as itself with probability" in body
    assert "one option drawn at random, its bit at full ε′ (sampled)" in body, "a multi question's mechanism"
    assert "rounded at random to the smallest or the largest value" in body
    assert "of the answer's range" in body, "a number's margin is a share of its range"
    assert stored(db_path).keys() == {"smoking-2026"}, "a preview stores nothing"

    saved = press(owner, response, "save")
    assert saved.status_code == 302 and saved.headers["Location"] == "/surveys/habits/results"
    survey = stored(db_path)["habits"]
    assert survey["status"] == "draft" and survey["owner"] == OWNER[0]
    store = Store(db_path)
    try:
        text = store.get_definition("habits")
        assert parse_definition_toml(text) == defn, "the stored definition is the form's"
        assert store.get_design("habits") == build_design(defn)
    finally:
        store.close()
    dashboard = owner.get("/surveys/habits/results").get_data(as_text=True)
    assert "Draft created" in html.unescape(dashboard)
    assert re.search(r'<a class="button secondary" href="/surveys/build\?edit=habits">Edit the draft</a>', dashboard)


def test_add_remove_and_move_questions(owner, db_path):
    response = owner.get("/surveys/build")
    for kind in ("choice", "multi", "number"):
        response = press(owner, response, f"add:{kind}")
    response = press(owner, response, "preview", **{f"questions-{i}-id": name
                                                    for i, name in enumerate(["a", "b", "c", "d"])})

    def order(response):
        values = fields(response)
        return [(values[f"questions-{i}-id"], values[f"questions-{i}-kind"])
                for i in range(sum(1 for name in values if name.endswith("-kind")))]

    assert order(response) == [("a", "yes_no"), ("b", "choice"), ("c", "multi"), ("d", "number")]
    response = press(owner, response, "up:2")
    assert order(response) == [("a", "yes_no"), ("c", "multi"), ("b", "choice"), ("d", "number")]
    assert "autofocus" in re.search(r'<button\b[^>]*id="questions-1-up"[^>]*>', response.get_data(as_text=True)).group(0)
    response = press(owner, response, "down:0")
    assert order(response) == [("c", "multi"), ("a", "yes_no"), ("b", "choice"), ("d", "number")]
    response = press(owner, response, "up:0")
    assert order(response) == [("c", "multi"), ("a", "yes_no"), ("b", "choice"), ("d", "number")], "first stays first"
    response = press(owner, response, "down:3")
    assert order(response)[-1] == ("d", "number"), "last stays last"
    response = press(owner, response, "remove:1")
    assert order(response) == [("c", "multi"), ("b", "choice"), ("d", "number")]
    empty = response
    for index in range(3):
        empty = press(owner, empty, "remove:0")
    saved = press(owner, empty, "save", title="T", slug="t")
    assert saved.status_code == 422 and "Add at least one question." in page(saved)
    assert 'href="#questions"' in saved.get_data(as_text=True)
    for bad in ("remove:9", "add:essay", "up:x"):
        assert order(press(owner, response, bad)) == order(response), bad
    legends = re.findall(LEGEND, page(response))
    assert legends == [("1", "multiple choice"), ("2", "single choice"), ("3", "number")]
    assert stored(db_path).keys() == {"smoking-2026"}


def test_the_first_submit_button_is_preview(owner):
    """Enter in a text field presses the form's first submit button: Preview, never a question's Remove."""
    assert buttons(owner.get("/surveys/build"))[0] == "preview"


def test_every_error_at_once_beside_its_field(owner, db_path):
    response = build_every_kind(owner)
    response = press(owner, response, "save", **{
        "slug": "Bad slug", "title": "", "epsilon": "lots", "questions-0-id": "1st", "questions-1-options": "only",
        "questions-2-text": " ", "questions-3-min": "90", "questions-3-max": "eighteen", "questions-3-weight": "-2",
        "respondents": "0", "margin": "150"})
    assert response.status_code == 422
    assert "lowercase letters" in field_error(response, "slug")
    assert "non-empty" in field_error(response, "title")
    assert "got 'lots'" in field_error(response, "epsilon")
    assert "start with a letter" in field_error(response, "questions-0-id")
    assert "2 to" in field_error(response, "questions-1-options")
    assert "non-empty" in field_error(response, "questions-2-text")
    assert "Must be an integer, got 'eighteen'" in field_error(response, "questions-3-max")
    assert "got -2" in field_error(response, "questions-3-weight")
    assert "whole number of respondents" in field_error(response, "respondents")
    assert "percentage points" in field_error(response, "margin")
    summary = re.search(r'<div class="error-summary" role="alert"[^>]*>(.*?)</div>', page(response), re.S).group(1)
    assert "10 fields to fix" in summary and "Question 4, largest answer" in summary
    assert fields(response)["questions-3-max"] == "eighteen", "the form keeps what was typed"
    assert stored(db_path).keys() == {"smoking-2026"}


def test_sample_allocation_previews_each_question_at_epsilon_over_m_and_the_recommendation(owner, db_path):
    response = build_every_kind(owner)
    refused = press(owner, response, "preview", allocation="sample", sample="2")
    assert refused.status_code == 422
    assert "make them all equal" in field_error(refused, "questions-1-weight"), "weights mean nothing under sample"
    response = press(owner, refused, "preview", **{"questions-1-weight": "1"})
    assert response.status_code == 200, field_errors_of(response)
    mapping = {**EXPECTED, "allocation": "sample", "sample": 2,
               "questions": [{**q, "weight": 1.0} for q in EXPECTED["questions"]]}
    defn = parse_definition(mapping)
    body = page(response)
    for index, numbers in enumerate(question_previews(defn, respondents=1000, margin=0.05)):
        block = re.search(rf'id="questions-{index}-preview"[^>]*>(.*?)</div>', body, re.S).group(1)
        assert f"ε′ = {format_epsilon(numbers['epsilon'], 3)}" in block and f"{numbers['respondents_needed']:,}" in block
        assert "about 50% of respondents: each answers 2 of the 4 questions" in block and "at ε/2 = 1" in block
    recommended = plan(defn, respondents=1000, margin=0.05)
    best = recommended["recommended"]
    found = recommendation(defn, respondents=1000, margin=0.05)
    assert (found["allocation"], found["sample"]) == (best["allocation"], best["sample"])
    assert found["respondents"] == min(a["respondents"] for a in recommended["allocations"])
    summary = re.search(r'id="builder-summary"[^>]*>(.*?)</div>', body, re.S).group(1)
    assert f"{found['respondents']:,} respondents for ±5 points" in summary
    assert "ldp-survey plan" in summary
    exported = parse_definition_toml(press(owner, response, "export").get_data(as_text=True))
    assert exported == defn and exported.sample == 2

    response = press(owner, response, "preview", allocation="sample", sample="9")
    assert response.status_code == 422 and "from 1 to the number of questions (4)" in field_error(response, "sample")
    tiny = press(owner, response, "preview", allocation="sample", sample="4", epsilon="0.002")
    assert tiny.status_code == 422 and "below the minimum" in field_error(tiny, "sample")


def test_the_recommendation_is_the_planners():
    for epsilon, weights, allocation, sample in [(2.0, [1, 1, 1], "split", None), (0.5, [1, 2, 1], "split", None),
                                                 (8.0, [1, 1, 1], "sample", 3), (1.0, [1, 1, 1], "sample", 1)]:
        questions = [{"id": "a", "kind": "yes_no", "text": "A?"},
                     {"id": "b", "kind": "choice", "text": "B?", "options": [str(i) for i in range(12)]},
                     {"id": "c", "kind": "number", "text": "C?", "min": 0, "max": 9}]
        defn = parse_definition({"slug": "s", "title": "t", "epsilon": epsilon, "allocation": allocation,
                                 **({"sample": sample} if sample else {}),
                                 "questions": [{**q, "weight": w} for q, w in zip(questions, weights)]})
        planned = plan(defn, respondents=500, margin=0.03)
        found = recommendation(defn, respondents=500, margin=0.03)
        assert (found["allocation"], found["sample"]) == tuple(planned["recommended"].values()), epsilon
        assert found["respondents"] == min(a["respondents"] for a in planned["allocations"])


def test_a_large_epsilon_is_warned_about(owner):
    response = owner.get("/surveys/build")
    response = press(owner, response, "preview", title="T", slug="t", epsilon="20", **{
        "questions-0-id": "a", "questions-0-text": "A?"})
    assert response.status_code == 200
    body = re.sub(r"<[^>]+>", "", page(response))
    assert "Warning: This question has epsilon 20" in body and "protection is nominal" in body
    assert f"{percent_up(posterior_bound(20.0), 2)} sure" in body and "100.00%" not in body
    assert "Warning: Each respondent's set of answers has epsilon 20" in body
    quiet = page(press(owner, response, "preview", epsilon="2"))
    assert "Respondents for ±5 points" in quiet and "Warning" not in quiet


@pytest.mark.parametrize("token", [None, "forged"])
def test_posts_without_a_valid_csrf_token_are_refused(owner, db_path, token):
    response = build_every_kind(owner)
    data = {**fields(response), "action": "save"}
    data.pop("csrf_token")
    if token:
        data["csrf_token"] = token
    refused = owner.post("/surveys/build", data=data)
    assert refused.status_code == 400 and "security token" in page(refused)
    preview = owner.post("/surveys/build/preview.json", data=data)
    assert preview.status_code == 400 and preview.json["field"] == "csrf_token"
    imported = owner.post("/surveys/build/import", data={"toml": 'slug = "x"'} | ({"csrf_token": token} if token else {}))
    assert imported.status_code == 400
    assert stored(db_path).keys() == {"smoking-2026"}


def test_export_downloads_toml_that_create_accepts(owner, db_path, tmp_path, cli_runner):
    response = build_every_kind(owner)
    exported = press(owner, response, "export")
    assert exported.status_code == 200
    assert exported.headers["Content-Disposition"] == 'attachment; filename="habits.toml"'
    assert exported.mimetype == "application/toml"
    text = exported.get_data(as_text=True)
    assert parse_definition_toml(text) == parse_definition(EXPECTED)
    path = tmp_path / "habits.toml"
    path.write_text(text, encoding="utf-8")
    result = cli_runner.invoke(main, ["--db", str(tmp_path / "cli.db"), "create", str(path)])
    assert result.exit_code == 0, result.output
    assert "Survey habits: Habits" in result.stdout
    invalid = press(owner, response, "export", epsilon="0")
    assert invalid.status_code == 422 and "Content-Disposition" not in invalid.headers
    assert stored(db_path).keys() == {"smoking-2026"}


def test_import_fills_the_form_and_marks_every_error(owner, smoking_toml):
    builder = owner.get("/surveys/build")
    token = fields(builder, "import")["csrf_token"]
    text = smoking_toml.read_text(encoding="utf-8")
    response = owner.post("/surveys/build/import", data={"csrf_token": token, "toml": text})
    assert response.status_code == 200
    values = fields(response)
    defn = parse_definition_toml(text)
    assert values["slug"] == defn.slug and values["title"] == defn.title
    assert [values[f"questions-{i}-id"] for i in range(len(defn.questions))] == [q.id for q in defn.questions]
    assert values["questions-2-options"].splitlines() == list(defn.questions[2].options)
    assert values["questions-3-weight"] == "0.5" and values["questions-3-min"] == "18"
    assert "Respondents for ±5 points" in page(response), "an imported definition is previewed at once"
    # The imported form saves the same definition.
    assert parse_definition_toml(press(owner, response, "export").get_data(as_text=True)) == defn

    broken = text.replace("max = 90", "max = 10").replace('id = "smoker"', 'id = "smoker!"')
    response = owner.post("/surveys/build/import", data={"csrf_token": token, "toml": broken})
    assert response.status_code == 422
    assert "greater than min (18)" in field_error(response, "questions-3-max")
    assert "start with a letter" in field_error(response, "questions-0-id")

    extra = 'colour = "red"\n' + text.replace('kind = "yes_no"', 'kind = "yes_no"\nhint = "x"', 1)
    response = owner.post("/surveys/build/import", data={"csrf_token": token, "toml": extra})
    assert response.status_code == 422
    assert "does not know were left out: colour, questions.hint." in page(response)

    response = owner.post("/surveys/build/import", data={"csrf_token": token, "toml": "  "})
    assert response.status_code == 422 and "Paste a TOML definition" in page(response)
    response = owner.post("/surveys/build/import", data={"csrf_token": token, "toml": 'slug = "x\n'})
    assert response.status_code == 422
    error = re.search(r'<p class="field-error" id="toml-error">(.*?)</p>', page(response), re.S).group(1)
    assert error.startswith("This is not valid TOML")


def test_import_an_uploaded_file(owner, smoking_toml):
    import io

    token = fields(owner.get("/surveys/build"), "import")["csrf_token"]
    response = owner.post("/surveys/build/import", content_type="multipart/form-data", data={
        "csrf_token": token, "toml": "", "upload": (io.BytesIO(smoking_toml.read_bytes()), "smoking.toml")})
    assert response.status_code == 200 and fields(response)["slug"] == "smoking-2026"
    response = owner.post("/surveys/build/import", content_type="multipart/form-data", data={
        "csrf_token": token, "upload": (io.BytesIO(b"x"), "smoking.txt")})
    assert response.status_code == 422, page(response)[-3000:]
    assert "must be a .toml file" in page(response)


def test_edit_loads_ones_own_draft_and_404_for_others(app, owner, db_path):
    response = build_every_kind(owner)
    assert press(owner, response, "save").status_code == 302
    edit = owner.get("/surveys/build?edit=habits")
    assert edit.status_code == 200 and "Edit survey habits" in page(edit)
    values = fields(edit)
    assert values["title"] == "Habits" and values["description"] == EXPECTED["description"]
    assert values["questions-1-options"].splitlines() == ["walk", "bicycle", "car"]
    # Re-saving one's own draft replaces it.
    again = press(owner, edit, "save", title="Habits, revised")
    assert again.status_code == 302 and stored(db_path)["habits"]["title"] == "Habits, revised"
    assert "Draft saved" in page(owner.get("/surveys/habits/results"))

    from test_ownership import signed_in

    other = signed_in(app, *OTHER)
    for slug in ("habits", "smoking-2026", "no-such-survey"):
        assert other.get(f"/surveys/build?edit={slug}").status_code == 404, slug
    assert owner.get("/surveys/build?edit=no-such-survey").status_code == 404
    # Another researcher cannot overwrite the draft by saving its slug.
    taken = press(other, other.get("/surveys/build"), "save", title="Mine", slug="habits", **{
        "questions-0-id": "a", "questions-0-text": "A?"})
    assert taken.status_code == 422 and "This address is not available" in field_error(taken, "slug")
    assert stored(db_path)["habits"]["title"] == "Habits, revised"


def test_saving_an_edit_of_an_open_survey_asks_first_and_stores_nothing(owner, db_path):
    """Issue 27: no "already exists" under a "New survey" heading, but what the save changes, stored on confirming."""
    edit = owner.get("/surveys/build?edit=smoking-2026")
    assert edit.status_code == 200
    response = press(owner, edit, "save", title="Changed")
    assert response.status_code == 200 and "already exists" not in page(response)
    assert "Text only: the 0 responses stay one data set" in page(response) and "Survey title" in page(response)
    assert stored(db_path)["smoking-2026"]["title"] == "Smoking and lung health"
    # Saving the same slug without editing it is still refused: a new survey never takes an address.
    fresh = owner.get("/surveys/build?edit=smoking-2026")
    response = owner.post("/surveys/build", data={**fields(fresh), "editing": "", "action": "save"})
    assert response.status_code == 422 and "This address is not available" in field_error(response, "slug")


def test_the_preview_endpoint_gives_the_planning_numbers(owner):
    response = build_every_kind(owner)
    data = {**fields(response), "respondents": "2500", "margin": "3"}
    preview = owner.post("/surveys/build/preview.json", data=data)
    assert preview.status_code == 200 and preview.is_json
    body = preview.json
    assert body["ok"] is True and body["errors"] == {}
    expected = question_previews(parse_definition(EXPECTED), respondents=2500, margin=0.03)
    for got, want in zip(body["questions"], expected, strict=True):
        assert {k: got[k] for k in want} == want
        assert got["terms"][-2] == ["Respondents for ±3 points", f"{want['respondents_needed']:,}"]
        assert got["terms"][-1][0] == "Direct or randomized?" and "Blair, Coppock & Moor 2020" in got["terms"][-1][1]
    assert body["summary"]["lines"][0].startswith("Budget ε = 2 per respondent")

    bad = owner.post("/surveys/build/preview.json", data={**data, "questions-0-text": "", "epsilon": "x"})
    assert bad.status_code == 200 and bad.json["ok"] is False and bad.json["questions"] is None
    assert set(bad.json["errors"]) == {"questions-0-text", "epsilon"}


@pytest.mark.parametrize("epsilon,margin,needed", [(0.5, 5, 6405), (1, 5, 1799), (2, 5, 663), (4, 5, 414),
                                                   (1, 10, 450), (2, 1, 16558)])
def test_a_yes_no_question_needs_the_respondents_of_the_planning_table(owner, epsilon, margin, needed):
    """MATH §8: worst case n = z²/(4h²tanh²(ε/2)); §9: e^ε/(1 + e^ε) from 50/50."""
    response = owner.get("/surveys/build")
    data = {**fields(response), "title": "T", "slug": "t", "epsilon": str(epsilon), "questions-0-id": "a",
            "questions-0-text": "A?", "respondents": "1000", "margin": str(margin)}
    [numbers] = owner.post("/surveys/build/preview.json", data=data).json["questions"]
    assert numbers["respondents_needed"] == needed
    z = 1.959963984540054
    assert numbers["half_width"] == pytest.approx(z / (2 * 1000 ** 0.5 * math.tanh(epsilon / 2)),
                                                  rel=1e-9)
    assert numbers["posterior"] == pytest.approx(1 / (1 + math.exp(-epsilon)), rel=1e-12)
    assert numbers["keep"] == pytest.approx(numbers["posterior"], rel=1e-12), "RR keeps with e^ε/(1 + e^ε)"
    p, q = numbers["keep"], 1 - numbers["keep"]
    assert reports_needed(p, q, margin / 100) == needed


def test_the_header_and_the_survey_list_lead_to_the_builder(owner):
    body = owner.get("/surveys").get_data(as_text=True)
    assert 'href="/surveys/build"' in body
    assert 'href="/surveys/new"' in owner.get("/surveys/build").get_data(as_text=True), "the TOML page stays linked"


def names_in(response) -> set[str]:
    """Every named control of the builder form, ticked or not."""
    form = re.search(r'<form [^>]*id="builder".*?</form>', response.get_data(as_text=True), re.S).group(0)
    return set(re.findall(r'<(?:input|textarea|select)\b[^>]*\bname="([^"]+)"', form))


def tag_of(response, name) -> str:
    return re.search(rf'<(?:input|textarea|select)\b[^>]*\bid="{re.escape(name)}"[^>]*>',
                     response.get_data(as_text=True)).group(0)


def test_the_builder_offers_every_definition_field(owner):
    response = build_every_kind(owner)
    names = names_in(response)
    # Translations are a field per language beside each text once the survey lists languages (test_builder_languages).
    assert SURVEY_FIELDS - {"questions", "panel", "translations"} | {"panel_parameters", "panel_code",
                                                                      "panel_redirect"} <= names
    for index, kind in enumerate(["yes_no", "choice", "multi", "number"]):
        # A question's translations are fields per language (none here: one language);
        # show_if is the pair of fields show_if (the earlier question) and show_if_equals (its answers).
        assert set(shown(response, index)) - {"show_if_equals"} == QUESTION_FIELDS[kind] - {"translations"}, kind
    body = page(response)
    for hint in ("single-use invitation link", "waves of one study", f"at most {MAX_OPTIONS}",
                 f"Adds “{DECLINE_LABEL}” as the last option"):
        assert hint in body, hint
    for kind in ("choice", "multi"):
        template = re.search(rf'<template id="question-template-{kind}">(.*?)</template>', body, re.S).group(1)
        assert 'id="questions-__index__-decline"' in template, "the JS path adds the box too"


def test_show_only_if_in_the_builder_saves_show_if_and_names_a_bad_answer(owner):
    response = build_every_kind(owner)
    response = press(owner, response, "preview", **{"questions-1-show_if": "smoker", "questions-1-show_if_equals": "maybe"})
    assert "which is not an option of" in page(response)
    assert 'aria-invalid="true"' in tag_of(response, "questions-1-show_if")
    response = press(owner, response, "preview", **{"questions-1-show_if": "smoker", "questions-1-show_if_equals": "yes"})
    assert response.status_code == 200, field_errors_of(response)
    assert not field_errors_of(response)


@pytest.mark.slow
def test_access_series_and_decline_through_the_buttons(owner, db_path):
    response = build_every_kind(owner)
    assert fields(response)["access"] == "open" and fields(response)["series"] == ""
    response = press(owner, response, "preview", access="invite", series="health-panel.2026",
                     **{"questions-1-decline": "y", "questions-2-decline": "y"})
    assert response.status_code == 200, field_errors_of(response)
    assert "checked" in tag_of(response, "questions-1-decline")
    # Adding and moving questions keeps every field, ticked boxes included.
    response = press(owner, response, "up:2")
    response = press(owner, response, "add:yes_no")
    values = fields(response)
    assert values["access"] == "invite" and values["series"] == "health-panel.2026"
    assert values["questions-1-id"] == "pets" and values["questions-1-decline"] == "y"
    assert values["questions-2-id"] == "transport" and values["questions-2-decline"] == "y"
    response = press(owner, press(owner, response, "remove:4"), "preview")
    body = page(response)
    block = re.search(r'id="questions-2-preview"[^>]*>(.*?)</div>', body, re.S).group(1)
    assert "all 4 options at once" in block, "the declined option counts as an option"

    exported = press(owner, response, "export").get_data(as_text=True)
    defn = parse_definition_toml(exported)
    assert defn.access == "invite" and defn.series == "health-panel.2026"
    assert [q.decline for q in defn.questions] == [False, True, True, False]
    assert defn.questions[2].options == ("walk", "bicycle", "car", DECLINE_LABEL)
    assert exported.count("decline = true") == 2 and DECLINE_LABEL not in exported

    saved = press(owner, response, "save")
    assert saved.status_code == 302
    store = Store(db_path)
    try:
        design = store.get_design("habits")
        assert design["access"] == "invite" and design["series"] == "health-panel.2026"
        assert parse_definition_toml(store.get_definition("habits")) == defn
    finally:
        store.close()
    edit = owner.get("/surveys/build?edit=habits")
    assert fields(edit)["access"] == "invite" and fields(edit)["questions-2-decline"] == "y"


def test_errors_of_the_new_fields_are_beside_them(owner):
    response = build_every_kind(owner)
    response = press(owner, response, "preview", access="public", series="-bad name", **{
        "questions-1-decline": "y", "questions-1-options": f"walk\ncar\n{DECLINE_LABEL}"})
    assert response.status_code == 422
    assert "must be one of open, invite" in field_error(response, "access").lower()
    assert "letters, digits" in field_error(response, "series")
    assert "added by decline = true" in field_error(response, "questions-1-options")
    many = "\n".join(f"option {i}" for i in range(MAX_OPTIONS))
    response = press(owner, response, "preview", access="open", series="", **{
        "questions-1-options": many, "questions-1-decline": "y"})
    assert f"at most {MAX_OPTIONS - 1} options" in field_error(response, "questions-1-options")
    changes = {"questions-1-options": many}
    response = press(owner, response, "preview", **changes)  # 256 options without the box ticked
    data = fields(response)
    data.pop("questions-1-decline", None)
    response = owner.post("/surveys/build", data={**data, **changes, "action": "preview"})
    assert response.status_code == 200, field_errors_of(response)
    assert f"all {MAX_OPTIONS} options at once" in page(response)


ALL_FIELDS = f"""slug = "panel-2"
title = "Panel, wave 2"
description = "The second wave."
epsilon = 3.0
allocation = "sample"
sample = 2
access = "invite"
series = "health-panel"
wave_epsilon = 1.5
release_every = 500
languages = ["en", "fr"]
translations.fr.title = "Santé"
translations.fr.thank_you = "Merci !"
thank_you = "Thank you!\\nSee you in wave 3."

[panel]
parameters = ["PROLIFIC_PID", "STUDY_ID"]
code = "C0DE-2"
redirect = "https://app.prolific.com/submissions/complete?cc={{code}}"

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"
weight = 2.0
translations.fr.text = "Fumez-vous ?"

[[questions]]
id = "party"
kind = "choice"
text = "Which party?"
weight = 2.0
options = [{", ".join(f'"p{i}"' for i in range(MAX_OPTIONS - 1))}]
decline = true

[[questions]]
id = "pets"
kind = "multi"
text = "Which pets?"
weight = 2.0
options = ["dog", "cat"]
decline = true
translations.fr = {{text = "Quels animaux ?", options = ["chien", "chat"]}}

[[questions]]
id = "age"
kind = "number"
text = "How old are you?"
weight = 2.0
min = 18
max = 90
"""


def test_import_a_definition_with_every_field_and_export_it_back(owner):
    token = fields(owner.get("/surveys/build"), "import")["csrf_token"]
    defn = parse_definition_toml(ALL_FIELDS)
    used = {name for name in SURVEY_FIELDS if name in ALL_FIELDS.split("[[questions]]")[0]}
    assert used == SURVEY_FIELDS - {"questions"}, "the example holds every survey field"
    response = owner.post("/surveys/build/import", data={"csrf_token": token, "toml": ALL_FIELDS})
    assert response.status_code == 200, field_errors_of(response)
    assert "left out" not in page(response)
    values = fields(response)
    assert (values["allocation"], values["sample"], values["access"], values["series"]) == (
        "sample", "2", "invite", "health-panel")
    assert values["questions-1-decline"] == "y" and values["questions-2-decline"] == "y"
    assert "questions-0-decline" not in values and "questions-3-decline" not in values
    assert len(values["questions-1-options"].splitlines()) == MAX_OPTIONS - 1
    # Translations: a field per language beside each text (tests/web/test_builder_languages.py).
    assert values["translations-fr-title"] == "Santé" and values["translations-fr-thank_you"] == "Merci !"
    assert values["translations-fr-description"] == "" and values["questions-0-translations-fr-text"] == "Fumez-vous ?"
    assert values["questions-2-translations-fr-options"] == "chien\nchat"
    assert "about 50% of respondents: each answers 2 of the 4 questions" in page(response)
    # Two layers: the summary and each question state ε₁ beside ε∞ (ε′).
    assert "Series in two layers" in page(response) and "Per wave" in page(response)
    exported = press(owner, response, "export")
    assert exported.status_code == 200
    text = exported.get_data(as_text=True)
    assert parse_definition_toml(text) == defn
    assert text == dump_definition(defn), "the builder exports what the TOML writer writes"
    again = owner.post("/surveys/build/import", data={"csrf_token": token, "toml": text})
    without_token = lambda form: {k: v for k, v in form.items() if k != "csrf_token"}  # noqa: E731
    assert without_token(fields(again)) == without_token(values), "import, export, import: the same form"


def test_import_reports_what_the_form_cannot_hold(owner):
    token = fields(owner.get("/surveys/build"), "import")["csrf_token"]
    text = ALL_FIELDS.replace("allocation = \"sample\"\n", "").replace("decline = true", 'decline = "yes"', 1)
    text = text.replace('kind = "yes_no"', 'kind = "yes_no"\ndecline = true')
    response = owner.post("/surveys/build/import", data={"csrf_token": token, "toml": text})
    assert response.status_code == 422
    assert "true or false, got 'yes'" in field_error(response, "questions-1-decline")
    assert ('left out: sample (used only with allocation = "sample"), questions.decline.'
            in page(response))


def test_the_new_mechanisms_are_named_in_plain_words(owner):
    response = owner.get("/surveys/build")
    for kind in ("choice", "multi", "number"):
        response = press(owner, response, f"add:{kind}")
    ten = "\n".join(str(i) for i in range(10))
    response = press(owner, response, "preview", title="T", slug="t", epsilon="5.4", **{
        "questions-0-id": "a", "questions-0-text": "A?", "questions-1-id": "b", "questions-1-text": "B?",
        "questions-1-options": ten, "questions-2-id": "c", "questions-2-text": "C?", "questions-2-options": ten,
        "questions-3-id": "d", "questions-3-text": "D?", "questions-3-min": "0", "questions-3-max": "100"})
    assert response.status_code == 200, field_errors_of(response)
    body = page(response)
    options = [str(i) for i in range(10)]
    design = build_design(parse_definition({"slug": "t", "title": "T", "epsilon": 5.4, "questions": [
        {"id": "a", "kind": "yes_no", "text": "A?"}, {"id": "b", "kind": "choice", "text": "B?", "options": options},
        {"id": "c", "kind": "multi", "text": "C?", "options": options},
        {"id": "d", "kind": "number", "text": "D?", "min": 0, "max": 100}]}))
    assert [q["mechanism"] for q in design["questions"]] == ["rr", "ss", "sampled", "hybrid"]
    blocks = [re.search(rf'id="questions-{i}-preview"[^>]*>(.*?)</div>', body, re.S).group(1) for i in range(4)]
    assert "subset selection (ss)" in blocks[1]
    assert f"a set of {design['questions'][1]['subset_size']} of the 10 options" in blocks[1]
    assert "one option drawn at random, its bit at full ε′ (sampled)" in blocks[2]
    assert "only its bit is sent" in blocks[2]
    assert "hybrid of the piecewise and Duchi mechanisms (hybrid)" in blocks[3]
    a, b = design["questions"][3]["ratio_a"], design["questions"][3]["ratio_b"]
    assert (f"With probability {(a - b) / a:.1%} the report is one of {a + b} levels" in blocks[3]
            and f"reported as itself with probability {a * a / (a * a + b * b):.1%}" in blocks[3])
    assert "A true answer is reported as itself" not in blocks[3]


def test_a_survey_too_large_for_a_quick_recommendation_points_to_the_cli(monkeypatch):
    from survey.web import builder
    from survey.web.builder_text import recommendation_lines

    defn = parse_definition({"slug": "s", "title": "t", "epsilon": 2, "questions": [
        {"id": f"q{i}", "kind": "yes_no", "text": "?"} for i in range(5)]})
    assert recommendation(defn, respondents=100, margin=0.05) is not None
    monkeypatch.setattr(builder, "MAX_RECOMMENDATION_DESIGNS", 5)
    assert recommendation(defn, respondents=100, margin=0.05) is None
    assert "run ldp-survey plan" in recommendation_lines(None)[0]


def test_change_a_questions_kind_without_javascript(owner, db_path):
    """The kind select and its button: id, text, weight and options stay; only the new kind's fields show and count."""
    response = press(owner, owner.get("/surveys/build"), "add:choice", title="Kinds", slug="kinds",
                     **{"questions-0-id": "smoker", "questions-0-text": "Do you smoke?"})
    response = press(owner, response, "preview", **{
        "questions-1-id": "transport", "questions-1-text": "How do you travel?",
        "questions-1-options": "walk\nbicycle\ncar", "questions-1-decline": "y", "questions-1-weight": "0.5"})
    assert response.status_code == 200, field_errors_of(response)
    assert {"kind:0", "kind:1"} <= set(buttons(response))
    body = response.get_data(as_text=True)
    assert re.search(r'<label for="questions-1-kind">Kind<span class="visually-hidden"> of question '
                     r'<span data-number>2</span>', body)
    assert re.search(r'id="questions-1-kind-apply">Change kind<span class="visually-hidden"> of question '
                     r'<span data-number>2</span>', body)

    response = press(owner, response, "kind:1", **{"questions-1-kind": "multi"})
    assert response.status_code == 200
    assert re.findall(LEGEND, page(response)) == [("1", "yes/no"), ("2", "multiple choice")]
    assert "autofocus" in tag_of(response, "questions-1-kind"), "the focus stays on the kind"
    values = fields(response)
    assert (values["questions-1-id"], values["questions-1-text"], values["questions-1-weight"]) == (
        "transport", "How do you travel?", "0.5")
    assert values["questions-1-options"] == "walk\nbicycle\ncar" and values["questions-1-decline"] == "y"
    assert shown(response, 1) == ["kind", "id", "text", "options", "decline", "weight", "show_if", "show_if_equals"]
    assert "respondents tick any number of them" in page(response), "the options' hint is the multi one"

    response = press(owner, response, "kind:1", **{"questions-1-kind": "number"})
    assert shown(response, 1) == ["kind", "id", "text", "min", "max", "mechanism", "weight", "show_if", "show_if_equals"]
    assert fields(response)["questions-1-options"] == "walk\nbicycle\ncar", "hidden, not lost"
    response = press(owner, response, "preview", **{"questions-1-min": "0", "questions-1-max": "20"})
    assert response.status_code == 200, field_errors_of(response)
    exported = parse_definition_toml(press(owner, response, "export").get_data(as_text=True))
    assert exported.questions[1] == Question(id="transport", kind="number", text="How do you travel?", weight=0.5,
                                             min=0, max=20), "the hidden options and decline are not saved"

    # Back to single choice: the options are back; the hidden smallest and largest answers are no errors.
    response = press(owner, response, "kind:1", **{"questions-1-kind": "choice", "questions-1-max": "lots"})
    assert shown(response, 1) == ["kind", "id", "text", "options", "decline", "weight", "show_if", "show_if_equals"]
    assert fields(response)["questions-1-options"] == "walk\nbicycle\ncar"
    preview = owner.post("/surveys/build/preview.json", data=fields(response))
    assert preview.json["ok"] is True and preview.json["errors"] == {}
    assert preview.json["questions"][1]["kind"] == "choice"
    saved = press(owner, response, "save")
    assert saved.status_code == 302, field_errors_of(saved)
    question = parse_definition_toml(stored_definition(db_path, "kinds")).questions[1]
    assert question == Question(id="transport", kind="choice", text="How do you travel?", weight=0.5,
                                options=("walk", "bicycle", "car", DECLINE_LABEL), decline=True)

    # A kind that does not exist is an error beside its question; a bad index changes nothing.
    bad = press(owner, response, "kind:1", **{"questions-1-kind": "essay"})
    assert bad.status_code == 422 and "got 'essay'" in page(bad).split('id="questions-1-error">')[1].split("</p>")[0]
    for action in ("kind:9", "kind:x"):
        assert without_token(fields(press(owner, response, action))) == without_token(fields(response)), action


@pytest.mark.slow
def test_a_number_questions_mechanism_without_javascript(owner, db_path):
    response = build_every_kind(owner)
    assert fields(response)["questions-3-mechanism"] == "auto"
    select = re.search(r'<select\b[^>]*id="questions-3-mechanism".*?</select>', page(response), re.S).group(0)
    assert re.findall(r'value="([^"]+)"', select) == ["auto", "hybrid", "piecewise", "duchi", "opm"]
    assert "Piecewise is more precise when answers lie inside the range" in page(response)
    preview = owner.post("/surveys/build/preview.json", data={**fields(response), "questions-3-mechanism": "piecewise"})
    assert preview.get_json()["questions"][3]["mechanism"] == "piecewise"

    # Impossible at the question's share (ε 0.01 over weights 1 + 0.5 + 1 + 1): beside the select.
    response = press(owner, response, "preview", epsilon="0.01", **{"questions-3-mechanism": "hybrid"})
    assert response.status_code == 422
    error = field_error(response, "questions-3-mechanism")
    assert "hybrid mechanism needs a share of the budget of at least 0.00783" in error and '"duchi"' in error
    response = press(owner, response, "preview", epsilon="2", **{"questions-3-mechanism": "fastest"})
    assert "Must be one of auto, hybrid, piecewise, duchi, opm, got 'fastest'" in field_error(
        response, "questions-3-mechanism")

    response = press(owner, response, "save", **{"questions-3-mechanism": "duchi"})
    assert response.status_code == 302, field_errors_of(response)
    definition = parse_definition_toml(stored_definition(db_path, "habits"))
    assert [q.mechanism for q in definition.questions] == ["auto", "auto", "auto", "duchi"]
    store = Store(db_path)
    try:
        entry = store.get_design("habits")["questions"][3]
    finally:
        store.close()
    assert (entry["mechanism"], entry["chosen_by"]) == ("duchi", "definition")
    edit = owner.get("/surveys/build?edit=habits")
    assert fields(edit)["questions-3-mechanism"] == "duchi"
    response = press(owner, edit, "save", **{"questions-3-mechanism": "auto"})
    assert "mechanism" not in stored_definition(db_path, "habits")


def test_the_builder_offers_the_power_of_a_test_as_plan_gives_it(owner):
    """The power preview's sentence is the planning module's, for the yes/no question chosen (only yes/no are offered)."""
    from survey.core.design import build_design
    from survey.core.planning import power_plan
    from survey.core.precision import power_sentence

    response = build_every_kind(owner)
    text = page(response)
    assert re.search(r'<select[^>]*id="power_question"', text)
    offered = re.findall(r'<option[^>]*value="([^"]+)"', re.search(r'<select[^>]*id="power_question".*?</select>',
                                                                     text, re.S).group(0))
    assert offered == ["smoker"]
    data = {**fields(response), "respondents": "3000", "power_question": "smoker", "power_null": "10",
            "power_share": "20"}
    body = owner.post("/surveys/build/preview.json", data=data).json
    expected = power_plan(build_design(parse_definition(EXPECTED)), "smoker", 0.1, 0.2, respondents=3000)
    assert body["power"]["lines"] == [power_sentence(expected)] and body["power"]["question"] == "smoker"
    no_js = press(owner, response, "preview", respondents="3000", power_question="smoker", power_null="10",
                  power_share="20")
    assert power_sentence(expected) in page(no_js)
    bad = owner.post("/surveys/build/preview.json", data={**data, "power_null": "150"}).json
    assert bad["errors"]["power_null"] == ["Type a share from 0 to 100 (percent)."]
