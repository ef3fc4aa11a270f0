"""Replay the browser's randomizers on an explicit list of 32-bit words, draw for draw.

A scalar mirror of ``client_js/random.js`` and ``client_js/mechanisms/`` (one module per
mechanism, gathered by ``client_js/mechanisms.js``): every function
consumes words from a :class:`U32Stream` in exactly the order the JavaScript draws them
from ``crypto.getRandomValues``, so a shared list of words must give the same report in
both languages (``tests/vectors.json``). Use ``survey.core.mechanisms`` for simulations; this
module exists to prove the two implementations agree.
"""

from __future__ import annotations

from collections.abc import Iterable

TWO26 = 2**26
TWO32 = 2**32
TWO53 = 2**53
MAX_OPTIONS = 65536
MAX_LEVELS = 65536
MAX_HYBRID_LEVELS = 512
MAX_SAFE = TWO53 - 1


class StreamExhausted(RuntimeError):
    """A replay needed more 32-bit words than the stream holds."""


def _check_integer(name: str, value, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer from {low} to {high}, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}, got {value!r}")
    return value


def _check_bit(name: str, value) -> int:
    if isinstance(value, bool) or value not in (0, 1):
        raise ValueError(f"{name} must be 0 or 1, got {value!r}")
    return value


class U32Stream:
    """Draw uniform integers and exact Bernoullis from a fixed sequence of 32-bit words.

    ``used`` counts the words consumed so far.
    """

    def __init__(self, words: Iterable[int]):
        self._words = iter(words)
        self.used = 0

    def u32(self) -> int:
        """Return the next word, one value on [0, 2^32)."""
        try:
            word = next(self._words)
        except StopIteration:
            raise StreamExhausted(f"the stream ran out after {self.used} words") from None
        _check_integer("word", word, 0, TWO32 - 1)
        self.used += 1
        return word

    def u53(self) -> int:
        """Return a uniform integer on [0, 2^53): top 27 bits of one word times 2^26 plus top 26 of the next."""
        high = self.u32() >> 5
        low = self.u32() >> 6
        return high * TWO26 + low

    def bern53(self, threshold: int) -> bool:
        """Return True with probability threshold/2^53, as u53() < threshold."""
        _check_integer("threshold", threshold, 0, TWO53)
        return self.u53() < threshold

    def below(self, m: int) -> int:
        """Return a uniform integer on {0..m-1} by rejection on the top bit_length(m-1) bits of each word."""
        _check_integer("m", m, 1, TWO32)
        if m == 1:
            return 0
        shift = 32 - (m - 1).bit_length()
        while True:
            value = self.u32() >> shift
            if value < m:
                return value

    def bern(self, a: int, b: int) -> bool:
        """Return True with probability a/b, as below(b) < a."""
        _check_integer("b", b, 1, TWO32)
        _check_integer("a", a, 0, b)
        return self.below(b) < a


def randomize_rr(bit: int, *, flip_threshold: int, stream: U32Stream) -> int:
    """Return bit XOR bern53(flip_threshold) (Warner 1965)."""
    _check_bit("bit", bit)
    return bit ^ int(stream.bern53(flip_threshold))


def randomize_grr(index: int, *, d: int, keep_threshold: int, stream: U32Stream) -> int:
    """Keep index if bern53(keep_threshold), else j = below(d-1) skipping index (Wang et al. 2017)."""
    _check_integer("d", d, 2, MAX_OPTIONS)
    _check_integer("index", index, 0, d - 1)
    _check_integer("keep_threshold", keep_threshold, 0, TWO53)
    if stream.bern53(keep_threshold):
        return index
    other = stream.below(d - 1)
    return other + (1 if other >= index else 0)


def randomize_oue(index: int, *, d: int, q_threshold: int, stream: U32Stream) -> list[int]:
    """Return d bits in order 0..d-1: bit index = below(2), every other bit = bern53(q_threshold)."""
    _check_integer("d", d, 2, MAX_OPTIONS)
    _check_integer("index", index, 0, d - 1)
    _check_integer("q_threshold", q_threshold, 0, TWO53)
    return [stream.below(2) if i == index else int(stream.bern53(q_threshold)) for i in range(d)]


def randomize_multi(bits: list[int], *, flip_threshold: int, stream: U32Stream) -> list[int]:
    """Return every 0/1 option bit through randomized response, in order."""
    if not isinstance(bits, list) or not bits:
        raise TypeError(f"bits must be a non-empty list of 0/1 values, got {bits!r}")
    for i, bit in enumerate(bits):
        _check_bit(f"bits[{i}]", bit)
    _check_integer("flip_threshold", flip_threshold, 0, TWO53)
    return [bit ^ int(stream.bern53(flip_threshold)) for bit in bits]


def _floyd_subset(n: int, m: int, stream: U32Stream) -> set[int]:
    """Return a uniform m-subset of {0..n-1}: for j = n-m..n-1, t = below(j+1), add t or j if t is taken."""
    chosen: set[int] = set()
    for j in range(n - m, n):
        t = stream.below(j + 1)
        chosen.add(j if t in chosen else t)
    return chosen


def randomize_subset(index: int, *, d: int, k: int, keep_threshold: int, stream: U32Stream) -> list[int]:
    """Return d bits of a k-subset: index kept if bern53(keep_threshold), the rest by Floyd over the d-1 others."""
    _check_integer("d", d, 3, MAX_OPTIONS)
    _check_integer("k", k, 1, d - 1)
    _check_integer("index", index, 0, d - 1)
    _check_integer("keep_threshold", keep_threshold, 0, TWO53)
    kept = stream.bern53(keep_threshold)
    bits = [0] * d
    if kept:
        bits[index] = 1
    for other in _floyd_subset(d - 1, k - 1 if kept else k, stream):
        bits[other + (1 if other >= index else 0)] = 1
    return bits


def randomize_multi_sampled(bits: list[int], *, flip_threshold: int, stream: U32Stream) -> list[int]:
    """Return d bits, all 0 but j = below(d), which carries bit j XOR bern53(flip_threshold)."""
    if not isinstance(bits, list) or not bits:
        raise TypeError(f"bits must be a non-empty list of 0/1 values, got {bits!r}")
    for i, bit in enumerate(bits):
        _check_bit(f"bits[{i}]", bit)
    _check_integer("flip_threshold", flip_threshold, 0, TWO53)
    drawn = stream.below(len(bits))
    report = [0] * len(bits)
    report[drawn] = bits[drawn] ^ int(stream.bern53(flip_threshold))
    return report


def randomize_duchi(value: int, *, lo: int, hi: int, flip_threshold: int, stream: U32Stream) -> int:
    """Return RR(b) with b = bern(value-lo, hi-lo) (Duchi, Jordan & Wainwright 2013)."""
    _check_integer("min", lo, -MAX_SAFE, MAX_SAFE)
    _check_integer("max", hi, lo + 1, MAX_SAFE)
    if hi - lo > TWO32:
        raise ValueError(f"max - min must be at most 2^32, got {hi - lo}")
    _check_integer("value", value, lo, hi)
    rounded = int(stream.bern(value - lo, hi - lo))
    return randomize_rr(rounded, flip_threshold=flip_threshold, stream=stream)


def _check_level_input(value: int, lo: int, hi: int, ratio_a: int, ratio_b: int, levels: int):
    """Check a level mechanism's input as checkLevelInput does: lo <= value <= hi, a > b >= 1, a + b <= levels."""
    _check_integer("min", lo, -MAX_SAFE, MAX_SAFE)
    _check_integer("max", hi, lo + 1, MAX_SAFE)
    if hi - lo > TWO32:
        raise ValueError(f"max - min must be at most 2^32, got {hi - lo}")
    _check_integer("value", value, lo, hi)
    _check_integer("ratio_b", ratio_b, 1, levels)
    _check_integer("ratio_a", ratio_a, ratio_b + 1, levels - ratio_b)


def randomize_piecewise(value: int, *, lo: int, hi: int, ratio_a: int, ratio_b: int, stream: U32Stream) -> int:
    """Return the output level of the discretised piecewise mechanism (Wang et al. 2019), as randomizePiecewise."""
    _check_level_input(value, lo, hi, ratio_a, ratio_b, MAX_LEVELS)
    grid, remainder = divmod((value - lo) * ratio_a, hi - lo)
    grid += 1 if stream.below(hi - lo) < remainder else 0
    if stream.below(ratio_a + ratio_b) < ratio_a:
        return grid + stream.below(ratio_b)
    other = stream.below(ratio_a)
    return other if other < grid else other + ratio_b


def randomize_hybrid(value: int, *, lo: int, hi: int, ratio_a: int, ratio_b: int, stream: U32Stream) -> int:
    """Return the output level in 0..G+1 of the hybrid mechanism (Wang et al. 2019), as randomizeHybrid.

    below(a) < a - b (probability 1 - e^(-eps'/2)) gives randomize_piecewise's level; else
    Duchi's bit bern(value - lo, hi - lo), flipped when below(a² + b²) < b², sent as G + bit.
    """
    _check_level_input(value, lo, hi, ratio_a, ratio_b, MAX_HYBRID_LEVELS)
    if stream.below(ratio_a) < ratio_a - ratio_b:
        return randomize_piecewise(value, lo=lo, hi=hi, ratio_a=ratio_a, ratio_b=ratio_b, stream=stream)
    rounded = int(stream.bern(value - lo, hi - lo))
    flipped = int(stream.below(ratio_a * ratio_a + ratio_b * ratio_b) < ratio_b * ratio_b)
    return ratio_a + ratio_b + (rounded ^ flipped)


def randomize_question_stream(question: dict, true_value, stream: U32Stream):
    """Return the report of one design question for its true answer, as the browser computes it.

    ``true_value``: 0/1 for yes_no, an option index for choice, a list of d 0/1 bits for
    multi, an integer in min..max for number.
    """
    kind, mechanism = question.get("kind"), question.get("mechanism")
    if kind == "yes_no" and mechanism == "rr":
        return randomize_rr(true_value, flip_threshold=question["flip_threshold"], stream=stream)
    if kind == "choice" and mechanism == "grr":
        return randomize_grr(true_value, d=len(question["options"]),
                             keep_threshold=question["keep_threshold"], stream=stream)
    if kind == "choice" and mechanism == "oue":
        return randomize_oue(true_value, d=len(question["options"]),
                             q_threshold=question["q_threshold"], stream=stream)
    if kind == "choice" and mechanism == "ss":
        return randomize_subset(true_value, d=len(question["options"]), k=question["subset_size"],
                                keep_threshold=question["keep_threshold"], stream=stream)
    if kind == "multi" and mechanism in ("rr", "sampled"):
        d = len(question["options"])
        if not isinstance(true_value, list) or len(true_value) != d:
            raise ValueError(f"question {question.get('id')!r} needs a list of {d} bits, got {true_value!r}")
        randomize = randomize_multi if mechanism == "rr" else randomize_multi_sampled
        return randomize(true_value, flip_threshold=question["flip_threshold"], stream=stream)
    if kind == "number" and mechanism == "duchi":
        return randomize_duchi(true_value, lo=question["min"], hi=question["max"],
                               flip_threshold=question["flip_threshold"], stream=stream)
    if kind == "number" and mechanism == "piecewise":
        return randomize_piecewise(true_value, lo=question["min"], hi=question["max"],
                                   ratio_a=question["ratio_a"], ratio_b=question["ratio_b"], stream=stream)
    if kind == "number" and mechanism == "hybrid":
        return randomize_hybrid(true_value, lo=question["min"], hi=question["max"],
                                ratio_a=question["ratio_a"], ratio_b=question["ratio_b"], stream=stream)
    raise ValueError(f"question {question.get('id')!r} has an unsupported kind/mechanism {kind!r}/{mechanism!r}; "
                     "expected yes_no/rr, choice/grr, choice/oue, choice/ss, multi/rr, multi/sampled, number/duchi, "
                     "number/piecewise or number/hybrid")
