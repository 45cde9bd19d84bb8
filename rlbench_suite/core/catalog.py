"""The suite's catalog: its own cards, loaded once, looked up by id with helpful errors."""

from __future__ import annotations

import difflib
import functools
from pathlib import Path

from rlbench_suite.core.cards import CardError, EnvCard, load_cards_with_paths


class UnknownEnvError(LookupError):
    """An id that is not in the catalog; the message lists the closest known ids."""


@functools.cache
def _suite_catalog() -> tuple[dict[str, EnvCard], dict[str, Path], tuple[CardError, ...]]:
    errors: list[CardError] = []
    loaded, origin = load_cards_with_paths(errors=errors)
    return loaded, origin, tuple(errors)


def catalog_errors() -> tuple[CardError, ...]:
    """The suite's cards that failed to load (they are left out of :func:`cards`)."""
    return _suite_catalog()[2]


def cards() -> dict[str, EnvCard]:
    """The suite's own cards by id, loaded once."""
    return _suite_catalog()[0]


def card_paths() -> dict[str, Path]:
    """Card id -> the file it was loaded from."""
    return _suite_catalog()[1]


def normalize_id(env_id: str) -> str:
    """Normalize an id given as ``rlbench_suite:rlbench/X-v0``, ``rlbench/X-v0`` or ``X-v0``."""
    env_id = env_id.strip()
    if ":" in env_id:
        env_id = env_id.split(":", 1)[1]
    return env_id if env_id.startswith("rlbench/") else f"rlbench/{env_id}"


def closest_ids(env_id: str, known: list[str], n: int = 3) -> list[str]:
    """The known ids closest to ``env_id`` (case-insensitive), best first."""
    lowered = {k.lower(): k for k in known}
    matches = difflib.get_close_matches(env_id.lower(), list(lowered), n=n, cutoff=0.5)
    return [lowered[m] for m in matches]


def get_card(env_id: str) -> EnvCard:
    """The card for ``env_id``; unknown ids raise :class:`UnknownEnvError` with suggestions."""
    catalog = cards()
    key = normalize_id(env_id)
    if key in catalog:
        return catalog[key]
    close = closest_ids(key, list(catalog))
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    broken = catalog_errors()
    note = f" {len(broken)} card(s) failed to load: {broken[0]}" if broken else ""
    raise UnknownEnvError(
        f"unknown environment id {env_id!r}.{hint} Run `rlbench list` to see all "
        f"{len(catalog)} ids.{note}"
    )


def select_cards(
    family: str | None = None, suite: str | None = None, tag: str | None = None
) -> list[EnvCard]:
    """Cards matching every given filter, sorted by family then id."""
    selected = [
        c
        for c in cards().values()
        if (family is None or c.family == family)
        and (suite is None or suite in c.suites)
        and (tag is None or tag in c.tags)
    ]
    return sorted(selected, key=lambda c: (c.family, c.id))


def as_card(env: str | EnvCard) -> EnvCard:
    """``env`` itself if it is a card, else the card of the id ``env`` (see :func:`get_card`).

    Public entry points take either; inside the suite the card is passed on, never the id.
    """
    return env if isinstance(env, EnvCard) else get_card(env)
