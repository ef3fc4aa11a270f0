"""The builder's thank-you and panel fields: errors beside them, saved and exported as the definition's [panel]."""

from __future__ import annotations

import pytest
from test_builder import field_error, fields, press, stored_definition

from conftest import OWNER
from survey.core.definition import parse_definition_toml

PROLIFIC = "https://app.prolific.com/submissions/complete?cc={code}"


@pytest.fixture
def owner(app, accounts):
    """Return a test client signed in as the owner of the smoking survey."""
    from test_ownership import signed_in

    return signed_in(app, *OWNER)


def one_question(client):
    """Return the builder page with a valid one-question survey (slug habits) filled in."""
    return press(client, client.get("/surveys/build"), "preview", title="Habits", slug="habits", epsilon="2",
                 **{"questions-0-id": "smoker", "questions-0-text": "Do you smoke?"})


def test_panel_fields_with_errors_then_saved_and_exported(owner, db_path):
    response = one_question(owner)
    refused = press(owner, response, "preview", thank_you="Thanks!", panel_parameters="PROLIFIC PID; invite",
                    panel_code="two words", panel_redirect="http://app.prolific.com/x?cc={code}&p={PID}")
    assert refused.status_code == 422
    assert "parameter name must be" in field_error(refused, "panel_parameters")
    refused = press(owner, refused, "preview", panel_parameters="PROLIFIC_PID, invite", panel_code="C1")
    assert "is read by the survey page itself" in field_error(refused, "panel_parameters")
    refused = press(owner, refused, "preview", panel_parameters="PROLIFIC_PID STUDY_ID,SESSION_ID")
    assert "https:// URL or a relative one" in field_error(refused, "panel_redirect")
    refused = press(owner, refused, "preview", panel_redirect="https://app.prolific.com/x?p={PID}")
    assert "{PID} is neither {code} nor a declared parameter" in field_error(refused, "panel_redirect")
    refused = press(owner, refused, "preview", panel_code="", panel_redirect=PROLIFIC)
    assert "no code" in field_error(refused, "panel_redirect")
    response = press(owner, refused, "save", panel_code="C1A2B3C4", thank_you="Thank you!\r\nBye.")
    assert response.status_code == 302, fields(response)
    saved = parse_definition_toml(stored_definition(db_path, "habits"))
    assert saved.panel.parameters == ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
    assert (saved.panel.code, saved.panel.redirect, saved.thank_you) == ("C1A2B3C4", PROLIFIC, "Thank you!\nBye.")
    edited = owner.get("/surveys/build?edit=habits")
    values = fields(edited)
    assert (values["panel_parameters"], values["panel_code"], values["panel_redirect"]) == (
        "PROLIFIC_PID, STUDY_ID, SESSION_ID", "C1A2B3C4", PROLIFIC)
    exported = press(owner, edited, "export").get_data(as_text=True)
    assert "[panel]" in exported and parse_definition_toml(exported) == saved


def test_blank_panel_fields_leave_no_panel(owner, db_path):
    response = press(owner, one_question(owner), "export", thank_you="  ", panel_parameters=" , ",
                     panel_code=" ", panel_redirect="")
    defn = parse_definition_toml(response.get_data(as_text=True))
    assert defn.panel is None and defn.thank_you is None
