"""The respondent page of a panel survey, served by the app: the completion and thank-you it carries, escaped, and
nothing of the link's participant ids echoed back."""

from __future__ import annotations

from conftest import create_from_toml

PANEL_TOML = """
slug = "panel-page"
title = "Panel page"
epsilon = 2
thank_you = "Thanks <script>alert(1)</script> & bye"

[panel]
parameters = ["PROLIFIC_PID", "STUDY_ID"]
code = "C1A2B3C4"
redirect = "https://app.prolific.com/submissions/complete?cc={code}"

[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"
"""


def test_the_page_carries_the_completion_and_escaped_thanks_and_echoes_no_id(client, db_path):
    design = create_from_toml(db_path, PANEL_TOML)
    assert design["panel"]["parameters"] == ["PROLIFIC_PID", "STUDY_ID"]
    response = client.get("/s/panel-page?PROLIFIC_PID=planted123&STUDY_ID=study456&lang=en")
    body = response.get_data(as_text=True)
    assert response.status_code == 200 and response.headers["Cache-Control"] == "no-store"
    assert "planted123" not in body and "study456" not in body
    assert "Thanks &lt;script&gt;alert(1)&lt;/script&gt; &amp; bye" in body and "<script>alert" not in body
    assert 'id="completion"' in body and 'id="completion-code"' in body and 'id="completion-link"' in body
    assert 'respond-completion.js' in body and 'respond-progress.js' in body, "the page lists the code it runs"
    assert '<meta name="referrer" content="no-referrer">' in body, "the redirect does not carry the page's address"
    assert client.get("/s/panel-page/design.json").json["thank_you"] == "Thanks <script>alert(1)</script> & bye"


def test_a_page_without_a_panel_has_no_completion(client, db_path, smoking_survey):
    body = client.get(f"/s/{smoking_survey['slug']}?PROLIFIC_PID=planted123").get_data(as_text=True)
    assert 'id="completion"' not in body and 'id="thanks-custom"' not in body and "planted123" not in body
    assert 'id="progress"' in body, "the progress line is there, shown by the page's script for 4+ questions"
