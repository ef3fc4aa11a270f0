"""Replay the browser's randomizers on an explicit list of 32-bit words, draw for draw.

A scalar mirror of ``client_js/random.js`` and ``client_js/mechanisms/`` (one module per
mechanism, looked up by ``client_js/mechanisms/index.js``): every draw
consumes words from a :class:`U32Stream` in exactly the order the JavaScript draws them
from ``crypto.getRandomValues``, so a shared list of words must give the same report in
both languages (``tests/vectors.json``). Each mechanism's ``replay`` lives in its own module;
use its vectorised ``randomize`` for simulations. This module exists to prove the two agree.
"""

from __future__ import annotations

from collections.abc import Iterable

from .mechanisms import mechanism_for
from .mechanisms.common import TWO32, TWO53, check_integer

TWO26 = 2**26


class StreamExhausted(RuntimeError):
    """A replay needed more 32-bit words than the stream holds."""


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
        check_integer("word", word, 0, TWO32 - 1)
        self.used += 1
        return word

    def u53(self) -> int:
        """Return a uniform integer on [0, 2^53): top 27 bits of one word times 2^26 plus top 26 of the next."""
        high = self.u32() >> 5
        low = self.u32() >> 6
        return high * TWO26 + low

    def bern53(self, threshold: int) -> bool:
        """Return True with probability threshold/2^53, as u53() < threshold."""
        check_integer("threshold", threshold, 0, TWO53)
        return self.u53() < threshold

    def below(self, m: int) -> int:
        """Return a uniform integer on {0..m-1} by rejection on the top bit_length(m-1) bits of each word."""
        check_integer("m", m, 1, TWO32)
        if m == 1:
            return 0
        shift = 32 - (m - 1).bit_length()
        while True:
            value = self.u32() >> shift
            if value < m:
                return value

    def bern(self, a: int, b: int) -> bool:
        """Return True with probability a/b, as below(b) < a."""
        check_integer("b", b, 1, TWO32)
        check_integer("a", a, 0, b)
        return self.below(b) < a


def randomize_question_stream(question: dict, true_value, stream: U32Stream):
    """Return the report of one design question for its true answer, as the browser computes it.

    ``true_value``: 0/1 for yes_no, an option index for choice, a list of d 0/1 bits for
    multi, an integer in min..max for number. Each mechanism's ``replay`` draws from the
    stream in its browser module's order.
    """
    return mechanism_for(question).replay(true_value, stream)
