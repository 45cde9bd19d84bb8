"""``rlbench/CoopNav-v0``: N agents cover N landmarks without colliding (PettingZoo Parallel).

The cooperative navigation task of the multi-particle environments (MPE's ``simple_spread``),
without the communication channel. The dynamics, rewards and observations are the batched
NumPy functions of :mod:`.core`, shared with the vector env of many games
(:mod:`.vector`).

- **World**: ``num_agents`` agents ``agent_0..`` (discs of radius 0.15, mass 1, damping
  0.25, dt 0.1) and as many landmarks, all placed uniformly in [-1, 1]^2 at reset; agents
  start at rest. Overlapping agents push each other apart (MPE's soft contact force).
- **Actions**: ``Discrete(5)``: no-op, left, right, down, up, each an acceleration of 5; or,
  with ``continuous_actions=True``, ``Box(0, 1, (5,))`` mixing the same directions
  (``u = (a2 - a1, a4 - a3)``, values clipped to [0, 1]). An agent left out of the actions
  dict does nothing.
- **Observation** (float32, ``4N + 2``): own velocity (2), own position (2), every landmark
  relative to the agent (2 each), the other agents relative to it (2 each, in index order).
- **Reward**: the team reward ``-sum over landmarks of the distance to the nearest agent``,
  mixed with each agent's collision penalty (1 per other agent it overlaps) as MPE does:
  ``(1 - local_ratio) * team - local_ratio * collisions`` (``local_ratio=0.5``).
- **End**: truncation after ``max_cycles`` cycles; no termination.
- **Info** per agent: ``covered`` (landmarks with an agent's centre within 0.1),
  ``collisions``, ``team_reward``, and ``success``: all landmarks covered at the last cycle
  (False before it).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

from rlbench_suite.envs.multiagent.coop_nav import core

COLOURS = {"background": (255, 255, 255), "landmark": (64, 64, 64), "agent": (89, 89, 217)}


def coop_nav_spaces(num_agents: int, continuous: bool) -> tuple[gym.spaces.Box, gym.spaces.Space]:
    """One agent's observation and action spaces."""
    size = core.observation_size(num_agents)
    observation = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)
    if continuous:
        return observation, gym.spaces.Box(0.0, 1.0, (len(core.MOVES),), np.float32)
    return observation, gym.spaces.Discrete(len(core.MOVES))


def check_arguments(num_agents: int, max_cycles: int, local_ratio: float) -> None:
    """Refuse arguments the task is not defined for."""
    if num_agents < 2:
        raise ValueError(f"num_agents must be at least 2, got {num_agents}")
    if max_cycles < 1:
        raise ValueError(f"max_cycles must be at least 1, got {max_cycles}")
    if not 0.0 <= local_ratio <= 1.0:
        raise ValueError(f"local_ratio must be in [0, 1], got {local_ratio}")


def render_frame(pos: np.ndarray, landmarks: np.ndarray, size: int = 320) -> np.ndarray:
    """An RGB frame ``(size, size, 3)`` of one game seen from above (y up)."""
    extent = max(1.2, float(np.abs(np.concatenate([pos, landmarks])).max()) + 0.2)
    axis = np.linspace(-extent, extent, size)
    x, y = axis[None, :], axis[::-1, None]
    frame = np.empty((size, size, 3), np.uint8)
    frame[:] = COLOURS["background"]
    for points, radius, colour in ((landmarks, core.LANDMARK_SIZE, "landmark"),
                                   (pos, core.AGENT_SIZE, "agent")):  # fmt: skip
        for px, py in points:
            frame[(x - px) ** 2 + (y - py) ** 2 < radius**2] = COLOURS[colour]
    return frame


class CoopNavEnv(ParallelEnv):
    """N agents covering N landmarks; see the module docstring."""

    metadata = {"name": "rlbench_coop_nav_v0", "render_modes": ["rgb_array"],
                "render_fps": 10, "is_parallelizable": True}  # fmt: skip

    def __init__(
        self,
        num_agents: int = 3,
        max_cycles: int = 25,
        continuous_actions: bool = False,
        local_ratio: float = 0.5,
        render_mode: str | None = None,
    ) -> None:
        check_arguments(num_agents, max_cycles, local_ratio)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"unsupported render_mode {render_mode!r}; accepted: 'rgb_array'")
        self.n, self.max_cycles, self.local_ratio = num_agents, max_cycles, local_ratio
        self.continuous, self.render_mode = continuous_actions, render_mode
        self.possible_agents = [f"agent_{i}" for i in range(num_agents)]
        self.agents: list[str] = []
        observation, action = coop_nav_spaces(num_agents, continuous_actions)
        self.observation_spaces = dict.fromkeys(self.possible_agents, observation)
        self.action_spaces = dict.fromkeys(self.possible_agents, action)
        self.state = core.CoopNavState(1, num_agents)
        self.cycle = 0
        self._rng = np.random.default_rng()

    def observation_space(self, agent: str) -> gym.spaces.Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gym.spaces.Space:
        return self.action_spaces[agent]

    def _observations(self) -> dict[str, np.ndarray]:
        obs = np.ascontiguousarray(core.observations(self.state)[0])
        return {a: obs[i] for i, a in enumerate(self.possible_agents)}

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.state.spawn(np.array([0]), core.draw(self._rng, self.n)[None])
        self.agents = list(self.possible_agents)
        self.cycle = 0
        return self._observations(), {a: {} for a in self.agents}

    def _actions(self, actions: dict[str, Any]) -> np.ndarray:
        """The joint action as a batch of one, checked (no-op for agents left out)."""
        unknown = set(actions) - set(self.agents)
        if unknown:
            raise ValueError(f"actions for agents not in the game: {sorted(unknown)}; "
                             f"live agents: {self.agents}")  # fmt: skip
        if self.continuous:
            joint = np.zeros((1, self.n, len(core.MOVES)))
        else:
            joint = np.zeros((1, self.n), dtype=np.int64)
        for i, agent in enumerate(self.possible_agents):
            if agent in actions:
                joint[0, i] = self._checked(agent, actions[agent])
        return joint

    def _checked(self, agent: str, action: Any) -> Any:
        if self.continuous:
            value = np.asarray(action, dtype=np.float64)
            if value.shape != (len(core.MOVES),) or not np.all(np.isfinite(value)):
                raise ValueError(f"{agent}: action must be 5 finite numbers in [0, 1], "
                                 f"got {action!r}")  # fmt: skip
            return value
        if not self.action_spaces[agent].contains(action):
            raise ValueError(f"{agent}: action must be an integer in 0..4 (no-op, left, "
                             f"right, down, up), got {action!r}")  # fmt: skip
        return int(action)

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        joint = self._actions(actions)
        outcome = core.step(self.state, joint, self.continuous, self.local_ratio)
        self.cycle += 1
        last = self.cycle >= self.max_cycles
        covered, team = int(outcome.covered[0]), float(outcome.team[0])
        success = last and covered == self.n
        obs = self._observations()
        live, result = self.agents, ({}, {}, {}, {}, {})
        for i, agent in enumerate(self.possible_agents):
            if agent not in live:
                continue
            result[0][agent] = obs[agent]
            result[1][agent] = float(outcome.reward[0, i])
            result[2][agent] = False
            result[3][agent] = last
            result[4][agent] = {"covered": covered, "collisions": int(outcome.collisions[0, i]),
                                "team_reward": team, "success": success}  # fmt: skip
        self.agents = [] if last else live
        return result

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return render_frame(self.state.pos[:, :, 0].T, self.state.landmarks[:, :, 0].T)

    def close(self) -> None:
        """Nothing to release."""
