"""``rlbench/Kitchen-v0``: two cooks make onion soup together, as in Overcooked (Parallel).

- **World**: a layout from :data:`~.layouts.LAYOUTS` (``cramped``, ``ring``,
  ``split``) of floor, counters, an onion crate, a plate stack, chopping boards, a pot and a
  serving window. Cooks ``cook_0`` and ``cook_1`` start on seeded cells of the layout's two
  start groups (one cook per group); nothing else is random.
- **Recipe**: take an onion from the crate, put it on a free board and chop it
  (``CHOP_STEPS`` interacts), take the chopped onion to the pot; with 3 chopped onions in it
  the pot cooks for ``COOK_TIME`` cycles; then take a plate, plate the soup from the pot and
  hand it in at the serving window.
- **Actions** ``Discrete(6)``: stay, up, down, left, right, interact. A move sets the
  facing; it fails into anything but floor, into the other cook's cell, on a swap, and when
  both cooks target the same cell. Interact acts on the faced tile (cook_0 first): take from
  the crate or plate stack with empty hands, put an item on or take it from a counter (one
  item each), put an onion on an empty board, chop an onion on a board or take it chopped,
  add a chopped onion to a pot that is not full, plate a ready soup, deliver a soup.
- **Rewards** (shared by both cooks, so each cook's return is the team return): +20 per
  soup delivered; shaping +1 per chopped onion put in the pot and +3 per soup plated.
- **Observation** (float32 in [0, 1], ``OBS_SIZE`` values, the same for every layout; the
  layout is named in :mod:`.observation`): 16 planes of ``MAX_ROWS`` x ``MAX_COLS`` (the
  layout at the top left, zero padding) - 7 tile planes (floor, counter, crate, plate stack,
  board, pot, window), 4 item planes (onion, chopped onion, plate, soup on counters and
  boards), chop progress on boards, onions in the pot over 3, cooking progress (1 = ready),
  own cell, partner's cell - then own facing (4, one-hot up/down/left/right), own held item
  (4, one-hot onion/chopped/plate/soup), the partner's facing and held item (4 + 4), and the
  elapsed fraction of ``max_cycles`` (1).
- **End**: truncation after ``max_cycles`` cycles. ``info["deliveries"]`` counts soups
  delivered so far; ``info["success"]`` is whether at least one has been.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

from rlbench_suite.envs.multiagent.kitchen.layouts import (
    BOARD,
    CHOPPED,
    COUNTER,
    CRATE,
    FLOOR,
    NOTHING,
    ONION,
    PLATE,
    PLATES,
    POT,
    SOUP,
    WINDOW,
    parse_layout,
)
from rlbench_suite.envs.multiagent.kitchen.observation import (
    OBS_SIZE,
    cook_observation,
    planes,
)

MOVES = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]])  # stay, up, down, left, right
INTERACT = 5
CHOP_STEPS, COOK_TIME, POT_CAPACITY = 3, 10, 3
DELIVERY_REWARD, ONION_IN_POT_REWARD, PLATING_REWARD = 20.0, 1.0, 3.0
AGENTS = ("cook_0", "cook_1")
COLOURS = {FLOOR: (235, 225, 205), COUNTER: (150, 110, 70), CRATE: (230, 200, 60),
           PLATES: (200, 200, 220), BOARD: (120, 180, 90), POT: (60, 60, 60),
           WINDOW: (80, 150, 220)}  # fmt: skip
ITEM_COLOURS = {ONION: (240, 220, 80), CHOPPED: (250, 250, 160), PLATE: (255, 255, 255),
                SOUP: (230, 120, 40)}  # fmt: skip


class KitchenEnv(ParallelEnv):
    """Two cooks, one kitchen, onion soup; see the module docstring."""

    metadata = {"name": "rlbench_kitchen_v0", "render_modes": ["rgb_array"],
                "render_fps": 8, "is_parallelizable": True}  # fmt: skip

    def __init__(
        self, layout: str = "cramped", max_cycles: int = 200, render_mode: str | None = None
    ) -> None:
        self.layout = parse_layout(layout)
        if max_cycles < 1:
            raise ValueError(f"max_cycles must be >= 1, got {max_cycles}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"unsupported render_mode {render_mode!r}; accepted: 'rgb_array'")
        self.max_cycles, self.render_mode = max_cycles, render_mode
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        space = gym.spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32)
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(6) for a in self.possible_agents}
        self.tiles = self.layout.tiles
        shape = self.tiles.shape
        self.items = np.zeros(shape, np.int64)  # items on counters and boards
        self.chop = np.zeros(shape, np.int64)  # chop progress of a raw onion on a board
        self.pot_onions = np.zeros(shape, np.int64)
        self.pot_cook = np.zeros(shape, np.int64)  # cycles cooked; COOK_TIME = ready
        self.position: dict[str, np.ndarray] = {}
        self.facing = dict.fromkeys(AGENTS, 1)
        self.held = dict.fromkeys(AGENTS, NOTHING)
        self.cycle, self.deliveries = 0, 0
        self._rng = np.random.default_rng()

    def observation_space(self, agent: str) -> gym.spaces.Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gym.spaces.Discrete:
        return self.action_spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        groups = list(self.layout.starts)
        if self._rng.random() < 0.5:
            groups.reverse()
        for agent, group in zip(AGENTS, groups, strict=True):
            self.position[agent] = np.array(group[self._rng.integers(len(group))])
        for grid in (self.items, self.chop, self.pot_onions, self.pot_cook):
            grid[:] = 0
        self.facing = dict.fromkeys(AGENTS, 1)
        self.held = dict.fromkeys(AGENTS, NOTHING)
        self.agents = list(self.possible_agents)
        self.cycle, self.deliveries = 0, 0
        return self._observations(), {a: self._info() for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        unknown = set(actions) - set(self.agents)
        if unknown:
            raise ValueError(f"actions for agents not in the game: {sorted(unknown)}; "
                             f"live agents: {self.agents}")  # fmt: skip
        chosen = {a: self._checked(a, actions.get(a, 0)) for a in self.agents}
        self._move(chosen)
        reward = sum(self._interact(a) for a in self.agents if chosen[a] == INTERACT)
        self.pot_cook[(self.pot_onions == POT_CAPACITY) & (self.pot_cook < COOK_TIME)] += 1
        self.cycle += 1
        truncate = self.cycle >= self.max_cycles
        observations = self._observations()
        rewards = dict.fromkeys(self.agents, float(reward))
        terminated = dict.fromkeys(self.agents, False)
        truncated = dict.fromkeys(self.agents, truncate)
        infos = {a: self._info() for a in self.agents}
        if truncate:
            self.agents = []
        return observations, rewards, terminated, truncated, infos

    def _checked(self, agent: str, action: Any) -> int:
        try:
            value = int(action)
        except (TypeError, ValueError):
            value = -1
        if value != action or not 0 <= value <= INTERACT:
            raise ValueError(f"{agent}: action must be an int in 0..5 (stay, up, down, left, "
                             f"right, interact), got {action!r}")  # fmt: skip
        return value

    def _move(self, actions: dict[str, int]) -> None:
        """Move both cooks at once; blocked, clashing and swapping moves stay put."""
        target = {}
        for agent, action in actions.items():
            target[agent] = self.position[agent]
            if 1 <= action <= 4:
                self.facing[agent] = action
                cell = self.position[agent] + MOVES[action]
                if self.tiles[cell[0], cell[1]] == FLOOR:
                    target[agent] = cell
        a, b = AGENTS
        if a in target and b in target:
            clash = np.array_equal(target[a], target[b])
            swap = np.array_equal(target[a], self.position[b]) and np.array_equal(
                target[b], self.position[a]
            )
            if clash or swap:
                return
        self.position.update(target)

    def _interact(self, agent: str) -> float:
        """Act on the faced tile; returns the shaping or delivery reward earned."""
        r, c = self.position[agent] + MOVES[self.facing[agent]]
        tile, held = self.tiles[r, c], self.held[agent]
        if tile in (CRATE, PLATES) and held == NOTHING:
            self.held[agent] = ONION if tile == CRATE else PLATE
        elif tile == COUNTER and (held == NOTHING) != (self.items[r, c] == NOTHING):
            self.held[agent], self.items[r, c] = self.items[r, c], held
        elif tile == BOARD:
            if held == ONION and self.items[r, c] == NOTHING:
                self.held[agent], self.items[r, c], self.chop[r, c] = NOTHING, ONION, 0
            elif held == NOTHING and self.items[r, c] == ONION:
                self.chop[r, c] += 1
                if self.chop[r, c] >= CHOP_STEPS:
                    self.items[r, c], self.chop[r, c] = CHOPPED, 0
            elif held == NOTHING and self.items[r, c] == CHOPPED:
                self.held[agent], self.items[r, c] = CHOPPED, NOTHING
        elif tile == POT:
            if held == CHOPPED and self.pot_onions[r, c] < POT_CAPACITY:
                self.pot_onions[r, c] += 1
                self.held[agent] = NOTHING
                return ONION_IN_POT_REWARD
            if held == PLATE and self.pot_cook[r, c] >= COOK_TIME:
                self.pot_onions[r, c], self.pot_cook[r, c] = 0, 0
                self.held[agent] = SOUP
                return PLATING_REWARD
        elif tile == WINDOW and held == SOUP:
            self.held[agent] = NOTHING
            self.deliveries += 1
            return DELIVERY_REWARD
        return 0.0

    def _info(self) -> dict[str, Any]:
        return {"deliveries": self.deliveries, "success": self.deliveries > 0}

    def _observations(self) -> dict[str, np.ndarray]:
        shared = planes(self.tiles, self.items, self.chop / CHOP_STEPS,
                        self.pot_onions / POT_CAPACITY, self.pot_cook / COOK_TIME)  # fmt: skip
        out = {}
        for agent in self.agents:
            pair = (agent, AGENTS[1 - AGENTS.index(agent)])
            out[agent] = cook_observation(
                shared,
                cells=(self.position[pair[0]], self.position[pair[1]]),
                facings=(self.facing[pair[0]], self.facing[pair[1]]),
                held=(self.held[pair[0]], self.held[pair[1]]),
                elapsed=self.cycle / self.max_cycles,
            )
        return out

    def render(self) -> np.ndarray | None:
        """An RGB frame, 16 pixels a cell: tiles, items (small squares), cooks (red, blue)."""
        if self.render_mode != "rgb_array":
            return None
        rows, cols = self.tiles.shape
        image = np.zeros((rows * 16, cols * 16, 3), np.uint8)
        for (r, c), tile in np.ndenumerate(self.tiles):
            image[r * 16 : r * 16 + 16, c * 16 : c * 16 + 16] = COLOURS[int(tile)]
            if tile == POT and self.pot_onions[r, c]:
                _square(image, (r, c), 6, ITEM_COLOURS[SOUP if self.pot_cook[r, c] else ONION])
            elif self.items[r, c]:
                _square(image, (r, c), 5, ITEM_COLOURS[int(self.items[r, c])])
        for agent, colour in zip(AGENTS, ((200, 40, 40), (40, 60, 200)), strict=True):
            if agent in self.agents:
                _square(image, tuple(self.position[agent]), 2, colour)
                if self.held[agent]:
                    _square(image, tuple(self.position[agent]), 6, ITEM_COLOURS[self.held[agent]])
        return image


def _square(image: np.ndarray, cell: Sequence[int], inset: int, colour: tuple) -> None:
    r, c = int(cell[0]) * 16, int(cell[1]) * 16
    image[r + inset : r + 16 - inset, c + inset : c + 16 - inset] = colour
