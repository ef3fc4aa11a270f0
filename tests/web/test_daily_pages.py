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
