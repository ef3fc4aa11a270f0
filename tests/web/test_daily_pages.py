"""Daily inconsistencies a researcher meets (issue 27 item 5): a researcher's 404 with a way back, the respondent's as it was."""

from __future__ import annotations

import pytest

from conftest import OWNER
from test_ownership import signed_in


@pytest.mark.parametrize("path", ["/surveys/no-such-survey/results", "/surveys/no-such/crosstab", "/no-such-page"])
def test_a_researchers_404_has_the_researcher_header_and_a_way_back(app, accounts, path):
    response = signed_in(app, *OWNER).get(path)
    text = response.get_data(as_text=True)
    assert response.status_code == 404
    assert '<nav aria-label="Researcher">' in text and '<body class="research">' in text
    assert '<p id="way-back"><a href="/surveys">Back to your surveys</a></p>' in text
    assert "If you entered the URL manually" not in text, "not Flask's default sentence"


def test_the_respondent_404_stays_as_it_was(app, accounts):
    response = app.test_client().get("/s/no-such-survey")
    text = response.get_data(as_text=True)
    assert response.status_code == 404 and "There is no survey at this address." in text
    assert "Researcher" not in text and "way-back" not in text and '<body class="">' in text


def _token(client, path: str) -> str:
    import re

    return re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', client.get(path).get_data(as_text=True)).group(1)


def test_the_toml_editor_lists_every_mistake_with_did_you_mean(app, accounts):
    import html

    from test_every_mistake import BAD

    owner = signed_in(app, *OWNER)
    response = owner.post("/surveys/new", data={"csrf_token": _token(owner, "/surveys/new"), "definition": BAD,
                                                "preview": "Preview"})
    text = html.unescape(response.get_data(as_text=True))
    assert response.status_code == 422
    assert "7 mistakes, all of them:" in text and text.count("<li>the definition, ") == 7
    assert "(did you mean 'title'?)" in text and "(did you mean 'text'?)" in text and "(did you mean 'options'?)" in text


def test_the_builders_import_says_did_you_mean_for_a_misspelt_key(app, accounts):
    import html

    from test_every_mistake import BAD

    owner = signed_in(app, *OWNER)
    token = _token(owner, "/surveys/build")
    response = owner.post("/surveys/build/import", data={"csrf_token": token, "toml": BAD})
    text = html.unescape(response.get_data(as_text=True))
    assert "titel (did you mean 'title'?)" in text and "questions.txt (did you mean 'text'?)" in text
    assert "questions.option (did you mean 'options'?)" in text
    assert "Must be a number" in text or "must be a number" in text, "the epsilon mistake too, beside its field"


def test_an_uploaded_files_error_is_beside_the_upload_field(app, accounts):
    """A CSV uploaded as the survey file: the error under the upload field, which takes the focus (no scrolling down)."""
    import io
    import re

    owner = signed_in(app, *OWNER)
    csv = b"question,option\nsmoker,yes\n"
    builder = owner.post("/surveys/build/import", data={"csrf_token": _token(owner, "/surveys/build"),
                                                       "upload": (io.BytesIO(csv), "answers.toml")},
                         content_type="multipart/form-data")
    text = builder.get_data(as_text=True)
    upload = re.search(r'<p class="field-error" id="upload-error" role="alert">([^<]*)</p>\s*<input([^>]*)>', text)
    assert builder.status_code == 422 and upload and "This is not valid TOML" in upload.group(1)
    assert "autofocus" in upload.group(2) and 'aria-invalid="true"' in upload.group(2)
    assert re.search(r'id="toml-error">\s*</p>', text), "not under the paste field"
    editor = owner.post("/surveys/new", data={"csrf_token": _token(owner, "/surveys/new"), "preview": "Preview",
                                              "upload": (io.BytesIO(csv), "answers.toml")},
                        content_type="multipart/form-data")
    text = editor.get_data(as_text=True)
    assert editor.status_code == 422
    assert re.search(r'id="upload-error" role="alert">the file: not valid TOML', text), text[text.find("upload-error") - 200:][:600]
    assert 'id="definition-error"' not in text
    assert re.search(r'<input[^>]*autofocus[^>]*id="upload"|<input[^>]*id="upload"[^>]*autofocus', text)
