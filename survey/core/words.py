"""Numbers in plain words: percentages that never read 0% or 100% unless exact, and ε to two digits."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

_MAX_DECIMALS = 20


def percent(probability: Fraction) -> str:
    """Return a probability as a percentage with the fewest decimals that do not read as 0% or 100%.

    Whole percents when that is honest; otherwise more decimals until the rounded value
    is strictly between 0 and 100 (e.g. "99.9999998%").
    """
    probability = Fraction(probability)
    if not 0 <= probability <= 1:
        raise ValueError(f"probability must be in [0, 1], got {probability}")
    scaled = probability * 100
    for decimals in range(_MAX_DECIMALS + 1):
        step = Fraction(1, 10**decimals)
        rounded = round(scaled / step) * step
        exact_end = probability in (0, 1)
        if exact_end or 0 < rounded < 100:
            break
    value = Decimal(rounded.numerator) / Decimal(rounded.denominator)
    text = format(value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN), "f")
    return f"{text}%"


def format_epsilon(epsilon: float) -> str:
    """Return epsilon to two significant digits, without exponent notation (0.57, 2, 0.0029)."""
    epsilon = float(epsilon)
    if epsilon >= 100:
        return f"{epsilon:.0f}"
    text = f"{epsilon:.2g}"
    if "e" in text:
        text = f"{epsilon:.2e}"
        mantissa, exponent = text.split("e")
        text = format(Decimal(f"{float(mantissa):.2g}e{int(exponent)}"), "f")
    return text
