"""What a series' reports let an observer learn across waves: linkage by equality and nearest match, change detection.

A seeded simulation of one design's waves, as the browser makes them (client_js/series.js):
every respondent keeps one report of each question's mechanism for their answer (the
permanent layer, drawn once) and every wave sends it again, as it is (one layer) or randomized
again by the design's per-wave layer (two layers, mechanisms/waves.py). The answers do not
change between the waves, the observer's most favourable case. Two attackers link the waves'
records: by equality (a wave-2 record is linked to the wave-1 records equal to it, one of them
at random) and by nearest match (the wave-1 records at the least distance, one of them at
random). ``linked`` is the share of respondents linked to themselves, in expectation over the
random choice among ties; chance is 1/n. The change-detection advantage of one categorical
question is exact: the total variation between the two waves' joint reports when the answer
stayed and when it changed, which no test beats, against the bound (e^ε₁ − 1)/(e^ε₁ + 1) of a
per-wave ε₁ (one layer: no bound; a change shows whenever the kept reports differ).
Pure: numpy and the mechanism objects only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .definition import parse_definition
from .design import build_design
from .mechanisms import INDEX, mechanism_for

# Nearest match compares this many wave-2 records at a time with all of wave 1 (bounded memory).
_BLOCK = 500


@dataclass(frozen=True)
class Linkage:
    """The linkage of two waves of n respondents: unique share, equality and nearest-match links, all as shares."""

    n: int
    unique: float
    equality: float
    nearest: float

    @property
    def chance(self) -> float:
        """The share a random pairing links: 1/n."""
        return 1 / self.n

    def above_chance(self, attacker: str) -> float:
        """Return an attacker's ("equality" or "nearest") share linked minus chance."""
        return getattr(self, attacker) - self.chance


def series_design(*, yes_no: int, number: tuple[int, int] | None, epsilon: float, wave_epsilon: float | None = None,
                  mechanism: str = "auto") -> dict:
    """Return the design of a series of ``yes_no`` yes/no questions and, if given, one number question (its range)."""
    questions = [{"id": f"q{i + 1}", "kind": "yes_no", "text": f"Question {i + 1}?"} for i in range(yes_no)]
    if number is not None:
        questions.append({"id": "number", "kind": "number", "text": "How many?", "min": number[0], "max": number[1],
                          "mechanism": mechanism})
    data = {"slug": "waves", "title": "Waves", "epsilon": epsilon, "series": "waves", "questions": questions}
    if wave_epsilon is not None:
        data["wave_epsilon"] = wave_epsilon
    return build_design(parse_definition(data))


def draw_answers(design: dict, n: int, rng) -> list[np.ndarray]:
    """Return n answers per question: yes in 20-80% by question, options and numbers uniform, ticks at one half."""
    answers = []
    for index, question in enumerate(design["questions"]):
        kind = question["kind"]
        if kind == "yes_no":
            answers.append((rng.random(n) < 0.2 + 0.6 * ((index * 0.37) % 1)).astype(np.int64))
        elif kind == "choice":
            answers.append(rng.integers(0, len(question["options"]), size=n, dtype=np.int64))
        elif kind == "multi":
            answers.append((rng.random((n, len(question["options"]))) < 0.5).astype(np.int64))
        else:
            answers.append(rng.integers(question["min"], question["max"] + 1, size=n, dtype=np.int64))
    return answers


def permanent_layer(mechanism):
    """Return the mechanism whose report the device keeps: the inner one of two layers, else the mechanism itself."""
    return getattr(mechanism, "inner", mechanism)


def simulate_waves(design: dict, n: int, rng, waves: int = 2) -> list[list[np.ndarray]]:
    """Return ``waves`` lists of per-question reports of n respondents whose answers stay the same."""
    answers = draw_answers(design, n, rng)
    mechanisms = [mechanism_for(question) for question in design["questions"]]
    kept = [permanent_layer(mechanism).randomize(answer, rng) for mechanism, answer in zip(mechanisms, answers)]
    return [[mechanism.wave(report, rng) if hasattr(mechanism, "wave") else report
             for mechanism, report in zip(mechanisms, kept)] for _ in range(waves)]


def _columns(design: dict, reports: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (records, scales, categorical): one column per report value, its distance scale, whether it is a label."""
    columns, scales, categorical = [], [], []
    for question, report in zip(design["questions"], reports):
        mechanism = mechanism_for(question)
        block = np.asarray(report, dtype=np.int64).reshape(len(report), -1)
        columns.append(block)
        width = block.shape[1]
        scales += [max(mechanism.highest, 1)] * width
        categorical += [mechanism.report == INDEX] * width
    return np.hstack(columns), np.array(scales, dtype=float), np.array(categorical)


def measure_linkage(design: dict, n: int, seed: int, *, nearest: bool = True) -> Linkage:
    """Return the linkage of two simulated waves of n respondents of ``design`` (seeded)."""
    rng = np.random.default_rng(seed)
    first, second = simulate_waves(design, n, rng)
    records1, scales, categorical = _columns(design, first)
    records2, _, _ = _columns(design, second)
    return Linkage(n=n, unique=unique_share(records1), equality=equality_links(records1, records2),
                   nearest=nearest_links(records1, records2, scales, categorical) if nearest else math.nan)


def profile_links(design: dict, n: int, seed: int, earlier: int) -> float:
    """Return the share of a new wave's records linked, by nearest match, to profiles of ``earlier`` linked waves.

    The observer already holds each respondent's ``earlier`` waves together (say, from a panel's
    own list) and averages them into a profile (for an option index, the share of each option);
    a new wave's record is linked to the nearest profile (random among ties). Under one layer
    one earlier wave is enough; under two, the profile approaches the kept reports as waves add up.
    """
    rng = np.random.default_rng(seed)
    waves = simulate_waves(design, n, rng, waves=earlier + 1)
    records = [_columns(design, reports) for reports in waves]
    _, scales, categorical = records[0]
    history = np.stack([record for record, _, _ in records[:-1]])  # (earlier, n, columns)
    new = records[-1][0]
    total = 0.0
    for start in range(0, n, _BLOCK):
        block = new[start:start + _BLOCK]
        spread = np.abs(block[:, None, :] - history.mean(axis=0)[None, :, :]) / scales
        # A label: the share of the earlier waves that did not report it.
        mismatch = (block[:, None, None, :] != history.transpose(1, 0, 2)[None, :, :, :]).mean(axis=2)
        distance = np.where(categorical, mismatch, spread).sum(axis=2)
        nearest = np.isclose(distance, distance.min(axis=1, keepdims=True), rtol=0, atol=1e-9)
        own = nearest[np.arange(len(block)), np.arange(start, start + len(block))]
        total += float(np.sum(own / nearest.sum(axis=1)))
    return total / n


def _row_keys(records1: np.ndarray, records2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return integer keys of the rows of both waves, equal exactly when the rows are."""
    both = np.vstack([records1, records2])
    _, keys = np.unique(both, axis=0, return_inverse=True)
    keys = keys.reshape(-1)
    return keys[:len(records1)], keys[len(records1):]


def unique_share(records: np.ndarray) -> float:
    """Return the share of records no other record equals (a fingerprint if it repeats in a later wave)."""
    _, keys, counts = np.unique(records, axis=0, return_inverse=True, return_counts=True)
    return float(np.mean(counts[keys.reshape(-1)] == 1))


def equality_links(records1: np.ndarray, records2: np.ndarray) -> float:
    """Return the expected share of wave-2 records linked to their own wave-1 record by equality (random among ties)."""
    keys1, keys2 = _row_keys(records1, records2)
    counts = np.bincount(keys1, minlength=int(max(keys1.max(), keys2.max())) + 1)
    same = keys1 == keys2
    return float(np.sum(1.0 / counts[keys2[same]]) / len(records1))


def nearest_links(records1: np.ndarray, records2: np.ndarray, scales: np.ndarray, categorical: np.ndarray) -> float:
    """Return the expected share linked to themselves by nearest match (random among the nearest).

    Distance: Σ over the report values of |a − b|/scale for a bit or level (scale: its largest
    value), and 0 or 1 for an option index (a label, not a quantity).
    """
    n = len(records1)
    total = 0.0
    for start in range(0, n, _BLOCK):
        block = records2[start:start + _BLOCK]
        diff = np.abs(block[:, None, :] - records1[None, :, :]).astype(float)
        diff = np.where(categorical, diff > 0, diff / scales)
        distance = diff.sum(axis=2)
        least = distance.min(axis=1, keepdims=True)
        nearest = np.isclose(distance, least, rtol=0, atol=1e-9)
        own = nearest[np.arange(len(block)), np.arange(start, start + len(block))]
        total += float(np.sum(own / nearest.sum(axis=1)))
    return total / n


def linkage_bound(design: dict, n: int) -> float:
    """Return the most any observer links one wave's record to its respondent among n: e^ε₁/(e^ε₁ + n − 1), or 1.

    Under two layers any two respondents' kept reports give a wave's record likelihoods within
    e^ε₁ of each other (ε₁ the design's spent per-wave budget), whatever the observer knows of
    their other waves; from even odds on the n candidates the posterior of the right one is at
    most e^ε₁/(e^ε₁ + n − 1). Under one layer there is no bound.
    """
    if "wave_epsilon_spent" not in design:
        return 1.0
    odds = math.exp(design["wave_epsilon_spent"])
    return odds / (odds + n - 1)


def change_advantage(question: dict, before: int = 0, after: int = 1) -> float:
    """Return the exact advantage of the best test of "the answer changed from ``before`` to ``after``" from two linked waves.

    The total variation between the law of (wave-1 report, wave-2 report) when the answer stayed
    ``before`` and when it became ``after``, for a categorical question (yes/no or one choice).
    """
    mechanism = mechanism_for(question)
    inner = permanent_layer(mechanism)
    categories = inner.categories
    if categories is None:
        raise ValueError(f"question {question.get('id')!r} has no categorical answer: change detection needs one")
    kept = inner.likelihood(np.arange(categories))  # kept[b, c] = P(kept report b | answer c)
    layer = getattr(mechanism, "layer", None)
    send = np.eye(categories) if layer is None else layer.likelihood(np.arange(categories))  # send[r, b]
    stayed = np.einsum("ab,b,cb->ac", send, kept[:, before], send)
    moved = np.einsum("ab,b,cd,d->ac", send, kept[:, before], send, kept[:, after])
    return float(0.5 * np.abs(stayed - moved).sum())


def change_bound(question: dict) -> float:
    """Return (e^ε₁ − 1)/(e^ε₁ + 1), the most a per-wave ε₁ lets any test gain, or 1.0 under one layer."""
    wave = question.get("wave")
    if wave is None:
        return 1.0
    return math.tanh(wave["epsilon"] / 2)


def change_simulated(question: dict, n: int, seed: int) -> float:
    """Return the "reports differ" attacker's advantage over n simulated linked pairs (half changed 0 → 1, half stayed 0)."""
    rng = np.random.default_rng(seed)
    mechanism = mechanism_for(question)
    inner = permanent_layer(mechanism)
    resend = mechanism.wave if hasattr(mechanism, "wave") else (lambda report, _: report)
    kept0 = inner.randomize(np.zeros(n, dtype=np.int64), rng)
    kept1 = inner.randomize(np.ones(n, dtype=np.int64), rng)
    first = resend(kept0, rng)
    stayed, moved = resend(kept0, rng), resend(kept1, rng)
    return float(np.mean(first != moved) - np.mean(first != stayed))

