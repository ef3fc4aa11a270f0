"""Crosstabs and regressions computed once per change of their data, shared between requests of a process.

A crosstab or a regression reads the report patterns kept at insert (``Store.released_patterns``:
a few rows, not the reports) and then computes its estimates and intervals, which costs the same
at any number of responses. The result is kept under (database, slug, design hash, released
response count, what was asked), the count read in the same snapshot as the patterns, so a new
released response (or a replaced design) computes it again and an unchanged survey does not.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Hashable

from flask import current_app

from .db import get_store

_SIZE = 64
_RESULTS: OrderedDict = OrderedDict()
_LOCK = threading.Lock()


def joint_result(slug: str, design: dict, questions: list[str], asked: Hashable, compute: Callable):
    """Return ``compute(words, counts)`` for the survey's released patterns of ``questions``, cached while they stand.

    ``asked`` holds whatever else the result depends on (the kind of view, the level, the order of the questions).
    """
    store = get_store()
    head = (current_app.config["DATABASE"], slug, design["hash"])
    key = (*head, store.response_count(slug), tuple(questions), asked)
    with _LOCK:
        if key in _RESULTS:
            _RESULTS.move_to_end(key)
            return _RESULTS[key]
    count, words, counts = store.released_patterns(slug, questions)
    result = compute(words, counts)
    with _LOCK:
        _RESULTS[(*head, count, tuple(questions), asked)] = result
        while len(_RESULTS) > _SIZE:
            _RESULTS.popitem(last=False)
    return result
