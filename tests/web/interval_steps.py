"""Shared steps of the tests of the interval choices (tests/web/test_anytime_views.py, test_posterior_views.py).

The smoking survey answered with real responses, its CSV rows read back and an API token of its owner.
"""

from __future__ import annotations

import csv
import io

from survey.store import Store

from conftest import OWNER

SLUG = "smoking-2026"
# One well-formed report of the smoking survey: a smoker without lung disease.
GOOD = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}


def smokers_and_ill(smokers: int, ill: int) -> list[dict]:
    """Return ``smokers`` reports like GOOD followed by ``ill`` of non-smokers with lung disease."""
    return [GOOD] * smokers + [{**GOOD, "smoker": 0, "lung_disease": 1}] * ill


def answer(db_path, survey_hash: str, answers: list[dict]) -> tuple[dict, dict]:
    """Store ``answers`` as real responses to the smoking survey; return its design and question counts."""
    store = Store(db_path)
    try:
        store.add_responses(SLUG, survey_hash, answers)
        return store.get_design(SLUG), store.question_counts(SLUG)
    finally:
        store.close()


def csv_rows(text: str) -> list[dict]:
    """Return the rows of a CSV text as dicts keyed by its header."""
    return list(csv.DictReader(io.StringIO(text)))


def owner_bearer(db_path) -> dict:
    """Return the Authorization header of a new API token of OWNER."""
    store = Store(db_path)
    try:
        token = store.create_token(OWNER[0], None)[1]
    finally:
        store.close()
    return {"Authorization": f"Bearer {token}"}
