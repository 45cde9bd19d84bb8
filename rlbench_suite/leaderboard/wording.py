"""How the site and its commands say numbers: ``counted(1, "environment")`` is
"1 environment", any other count takes the plural; ``fixed(-0.04, 1)`` is "0.0", not "-0.0"."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, the noun plural (``plural``, default ``noun + "s"``) unless n is 1."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def fixed(value: float, digits: int = 1) -> str:
    """``value`` with ``digits`` decimals, without the sign of a value that rounds to zero."""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text
