"""How the site and its commands say a count: ``counted(1, "environment")`` is
"1 environment", any other count takes the plural."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, the noun plural (``plural``, default ``noun + "s"``) unless n is 1."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
