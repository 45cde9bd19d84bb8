"""Cards from outside the suite: your own environments, registered like the suite's.

Three ways in, all ending in :func:`register_cards`:

- in Python: ``rlbench_suite.register_cards("path/to/cards")`` (a ``.toml`` file, a folder
  searched recursively, or :class:`~rlbench_suite.core.cards.EnvCard` objects);
- for every process (the ``rlbench`` command included): the ``RLBENCH_CARDS`` environment
  variable, a list of such files or folders separated by ``os.pathsep`` (``:`` on Linux);
- from an installed package: an entry point in the group ``rlbench_suite.cards`` naming a
  path, or a callable returning paths or cards, e.g. in its ``pyproject.toml``::

      [project.entry-points."rlbench_suite.cards"]
      mylab = "mylab.envs:CARDS_DIR"

Such a card's id is in a namespace of its own (``mylab/Maze-v0``; ``rlbench/`` is the
suite's). Its entry points are imported when it is registered, so a wrong module or name is
a :class:`~rlbench_suite.core.cards.CardError` naming the card file and what failed, not a
surprise at ``gym.make``. Registered cards work everywhere the suite's do: ``gym.make``,
``rlbench check``, ``rlbench refscores --write`` (which writes into the card's own file) and
``rlbench eval``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from rlbench_suite.core.cards import CardError, EnvCard, card_files, load_card
from rlbench_suite.core.catalog import add_card, add_error, check_addable
from rlbench_suite.registry import CatalogWarning, load_entry_point, register_card

CARDS_ENV_VAR = "RLBENCH_CARDS"
ENTRY_POINT_GROUP = "rlbench_suite.cards"
CardSource = str | os.PathLike | EnvCard


def register_cards(sources: CardSource | Iterable[CardSource]) -> list[EnvCard]:
    """Validate, check and register cards from files, folders or card objects.

    Raises :class:`~rlbench_suite.core.cards.CardError` for a malformed card, an id in the
    suite's namespace or already taken, or an entry point that cannot be imported; nothing
    of a failing source is registered. Registering the same card again is a no-op.
    """
    if isinstance(sources, str | os.PathLike | EnvCard):
        sources = [sources]
    loaded: list[tuple[EnvCard, Path | None]] = []
    for source in sources:
        if isinstance(source, EnvCard):
            loaded.append((source, None))
            continue
        path = Path(source).expanduser()
        if path.is_dir():
            loaded += [(load_card(p), p) for p in card_files(path)]
        elif path.is_file():
            loaded.append((load_card(path), path))
        else:
            raise CardError(f"{path}: no such card file or folder")
    new = [(card, path) for card, path in loaded if check_addable(card, path)]
    for card, path in new:
        check_entry_points(card, path)
    for card, path in new:
        add_card(card, path)
        register_card(card)
    return [card for card, _ in loaded]


def check_entry_points(card: EnvCard, path: Path | None = None) -> None:
    """Import every entry point of ``card``; a failure names the card, the field and why."""
    for field in ("entry_point", "vector_entry_point", "batched_entry_point"):
        entry_point = getattr(card, field)
        if entry_point is None:
            continue
        try:
            target = load_entry_point(entry_point)
        except (ImportError, AttributeError) as exc:
            where = f"{path}: " if path is not None else ""
            raise CardError(
                f"{where}card {card.id}: {field} {entry_point!r} cannot be loaded "
                f"({type(exc).__name__}: {exc})"
            ) from None
        if not callable(target):
            raise CardError(f"card {card.id}: {field} {entry_point!r} is not callable")


def register_external_cards() -> int:
    """Register the cards named by ``RLBENCH_CARDS`` and by installed packages' entry points.

    Called on ``import rlbench_suite``. A source that fails is left out with a
    :class:`~rlbench_suite.registry.CatalogWarning` (and listed by ``catalog_errors()``, so
    ``rlbench list`` and ``rlbench check`` report it and exit non-zero); returns how many
    cards were registered.
    """
    sources: list[tuple[str, Any]] = [
        (f"{CARDS_ENV_VAR} entry {item!r}", item)
        for item in os.environ.get(CARDS_ENV_VAR, "").split(os.pathsep)
        if item.strip()
    ]
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        sources.append((f"entry point {entry.name!r} ({entry.value})", entry))
    count = 0
    for label, source in sources:
        try:
            if isinstance(source, metadata.EntryPoint):
                source = source.load()
                source = source() if callable(source) else source
            count += len(register_cards(source))
        except Exception as exc:  # one bad source must not break the suite's import
            error = CardError(f"cards from {label} not registered: {exc}")
            add_error(error)
            warnings.warn(str(error), CatalogWarning, stacklevel=2)
    return count
