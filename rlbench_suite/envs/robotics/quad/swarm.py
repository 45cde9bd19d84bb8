"""``rlbench/QuadSwarm-v0``: N Crazyflies keep a moving formation (PettingZoo Parallel API).

Each drone ``drone_i`` owns a slot on a circle of radius ``formation_radius`` around a
formation centre, which drifts on a seeded circle (0.3 m radius, one turn per 16 s) at a
seeded height. Drones start on the floor under their slots. PyBullet physics at 240 Hz with
control at 48 Hz, ground effect, rotor drag and (``downwash=True``) the downwash of drones
flying above; drones collide with each other and with the floor. A crashed drone leaves
the game and the arena; the others then see zeros in its place.

Observation of ``drone_i`` (float32, ego-centric): its slot relative to it (3), the other
drones' positions relative to it (3 each, by index) and their velocities relative to its
own (3 each), then its own state (20, as in ``QuadHover``). Action: as the single-drone
tasks (``action_type``). Reward per step: ``exp(-2 * slot distance)``, minus 1 while
touching another drone, minus 10 on a crash (leaving the arena or turning over), which
removes the drone. ``info``: ``position_error``, ``collisions`` and ``success`` (within
10 cm of its slot).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

from rlbench_suite.envs import libm
from rlbench_suite.envs.robotics.quad.backends import GROUND_Z, PyBulletQuads
from rlbench_suite.envs.robotics.quad.control import ACTION_TYPES, QuadPID
from rlbench_suite.envs.robotics.quad.dynamics import Aerodynamics
from rlbench_suite.envs.robotics.quad.env import check_choice, clipped_actions, fly, quad_spaces
from rlbench_suite.envs.robotics.quad.tasks import (
    CONTROL_HZ,
    CRASH_PENALTY,
    crashed,
    distances,
    observations,
)

COLLISION_PENALTY = 1.0
SLOT_SUCCESS = 0.10  # m
DRIFT_RADIUS, DRIFT_PERIOD = 0.3, 16.0  # m, s


class QuadSwarmEnv(ParallelEnv):
    """N drones keeping a formation; see the module docstring."""

    metadata = {"name": "rlbench_quad_swarm_v0", "render_modes": ["rgb_array"],
                "render_fps": CONTROL_HZ}  # fmt: skip

    def __init__(
        self,
        num_drones: int = 4,
        action_type: str = "rpm",
        max_cycles: int = 480,
        formation_radius: float = 0.5,
        downwash: bool = True,
        render_mode: str | None = None,
    ) -> None:
        if num_drones < 2:
            raise ValueError(f"num_drones must be at least 2, got {num_drones}")
        self.action_type = check_choice("action_type", action_type, ACTION_TYPES)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"unsupported render_mode {render_mode!r}; accepted: 'rgb_array'")
        self.render_mode, self.max_cycles, self.radius = render_mode, max_cycles, formation_radius
        self.n = num_drones
        self.possible_agents = [f"drone_{i}" for i in range(num_drones)]
        self.agents: list[str] = []
        observation, action = quad_spaces(3 + 6 * (num_drones - 1) + 20)
        self.observation_spaces = {a: observation for a in self.possible_agents}
        self.action_spaces = {a: action for a in self.possible_agents}
        self.quads = PyBulletQuads(num_drones, aero=Aerodynamics(downwash=downwash))
        self.pid = QuadPID(num_drones)
        angles = 2 * np.pi * np.arange(num_drones) / num_drones
        self.offsets = formation_radius * np.stack([np.cos(angles), np.sin(angles), 0 * angles])
        self.last_action = np.zeros((num_drones, 4))
        self.alive = np.zeros(num_drones, bool)
        self.cycle, self.centre, self.phase = 0, np.zeros(3), 0.0
        self._rng = np.random.default_rng()

    def observation_space(self, agent: str) -> gym.spaces.Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gym.spaces.Box:
        return self.action_spaces[agent]

    def _slots(self) -> np.ndarray:
        """Slot positions ``(3, n)`` now."""
        angle = self.phase + 2 * np.pi * self.cycle / (DRIFT_PERIOD * CONTROL_HZ)
        drift = DRIFT_RADIUS * np.array([np.cos(angle), np.sin(angle), 0.0])
        return (self.centre + drift)[:, None] + self.offsets

    def _observations(self) -> dict[str, np.ndarray]:
        # drones out of the game are seen as zeros
        position = self.quads.position * self.alive
        velocity = self.quads.velocity * self.alive
        columns = []
        for i in range(self.n):
            others = np.delete(np.arange(self.n), i)
            seen = self.alive[others]
            columns.append(np.concatenate(
                [((position[:, others] - position[:, [i]]) * seen).T.ravel(),
                 ((velocity[:, others] - velocity[:, [i]]) * seen).T.ravel()]
            ))  # fmt: skip
        terms = np.concatenate([self._slots() - self.quads.position, np.stack(columns, axis=1)])
        obs = observations(terms, self.quads, self.last_action)
        return {a: obs[i] for i, a in enumerate(self.possible_agents) if a in self.agents}

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.alive[:] = True
        self.cycle = 0
        self.centre = np.array([*self._rng.uniform(-0.5, 0.5, 2), self._rng.uniform(0.8, 1.2)])
        self.phase = float(self._rng.uniform(0, 2 * np.pi))
        start = self._slots() + np.concatenate(
            [self._rng.uniform(-0.05, 0.05, (2, self.n)), np.zeros((1, self.n))]
        )
        start[2] = GROUND_Z
        self.quads.place(np.arange(self.n), start.T)
        self.pid.reset()
        self.last_action[:] = 0.0
        return self._observations(), {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        unknown = set(actions) - set(self.agents)
        if unknown:
            raise ValueError(f"actions for agents not in the game: {sorted(unknown)}; "
                             f"live agents: {self.agents}")  # fmt: skip
        for i, agent in enumerate(self.possible_agents):
            if agent in actions:
                self.last_action[i] = clipped_actions(actions[agent], 1, f"{agent}'s action")[0]
        fly(self.quads, self.pid, self.action_type, self.last_action)
        self.cycle += 1
        error = distances(self._slots(), self.quads.position)
        touching = np.zeros(self.n, int)
        for i, j in self.quads.contacts():
            touching[[i, j]] += 1
        crash = crashed(self.quads) & self.alive
        reward = libm.exp(-2.0 * error) - COLLISION_PENALTY * touching - CRASH_PENALTY * crash
        truncate = self.cycle >= self.max_cycles
        live = list(self.agents)
        result = ({}, {}, {}, {}, {})
        for i, agent in enumerate(self.possible_agents):
            if agent not in live:
                continue
            result[1][agent] = float(reward[i])
            result[2][agent] = bool(crash[i])
            result[3][agent] = bool(truncate and not crash[i])
            result[4][agent] = {"position_error": float(error[i]),
                                "collisions": int(touching[i]),
                                "success": bool(error[i] < SLOT_SUCCESS)}  # fmt: skip
        self.alive &= ~crash
        for i in np.flatnonzero(crash):
            self.quads.park(int(i))
        self.agents = [a for i, a in enumerate(self.possible_agents)
                       if self.alive[i] and not truncate]  # fmt: skip
        observations_now = self._observations() if self.agents else {}
        obs = {a: observations_now.get(a, self._last_obs(a)) for a in live}
        return (obs, *result[1:])

    def _last_obs(self, agent: str) -> np.ndarray:
        """The final observation of an agent leaving the game now."""
        keep = self.agents
        self.agents = [agent]
        try:
            return self._observations()[agent]
        finally:
            self.agents = keep

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return self.quads.render(drones=np.flatnonzero(self.alive))  # parked drones left out

    def close(self) -> None:
        self.quads.close()
