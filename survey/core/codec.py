"""Encode noisy reports as the integers the store keeps, and count their indicators.

Every report is one or more non-negative integers ("words"), by the shape its mechanism
declares (``Mechanism.report``): a 0/1 bit, an option index, an output level, or for a
bit-vector report a bitmask with bit i for option i, WORD_BITS options per word. Integers
are what SQLite counts and indexes without decoding anything.

Every estimand is an indicator (Warner 1965; Wang et al. 2017): option i of a question
"is 1" in a report when the report's index equals i, when bit i is set (bit vectors) or when
the report is 1 (a bit, one option). A level report is tallied as Σs and Σs² of its level's
integer score s (``Mechanism.level_scores``), whose value R has mean q + (p − q)x.
``indicators`` and ``tally`` compute exactly what ``survey.core.aggregate.count_reports``
counts from wire-format reports. Pure numpy; no I/O.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from .mechanisms import BIT, BITS, INDEX, LEVEL, mechanism_for

# 63 bits per word keeps every word a non-negative signed 64-bit SQLite INTEGER.
WORD_BITS = 63


def report_shape(question: dict) -> str:
    """Return the shape of the question's report: BIT, INDEX, BITS or LEVEL (``survey.core.mechanisms``)."""
    return mechanism_for(question).report


def is_bit_vector(question: dict) -> bool:
    """Return whether the question's report is a list of d bits (e.g. unary encodings and multi-select)."""
    return report_shape(question) == BITS


def is_index(question: dict) -> bool:
    """Return whether the question's report is one option's index (e.g. generalized randomized response)."""
    return report_shape(question) == INDEX


def option_count(question: dict) -> int:
    """Return the number of indicators (estimands) of a question: d options, or 1."""
    return len(question["options"]) if question["kind"] in ("choice", "multi") else 1


def is_level(question: dict) -> bool:
    """Return whether the question's report is an output level, not an indicator (a level mechanism's number).

    Its estimand is the mean of the level's value R in [0, 1], which is q + (p - q)·x for the
    scaled answer x, so it is tallied as the sum of the level's score and the sum of its square.
    """
    return report_shape(question) == LEVEL


def level_scores(question: dict) -> list[int]:
    """Return the integer score tallied for each output level."""
    return mechanism_for(question).level_scores()


def level_score(question: dict, level: int) -> int:
    """Return the integer score tallied for one output level, as ``level_scores(question)[level]`` without the list."""
    return mechanism_for(question).level_score(level)


def level_values(question: dict) -> list[Fraction]:
    """Return the exact value R in (0, 1) of each output level, whose mean is q + (p - q)x."""
    return mechanism_for(question).level_values()


def tally_count(question: dict) -> int:
    """Return how many tallies a question keeps besides its reports: one per indicator, or 2 (Σs, Σs²) for levels."""
    return 2 if is_level(question) else option_count(question)


def word_count(question: dict) -> int:
    """Return how many integer words hold one report of the question."""
    return -(-option_count(question) // WORD_BITS) if is_bit_vector(question) else 1


def encode_report(question: dict, report: Any) -> tuple[int, ...]:
    """Return the words of one validated wire-format report."""
    if not is_bit_vector(question):
        return (int(report),)
    words = []
    for start in range(0, len(report), WORD_BITS):
        word = 0
        for offset, bit in enumerate(report[start:start + WORD_BITS]):
            word |= int(bit) << offset
        words.append(word)
    return tuple(words)


def decode_report(question: dict, words) -> Any:
    """Return the wire-format report (an integer, or a list of d bits) of stored words."""
    if not is_bit_vector(question):
        return int(words[0])
    d = option_count(question)
    return [(int(words[index // WORD_BITS]) >> (index % WORD_BITS)) & 1 for index in range(d)]


def tally_increments(question: dict, report: Any) -> list[tuple[int, int]]:
    """Return (tally, increment) pairs that one validated wire-format report adds to the tallies."""
    mechanism = mechanism_for(question)
    if mechanism.report == LEVEL:
        score = mechanism.level_score(int(report))
        return [(0, score), (1, score * score)]
    return [(option, 1) for option in _indicator_options(mechanism.report, report)]


def indicator_options(question: dict, report: Any) -> list[int]:
    """Return the options whose indicator is 1 in one validated wire-format report."""
    return _indicator_options(report_shape(question), report)


def _indicator_options(shape: str, report: Any) -> list[int]:
    if shape == BITS:
        return [option for option, bit in enumerate(report) if bit]
    if shape == INDEX:
        return [int(report)]
    return [0] if report else []


def encode_column(question: dict, reports) -> np.ndarray:
    """Return an (n, word_count) int64 array of the words of n validated reports.

    ``reports`` is an array of n scalars, or of n rows of d bits for a bit vector.
    """
    values = np.asarray(reports, dtype=np.int64)
    if not is_bit_vector(question):
        return values.reshape(-1, 1)
    d = option_count(question)
    values = values.reshape(-1, d)
    words = np.zeros((values.shape[0], word_count(question)), dtype=np.int64)
    for index in range(words.shape[1]):
        chunk = values[:, index * WORD_BITS:(index + 1) * WORD_BITS]
        words[:, index] = (chunk << np.arange(chunk.shape[1], dtype=np.int64)).sum(axis=1)
    return words


def indicators(question: dict, words: np.ndarray) -> np.ndarray:
    """Return the (n, option_count) 0/1 matrix of each report's indicators from its words.

    For a level report (``is_level``) the one column is the level's value R in (0, 1), floats.
    """
    mechanism = mechanism_for(question)
    words = np.asarray(words, dtype=np.int64).reshape(-1, word_count(question))
    d = option_count(question)
    if mechanism.report == LEVEL:
        return mechanism.level_value_array(words[:, :1])
    if mechanism.report == BITS:
        index = np.arange(d)
        return (words[:, index // WORD_BITS] >> (index % WORD_BITS)) & 1
    if mechanism.report == INDEX:
        return (words[:, :1] == np.arange(d)).astype(np.int64)
    assert mechanism.report == BIT
    return words[:, :1] & 1


def tally(question: dict, words: np.ndarray) -> np.ndarray:
    """Return, per indicator of the question, how many of the reports have it (the 1s); Σs and Σs² for levels."""
    words = np.asarray(words, dtype=np.int64).reshape(-1, word_count(question))
    shape = report_shape(question)
    if shape == LEVEL:
        scores = np.array(level_scores(question), dtype=np.int64)[words[:, 0]]
        return np.array([scores.sum(), (scores * scores).sum()], dtype=np.int64)
    if shape == INDEX:
        return np.bincount(words[:, 0], minlength=option_count(question)).astype(np.int64)
    return indicators(question, words).sum(axis=0, dtype=np.int64)
