"""The respondent page and the builder's preview show the chance a true answer is sent rounded up.

At ε = 0.5 a yes/no answer is sent as itself with probability e^0.5/(1 + e^0.5) = 62.246%:
the respondent page says 63% (it said 62%, promising more protection than there is) and the
builder's "Kept" line says 62.3% (it said 62.2%).
"""

from __future__ import annotations

import html

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.core.planning import question_previews
from survey.web.builder_text import preview_terms
from tests.conftest import create_from_toml

DEFINITION = """
slug = "rounded"
title = "Rounded"
epsilon = 0.5
[[questions]]
id = "smoker"
kind = "yes_no"
text = "Do you smoke?"
"""


def test_the_respondent_page_rounds_the_chance_the_true_answer_is_sent_up(db_path, client):
    create_from_toml(db_path, DEFINITION)
    page = html.unescape(client.get("/s/rounded").get_data(as_text=True))
    assert "Your real answer is sent with a chance of 63%." in page
    assert "chance of 62%" not in page


def test_the_builder_preview_rounds_the_kept_chance_up():
    defn = parse_definition_toml(DEFINITION)
    design = build_design(defn)
    (preview,) = question_previews(defn, design=design)
    terms = dict(preview_terms(preview, design["questions"][0]))
    assert float(preview["keep"]) > 0.6224
    assert terms["Kept"] == "A true answer is reported as itself with probability 62.3%."
