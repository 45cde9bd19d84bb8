"""The catalog: every card the suite knows, by id, with helpful errors for unknown ids.

It holds the suite's own cards (``envs/**/*.toml``, loaded once) and the cards added from
outside the suite (:func:`add_card`, which ``rlbench_suite.register_cards`` calls). The
suite's ids live in the ``rlbench/`` namespace; other cards use their own
(``mylab/Maze-v0``), so an id never changes meaning.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from collections.abc import Callable
from pathlib import Path

from rlbench_suite.core.cards import SUITE_NAMESPACE, CardError, EnvCard, load_cards_with_paths
from rlbench_suite.core.wrapper_names import WRAPPERS


class UnknownEnvError(LookupError):
    """An id that is not in the catalog; the message lists the closest known ids."""


class RenamedEnvError(UnknownEnvError):
    """An id the suite no longer uses; the message names the id to use instead."""


RENAMED: dict[str, tuple[str, str]] = {
    "rlbench/Chess-v0": (
        "rlbench/TextChess-v0",
        "the text game; rlbench/Chess-v6 is PettingZoo's chess, a different game",
    ),
    "rlbench/ChessEndgames-v0": ("rlbench/TextChessEndgames-v0", "the text endgames"),
}
"""Ids renamed before results were published: old id -> (new id, what it is). An old id is
refused with that message rather than silently mapped, so an id never changes meaning."""


def renamed_message(env_id: str) -> str:
    """Why ``env_id`` (a key of :data:`RENAMED`) is refused, and the id to use."""
    new, what = RENAMED[env_id]
    return f"{env_id!r} was renamed {new!r} ({what}); use {new!r}"


_added: dict[str, EnvCard] = {}
_added_paths: dict[str, Path] = {}
_added_errors: list[CardError] = []


@functools.cache
def _suite_catalog() -> tuple[dict[str, EnvCard], dict[str, Path], tuple[CardError, ...]]:
    errors: list[CardError] = []
    loaded, origin = load_cards_with_paths(errors=errors)
    for card_id, card in list(loaded.items()):
        if card.namespace != SUITE_NAMESPACE:
            errors.append(CardError(f"{origin[card_id]}: the suite's own cards use ids "
                                    f"'{SUITE_NAMESPACE}/Name-vN', got {card_id!r}"))  # fmt: skip
            del loaded[card_id], origin[card_id]
    return loaded, origin, tuple(errors)


def check_addable(card: EnvCard, path: Path | None = None) -> bool:
    """Whether ``card`` is new (True) or already in the catalog as it is (False).

    A :class:`CardError` if its id is in the suite's ``rlbench/`` namespace or taken by
    another card.
    """
    where = f"{path}: " if path is not None else ""
    if card.namespace == SUITE_NAMESPACE:
        raise CardError(
            f"{where}{card.id!r}: the '{SUITE_NAMESPACE}/' namespace is the suite's own; give "
            "your card an id in a namespace of yours, e.g. 'mylab/Name-v0'"
        )
    known = cards().get(card.id)
    if known is not None and known != card:
        raise CardError(
            f"{where}id {card.id!r} is already taken by {card_paths().get(card.id, 'a card')}"
        )
    return known is None


def add_card(card: EnvCard, path: Path | None = None) -> None:
    """Add a card from outside the suite (its file, if any, is where ``refscores`` writes).

    Its id must be outside the suite's ``rlbench/`` namespace and not taken by another
    card (:func:`check_addable`); adding the same card again is a no-op.
    """
    check_addable(card, path)
    _added[card.id] = card
    if path is not None:
        _added_paths[card.id] = path


def add_error(error: CardError) -> None:
    """Record a card from outside the suite that failed to load (see :func:`catalog_errors`)."""
    _added_errors.append(error)


def catalog_errors() -> tuple[CardError, ...]:
    """The cards that failed to load (they are left out of :func:`cards`)."""
    return _suite_catalog()[2] + tuple(_added_errors)


def cards() -> dict[str, EnvCard]:
    """Every card by id: the suite's own (loaded once), then those added from outside."""
    return {**_suite_catalog()[0], **_added}


def card_paths() -> dict[str, Path]:
    """Card id -> the file it was loaded from."""
    return {**_suite_catalog()[1], **_added_paths}


def normalize_id(env_id: str) -> str:
    """Normalize an id given as ``rlbench_suite:rlbench/X-v0``, ``rlbench/X-v0`` or ``X-v0``
    (a name without a namespace is the suite's); ``mylab/X-v0`` stays as it is. An id is a
    string: anything else is a TypeError saying so."""
    if not isinstance(env_id, str):
        raise TypeError(f"an id is a string such as 'rlbench/CartPole-v1' (or a dataset's, "
                        f"'rlbench/CartPole-medium-v0'), got {env_id!r}")  # fmt: skip
    env_id = env_id.strip()
    if ":" in env_id:
        env_id = env_id.split(":", 1)[1]
    return env_id if "/" in env_id else f"{SUITE_NAMESPACE}/{env_id}"


def closest_ids(env_id: str, known: list[str], n: int = 3) -> list[str]:
    """The known ids closest to ``env_id`` (case-insensitive, compared without the shared
    ``namespace/`` prefix, which would make every id look alike), best first."""
    def bare(text: str) -> str:
        return text.lower().rsplit("/", 1)[-1]

    lowered: dict[str, list[str]] = {}
    for k in known:
        lowered.setdefault(bare(k), []).append(k)
    matches = difflib.get_close_matches(bare(env_id), list(lowered), n=n, cutoff=0.6)
    return [k for m in matches for k in lowered[m]][:n]


def get_card(
    env_id: str, suggest: Callable[[EnvCard], bool] | None = None, kind: str = "environment"
) -> EnvCard:
    """The card for ``env_id``; unknown ids raise :class:`UnknownEnvError` with suggestions.

    ``suggest`` limits the suggestions to the cards it accepts (e.g. multi-agent ones, for a
    multi-agent call), and ``kind`` names them in the message.
    """
    catalog = cards()
    key = normalize_id(env_id)
    if key in catalog:
        return catalog[key]
    if key in RENAMED:
        raise RenamedEnvError(renamed_message(key))
    if env_id in WRAPPERS:
        raise UnknownEnvError(
            f"{env_id!r} is a wrapper, not an environment id: wrappers go in a card's stack, a "
            "policy's recorded stack or a hyperparameter entry (docs/wrappers.md). Run "
            "`rlbench list` to see the environment ids."
        )
    candidates = [c.id for c in catalog.values() if suggest is None or suggest(c)]
    raise UnknownEnvError(unknown_id_message(
        kind, env_id, candidates, catalog_errors(), "rlbench list"))  # fmt: skip


def unknown_id_message(
    kind: str, given: str, known: list[str], broken: tuple[CardError, ...], command: str
) -> str:
    """Why ``given`` is refused: the closest of the ``known`` ids, the command that lists
    them, and the first card that failed to load (it may be the one meant)."""
    close = closest_ids(normalize_id(given), known)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    note = f" {len(broken)} card(s) failed to load: {broken[0]}" if broken else ""
    return f"unknown {kind} id {given!r}.{hint} Run `{command}` to see all {len(known)} ids.{note}"


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


GENERATED_FAMILY_MINIMUM = 10
"""Ids that differ only in their digits, this many or more, are a generated family."""


def family_key(env_id: str) -> str:
    """The id with its digits replaced: ids of one generated family share it."""
    return re.sub(r"\d+", "#", env_id)


def family_label(ids: list[str]) -> str:
    """``first ... tail-of-last (count)`` for a family of ids, sorted."""
    first, last = ids[0], ids[-1]
    common = os.path.commonprefix([first, last])  # noqa: RUF071 (characters, not paths)
    return f"{first} ... {last[len(common):]} ({len(ids)})"


def generated_families(selected: list[EnvCard]) -> list[list[EnvCard]]:
    """The cards in order, each generated family (:data:`GENERATED_FAMILY_MINIMUM` or more
    ids differing only in digits, sharing an entry point and suites) gathered into one list
    where its first member stood; every other card is a list of one."""

    def key(card: EnvCard) -> tuple:
        return card.entry_point, tuple(card.suites), family_key(card.id)

    by_family: dict[tuple, list[EnvCard]] = {}
    for card in selected:
        by_family.setdefault(key(card), []).append(card)
    groups, seen = [], set()
    for card in selected:
        members = by_family[key(card)]
        if len(members) < GENERATED_FAMILY_MINIMUM:
            groups.append([card])
        elif key(card) not in seen:
            seen.add(key(card))
            groups.append(members)
    return groups


def describe_ids(ids: list[str]) -> str:
    """The ids for a message, generated families (:data:`GENERATED_FAMILY_MINIMUM` or more
    ids differing only in digits) each shown as one :func:`family_label`."""
    groups: dict[str, list[str]] = {}
    for env_id in sorted(ids):
        groups.setdefault(family_key(env_id), []).append(env_id)
    parts: list[str] = []
    for members in groups.values():
        if len(members) >= GENERATED_FAMILY_MINIMUM:
            parts.append(family_label(members))
        else:
            parts += members
    return ", ".join(parts) or "none"


def as_card(env: str | EnvCard) -> EnvCard:
    """``env`` itself if it is a card, else the card of the id ``env`` (see :func:`get_card`).

    Public entry points take either; inside the suite the card is passed on, never the id.
    """
    return env if isinstance(env, EnvCard) else get_card(env)
