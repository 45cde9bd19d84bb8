"""Scripted cooks for ``rlbench/Kitchen-v0`` and its zero-shot-coordination partner split.

Every cook reads the kitchen back from its own observation and plans with breadth-first
search to the floor cell next to its next station, turns to face it and interacts. Its job
follows from what it holds (soup: window; plate: pot; chopped onion: pot; onion: free board;
an item it cannot use where it stands goes on a counter, over the dividing counter where the
destination is out of reach) and, empty-handed, from the kitchen: take a chopped onion the
pot needs, chop an onion lying on a board, fetch a plate for a cooking or ready pot nobody
is bringing one to, or fetch onions until three are on the way. Styles differ in which jobs
they do and how reliably:

- :class:`Generalist` does every job; :class:`OnionRunner` only onions (fetch, chop, pot);
  :class:`Server` only plates (fetch, plate, deliver); :class:`Lazy` is a Generalist that
  stays put in 30% of cycles; :class:`Eager` a Generalist that fetches a plate as soon as
  the pot has an onion and holds it until the soup is on; :class:`Jittery` a Generalist that takes a
  random action in 20% of cycles.

Zero-shot coordination: train with :data:`TRAINING_PARTNERS`, evaluate with the disjoint
:data:`HELD_OUT_PARTNERS` (``--policy`` strings; see :func:`zsc_partners`). The held-out set
holds the role the training set lacks (a server, where training has an onion runner) and
behaviours never seen in training (early plates, random slips).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Literal

import numpy as np

from rlbench_suite.envs.multiagent.kitchen.env import INTERACT, MOVES, POT_CAPACITY
from rlbench_suite.envs.multiagent.kitchen.layouts import (
    BOARD,
    CHOPPED,
    COUNTER,
    CRATE,
    FLOOR,
    MAX_COLS,
    MAX_ROWS,
    NOTHING,
    ONION,
    PLATE,
    PLATES,
    POT,
    SOUP,
    WINDOW,
)
from rlbench_suite.envs.multiagent.kitchen.observation import OBS_SIZE, Cell, decode

DETOUR = 2  # extra steps a cook walks to go around its partner rather than wait
STAGE = {NOTHING: 0, ONION: 1, CHOPPED: 2, PLATE: 3, SOUP: 4}  # right of way when head to head
_PREFIX = f"module:{__name__}:"
TRAINING_PARTNERS = tuple(_PREFIX + n for n in ("Generalist", "OnionRunner", "Lazy"))
HELD_OUT_PARTNERS = tuple(_PREFIX + n for n in ("Server", "Eager", "Jittery"))


def zsc_partners(split: Literal["train", "held_out"]) -> tuple[str, ...]:
    """The ``--policy`` strings of the training or the held-out partners (disjoint sets)."""
    if split not in ("train", "held_out"):
        raise ValueError(f"split must be 'train' or 'held_out', got {split!r}")
    return TRAINING_PARTNERS if split == "train" else HELD_OUT_PARTNERS


class _Kitchen:
    """The kitchen as one cook sees it, decoded from its observation."""

    def __init__(self, observation: np.ndarray) -> None:
        view = decode(observation)
        self.tiles, self.items = view.tiles, view.items
        self.onions = np.rint(view.pot * POT_CAPACITY).astype(int)
        self.me, self.partner = view.me, view.partner
        self.facing, self.held, self.partner_held = view.facing, view.held, view.partner_held
        self.reach = self._floor_reachable()

    def _floor_reachable(self) -> set[Cell]:
        seen, queue = {self.me}, deque([self.me])
        while queue:
            cell = queue.popleft()
            for nxt in _neighbours(cell):
                if nxt not in seen and self.tile(nxt) == FLOOR:
                    seen.add(nxt)
                    queue.append(nxt)
        return seen

    def tile(self, cell: Cell) -> int:
        inside = 0 <= cell[0] < MAX_ROWS and 0 <= cell[1] < MAX_COLS
        return int(self.tiles[cell]) if inside else -1

    def cells(self, tile: int, item: int | None = None) -> list[Cell]:
        """Cells of ``tile`` next to floor this cook can reach (holding ``item`` if given)."""
        mask = self.tiles == tile
        if item is not None:
            mask &= self.items == item
        found: list[Cell] = [(int(r), int(c)) for r, c in np.argwhere(mask)]
        return [c for c in found if any(n in self.reach for n in _neighbours(c))]

    def pots(self, least: int = 0, needs_onions: bool = False) -> list[Cell]:
        """Reachable pots: all, those with at least ``least`` onions, or those not full."""
        pots = self.cells(POT)
        if needs_onions:
            return [p for p in pots if self.onions[p] < POT_CAPACITY]
        return [p for p in pots if self.onions[p] >= least]

    def handoffs(self) -> list[Cell]:
        """Empty counters between this cook's floor and floor it cannot reach."""
        return [
            c
            for c in self.cells(COUNTER, NOTHING)
            if any(self.tile(n) == FLOOR and n not in self.reach for n in _neighbours(c))
        ]

    def onions_needed(self) -> int:
        """Onions the pots still need (a full batch ahead while a pot is full), less those on
        boards, in the partner's hands and, for a cook who cannot reach a board, on counters."""
        pots = np.argwhere(self.tiles == POT)
        needed = sum(POT_CAPACITY - int(self.onions[tuple(p)]) or POT_CAPACITY for p in pots)
        board = self.tiles == BOARD
        moving = int((board & (self.items != NOTHING)).sum())
        moving += self.partner_held in (ONION, CHOPPED)
        if not self.cells(BOARD):
            moving += int(((self.tiles == COUNTER) & np.isin(self.items, (ONION, CHOPPED))).sum())
        return needed - moving

    def step_towards(self, targets: list[Cell], rng: np.random.Generator) -> int:
        """The action that faces and uses the nearest target, or walks one step towards it."""
        for action in range(1, 5):
            if self._next(self.me, action) in targets:
                return INTERACT if self.facing == action else action
        free = self._first_step(set(targets), set())
        around = self._first_step(set(targets), {self.partner})
        if free is None:
            return 0
        if around is not None and around[1] <= free[1] + DETOUR:
            return around[0]
        if self._next(self.me, free[0]) != self.partner:
            return free[0]
        # Head to head: the cook carrying the later stage of the recipe goes first.
        rank, partner_rank = STAGE[self.held], STAGE[self.partner_held]
        if rank > partner_rank or (rank == partner_rank and rng.random() < 0.5):
            return free[0]
        return around[0] if around is not None else self.make_way(rng)

    def make_way(self, rng: np.random.Generator) -> int:
        """With nothing to do: leave a cell next to a station or the partner, else stay."""
        near = [n for n in _neighbours(self.me) if self.tile(n) not in (FLOOR, COUNTER, -1)]
        if not near and self.partner not in _neighbours(self.me):
            return 0
        free = [a for a in range(1, 5) if self._next(self.me, a) in self.reach - {self.partner}]
        away = [a for a in free if _distance(self._next(self.me, a), self.partner) > 1]
        return int(rng.choice(away or free)) if free else 0

    def _first_step(self, targets: set[Cell], blocked: set[Cell]) -> tuple[int, int] | None:
        """The first move and length of a shortest walk next to a target, or None."""
        first: dict[Cell, tuple[int, int]] = {self.me: (0, 0)}
        queue = deque([self.me])
        while queue:
            cell = queue.popleft()
            if any(n in targets for n in _neighbours(cell)) and cell != self.me:
                return first[cell]
            for action in range(1, 5):
                nxt = self._next(cell, action)
                if nxt not in first and nxt in self.reach and nxt not in blocked:
                    first[nxt] = (first[cell][0] or action, first[cell][1] + 1)
                    queue.append(nxt)
        return None

    @staticmethod
    def _next(cell: Cell, action: int) -> Cell:
        return cell[0] + int(MOVES[action][0]), cell[1] + int(MOVES[action][1])


def _distance(a: Cell, b: Cell) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def _neighbours(cell: Cell) -> list[Cell]:
    return [(cell[0] + dr, cell[1] + dc) for dr, dc in MOVES[1:]]


class _ScriptedCook:
    """A planning cook; subclasses pick the jobs (``onions``, ``plates``) and the quirks."""

    onions, plates, eager = True, True, False
    idle, jitter = 0.0, 0.0

    def __init__(
        self, observation_space: Any = None, action_space: Any = None, seed: int | None = None
    ) -> None:
        if observation_space is not None and observation_space.shape != (OBS_SIZE,):
            raise ValueError(f"not a Kitchen observation: shape {observation_space.shape}")
        if action_space is not None and getattr(action_space, "n", None) != 6:
            raise ValueError(f"not a Kitchen action space: {action_space}")
        self.rng = np.random.default_rng(seed)
        self._last: Cell | None = None  # the cell a move to floor was tried from

    def reset(self, seed: int | None = None) -> None:
        """Reseed (a ``None`` seed continues the random stream)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self._last = None

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> int:
        kitchen = _Kitchen(observation)
        stuck = self._last == kitchen.me
        if self.idle and self.rng.random() < self.idle:
            action = 0
        elif (self.jitter and self.rng.random() < self.jitter) or (
            stuck and self.rng.random() < 0.5
        ):
            action = int(self.rng.integers(5))
        else:
            targets = self._targets(kitchen)
            action = (
                kitchen.step_towards(targets, self.rng) if targets else kitchen.make_way(self.rng)
            )
        moved = MOVES[action] if 1 <= action <= 4 else MOVES[0]
        step = (kitchen.me[0] + moved[0], kitchen.me[1] + moved[1])
        self._last = kitchen.me if step != kitchen.me and kitchen.tile(step) == FLOOR else None
        return action

    def _targets(self, k: _Kitchen) -> list[Cell]:
        """The stations this cook should use next, by what it holds."""
        held = k.held
        if held == SOUP:
            return k.cells(WINDOW) or k.handoffs()
        if held == PLATE:
            if not k.pots():
                return k.handoffs()
            return k.pots(POT_CAPACITY) or ([] if self.eager else k.cells(COUNTER, NOTHING))
        if held == CHOPPED:
            if not k.pots():
                return k.handoffs()
            return k.pots(needs_onions=True) or k.cells(COUNTER, NOTHING)
        if held == ONION:
            if not k.cells(BOARD):
                return k.handoffs()
            return k.cells(BOARD, NOTHING) or k.cells(COUNTER, NOTHING)
        return self._job(k)

    def _job(self, k: _Kitchen) -> list[Cell]:
        """The next station for empty hands, by priority."""
        reach_pot = bool(k.pots())
        if self.onions and k.pots(needs_onions=True):
            chopped = k.cells(BOARD, CHOPPED) + k.cells(COUNTER, CHOPPED)
            if chopped and reach_pot:
                return chopped
        if self.onions and k.cells(BOARD, ONION):
            return k.cells(BOARD, ONION)
        if self.plates and self._plate_wanted(k):
            plates = k.cells(PLATES) + (k.cells(COUNTER, PLATE) if reach_pot else [])
            if plates:
                return plates
        loose = k.cells(COUNTER, ONION) if k.cells(BOARD, NOTHING) else []
        if self.onions and (loose or k.onions_needed() > 0):
            return k.cells(CRATE) + loose
        return []

    def _plate_wanted(self, k: _Kitchen) -> bool:
        pots = np.argwhere(k.tiles == POT)
        started = [p for p in pots if k.onions[tuple(p)] >= (1 if self.eager else POT_CAPACITY)]
        if not started or k.partner_held in (PLATE, SOUP):
            return False
        return bool(k.pots()) or not (k.items == PLATE).any()


class Generalist(_ScriptedCook):
    """Does whatever job is next: onions, chopping, the pot, plates, deliveries."""


class OnionRunner(_ScriptedCook):
    """Only fetches and chops onions and fills the pot."""

    plates = False


class Server(_ScriptedCook):
    """Only fetches plates, plates the soup and delivers it."""

    onions = False


class Lazy(_ScriptedCook):
    """A Generalist that stays put in 30% of cycles."""

    idle = 0.3


class Eager(_ScriptedCook):
    """A Generalist that fetches a plate once the pot has an onion and keeps it until the
    soup is on."""

    eager = True


class Jittery(_ScriptedCook):
    """A Generalist that takes a random action in 20% of cycles."""

    jitter = 0.2


class HeldOutPartner:
    """One of the :data:`HELD_OUT_PARTNERS` per episode: :class:`Server`, :class:`Eager` or
    :class:`Jittery`, picked by the reset seed (``seed % 3``; an unseeded reset keeps the
    current one), so a card's evaluation seeds score a learner beside all three held-out
    styles. The opponent of ``rlbench/KitchenHeldOut-v0``."""

    STYLES: tuple[type[_ScriptedCook], ...] = (Server, Eager, Jittery)

    def __init__(
        self, observation_space: Any = None, action_space: Any = None, seed: int | None = None
    ) -> None:
        self.cooks = [style(observation_space, action_space, seed) for style in self.STYLES]
        self.cook = self.cooks[0 if seed is None else seed % len(self.cooks)]

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.cook = self.cooks[seed % len(self.cooks)]
        self.cook.reset(seed)

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> int:
        return self.cook.act(observation, info)

