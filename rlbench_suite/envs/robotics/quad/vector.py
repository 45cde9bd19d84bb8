"""The batched fast backend as a Gymnasium vector env (after "Learning to Fly in Seconds").

:class:`QuadVectorEnv` steps ``num_envs`` drones with one NumPy call per physics tick: the
cards' ``vector_entry_point``, so ``gym.make_vec("rlbench/QuadHover-v0", num_envs=4096)``
flies thousands of drones per call. It is exactly ``SyncVectorEnv`` over the single
environment with ``backend="numpy"`` (same seeding, same autoreset in all three modes), and
agrees with the PyBullet backend while no contacts happen (``tests/test_quad_envs.py``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from rlbench_suite.envs.robotics.quad.backends import NumpyQuads
from rlbench_suite.envs.robotics.quad.control import ACTION_TYPES, QuadPID
from rlbench_suite.envs.robotics.quad.dynamics import Aerodynamics
from rlbench_suite.envs.robotics.quad.env import check_choice, clipped_actions, fly, quad_spaces
from rlbench_suite.envs.robotics.quad.tasks import CONTROL_HZ, TASKS, make_task, observations
from rlbench_suite.envs.vector_info import same_step_final


class QuadVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` single-drone episodes of one task, batched in NumPy."""

    def __init__(
        self,
        num_envs: int,
        task: str = "hover",
        action_type: str = "rpm",
        max_episode_steps: int = 480,
        ground_effect: bool = True,
        drag: bool = True,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        backend: str = "numpy",
    ) -> None:
        if backend != "numpy":
            raise ValueError(
                f"the native vector env is the batched NumPy backend, got backend={backend!r}; "
                "for PyBullet drones use gym.make_vec(id, n, vectorization_mode='sync')"
            )
        check_choice("task", task, tuple(TASKS))
        self.action_type = check_choice("action_type", action_type, ACTION_TYPES)
        self.num_envs, self.max_episode_steps = num_envs, max_episode_steps
        self.metadata = {"autoreset_mode": AutoresetMode(autoreset_mode),
                         "render_fps": CONTROL_HZ}  # fmt: skip
        self.quads = NumpyQuads(num_envs, aero=Aerodynamics(drag=drag, ground_effect=ground_effect))
        self.task = make_task(task, num_envs)
        self.pid = QuadPID(num_envs)
        observation, action = quad_spaces(self.task.obs_size)
        self.single_observation_space, self.single_action_space = observation, action
        self.observation_space = batch_space(observation, num_envs)
        self.action_space = batch_space(action, num_envs)
        self.rngs = [seeding.np_random()[0] for _ in range(num_envs)]
        self.last_action = np.zeros((num_envs, 4))
        self.steps = np.zeros(num_envs, dtype=np.int64)
        self.pending = np.zeros(num_envs, dtype=bool)

    def _reset(self, indices: np.ndarray, seeds: list[int | None] | None = None) -> None:
        """Begin new episodes in envs ``indices`` (re-seeding those given a seed)."""
        if len(indices) == 0:
            return
        for i, seed in zip(indices, seeds or [None] * len(indices), strict=True):
            if seed is not None:
                self.rngs[i] = seeding.np_random(seed)[0]
        draws = np.stack([self.task.draw(self.rngs[i]) for i in indices])
        self.quads.place(indices, self.task.start(indices, draws))
        self.pid.reset(indices)
        self.last_action[indices] = 0.0
        self.steps[indices] = 0
        self.pending[indices] = False

    def _obs(self) -> np.ndarray:
        return observations(self.task.target_terms(self.quads), self.quads, self.last_action)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset all envs (or those in ``options["reset_mask"]``); ``seed + i`` seeds env ``i``."""
        mask = np.asarray((options or {}).get("reset_mask", np.ones(self.num_envs, bool)))
        seeds = seed if isinstance(seed, list) else [
            None if seed is None else seed + i for i in range(self.num_envs)
        ]  # fmt: skip
        if len(seeds) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} seeds, got {len(seeds)}")
        indices = np.flatnonzero(mask)
        self._reset(indices, [seeds[i] for i in indices])
        return self._obs(), {}

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        actions = clipped_actions(actions, self.num_envs, "actions")
        mode = self.metadata["autoreset_mode"]
        live = ~self.pending
        self.last_action = np.where(live[:, None], actions, self.last_action)
        fly(self.quads, self.pid, self.action_type, self.last_action)
        reward, terminated, info = self.task.update(self.quads)
        self.steps += 1
        truncated = ~terminated & (self.steps >= self.max_episode_steps)
        reward, terminated, truncated = reward * live, terminated & live, truncated & live
        self._reset(np.flatnonzero(~live))
        done = terminated | truncated
        masks = {f"_{key}": live.copy() for key in info}
        if mode == AutoresetMode.SAME_STEP and done.any():
            masks = {key: mask & ~done for key, mask in masks.items()}
            info = self._same_step_reset(info, done)
        elif mode == AutoresetMode.NEXT_STEP:
            self.pending = done.copy()
        return self._obs(), reward, terminated, truncated, {**info, **masks}

    def _same_step_reset(self, info: dict[str, np.ndarray], done: np.ndarray) -> dict[str, Any]:
        final = same_step_final(self._obs(), done, info)
        self._reset(np.flatnonzero(done))
        return {**info, **final}


class QuadHoverVectorEnv(QuadVectorEnv):
    """``rlbench/QuadHover-v0``'s vector entry point."""

    def __init__(self, num_envs: int, **kwargs: Any) -> None:
        super().__init__(num_envs, task="hover", **kwargs)


class QuadWaypointsVectorEnv(QuadVectorEnv):
    """``rlbench/QuadWaypoints-v0``'s vector entry point."""

    def __init__(self, num_envs: int, **kwargs: Any) -> None:
        super().__init__(num_envs, task="waypoints", **kwargs)
