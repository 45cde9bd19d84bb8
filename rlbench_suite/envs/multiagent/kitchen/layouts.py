"""Kitchen layouts for ``rlbench/Kitchen-v0``: tile and item codes, ASCII maps and their parsing.

Map characters: ``.`` floor, ``#`` counter, ``O`` onion crate, ``P`` plate stack, ``B``
chopping board, ``K`` pot (on a stove), ``S`` serving window; ``1`` and ``2`` are floor
cells that are start spots of the first and second start group (one cook starts in each
group, which cook gets which group is seeded). Every map fits in ``MAX_ROWS`` x
``MAX_COLS`` so that observations have one size for all layouts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FLOOR, COUNTER, CRATE, PLATES, BOARD, POT, WINDOW = range(7)
TILE_NAMES = ("floor", "counter", "onion crate", "plate stack", "board", "pot", "window")
NOTHING, ONION, CHOPPED, PLATE, SOUP = range(5)
ITEMS = (ONION, CHOPPED, PLATE, SOUP)
"""Item codes: what a cook holds or a counter or board carries (``NOTHING``: empty)."""
CHARS = {".": FLOOR, "#": COUNTER, "O": CRATE, "P": PLATES, "B": BOARD, "K": POT, "S": WINDOW}
MAX_ROWS, MAX_COLS = 7, 9

LAYOUTS: dict[str, str] = {
    # Overcooked's "cramped room": one open room, stations on the walls.
    "cramped": """
##K##B#
O1...2S
#1...2#
##P#B##
""",
    # A loop of floor around a counter island; cooks must route around each other.
    "ring": """
###K#B#
O1....#
#.###2S
#.###.#
P1...2#
###B###
""",
    # Split by a counter: onions and plates on the left, boards, pot and window on the right;
    # the left cook must pass every onion and plate over the middle counter.
    "split": """
#####BK##
O1.#2...S
#1.#..2.#
P..#..B.#
#########
""",
}


@dataclass(frozen=True)
class Layout:
    """A parsed map: tile codes and the two start groups (lists of (row, col))."""

    name: str
    tiles: np.ndarray
    starts: tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]


def parse_layout(name: str) -> Layout:
    """The layout called ``name``; ``ValueError`` naming the layouts if there is none."""
    if name not in LAYOUTS:
        raise ValueError(f"unknown layout {name!r}; layouts: {', '.join(LAYOUTS)}")
    rows = LAYOUTS[name].strip("\n").splitlines()
    tiles = np.zeros((len(rows), len(rows[0])), np.int64)
    starts: tuple[list[tuple[int, int]], list[tuple[int, int]]] = ([], [])
    for r, row in enumerate(rows):
        for c, char in enumerate(row):
            if char in "12":
                starts[int(char) - 1].append((r, c))
            tiles[r, c] = CHARS.get(char, FLOOR)
    return Layout(name, tiles, (tuple(starts[0]), tuple(starts[1])))
