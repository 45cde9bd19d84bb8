"""``rlbench/PredatorPrey-v0``: predators hunt prey on a grid with obstacles (PettingZoo Parallel).

Mixed cooperation and competition: predators share a team reward and can only catch prey
together, prey are rewarded for surviving.

- **World**: a ``size`` x ``size`` grid with walls around it and seeded obstacles (about
  ``obstacle_density`` of the cells, never cutting the free cells apart); predators
  ``predator_0..`` and prey ``prey_0..`` start on distinct seeded free cells.
- **Actions** ``Discrete(5)``: stay, up, down, left, right. A move into a wall or an
  obstacle stays put; agents may share cells. Predators move first, then prey.
- **Capture**: after each cycle, a prey with at least ``capture_size`` predators on its
  cell or next to it (4-neighbourhood) is caught and leaves the game (terminated).
- **Rewards**: each predator gets +10 for every prey caught in the cycle, each caught prey
  -10; every cycle costs predators 0.01 and earns surviving prey 0.01.
- **Observation** (float32): an egocentric (2 ``view`` + 1)^2 window with three channels
  (:data:`OBSTACLES`: wall or obstacle, :data:`PREDATORS`, :data:`PREY`; counts), then the
  agent's own position over ``size`` (:data:`POSITION`, 2) and its role (:data:`ROLE`, 1 for
  a predator, 0 for a prey); :func:`decode` reads it back.
- **End**: all prey caught (everyone terminates) or ``max_cycles`` cycles (truncation).
  ``info["caught"]`` counts the prey caught so far; ``info["success"]`` is whether all are.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

MOVES = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]])  # stay, up, down, left, right
CAPTURE_REWARD, STEP_COST = 10.0, 0.01
# The observation layout: the window's channels, then (from the end) position and role.
OBSTACLES, PREDATORS, PREY = range(3)
CHANNELS = 3
POSITION, ROLE = slice(-3, -1), -1
TAIL = 3  # the values after the window


def window_width(size: int) -> int | None:
    """The window width of an observation of ``size`` values (3 w^2 + 3), or None."""
    width = round(np.sqrt(max(size - TAIL, 0) / CHANNELS))
    return width if width % 2 == 1 and CHANNELS * width * width + TAIL == size else None


def decode(observation: np.ndarray) -> tuple[np.ndarray, bool]:
    """The window ``(CHANNELS, w, w)`` (the agent at its centre) and whether it is a predator."""
    obs = np.asarray(observation)
    width = window_width(len(obs)) or 1
    window = obs[: CHANNELS * width * width].reshape(CHANNELS, width, width)
    return window, bool(obs[ROLE] > 0.5)


class PredatorPreyEnv(ParallelEnv):
    """Predators against prey on a grid with obstacles; see the module docstring."""

    metadata = {"name": "rlbench_predator_prey_v0", "render_modes": ["rgb_array"], "render_fps": 10,
                "is_parallelizable": True}  # fmt: skip

    def __init__(
        self,
        size: int = 10,
        num_predators: int = 3,
        num_prey: int = 1,
        capture_size: int = 2,
        obstacle_density: float = 0.1,
        view: int = 2,
        max_cycles: int = 100,
        render_mode: str | None = None,
    ) -> None:
        if size < 4 or num_predators < 1 or num_prey < 1 or not 1 <= capture_size <= 5:
            raise ValueError(
                "expected size >= 4, num_predators >= 1, num_prey >= 1 and capture_size in "
                f"1..5; got size={size}, num_predators={num_predators}, num_prey={num_prey}, "
                f"capture_size={capture_size}"
            )
        if not 0.0 <= obstacle_density < 0.5:
            raise ValueError(f"obstacle_density must be in [0, 0.5), got {obstacle_density}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"unsupported render_mode {render_mode!r}; accepted: 'rgb_array'")
        self.size, self.capture_size, self.density = size, capture_size, obstacle_density
        self.view, self.max_cycles, self.render_mode = view, max_cycles, render_mode
        self.predators = [f"predator_{i}" for i in range(num_predators)]
        self.prey = [f"prey_{i}" for i in range(num_prey)]
        self.possible_agents = self.predators + self.prey
        self.agents: list[str] = []
        width = 2 * view + 1
        space = gym.spaces.Box(0.0, float(len(self.possible_agents)),
                               (CHANNELS * width * width + TAIL,), np.float32)  # fmt: skip
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(5) for a in self.possible_agents}
        self.blocked = np.ones((size + 2, size + 2), bool)  # walls around the grid
        self.position: dict[str, np.ndarray] = {}
        self.caught, self.cycle = 0, 0
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
        while True:  # obstacles that leave the free cells connected
            self.blocked[1:-1, 1:-1] = self._rng.random((self.size, self.size)) < self.density
            free = np.argwhere(~self.blocked)
            if len(free) >= len(self.possible_agents) and _connected(self.blocked, free):
                break
        cells = free[self._rng.choice(len(free), len(self.possible_agents), replace=False)]
        self.position = {a: cells[i].copy() for i, a in enumerate(self.possible_agents)}
        self.agents = list(self.possible_agents)
        self.caught, self.cycle = 0, 0
        return self._observations(), {a: self._info() for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        unknown = set(actions) - set(self.agents)
        if unknown:
            raise ValueError(f"actions for agents not in the game: {sorted(unknown)}; "
                             f"live agents: {self.agents}")  # fmt: skip
        for group in (self.predators, self.prey):
            for agent in group:
                if agent in actions:
                    self._move(agent, actions[agent])
        self.cycle += 1
        caught_now = [p for p in self.prey if p in self.agents and self._surrounded(p)]
        self.caught += len(caught_now)
        live_prey = [p for p in self.prey if p in self.agents and p not in caught_now]
        everyone_done = not live_prey
        truncate = self.cycle >= self.max_cycles and not everyone_done
        rewards, terminated, truncated, infos = {}, {}, {}, {}
        for agent in self.agents:
            if agent in self.predators:
                rewards[agent] = CAPTURE_REWARD * len(caught_now) - STEP_COST
            else:
                rewards[agent] = -CAPTURE_REWARD if agent in caught_now else STEP_COST
            terminated[agent] = everyone_done or agent in caught_now
            truncated[agent] = truncate and not terminated[agent]
            infos[agent] = self._info()
        observations = self._observations()
        self.agents = [a for a in self.agents if not (terminated[a] or truncated[a])]
        return observations, rewards, terminated, truncated, infos

    def _move(self, agent: str, action: Any) -> None:
        if not self.action_spaces[agent].contains(action):
            try:
                action = int(action)
            except (TypeError, ValueError):
                action = -1
            if not 0 <= action < 5:
                raise ValueError(f"{agent}: action must be an int in 0..4 (stay, up, down, "
                                 f"left, right), got {action!r}")  # fmt: skip
        target = self.position[agent] + MOVES[int(action)]
        if not self.blocked[target[0], target[1]]:
            self.position[agent] = target

    def _surrounded(self, prey: str) -> bool:
        cell = self.position[prey]
        near = sum(int(np.abs(self.position[p] - cell).sum() <= 1) for p in self.predators)
        return near >= self.capture_size

    def _info(self) -> dict[str, Any]:
        return {"caught": self.caught, "success": self.caught == len(self.prey)}

    def _observations(self) -> dict[str, np.ndarray]:
        v, pad = self.view, self.view + 1
        layers = np.zeros((CHANNELS, self.size + 2 + 2 * pad, self.size + 2 + 2 * pad), np.float32)
        layers[OBSTACLES] = np.pad(self.blocked, pad, constant_values=True)
        for group, channel in ((self.predators, PREDATORS), (self.prey, PREY)):
            for agent in group:
                if agent in self.agents:
                    r, c = self.position[agent] + pad
                    layers[channel, r, c] += 1
        out = {}
        for agent in self.agents:
            r, c = self.position[agent] + pad
            obs = np.empty(CHANNELS * (2 * v + 1) ** 2 + TAIL, np.float32)
            obs[:-TAIL] = layers[:, r - v : r + v + 1, c - v : c + v + 1].ravel()
            obs[POSITION] = (self.position[agent] - 1) / self.size
            obs[ROLE] = 1.0 if agent in self.predators else 0.0
            out[agent] = obs
        return out

    def render(self) -> np.ndarray | None:
        """An RGB frame, 16 pixels per cell: walls grey, predators red, prey green."""
        if self.render_mode != "rgb_array":
            return None
        image = np.full((self.size + 2, self.size + 2, 3), 255, np.uint8)
        image[self.blocked] = (90, 90, 90)
        for group, colour in ((self.prey, (40, 170, 60)), (self.predators, (200, 40, 40))):
            for agent in group:
                if agent in self.agents:
                    image[tuple(self.position[agent])] = colour
        return np.kron(image, np.ones((16, 16, 1), np.uint8))


def _connected(blocked: np.ndarray, free: np.ndarray) -> bool:
    """Whether every free cell can reach every other (breadth-first search)."""
    if len(free) == 0:
        return False
    seen = np.zeros_like(blocked)
    queue = deque([tuple(free[0])])
    seen[queue[0]] = True
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVES[1:]:
            cell = (r + dr, c + dc)
            if not blocked[cell] and not seen[cell]:
                seen[cell] = True
                queue.append(cell)
    return int(seen.sum()) == len(free)
