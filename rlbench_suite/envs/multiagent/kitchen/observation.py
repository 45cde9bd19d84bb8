"""The observation layout of ``rlbench/Kitchen-v0``, named once: the env encodes it
(:func:`planes`, :func:`cook_observation`) and the scripted cooks decode it (:func:`decode`).

An observation is ``OBS_SIZE`` float32 values in [0, 1], the same for every layout:

- ``PLANES`` planes of ``MAX_ROWS`` x ``MAX_COLS`` cells (the layout at the top left, zero
  padding): one per tile code (:data:`TILE_PLANES`: floor, counter, crate, plate stack,
  board, pot, window), one per item on counters and boards (:data:`ITEM_PLANES`: onion,
  chopped onion, plate, soup), chop progress on boards (:data:`CHOP_PLANE`), onions in the
  pot over its capacity (:data:`POT_PLANE`), cooking progress, 1 = ready
  (:data:`COOKING_PLANE`), the cook's own cell and its partner's (:data:`OWN_CELL_PLANE`,
  :data:`PARTNER_CELL_PLANE`);
- then ``EXTRA`` values: own facing (:data:`OWN_FACING`, one-hot up/down/left/right), own held
  item (:data:`OWN_HELD`, one-hot onion/chopped/plate/soup), the partner's facing and held
  item (:data:`PARTNER_FACING`, :data:`PARTNER_HELD`), and the elapsed fraction of the
  episode (:data:`ELAPSED`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rlbench_suite.envs.multiagent.kitchen.layouts import (
    ITEMS,
    MAX_COLS,
    MAX_ROWS,
    NOTHING,
    TILE_NAMES,
)

Cell = tuple[int, int]

# planes
TILE_PLANES = slice(0, len(TILE_NAMES))  # plane t: cells of tile code t
ITEM_PLANES = slice(TILE_PLANES.stop, TILE_PLANES.stop + len(ITEMS))  # item code i: plane 6 + i
CHOP_PLANE, POT_PLANE, COOKING_PLANE, OWN_CELL_PLANE, PARTNER_CELL_PLANE = range(
    ITEM_PLANES.stop, ITEM_PLANES.stop + 5
)
PLANES = PARTNER_CELL_PLANE + 1
GRID_SIZE = PLANES * MAX_ROWS * MAX_COLS
# the values after the planes: facings are move codes 1..4, held items item codes 1..4
OWN_FACING, OWN_HELD = slice(0, 4), slice(4, 8)
PARTNER_FACING, PARTNER_HELD = slice(8, 12), slice(12, 16)
ELAPSED = 16
EXTRA = ELAPSED + 1
OBS_SIZE = GRID_SIZE + EXTRA


def planes(
    tiles: np.ndarray,
    items: np.ndarray,
    chop: np.ndarray,
    pot: np.ndarray,
    cooking: np.ndarray,
) -> np.ndarray:
    """The planes both cooks share, ``(PLANES, MAX_ROWS, MAX_COLS)`` (the cell planes empty):
    tile codes, item codes, and chop progress, pot filling and cooking progress as fractions."""
    rows, cols = tiles.shape
    out = np.zeros((PLANES, MAX_ROWS, MAX_COLS), np.float32)
    for code in range(TILE_PLANES.stop):
        out[TILE_PLANES.start + code, :rows, :cols] = tiles == code
    for item in ITEMS:
        out[ITEM_PLANES.start + item - 1, :rows, :cols] = items == item
    out[CHOP_PLANE, :rows, :cols] = chop
    out[POT_PLANE, :rows, :cols] = pot
    out[COOKING_PLANE, :rows, :cols] = cooking
    return out


def cook_observation(
    shared: np.ndarray,
    cells: tuple[np.ndarray, np.ndarray],
    facings: tuple[int, int],
    held: tuple[int, int],
    elapsed: float,
) -> np.ndarray:
    """One cook's observation from the shared :func:`planes`; ``cells``, ``facings`` and
    ``held`` are the cook's own first, then its partner's."""
    own = shared.copy()
    own[OWN_CELL_PLANE][tuple(cells[0])] = 1.0
    own[PARTNER_CELL_PLANE][tuple(cells[1])] = 1.0
    extra = np.zeros(EXTRA, np.float32)
    for facing_slot, held_slot, facing, item in zip(
        (OWN_FACING, PARTNER_FACING), (OWN_HELD, PARTNER_HELD), facings, held, strict=True
    ):
        extra[facing_slot.start + facing - 1] = 1.0
        if item != NOTHING:
            extra[held_slot.start + item - 1] = 1.0
    extra[ELAPSED] = elapsed
    return np.concatenate([own.ravel(), extra])


@dataclass(frozen=True)
class KitchenView:
    """A cook's observation decoded: ``tiles`` (tile codes, -1 outside the layout) and
    ``items`` (item codes) ``(MAX_ROWS, MAX_COLS)``, ``pot`` (onions over the capacity), the
    cells of the cook and its partner, the cook's facing (move code), and the items held."""

    tiles: np.ndarray
    items: np.ndarray
    pot: np.ndarray
    me: Cell
    partner: Cell
    facing: int
    held: int
    partner_held: int


def decode(observation: np.ndarray) -> KitchenView:
    """The :class:`KitchenView` of a cook's ``observation``."""
    obs = np.asarray(observation, np.float32)
    grid = obs[:GRID_SIZE].reshape(PLANES, MAX_ROWS, MAX_COLS)
    extra = obs[GRID_SIZE:]
    tiles, items = grid[TILE_PLANES], grid[ITEM_PLANES]
    return KitchenView(
        tiles=np.where(tiles.max(axis=0) > 0.5, tiles.argmax(axis=0), -1),
        items=np.where(items.max(axis=0) > 0.5, items.argmax(axis=0) + 1, NOTHING),
        pot=grid[POT_PLANE],
        me=tuple(np.argwhere(grid[OWN_CELL_PLANE] > 0.5)[0]),  # type: ignore[arg-type]
        partner=tuple(np.argwhere(grid[PARTNER_CELL_PLANE] > 0.5)[0]),  # type: ignore[arg-type]
        facing=int(extra[OWN_FACING].argmax()) + 1,
        held=_one_hot_item(extra[OWN_HELD]),
        partner_held=_one_hot_item(extra[PARTNER_HELD]),
    )


def _one_hot_item(values: np.ndarray) -> int:
    return int(values.argmax()) + 1 if values.max() > 0.5 else NOTHING
