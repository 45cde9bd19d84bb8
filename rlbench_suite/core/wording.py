"""How the suite's commands and site say numbers: ``counted(1, "environment")`` is
"1 environment", any other count takes the plural; ``fixed(-0.04, 1)`` is "0.0", not "-0.0";
``score(0.987, normalized=False)`` is "0.987" where a normalized score is "98.7";
``budget("100k")`` is "up to 100k steps"."""

from __future__ import annotations

NORMALIZED_SCALE = "0 = random, 100 = expert"
"""The normalized score's scale in words (``core.scoring.normalized_score``)."""


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, the noun plural (``plural``, default ``noun + "s"``) unless n is 1."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _unsigned_zero(text: str) -> str:
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def fixed(value: float, digits: int = 1) -> str:
    """``value`` with ``digits`` decimals, without the sign of a value that rounds to zero."""
    return _unsigned_zero(f"{value:.{digits}f}")


def significant(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits (0.987, 0.96, 1, 12.3), a value of
    ``10**digits`` or more as a whole number (12346, never 1.23e+04)."""
    if abs(value) >= 10**digits:
        return fixed(value, 0)
    return _unsigned_zero(f"{value:.{digits}g}")


def score(value: float, normalized: bool = True) -> str:
    """A run's score or IQM as the pages say it: on the normalized scale (0 random, 100
    expert) with one decimal, on a primary metric's own scale (a win rate of 0.987, a raw
    return) with 3 significant digits."""
    return fixed(value, 1) if normalized else significant(value, 3)


def budget(budget_class: str) -> str:
    """A training-budget class (``ranking.BUDGET_CLASSES``) in words: "up to 100k steps", or
    "unlimited budget" for the class without a ceiling (budgets over the largest or unknown)."""
    return "unlimited budget" if budget_class == "unlimited" else f"up to {budget_class} steps"
