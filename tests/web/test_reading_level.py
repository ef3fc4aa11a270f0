"""Every explanation a respondent reads is at a plain reading level: Flesch–Kincaid grade 8 or less.

The grade is that of Kincaid, Fishburne, Rogers & Chissom (1975), 0.39·words/sentence +
11.8·syllables/word − 15.59, computed by the ``readability`` package (its own syllable
counter, no downloaded data) on each paragraph of the respondent page's explanations —
the privacy box, the series box and the note under each question — for a survey that
uses every mechanism, at a small and a large ε, with branching, sampled questions, a
series and both kinds of release. The list of JavaScript files in the "Check it yourself"
fold is a list of names, not prose, and is left out.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
import readability

from survey.core.definition import parse_definition
from survey.core.definition_toml import dump_definition
from survey.core.design import build_design
from survey.core.mechanisms.registry import offered
from survey.store import Store

HIGHEST_GRADE = 8.0


def grade(text: str) -> float:
    """Return the Flesch–Kincaid grade of a paragraph (sentences end at . ! or ?)."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]
    return readability.getmeasures("\n".join(sentences), lang="en")["readability grades"]["Kincaid"]


class _Explanations(HTMLParser):
    """Collect (id, text) of each paragraph in a section.protection or with class protection-note."""

    def __init__(self):
        super().__init__()
        self.sections: list[bool] = []
        self.skip = 0
        self.current: list[str] | None = None
        self.paragraphs: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if tag == "section":
            self.sections.append("protection" in classes)
        if tag == "details" and attributes.get("id") == "check-files":
            self.skip += 1
        inside = any(self.sections) and not self.skip
        if tag == "p" and (inside or "protection-note" in classes):
            self.current = [attributes.get("id") or "(paragraph)"]

    def handle_endtag(self, tag):
        if tag == "section" and self.sections:
            self.sections.pop()
        if tag == "details" and self.skip:
            self.skip -= 1
        if tag == "p" and self.current is not None:
            text = " ".join("".join(self.current[1:]).split())
            if text:
                self.paragraphs.append((self.current[0], text))
            self.current = None

    def handle_data(self, data):
        if self.current is not None:
            self.current.append(data)


def _questions() -> list[dict]:
    questions = [
        {"id": "smoker", "kind": "yes_no", "text": "Do you smoke?"},
        {"id": "brand", "kind": "choice", "text": "Which brand?", "options": ["A", "B", "C", "D", "E"],
         "show_if": {"question": "smoker", "equals": "yes"}},
        {"id": "two", "kind": "choice", "text": "Which one?", "options": ["A", "B"]},
        {"id": "many", "kind": "choice", "text": "Which city?", "options": [f"City {i}" for i in range(40)]},
        {"id": "tick", "kind": "multi", "text": "Tick if true", "options": ["True"]},
        {"id": "ticks", "kind": "multi", "text": "Tick all that apply", "options": ["A", "B", "C", "D", "E"]},
    ]
    questions += [{"id": f"n_{name}", "kind": "number", "text": "How many?", "min": 0, "max": 100, "mechanism": name}
                  for name in offered("number")]
    return questions


SURVEYS = {
    "small-eps": {"epsilon": 1.0, "release_every": 1},
    "large-eps": {"epsilon": 20.0, "release_every": 50},
    "sampled": {"epsilon": 4.0, "allocation": "sample", "sample": 2},
    "series": {"epsilon": 4.0, "series": "wave"},
}


@pytest.fixture
def pages(app, db_path) -> dict[str, str]:
    store = Store(db_path)
    try:
        for slug, fields in SURVEYS.items():
            definition = parse_definition({"slug": slug, "title": "Habits", "questions": _questions(), **fields})
            store.create_survey(dump_definition(definition), build_design(definition))
    finally:
        store.close()
    client = app.test_client()
    return {slug: client.get(f"/s/{slug}").get_data(as_text=True) for slug in SURVEYS}


def test_every_explanation_a_respondent_reads_is_at_grade_8_or_below(pages):
    measured = {}
    for slug, page in pages.items():
        parser = _Explanations()
        parser.feed(page)
        for name, text in parser.paragraphs:
            measured[text] = (slug, name, grade(text))
    kinds = {name for _, name, _ in measured.values()}
    for expected in ("posterior-bound", "release-note", "stored-note", "branching-note", "sample-note",
                     "q-smoker-note", "q-n_hybrid-note", "q-n_piecewise-note", "q-n_duchi-note", "q-ticks-note"):
        assert expected in kinds, f"{expected} was not measured: the page changed, follow it"
    assert len(measured) >= 25
    hard = [f"{slug} {name}: grade {value:.1f}: {text}" for text, (slug, name, value) in measured.items()
            if value > HIGHEST_GRADE]
    assert not hard, "explanations above grade 8:\n" + "\n".join(hard)


def test_the_measure_tells_hard_prose_from_plain():
    plain = "Your real answer is sent with a chance of 73%. Otherwise, the opposite answer is sent."
    hard = ("The randomization mechanism's probabilistic perturbation guarantees indistinguishability of "
            "neighbouring inputs, consequently bounding the adversary's posterior confidence regarding any "
            "individual respondent's characteristics.")
    assert grade(plain) <= 4 < 16 <= grade(hard)
