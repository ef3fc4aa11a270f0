"""Check tests/vectors.json: exact thresholds, safe realised epsilons, and replayed draw streams.

The same file is checked by tests/js/vectors.test.mjs against the browser code, so a case
that passes in both proves Python and JavaScript agree draw for draw.
"""

from __future__ import annotations

import importlib.util
import json
import math
from decimal import Context, Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from survey.core import mechanisms as mech
from survey.core.mechanisms.common import rr_epsilon, rr_flip_threshold
from survey.core.mechanisms.grr import grr_epsilon, grr_keep_threshold
from survey.core.mechanisms.hybrid import (MAX_HYBRID_BINS, hybrid_epsilon, hybrid_ratio, hybrid_scores,
                                           hybrid_worst_variance)
from survey.core.mechanisms.opm import opm_epsilon, opm_probabilities, opm_ratio, opm_shape, opm_worst_variance
from survey.core.mechanisms.oue import oue_epsilon, oue_q_threshold, use_oue
from survey.core.mechanisms.piecewise import MAX_PIECEWISE_BINS, piecewise_epsilon, piecewise_ratio
from survey.core.mechanisms.subset import best_subset_size, ss_epsilon
from survey.core.design import response_probabilities
from survey.core.replay import StreamExhausted, U32Stream, randomize_question_stream
from survey.core.reports import validate_report

TESTS = Path(__file__).resolve().parents[1]
VECTORS = json.loads((TESTS / "vectors.json").read_text(encoding="utf-8"))
THRESHOLDS = VECTORS["thresholds"]
STREAMS = VECTORS["streams"]
TWO53 = 2**53
DIGITS30 = Context(prec=30)


def _row_id(row):
    return f"eps={row['epsilon']},d={row['d']}"


def _load_generator():
    spec = importlib.util.spec_from_file_location("make_vectors", TESTS / "make_vectors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_vectors_file_is_what_the_generator_writes():
    assert _load_generator().build_vectors() == VECTORS, "run: python tests/make_vectors.py"


def test_vectors_cover_the_grid_and_enough_streams():
    grid = {(row["epsilon"], row["d"]) for row in THRESHOLDS}
    assert len(grid) == 7 * 5
    calls = {case["call"] for case in STREAMS}
    assert calls == {"u32", "u53", "bern53", "below", "bern", "question"}
    mechanisms = {(case["question"]["kind"], case["question"]["mechanism"])
                  for case in STREAMS if case["call"] == "question"}
    assert mechanisms == {("yes_no", "rr"), ("choice", "grr"), ("choice", "oue"), ("choice", "ss"),
                          ("multi", "rr"), ("multi", "sampled"), ("number", "duchi"), ("number", "piecewise"),
                          ("number", "hybrid"), ("number", "opm")}
    assert len(STREAMS) >= 60


@pytest.mark.parametrize("row", THRESHOLDS, ids=_row_id)
def test_python_thresholds_reproduce_the_vectors_exactly(row):
    eps, d = row["epsilon"], row["d"]
    assert rr_flip_threshold(epsilon=eps) == row["rr_flip_threshold"]
    assert grr_keep_threshold(epsilon=eps, d=d) == row["grr_keep_threshold"]
    assert oue_q_threshold(epsilon=eps) == row["oue_q_threshold"]
    assert use_oue(epsilon=eps, d=d) is row["use_oue"]
    assert float(rr_epsilon(row["rr_flip_threshold"])) == row["rr_epsilon_float"]
    assert float(grr_epsilon(row["grr_keep_threshold"], d)) == row["grr_epsilon_float"]
    assert row["rr_epsilon"] == str(DIGITS30.plus(rr_epsilon(row["rr_flip_threshold"])))
    assert row["grr_epsilon"] == str(DIGITS30.plus(grr_epsilon(row["grr_keep_threshold"], d)))
    assert row["oue_epsilon"] == str(DIGITS30.plus(oue_epsilon(row["oue_q_threshold"])))


@pytest.mark.parametrize("row", THRESHOLDS, ids=_row_id)
def test_probabilities_follow_from_the_integer_thresholds(row):
    d = row["d"]
    flip = Fraction(row["rr_flip_threshold"], TWO53)
    assert (row["rr_p"], row["rr_q"]) == (float(1 - flip), float(flip))
    assert response_probabilities({"kind": "yes_no", "mechanism": "rr", "flip_threshold": row["rr_flip_threshold"]}) == \
        (row["rr_p"], row["rr_q"])
    grr = {"kind": "choice", "mechanism": "grr", "keep_threshold": row["grr_keep_threshold"], "options": list(range(d))}
    assert response_probabilities(grr) == (row["grr_p"], row["grr_q"])
    oue = {"kind": "choice", "mechanism": "oue", "q_threshold": row["oue_q_threshold"], "options": list(range(d))}
    assert response_probabilities(oue) == (row["oue_p"], row["oue_q"])


@pytest.mark.parametrize("row", THRESHOLDS, ids=_row_id)
def test_realised_epsilon_never_exceeds_nominal(row):
    eps = Decimal(row["epsilon"])
    d = row["d"]
    assert rr_epsilon(row["rr_flip_threshold"]) <= eps
    assert grr_epsilon(row["grr_keep_threshold"], d) <= eps
    assert oue_epsilon(row["oue_q_threshold"]) <= eps
    # The thresholds are the tightest safe ones: one step towards less noise breaks the bound.
    assert rr_epsilon(row["rr_flip_threshold"] - 1) > eps
    assert grr_epsilon(row["grr_keep_threshold"] + 1, d) > eps


@pytest.mark.parametrize("row", VECTORS["piecewise"], ids=lambda row: f"eps={row['epsilon']}")
def test_piecewise_ratio_is_the_closest_safe_rational(row):
    a, b = row["ratio_a"], row["ratio_b"]
    assert piecewise_ratio(epsilon=row["epsilon"]) == (a, b) and row["bins"] == a + b
    realised = piecewise_epsilon(a, b)
    assert realised <= Decimal(row["epsilon"]) and float(realised) == row["epsilon_float"]
    assert row["epsilon_realised"] == str(DIGITS30.plus(realised))
    assert (row["p"], row["q"]) == (float(Fraction(a, a + b)), float(Fraction(b, a + b)))
    # Exactly: (a/b)^2 <= e^eps, and no ratio with at most 4096 levels lies between a/b and e^(eps/2).
    root = Context(prec=60).exp(Decimal(row["epsilon"]) / 2)
    assert Decimal(a) / Decimal(b) <= root
    best = max(Fraction(min(int(root * c), MAX_PIECEWISE_BINS - c), c)
               for c in range(1, MAX_PIECEWISE_BINS // 2 + 1))
    assert Fraction(a, b) == best


@pytest.mark.parametrize("row", VECTORS["hybrid"], ids=lambda row: f"eps={row['epsilon']}")
def test_hybrid_ratio_is_the_closest_safe_rational_within_512_levels(row):
    a, b = row["ratio_a"], row["ratio_b"]
    assert hybrid_ratio(epsilon=row["epsilon"]) == (a, b) and (row["bins"], row["levels"]) == (a + b, a + b + 2)
    assert a + b <= MAX_HYBRID_BINS == 512
    realised = hybrid_epsilon(a, b)
    assert realised <= Decimal(row["epsilon"]) and float(realised) == row["epsilon_float"]
    assert row["epsilon_realised"] == str(DIGITS30.plus(realised))
    root = Context(prec=60).exp(Decimal(row["epsilon"]) / 2)
    best = max(Fraction(min(int(root * c), MAX_HYBRID_BINS - c), c) for c in range(1, MAX_HYBRID_BINS // 2 + 1))
    assert Fraction(a, b) == best
    # beta = 1 - e^(-eps'/2) and Duchi's keep/flip = (a/b)² = e^eps', both exactly (Wang et al. 2019).
    beta, flip = Fraction(row["beta"]), Fraction(row["flip"])
    assert beta == 1 - Fraction(b, a) and (1 - flip) / flip == Fraction(a, b) ** 2
    assert row["duchi_scores"] == [-(a * a + b * b), a * a + b * b]
    assert row["worst_variance"] == hybrid_worst_variance(a, b)


@pytest.mark.parametrize("row", VECTORS["opm"], ids=lambda row: f"eps={row['epsilon']}")
def test_opm_ratio_is_the_closest_safe_rational_and_its_shape_the_design_s(row):
    a, b, m, w = row["ratio_a"], row["ratio_b"], row["steps"], row["band"]
    assert opm_ratio(epsilon=row["epsilon"]) == (a, b) and opm_shape(a, b) == (m, w)
    assert row["levels"] == m + w <= 512 and w * a + m * b <= 2**32
    realised = opm_epsilon(a, b)
    assert realised <= Decimal(row["epsilon"]) and float(realised) == row["epsilon_float"]
    assert row["epsilon_realised"] == str(DIGITS30.plus(realised))
    # Exactly: A/B <= e^eps, and no ratio with B <= 4096 and A <= 2^20 lies between A/B and e^eps.
    power = Context(prec=60).exp(Decimal(row["epsilon"]))
    assert Decimal(a) / Decimal(b) <= power
    assert Fraction(a, b) == max(Fraction(min(int(power * c), 2**20), c) for c in range(1, 4097))
    assert (Fraction(row["p"]), Fraction(row["q"])) == opm_probabilities(a, b, m, w)
    assert row["worst_variance"] == opm_worst_variance(a, b, m, w)


def test_hybrid_scores_fit_int64_for_a_hundred_million_reports():
    """|s| < G² for every level, so Σs² over 10^8 reports at the largest G stays below 2^63."""
    worst = 0
    for bins in (MAX_HYBRID_BINS,):
        for b in range(1, bins // 2):
            scores = hybrid_scores(bins - b, b)
            worst = max(worst, max(abs(score) for score in scores))
            assert max(abs(score) for score in scores) < bins * bins
    assert worst ** 2 * 10 ** 8 < 2 ** 63
    assert (MAX_HYBRID_BINS ** 2) ** 2 * 2 ** 27 <= 2 ** 63


@pytest.mark.parametrize("row", [row for row in THRESHOLDS if row["d"] >= 3], ids=_row_id)
def test_subset_selection_vectors_follow_from_the_integer_threshold(row):
    eps, d = row["epsilon"], row["d"]
    k, keep = row["ss_k"], row["ss_keep_threshold"]
    assert best_subset_size(epsilon=eps, d=d)[:2] == (k, keep)
    assert mech.use_ss(epsilon=eps, d=d) is row["use_ss"]
    assert ss_epsilon(keep, d, k) <= Decimal(eps) < ss_epsilon(keep + 1, d, k)
    assert row["ss_epsilon"] == str(DIGITS30.plus(ss_epsilon(keep, d, k)))
    p = Fraction(keep, TWO53)
    question = {"kind": "choice", "mechanism": "ss", "keep_threshold": keep, "subset_size": k, "options": list(range(d))}
    assert response_probabilities(question) == (row["ss_p"], row["ss_q"]) == \
        (float(p), float((p * (k - 1) + (1 - p) * k) / (d - 1)))
    flip = Fraction(rr_flip_threshold(epsilon=eps), TWO53)
    assert (row["multi_sampled_p"], row["multi_sampled_q"]) == (float((1 - flip) / d), float(flip / d))


def test_naive_float_thresholds_would_overspend_epsilon():
    """Document why thresholds use exact arithmetic: float floor(2^53/(1+e^eps)) gives eps' > eps.

    Garfinkel & Leclerc 2020: e.g. at eps = 10 the naive flip threshold realises 10.00000000000097.
    """
    unsafe_rr = [eps for eps in {row["epsilon"] for row in THRESHOLDS}
                 if rr_epsilon(math.floor(TWO53 / (1 + math.exp(eps)))) > Decimal(eps)]
    assert 10 in unsafe_rr
    unsafe_grr = [(row["epsilon"], row["d"]) for row in THRESHOLDS
                  if grr_epsilon(math.floor(TWO53 * math.exp(row["epsilon"])
                                                 / (math.exp(row["epsilon"]) + row["d"] - 1)), row["d"])
                  > Decimal(row["epsilon"])]
    assert unsafe_grr, "a naive float GRR threshold would be safe everywhere on the grid"


def _replay(case):
    stream = U32Stream(case["words"])
    if case["call"] == "question":
        result = randomize_question_stream(case["question"], case["true"], stream)
    else:
        result = getattr(stream, case["call"])(*case["args"])
    return (int(result) if isinstance(result, bool) else result), stream.used


@pytest.mark.parametrize("case", STREAMS, ids=lambda case: case["name"])
def test_replay_reproduces_every_stream_and_uses_every_word(case):
    result, used = _replay(case)
    assert result == case["expected"]
    assert used == len(case["words"])


@pytest.mark.parametrize("case", [c for c in STREAMS if c["call"] == "question"], ids=lambda case: case["name"])
def test_every_replayed_report_is_in_the_wire_format_domain(case):
    assert validate_report(case["question"], case["expected"]) == case["expected"]


def test_u53_puts_the_first_word_high():
    assert U32Stream([1 << 5, 0]).u53() == 2**26
    assert U32Stream([0, 1 << 6]).u53() == 1
    assert U32Stream([31, 63]).u53() == 0


def test_below_rejects_instead_of_reducing_modulo():
    stream = U32Stream([0xFFFFFFFF, 0xA0000000, 0x40000000])
    assert stream.below(5) == 2  # top 3 bits: 7 and 5 rejected, then 2
    assert stream.used == 3
    assert U32Stream([]).below(1) == 0


def test_bern53_threshold_boundary():
    threshold = 5 * 2**26 + 7
    assert U32Stream([5 << 5, 6 << 6]).bern53(threshold) is True
    assert U32Stream([5 << 5, 7 << 6]).bern53(threshold) is False


def test_grr_skips_the_true_index():
    question = {"id": "c", "kind": "choice", "mechanism": "grr", "options": ["a", "b", "c"], "keep_threshold": 0}
    # bern53(0) is always False; below(2) takes the top bit: j = 1 >= x = 1, so report 2.
    assert randomize_question_stream(question, 1, U32Stream([0, 0, 0x80000000])) == 2
    assert randomize_question_stream(question, 1, U32Stream([0, 0, 0])) == 0


def test_a_short_stream_is_reported():
    with pytest.raises(StreamExhausted, match="after 1 words"):
        U32Stream([0]).u53()


@pytest.mark.parametrize("call, args, message", [
    ("below", (0,), "m must be an integer from 1"),
    ("below", (2**32 + 1,), "got 4294967297"),
    ("bern53", (TWO53 + 1,), "threshold must be an integer from 0"),
    ("bern", (4, 3), "a must be an integer from 0 to 3, got 4"),
])
def test_primitive_arguments_are_validated(call, args, message):
    with pytest.raises(ValueError, match=message):
        getattr(U32Stream([0] * 8), call)(*args)


def test_unknown_mechanism_is_rejected():
    with pytest.raises(ValueError, match="unsupported kind/mechanism 'choice'/'laplace'"):
        randomize_question_stream({"id": "x", "kind": "choice", "mechanism": "laplace"}, 0, U32Stream([]))


@pytest.mark.parametrize("kwargs, message", [
    ({"epsilon": 0}, r"epsilon must be a finite number in \(0, 50\], got 0"),
    ({"epsilon": float("nan")}, r"got nan"),
    ({"epsilon": "1"}, r"got '1'"),
    ({"epsilon": 51}, r"got 51"),
    ({"epsilon": 1, "max_bins": 2}, r"max_bins must be an integer >= 3, got 2"),
    ({"epsilon": 0.0001}, r"epsilon = 0.0001 is too small for the piecewise mechanism with at most 4096 bins"),
])
def test_piecewise_ratio_names_the_bad_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        piecewise_ratio(**kwargs)
