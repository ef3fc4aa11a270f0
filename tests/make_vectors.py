"""Regenerate tests/vectors.json, shared by pytest and node so Python and the browser agree.

Run by hand from the repository root: ``python tests/make_vectors.py``. The output is
deterministic (fixed seed). "thresholds" holds the integer thresholds and realised
epsilons of a grid of epsilon and d; "piecewise" the rational e^(eps/2) = a/b of the
piecewise mechanism per epsilon; "hybrid" the same for the hybrid mechanism (at most 512
levels) with its branch and flip probabilities and level scores; "opm" the ratio e^eps = A/B, grid steps m
and band w of the optimal piecewise mechanism per epsilon; "streams" holds cases of a fixed list of 32-bit
words, an input and the output survey/core/replay.py computes from them, which the
JavaScript must reproduce word for word (consuming exactly the listed words).
"""

from __future__ import annotations

import json
import random
import sys
from decimal import Context
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from survey.core import mechanisms as mech  # noqa: E402
from survey.core.mechanisms.common import per_option_epsilon, rr_epsilon, rr_flip_threshold
from survey.core.mechanisms.grr import grr_epsilon, grr_keep_threshold
from survey.core.mechanisms.hybrid import (hybrid_branch, hybrid_epsilon, hybrid_ratio, hybrid_scores,
                                           hybrid_worst_variance)
from survey.core.mechanisms.multi_sampled import multi_sampled_probabilities
from survey.core.mechanisms.opm import opm_epsilon, opm_probabilities, opm_ratio, opm_shape, opm_worst_variance
from survey.core.mechanisms.oue import oue_epsilon, oue_q_threshold, use_oue
from survey.core.mechanisms.piecewise import (piecewise_epsilon, piecewise_probabilities, piecewise_ratio,
                                              piecewise_worst_variance)
from survey.core.mechanisms.subset import best_subset_size, ss_epsilon, ss_keep_threshold, ss_probabilities
from survey.core.replay import U32Stream, randomize_question_stream  # noqa: E402

VECTORS_PATH = Path(__file__).resolve().parent / "vectors.json"
EPSILONS = (0.1, 0.5, 0.5714285714285714, 1, 2, 4, 10)
DIMENSIONS = (2, 3, 5, 20, 100)
SEED = 20260101
TWO53 = 2**53
_DIGITS30 = Context(prec=30)


def _digits30(value) -> str:
    return str(_DIGITS30.plus(value))


def threshold_row(epsilon, d: int) -> dict:
    """Return every threshold, realised epsilon and (p, q) pair of one (epsilon, d)."""
    flip = rr_flip_threshold(epsilon=epsilon)
    keep = grr_keep_threshold(epsilon=epsilon, d=d)
    q_oue = oue_q_threshold(epsilon=epsilon)
    rr_eps, grr_eps, oue_eps = rr_epsilon(flip), grr_epsilon(keep, d), oue_epsilon(q_oue)
    grr_p = Fraction(keep, TWO53)
    return {
        "epsilon": epsilon, "d": d,
        "rr_flip_threshold": flip, "rr_epsilon": _digits30(rr_eps), "rr_epsilon_float": float(rr_eps),
        "rr_p": float(1 - Fraction(flip, TWO53)), "rr_q": float(Fraction(flip, TWO53)),
        "grr_keep_threshold": keep, "grr_epsilon": _digits30(grr_eps), "grr_epsilon_float": float(grr_eps),
        "grr_p": float(grr_p), "grr_q": float((1 - grr_p) / (d - 1)),
        "oue_q_threshold": q_oue, "oue_epsilon": _digits30(oue_eps), "oue_epsilon_float": float(oue_eps),
        "oue_p": 0.5, "oue_q": float(Fraction(q_oue, TWO53)),
        "use_oue": use_oue(epsilon=epsilon, d=d),
        **subset_fields(epsilon, d),
        **multi_fields(epsilon, d),
    }


def subset_fields(epsilon, d: int) -> dict:
    """Return the subset-selection size, threshold, realised epsilon and (p, q) of one (epsilon, d >= 3)."""
    if d < 3:
        return {"use_ss": False}
    k, keep, _ = best_subset_size(epsilon=epsilon, d=d)
    p, q = ss_probabilities(keep, d, k)
    eps = ss_epsilon(keep, d, k)
    return {"ss_k": k, "ss_keep_threshold": keep, "ss_epsilon": _digits30(eps), "ss_epsilon_float": float(eps),
            "ss_p": float(p), "ss_q": float(q), "use_ss": mech.use_ss(epsilon=epsilon, d=d)}


def multi_fields(epsilon, d: int) -> dict:
    """Return the (p, q) of the sampled multi report at full epsilon and whether it beats per-bit RR."""
    p, q = multi_sampled_probabilities(rr_flip_threshold(epsilon=epsilon), d)
    return {"multi_sampled_p": float(p), "multi_sampled_q": float(q),
            "use_multi_sampled": mech.use_multi_sampled(epsilon=epsilon, d=d)}


def words_for_u53(value: int, rng: random.Random) -> list[int]:
    """Return two words whose u53 is exactly value (random bits in the discarded low bits)."""
    high, low = divmod(value, 2**26)
    return [(high << 5) | rng.getrandbits(5), (low << 6) | rng.getrandbits(6)]


def word_for_below(value: int, m: int, rng: random.Random) -> list[int]:
    """Return one word whose top bit_length(m-1) bits are value (accepted by below(m) iff value < m)."""
    shift = 32 - (m - 1).bit_length()
    return [(value << shift) | rng.getrandbits(shift) if shift else value]


def _question(qid, kind, mechanism, **fields) -> dict:
    return {"id": qid, "kind": kind, "mechanism": mechanism, **fields}


def _case(name, call, rng, *, prefix=(), args=None, question=None, true=None) -> dict:
    """Run one call on prefix + random words through replay.py and keep only the words it used."""
    words = list(prefix) + [rng.getrandbits(32) for _ in range(4000)]
    stream = U32Stream(words)
    if call == "question":
        expected = randomize_question_stream(question, true, stream)
    else:
        expected = getattr(stream, call)(*args)
        expected = int(expected) if isinstance(expected, bool) else expected
    if stream.used < len(prefix):
        raise AssertionError(f"case {name!r} did not use its crafted words")
    case = {"name": name, "call": call, "words": words[:stream.used], "expected": expected}
    if call == "question":
        case.update(question=question, true=true)
    else:
        case["args"] = list(args)
    return case


def primitive_cases(rng: random.Random) -> list[dict]:
    """Return cases of u32/u53/bern53/below/bern, including boundaries and forced rejections."""
    top = 2**32 - 1
    t1 = rr_flip_threshold(epsilon=1)
    cases = [
        _case("u32 passes a word through", "u32", rng, prefix=[123456789], args=[]),
        _case("u53 of zero words is 0", "u53", rng, prefix=[0, 0], args=[]),
        _case("u53 of all-ones words is 2^53-1", "u53", rng, prefix=[top, top], args=[]),
        _case("u53 takes the high part from the first word", "u53", rng, prefix=[top, 0], args=[]),
        _case("u53 takes the low part from the second word", "u53", rng, prefix=[0, top], args=[]),
        _case("u53 random", "u53", rng, args=[]),
        _case("bern53 at u53 = T-1 is 1", "bern53", rng, prefix=words_for_u53(t1 - 1, rng), args=[t1]),
        _case("bern53 at u53 = T is 0", "bern53", rng, prefix=words_for_u53(t1, rng), args=[t1]),
        _case("bern53 with T = 0 is 0", "bern53", rng, prefix=[0, 0], args=[0]),
        _case("bern53 with T = 2^53 is 1", "bern53", rng, prefix=[top, top], args=[TWO53]),
        _case("below(1) draws nothing", "below", rng, args=[1]),
        _case("below(2) takes the top bit", "below", rng, prefix=[2**31], args=[2]),
        _case("below(8), a power of two, never rejects", "below", rng, prefix=word_for_below(7, 8, rng), args=[8]),
        _case("below(2^32) uses the whole word", "below", rng, prefix=[top], args=[2**32]),
        _case("below(5) = 2^2+1 rejects 5, 6, 7 then accepts 0", "below", rng,
              prefix=word_for_below(5, 5, rng) + word_for_below(6, 5, rng) + word_for_below(7, 5, rng)
              + word_for_below(0, 5, rng), args=[5]),
        _case("below(17) = 2^4+1 rejects 31 then accepts 16", "below", rng,
              prefix=word_for_below(31, 17, rng) + word_for_below(16, 17, rng), args=[17]),
        _case("below(3) rejects 3 then accepts 2", "below", rng,
              prefix=word_for_below(3, 3, rng) + word_for_below(2, 3, rng), args=[3]),
        _case("below(1000) random", "below", rng, args=[1000]),
        _case("below(7) random", "below", rng, args=[7]),
        _case("bern(0, 5) is 0", "bern", rng, args=[0, 5]),
        _case("bern(5, 5) is 1", "bern", rng, args=[5, 5]),
        _case("bern(3, 7) at below = 2 is 1", "bern", rng, prefix=word_for_below(2, 7, rng), args=[3, 7]),
        _case("bern(3, 7) at below = 3 is 0", "bern", rng, prefix=word_for_below(3, 7, rng), args=[3, 7]),
    ]
    return cases


def question_cases(rng: random.Random) -> list[dict]:
    """Return cases of every mechanism with crafted keep/flip decisions and random draws."""
    flip1 = rr_flip_threshold(epsilon=1)
    flip01 = rr_flip_threshold(epsilon=0.1)
    flip10 = rr_flip_threshold(epsilon=10)
    yes_no = _question("smoker", "yes_no", "rr", flip_threshold=flip1)
    five = ["a", "b", "c", "d", "e"]
    grr5 = _question("colour", "choice", "grr", options=five,
                     keep_threshold=grr_keep_threshold(epsilon=1, d=5))
    grr2 = _question("pair", "choice", "grr", options=["x", "y"],
                     keep_threshold=grr_keep_threshold(epsilon=0.5, d=2))
    grr3 = _question("three", "choice", "grr", options=["x", "y", "z"],
                     keep_threshold=grr_keep_threshold(epsilon=2, d=3))
    grr4 = _question("four", "choice", "grr", options=["w", "x", "y", "z"],
                     keep_threshold=grr_keep_threshold(epsilon=0.1, d=4))
    twenty = [f"option {i}" for i in range(20)]
    oue20 = _question("many", "choice", "oue", options=twenty, q_threshold=oue_q_threshold(epsilon=1))
    oue5 = _question("few", "choice", "oue", options=five, q_threshold=oue_q_threshold(epsilon=0.5))
    multi3 = _question("ticks", "multi", "rr", options=["p", "q", "r"],
                       flip_threshold=rr_flip_threshold(epsilon=per_option_epsilon(2, 3)))
    multi1 = _question("single", "multi", "rr", options=["only"], flip_threshold=flip1)
    multi8 = _question("eight", "multi", "rr", options=[str(i) for i in range(8)],
                       flip_threshold=rr_flip_threshold(epsilon=per_option_epsilon(4, 8)))
    age = _question("age", "number", "duchi", min=18, max=90, flip_threshold=flip1)
    unit = _question("unit", "number", "duchi", min=0, max=1, flip_threshold=flip01)
    neg = _question("temp", "number", "duchi", min=-40, max=24, flip_threshold=flip10)
    wide = _question("income", "number", "duchi", min=0, max=10**9, flip_threshold=flip1)

    def true53(threshold):
        return words_for_u53(threshold - 1, rng)

    def false53(threshold):
        return words_for_u53(threshold, rng)

    cases = [
        _case("rr yes kept", "question", rng, prefix=false53(flip1), question=yes_no, true=1),
        _case("rr yes flipped", "question", rng, prefix=true53(flip1), question=yes_no, true=1),
        _case("rr no kept", "question", rng, prefix=false53(flip1), question=yes_no, true=0),
        _case("rr no flipped", "question", rng, prefix=true53(flip1), question=yes_no, true=0),
        _case("grr d=5 x=0 kept", "question", rng, prefix=true53(grr5["keep_threshold"]),
              question=grr5, true=0),
        _case("grr d=5 x=0 replaced by j=0 -> 1", "question", rng,
              prefix=false53(grr5["keep_threshold"]) + word_for_below(0, 4, rng), question=grr5, true=0),
        _case("grr d=5 x=4 replaced by j=3 -> 3", "question", rng,
              prefix=false53(grr5["keep_threshold"]) + word_for_below(3, 4, rng), question=grr5, true=4),
        _case("grr d=5 x=2 replaced by j=2 -> 3", "question", rng,
              prefix=false53(grr5["keep_threshold"]) + word_for_below(2, 4, rng), question=grr5, true=2),
        _case("grr d=5 x=2 replaced by j=1 -> 1", "question", rng,
              prefix=false53(grr5["keep_threshold"]) + word_for_below(1, 4, rng), question=grr5, true=2),
        _case("grr d=2 x=0 replaced without a below draw", "question", rng,
              prefix=false53(grr2["keep_threshold"]), question=grr2, true=0),
        _case("grr d=2 x=1 replaced without a below draw", "question", rng,
              prefix=false53(grr2["keep_threshold"]), question=grr2, true=1),
        _case("grr d=3 x=2 replaced by below(2)", "question", rng,
              prefix=false53(grr3["keep_threshold"]) + word_for_below(1, 2, rng), question=grr3, true=2),
        _case("grr d=4 x=1 replaced after a rejection of 3", "question", rng,
              prefix=false53(grr4["keep_threshold"]) + word_for_below(3, 3, rng) + word_for_below(1, 3, rng),
              question=grr4, true=1),
        _case("oue d=20 x=0 all bits", "question", rng, question=oue20, true=0),
        _case("oue d=20 x=19 all bits", "question", rng, question=oue20, true=19),
        _case("oue d=5 x=2 true bit drawn by below(2) in place", "question", rng,
              prefix=true53(oue5["q_threshold"]) + false53(oue5["q_threshold"]) + [2**31]
              + true53(oue5["q_threshold"]) + false53(oue5["q_threshold"]),
              question=oue5, true=2),
        _case("multi d=3 flips only the middle bit", "question", rng,
              prefix=false53(multi3["flip_threshold"]) + true53(multi3["flip_threshold"])
              + false53(multi3["flip_threshold"]), question=multi3, true=[1, 0, 1]),
        _case("multi d=1 tick", "question", rng, question=multi1, true=[1]),
        _case("multi d=1 blank", "question", rng, question=multi1, true=[0]),
        _case("duchi at min rounds to 0, kept", "question", rng,
              prefix=word_for_below(0, 72, rng) + false53(flip1), question=age, true=18),
        _case("duchi at max rounds to 1, kept", "question", rng,
              prefix=word_for_below(71, 72, rng) + false53(flip1), question=age, true=90),
        _case("duchi at min, rounded 0 then flipped", "question", rng,
              prefix=word_for_below(71, 72, rng) + true53(flip1), question=age, true=18),
        _case("duchi at max, rounded 1 then flipped", "question", rng,
              prefix=word_for_below(0, 72, rng) + true53(flip1), question=age, true=90),
        _case("duchi 40: below(72) = 21 < 22 rounds up", "question", rng,
              prefix=word_for_below(21, 72, rng) + false53(flip1), question=age, true=40),
        _case("duchi 40: below(72) = 22 rounds down", "question", rng,
              prefix=word_for_below(22, 72, rng) + false53(flip1), question=age, true=40),
        _case("duchi 40: rejection of 127 before rounding", "question", rng,
              prefix=word_for_below(127, 72, rng) + word_for_below(5, 72, rng) + false53(flip1),
              question=age, true=40),
        _case("duchi range 1 at 0", "question", rng, question=unit, true=0),
        _case("duchi range 1 at 1", "question", rng, question=unit, true=1),
        _case("duchi negative range", "question", rng, question=neg, true=-3),
        _case("duchi range 10^9 middle", "question", rng, question=wide, true=123456789),
    ]
    for i in range(12):
        question = rng.choice([yes_no, grr5, grr3, oue5, oue20, multi3, multi8, age, neg])
        if question["kind"] == "yes_no":
            true = rng.randrange(2)
        elif question["kind"] == "choice":
            true = rng.randrange(len(question["options"]))
        elif question["kind"] == "multi":
            true = [rng.randrange(2) for _ in question["options"]]
        else:
            true = rng.randint(question["min"], question["max"])
        cases.append(_case(f"random {i}: {question['kind']}/{question['mechanism']} {question['id']}",
                           "question", rng, question=question, true=true))
    return cases + subset_cases(rng)


def subset_cases(rng: random.Random) -> list[dict]:
    """Return cases of subset selection (choice/ss) and the sampled multi report (multi/sampled)."""
    ss8 = _question("eight", "choice", "ss", options=[f"o{i}" for i in range(8)], subset_size=3,
                    keep_threshold=ss_keep_threshold(epsilon=0.5, d=8, k=3))
    ss256 = _question("wide", "choice", "ss", options=[f"o{i}" for i in range(256)], subset_size=69,
                      keep_threshold=ss_keep_threshold(epsilon=1, d=256, k=69))
    ss3 = _question("three", "choice", "ss", options=["x", "y", "z"], subset_size=2,
                    keep_threshold=ss_keep_threshold(epsilon=1, d=3, k=2))
    sampled5 = _question("ticks5", "multi", "sampled", options=list("abcde"),
                         flip_threshold=rr_flip_threshold(epsilon=1))
    keep8 = ss8["keep_threshold"]
    cases = [
        # Kept: Floyd picks 2 of the 7 others: j=5: below(6)=1 -> {1}; j=6: below(7)=1 taken -> {1, 6};
        # positions 1 and 6 stand for options 1 and 7 when x = 4 (o + [o >= 4]).
        _case("ss d=8 k=3 x=4 kept, Floyd collision adds j", "question", rng,
              prefix=words_for_u53(keep8 - 1, rng) + word_for_below(1, 6, rng) + word_for_below(1, 7, rng),
              question=ss8, true=4),
        # Not kept: 3 of the 7 others: j=4: below(5)=4; j=5: below(6)=0; j=6: below(7)=5 -> {4, 0, 5}
        # mapped past x = 0 to options 5, 1, 6.
        _case("ss d=8 k=3 x=0 not kept, rejection in below(5)", "question", rng,
              prefix=words_for_u53(keep8, rng) + word_for_below(7, 5, rng) + word_for_below(4, 5, rng)
              + word_for_below(0, 6, rng) + word_for_below(5, 7, rng),
              question=ss8, true=0),
        _case("ss d=3 k=2 x=2 kept takes one other", "question", rng,
              prefix=words_for_u53(ss3["keep_threshold"] - 1, rng), question=ss3, true=2),
        _case("multi sampled d=5 draws option 3, kept", "question", rng,
              prefix=word_for_below(3, 5, rng) + words_for_u53(sampled5["flip_threshold"], rng),
              question=sampled5, true=[0, 0, 0, 1, 0]),
        _case("multi sampled d=5 draws option 1, flipped 0 -> 1", "question", rng,
              prefix=word_for_below(1, 5, rng) + words_for_u53(sampled5["flip_threshold"] - 1, rng),
              question=sampled5, true=[1, 0, 0, 1, 0]),
        _case("multi sampled d=5 draws option 0, true 1 flipped to an all-zero report", "question", rng,
              prefix=word_for_below(0, 5, rng) + words_for_u53(sampled5["flip_threshold"] - 1, rng),
              question=sampled5, true=[1, 1, 1, 1, 1]),
    ]
    for i in range(8):
        question = rng.choice([ss8, ss256, ss3, sampled5])
        true = (rng.randrange(len(question["options"])) if question["kind"] == "choice"
                else [rng.randrange(2) for _ in question["options"]])
        cases.append(_case(f"random ss/sampled {i}: {question['mechanism']} {question['id']}",
                           "question", rng, question=question, true=true))
    return cases


def piecewise_row(epsilon) -> dict:
    """Return the rational a/b <= e^(eps/2), realised epsilon, (p, q) and worst variance of the piecewise mechanism."""
    a, b = piecewise_ratio(epsilon=epsilon)
    realised = piecewise_epsilon(a, b)
    p, q = piecewise_probabilities(a, b)
    return {"epsilon": epsilon, "ratio_a": a, "ratio_b": b, "bins": a + b,
            "epsilon_realised": _digits30(realised), "epsilon_float": float(realised),
            "p": float(p), "q": float(q), "worst_variance": piecewise_worst_variance(a, b)}


def piecewise_cases(rng: random.Random) -> list[dict]:
    """Return cases of the discretised piecewise mechanism: rounding, the high/low branch, skipping the high bins."""
    a4, b4 = piecewise_ratio(epsilon=4)
    a1, b1 = piecewise_ratio(epsilon=1)
    age = _question("age", "number", "piecewise", min=18, max=90, ratio_a=a4, ratio_b=b4, bins=a4 + b4)
    unit = _question("unit", "number", "piecewise", min=0, max=1, ratio_a=a1, ratio_b=b1, bins=a1 + b1)
    wide = _question("income", "number", "piecewise", min=0, max=10**9, ratio_a=a4, ratio_b=b4, bins=a4 + b4)
    levels = a4 + b4
    # value 40: 22·a = 72·grid + remainder.
    grid40, rest40 = divmod(22 * a4, 72)

    def below(value, m):
        return word_for_below(value, m, rng)

    cases = [
        _case("piecewise at min, high branch, first level", "question", rng,
              prefix=below(5, 72) + below(0, levels) + below(0, b4), question=age, true=18),
        _case("piecewise at max, high branch, last level", "question", rng,
              prefix=below(71, 72) + below(a4 - 1, levels) + below(b4 - 1, b4), question=age, true=90),
        _case("piecewise at min, low branch skips the b high levels", "question", rng,
              prefix=below(0, 72) + below(a4, levels) + below(0, a4), question=age, true=18),
        _case("piecewise at max, low branch below the grid", "question", rng,
              prefix=below(0, 72) + below(levels - 1, levels) + below(a4 - 1, a4), question=age, true=90),
        _case("piecewise 40 rounds up when below(72) < remainder", "question", rng,
              prefix=below(rest40 - 1, 72) + below(0, levels) + below(0, b4), question=age, true=40),
        _case("piecewise 40 rounds down when below(72) = remainder", "question", rng,
              prefix=below(rest40, 72) + below(0, levels) + below(0, b4), question=age, true=40),
        _case("piecewise 40 low branch: other = grid is shifted by b", "question", rng,
              prefix=below(rest40, 72) + below(a4, levels) + below(grid40, a4), question=age, true=40),
        _case("piecewise 40 low branch: other = grid - 1 is kept", "question", rng,
              prefix=below(rest40, 72) + below(a4, levels) + below(grid40 - 1, a4), question=age, true=40),
        _case("piecewise range 1 at 0 (below(1) draws nothing)", "question", rng, question=unit, true=0),
        _case("piecewise range 1 at 1", "question", rng, question=unit, true=1),
        _case("piecewise range 10^9 middle", "question", rng, question=wide, true=123456789),
    ]
    for i in range(6):
        cases.append(_case(f"random piecewise {i}", "question", rng, question=age, true=rng.randint(18, 90)))
    return cases


def hybrid_row(epsilon) -> dict:
    """Return the ratio a/b, realised epsilon, branch and flip probabilities and worst variance of the hybrid mechanism."""
    a, b = hybrid_ratio(epsilon=epsilon)
    realised = hybrid_epsilon(a, b)
    beta, flip = hybrid_branch(a, b)
    return {"epsilon": epsilon, "ratio_a": a, "ratio_b": b, "bins": a + b, "levels": a + b + 2,
            "epsilon_realised": _digits30(realised), "epsilon_float": float(realised),
            "beta": f"{beta.numerator}/{beta.denominator}", "flip": f"{flip.numerator}/{flip.denominator}",
            "duchi_scores": hybrid_scores(a, b)[-2:], "worst_variance": hybrid_worst_variance(a, b)}


def hybrid_cases(rng: random.Random) -> list[dict]:
    """Return cases of the hybrid mechanism: the branch draw, PM's levels, Duchi's rounding and flip as G + bit."""
    a, b = hybrid_ratio(epsilon=4)
    a1, b1 = hybrid_ratio(epsilon=1)
    fields = {"ratio_a": a, "ratio_b": b, "bins": a + b, "levels": a + b + 2}
    age = _question("age", "number", "hybrid", min=18, max=90, **fields)
    unit = _question("unit", "number", "hybrid", min=0, max=1, ratio_a=a1, ratio_b=b1, bins=a1 + b1,
                     levels=a1 + b1 + 2)
    wide = _question("income", "number", "hybrid", min=0, max=10**9, **fields)
    squares = a * a + b * b

    def below(value, m):
        return word_for_below(value, m, rng)

    cases = [
        _case("hybrid piecewise branch at min, first level", "question", rng,
              prefix=below(0, a) + below(5, 72) + below(0, a + b) + below(0, b), question=age, true=18),
        _case("hybrid last piecewise draw below(a) = a - b - 1, at max, last level", "question", rng,
              prefix=below(a - b - 1, a) + below(71, 72) + below(a - 1, a + b) + below(b - 1, b), question=age,
              true=90),
        _case("hybrid Duchi branch below(a) = a - b, 40 rounds up, kept: level G + 1", "question", rng,
              prefix=below(a - b, a) + below(21, 72) + below(b * b, squares), question=age, true=40),
        _case("hybrid Duchi branch, 40 rounds down at below(72) = 22, kept: level G", "question", rng,
              prefix=below(a - 1, a) + below(22, 72) + below(squares - 1, squares), question=age, true=40),
        _case("hybrid Duchi branch at max, flipped at below(a²+b²) = b² - 1: level G", "question", rng,
              prefix=below(a - b, a) + below(71, 72) + below(b * b - 1, squares), question=age, true=90),
        _case("hybrid Duchi branch at min, flipped: level G + 1", "question", rng,
              prefix=below(a - b, a) + below(0, 72) + below(0, squares), question=age, true=18),
        _case("hybrid range 1 at 0", "question", rng, question=unit, true=0),
        _case("hybrid range 1 at 1", "question", rng, question=unit, true=1),
        _case("hybrid range 10^9 middle", "question", rng, question=wide, true=123456789),
    ]
    for i in range(8):
        cases.append(_case(f"random hybrid {i}", "question", rng, question=age, true=rng.randint(18, 90)))
    return cases


def opm_row(epsilon) -> dict:
    """Return the ratio A/B <= e^eps, the grid steps m and band w, realised epsilon, (p, q) and worst variance."""
    a, b = opm_ratio(epsilon=epsilon)
    m, w = opm_shape(a, b)
    realised = opm_epsilon(a, b)
    p, q = opm_probabilities(a, b, m, w)
    return {"epsilon": epsilon, "ratio_a": a, "ratio_b": b, "steps": m, "band": w, "levels": m + w,
            "epsilon_realised": _digits30(realised), "epsilon_float": float(realised),
            "p": f"{p.numerator}/{p.denominator}", "q": f"{q.numerator}/{q.denominator}",
            "worst_variance": opm_worst_variance(a, b, m, w)}


def opm_cases(rng: random.Random) -> list[dict]:
    """Return cases of the optimal piecewise mechanism: rounding onto m steps, the band draw, skipping the band."""
    a, b = opm_ratio(epsilon=8)
    m, w = opm_shape(a, b)
    a4, b4 = opm_ratio(epsilon=4)
    m4, w4 = opm_shape(a4, b4)
    fields = {"ratio_a": a, "ratio_b": b, "steps": m, "band": w, "levels": m + w}
    age = _question("age", "number", "opm", min=18, max=90, **fields)
    small = _question("hours", "number", "opm", min=0, max=10, ratio_a=a4, ratio_b=b4, steps=m4, band=w4,
                      levels=m4 + w4)
    unit = _question("unit", "number", "opm", min=0, max=1, **fields)
    wide = _question("income", "number", "opm", min=0, max=10**9, **fields)
    total = w * a + m * b
    grid40, rest40 = divmod(22 * m, 72)

    def below(value, n):
        return word_for_below(value, n, rng)

    cases = [
        _case("opm at min, band, first level", "question", rng,
              prefix=below(5, 72) + below(0, total) + below(0, w), question=age, true=18),
        _case("opm at max, band drawn at below(D) = wA - 1, last level", "question", rng,
              prefix=below(71, 72) + below(w * a - 1, total) + below(w - 1, w), question=age, true=90),
        _case("opm at min, below(D) = wA: another level, skipping the band", "question", rng,
              prefix=below(0, 72) + below(w * a, total) + below(0, m), question=age, true=18),
        _case("opm at max, another level below the grid", "question", rng,
              prefix=below(0, 72) + below(total - 1, total) + below(m - 1, m), question=age, true=90),
        _case("opm 40 rounds up when below(72) < remainder", "question", rng,
              prefix=below(rest40 - 1, 72) + below(0, total) + below(0, w), question=age, true=40),
        _case("opm 40 rounds down when below(72) = remainder", "question", rng,
              prefix=below(rest40, 72) + below(0, total) + below(0, w), question=age, true=40),
        _case("opm 40 other level = grid is shifted by w", "question", rng,
              prefix=below(rest40, 72) + below(w * a, total) + below(grid40, m), question=age, true=40),
        _case("opm 40 other level = grid - 1 is kept", "question", rng,
              prefix=below(rest40, 72) + below(w * a, total) + below(grid40 - 1, m), question=age, true=40),
        _case("opm range 1 at 0 (below(1) draws nothing)", "question", rng, question=unit, true=0),
        _case("opm range 1 at 1", "question", rng, question=unit, true=1),
        _case("opm range 10^9 middle", "question", rng, question=wide, true=123456789),
    ]
    for i in range(6):
        cases.append(_case(f"random opm {i}", "question", rng, question=age, true=rng.randint(18, 90)))
    for i in range(4):
        cases.append(_case(f"random opm eps 4 {i}", "question", rng, question=small, true=rng.randint(0, 10)))
    return cases


BRANCHING_DEFINITION = {
    "slug": "branching-vectors", "title": "Branching vectors", "epsilon": 4.0,
    "questions": [
        {"id": "smoker", "kind": "yes_no", "text": "Do you smoke?"},
        {"id": "cigarettes", "kind": "number", "text": "Cigarettes a day?", "min": 0, "max": 40,
         "mechanism": "duchi", "show_if": {"question": "smoker", "equals": "yes"}},
        {"id": "kind", "kind": "choice", "text": "Which kind?", "options": ["Filter", "Rolled", "Other"],
         "show_if": {"question": "smoker", "equals": "yes"}},
        {"id": "quit", "kind": "yes_no", "text": "Tried to quit?", "show_if": {"question": "kind",
                                                                               "equals": ["Filter", "Rolled"]}},
        {"id": "why", "kind": "multi", "text": "Why?", "options": ["Health", "Money"], "decline": True,
         "show_if": {"question": "quit", "equals": "yes"}},
    ],
}


def branching_vectors() -> dict:
    """Return a branched design's entries and, per combination of true answers, the value each report is made from.

    The browser's respond-branching.js must agree: which questions apply, and the declared value
    randomized for those that do not (survey/core/branching.py).
    """
    import numpy as np

    from survey.core.branching import hide_not_applicable
    from survey.core.definition import parse_definition
    from survey.core.design import build_design

    design = build_design(parse_definition(BRANCHING_DEFINITION))
    entries = [{key: value for key, value in entry.items() if key not in ("text", "weight")}
               for entry in design["questions"]]
    answers = {"smoker": [1, 0, 1, 1, 1], "cigarettes": [12, 7, 0, 40, 3], "kind": [0, 1, 2, 1, 0],
               "quit": [0, 1, 1, 0, 1], "why": [[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0],
                                                [0, 0, 0, 0]]}
    made = {}
    for entry in design["questions"]:
        values = np.asarray(answers[entry["id"]])
        parent = made.get(entry["show_if"]["question"]) if "show_if" in entry else None
        made[entry["id"]] = hide_not_applicable(entry, values, parent)
    cases = [{"answers": {qid: answers[qid][i] for qid in answers},
              "made": {qid: made[qid][i].tolist() for qid in made}} for i in range(5)]
    return {"questions": entries, "cases": cases}


def wave_cases(rng: random.Random) -> list[dict]:
    """Return two-layer draws of a series (the mechanism, then its per-wave layer on the report), one per layer kind."""
    from survey.core.definition import parse_definition
    from survey.core.design import build_design

    questions = [
        {"id": "smoker", "kind": "yes_no", "text": "Smoker?"},
        {"id": "colour", "kind": "choice", "text": "Colour?", "options": ["a", "b", "c", "d", "e"]},
        {"id": "many", "kind": "choice", "text": "Which?", "options": [f"option {i}" for i in range(40)]},
        {"id": "ticks", "kind": "multi", "text": "Ticks?", "options": ["p", "q", "r"]},
        {"id": "age", "kind": "number", "text": "Age?", "min": 18, "max": 90, "mechanism": "piecewise"},
        {"id": "days", "kind": "number", "text": "Days?", "min": 0, "max": 30, "mechanism": "duchi"},
    ]
    design = build_design(parse_definition({"slug": "waves", "title": "Waves", "epsilon": 12, "series": "panel",
                                            "wave_epsilon": 6, "questions": questions}))
    answers = {"smoker": [0, 1], "colour": [0, 3], "many": [7, 19], "ticks": [[1, 0, 1], [0, 0, 0]],
               "age": [18, 57], "days": [0, 30]}
    return [_case(f"two layers {entry['kind']}/{entry['mechanism']} + {entry['wave']['mechanism']} #{i}", "question",
                  rng, question=entry, true=true)
            for entry in design["questions"] for i, true in enumerate(answers[entry["id"]])]


def build_vectors() -> dict:
    """Return the whole vectors document; equal on every run."""
    rng = random.Random(SEED)
    thresholds = [threshold_row(eps, d) for eps in EPSILONS for d in DIMENSIONS]
    return {
        "about": "Shared test vectors of ldp-survey: regenerate with python tests/make_vectors.py",
        "threshold_bits": 53,
        "thresholds": thresholds,
        "streams": primitive_cases(rng) + question_cases(rng) + piecewise_cases(rng) + hybrid_cases(rng)
                   + opm_cases(rng) + wave_cases(rng),
        "piecewise": [piecewise_row(eps) for eps in EPSILONS],
        "hybrid": [hybrid_row(eps) for eps in EPSILONS if eps >= 0.5],
        "opm": [opm_row(eps) for eps in EPSILONS],
        "branching": branching_vectors(),
    }


def main() -> None:
    """Write tests/vectors.json."""
    text = json.dumps(build_vectors(), indent=1, ensure_ascii=False) + "\n"
    VECTORS_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {VECTORS_PATH}")


if __name__ == "__main__":
    main()
