"""Numbers in plain words: percentages that never read 0% or 100% unless exact, and privacy figures rounded up.

Every privacy figure shown to people — an ε, a δ, how sure someone can be — is rounded *up* at
its shown precision, so the stated guarantee is never smaller than the bound it stands for.
Float round-off below a relative 1e-12 is ignored first, so a value that is 2 shows "2".
"""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction

_MAX_DECIMALS = 20
# Float noise this small (relative) is not rounded up: 2.0000000000000004 shows as "2".
_ROUND_OFF = Decimal("1e-12")


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


def _trimmed(value: float) -> Decimal:
    """Return a non-negative float as the Decimal of its repr, less its round-off (1e-12 relative)."""
    value = float(value)
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"a privacy figure must be a finite number >= 0, got {value!r}")
    return Decimal(repr(value)) * (1 - _ROUND_OFF)


def _exact(probability, rounding: str) -> Decimal:
    """Return an exact fraction as a Decimal rounded the given way at 60 digits; a float as its repr, less round-off.

    A float's round-off (1e-12 relative) is taken toward the shown direction's opposite, so that
    0.5000000000000001 shows "50%"; an exact fraction (the thresholds T/2^53) is never trimmed, so
    that 1 − 2^-46 shows "99.99999999999999%" rounded up, not "99.9999999999%".
    """
    if isinstance(probability, (Fraction, int)):
        fraction = Fraction(probability)
        with localcontext() as context:
            context.prec, context.rounding = 60, rounding
            return Decimal(fraction.numerator) / Decimal(fraction.denominator)
    value = Decimal(repr(float(probability)))
    return value * (1 - _ROUND_OFF) if rounding == ROUND_CEILING else value * (1 + _ROUND_OFF)


def round_up(value: float, digits: int) -> Decimal:
    """Return a non-negative value rounded up to ``digits`` significant digits (at least to whole units)."""
    if digits < 1:
        raise ValueError(f"digits must be at least 1, got {digits!r}")
    trimmed = _trimmed(value)
    if trimmed == 0:
        return Decimal(0)
    exponent = min(trimmed.adjusted() - digits + 1, 0)
    return trimmed.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_CEILING)


def _plain(value: Decimal) -> str:
    """Return a Decimal without exponent or trailing zeros (2.0 → "2", 1E+1 → "10")."""
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_epsilon(epsilon: float, digits: int = 3) -> str:
    """Return ε rounded up to ``digits`` significant digits, without exponent notation (0.4942 → "0.495", 2 → "2").

    Pages show every ε at the default three significant digits.
    """
    return _plain(round_up(epsilon, digits))


def number_up(value: float, digits: int = 3) -> str:
    """Return a non-negative value rounded up to ``digits`` significant digits, without exponent (1.0402 → "1.05")."""
    return _plain(round_up(value, digits))


def fixed_up(value: float, places: int) -> str:
    """Return a non-negative value rounded up to ``places`` decimals, all shown (4.201 at 1 → "4.3", 2 → "2.0").

    For a threshold a claim holds above (the bias above which randomizing beats asking directly).
    """
    return format(_trimmed(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_CEILING), "f")


def percent_up(probability: float, decimals: int = 0) -> str:
    """Return a probability as a percentage rounded up, with more decimals where it would read 100% for less than 1.

    For "at most X% sure" and "sent with a chance of X%": 0.8725 → "88%", 0.99999 → "99.999%"; 1 → "100%".
    An exact Fraction is rounded exactly; a float less its round-off.
    """
    _trimmed(probability)  # a finite number >= 0
    scaled = _exact(probability, ROUND_CEILING) * 100
    if scaled > 100 * (1 + _ROUND_OFF):
        raise ValueError(f"probability must be in [0, 1], got {probability!r}")
    for places in range(decimals, _MAX_DECIMALS + 1):
        rounded = scaled.quantize(Decimal(1).scaleb(-places), rounding=ROUND_CEILING)
        if rounded < 100 or probability >= 1:
            break
    return f"{format(min(rounded, Decimal(100)), 'f')}%"


def percent_down(probability: float, decimals: int = 0) -> str:
    """Return a probability as a percentage rounded down, with more decimals where it would read 0% for more than 0.

    For a chance that protects the respondent (a *false* answer sent, another option marked):
    the shown figure never promises more protection than there is. 0.2799 → "27%", 0.0004 → "0.04%".
    """
    value = float(probability)
    if not 0 <= value <= 1 + float(_ROUND_OFF):
        raise ValueError(f"probability must be in [0, 1], got {probability!r}")
    scaled = min(_exact(probability, ROUND_FLOOR), Decimal(1)) * 100
    for places in range(decimals, _MAX_DECIMALS + 1):
        rounded = scaled.quantize(Decimal(1).scaleb(-places), rounding=ROUND_FLOOR)
        if rounded > 0 or value <= 0:
            break
    return f"{format(rounded, 'f')}%"


def format_p(p: float | None) -> str:
    """Return a p-value for people: "< 0.001" below a thousandth, else three decimals; "–" when there is none."""
    if p is None or p != p:
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def p_text(p: float | None) -> str:
    """Return "p < 0.001" or "p = 0.123" for a sentence (never "p = 0")."""
    shown = format_p(p)
    return f"p {shown}" if shown.startswith("<") else f"p = {shown}"
