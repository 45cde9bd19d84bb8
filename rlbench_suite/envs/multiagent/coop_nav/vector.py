"""Many ``rlbench/CoopNav-v0`` games as one Gymnasium vector env, for parameter sharing.

:class:`CoopNavVectorEnv` steps ``num_games`` games with one NumPy call per cycle (the same
functions as :class:`~rlbench_suite.envs.multiagent.coop_nav.env.CoopNavEnv`). Each slot of the
vector env is one agent of one game: slot ``g * N + i`` is ``agent_i`` of game ``g``, so
``num_envs = num_games * num_agents`` and one shared policy acts for every agent at once.
Game ``g`` is seeded with ``seed + g`` and then plays exactly as a ``CoopNavEnv`` reset with
that seed and given the same actions. Games end together (truncation after ``max_cycles``)
and restart by the autoreset mode (next step, same step, or disabled: reset them with
``options={"reset_mask": ...}``, whose slots of one game must agree).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from rlbench_suite.envs.multiagent.coop_nav import core
from rlbench_suite.envs.multiagent.coop_nav.env import check_arguments, coop_nav_spaces
from rlbench_suite.envs.vector_info import same_step_final

INFO_KEYS = ("covered", "collisions", "team_reward", "success")


class CoopNavVectorEnv(gym.vector.VectorEnv):
    """``num_games`` cooperative navigation games, one vector slot per agent."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_fps": 10}

    def __init__(
        self,
        num_games: int,
        num_agents: int = 3,
        max_cycles: int = 25,
        continuous_actions: bool = False,
        local_ratio: float = 0.5,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    ) -> None:
        check_arguments(num_agents, max_cycles, local_ratio)
        if num_games < 1:
            raise ValueError(f"num_games must be at least 1, got {num_games}")
        self.num_games, self.n, self.max_cycles = num_games, num_agents, max_cycles
        self.continuous, self.local_ratio = continuous_actions, local_ratio
        self.num_envs = num_games * num_agents
        self.metadata = {**self.metadata, "autoreset_mode": AutoresetMode(autoreset_mode)}
        observation, action = coop_nav_spaces(num_agents, continuous_actions)
        self.single_observation_space, self.single_action_space = observation, action
        self.observation_space = batch_space(observation, self.num_envs)
        self.action_space = batch_space(action, self.num_envs)
        self.state = core.CoopNavState(num_games, num_agents)
        self.rngs = [np.random.default_rng() for _ in range(num_games)]
        self.cycles = np.zeros(num_games, dtype=np.int64)
        self.pending = np.zeros(num_games, dtype=bool)

    def _per_slot(self, per_game: np.ndarray) -> np.ndarray:
        return np.repeat(per_game, self.n)

    def _obs(self) -> np.ndarray:
        return core.observations(self.state).reshape(self.num_envs, -1)

    def _reset(self, games: np.ndarray, seeds: list[int | None] | None = None) -> None:
        """Begin new games ``games`` (re-seeding those given a seed)."""
        if len(games) == 0:
            return
        for g, seed in zip(games, seeds or [None] * len(games), strict=True):
            if seed is not None:
                self.rngs[g] = np.random.default_rng(seed)
        self.state.spawn(games, np.stack([core.draw(self.rngs[g], self.n) for g in games]))
        self.cycles[games] = 0
        self.pending[games] = False

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset all games (or those in ``options["reset_mask"]``, one flag per slot).

        ``seed``: an int (game ``g`` gets ``seed + g``) or one seed (or None) per game.
        """
        games = self._games_to_reset((options or {}).get("reset_mask"))
        if isinstance(seed, list):
            seeds = seed
        else:
            seeds = [None if seed is None else seed + g for g in range(self.num_games)]
        if len(seeds) != self.num_games:
            raise ValueError(f"expected one seed per game ({self.num_games}), got {len(seeds)}")
        self._reset(games, [seeds[g] for g in games])
        return self._obs(), {}

    def _games_to_reset(self, mask: Any) -> np.ndarray:
        if mask is None:
            return np.arange(self.num_games)
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (self.num_envs,):
            raise ValueError(f"reset_mask must have one flag per slot ({self.num_envs},), "
                             f"got shape {mask.shape}")  # fmt: skip
        per_game = mask.reshape(self.num_games, self.n)
        split = per_game.any(axis=1) & ~per_game.all(axis=1)
        if split.any():
            games = np.flatnonzero(split)[:5].tolist()
            raise ValueError(f"reset_mask must reset whole games (all {self.n} slots of a "
                             f"game alike); games {games} are split")  # fmt: skip
        return np.flatnonzero(per_game[:, 0])

    def _actions(self, actions: Any) -> np.ndarray:
        if self.continuous:
            joint = np.asarray(actions, dtype=np.float64).reshape(self.num_games, self.n, -1)
            if joint.shape[2] != len(core.MOVES) or not np.all(np.isfinite(joint)):
                raise ValueError(f"actions must be ({self.num_envs}, 5) finite numbers in [0, 1]")
            return joint
        joint = np.asarray(actions)
        if joint.shape != (self.num_envs,) or not np.issubdtype(joint.dtype, np.integer):
            raise ValueError(f"actions must be ({self.num_envs},) integers, got "
                             f"{joint.dtype} {joint.shape}")  # fmt: skip
        if joint.min() < 0 or joint.max() >= len(core.MOVES):
            raise ValueError("actions must be in 0..4 (no-op, left, right, down, up)")
        return joint.reshape(self.num_games, self.n)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        joint = self._actions(actions)
        mode = self.metadata["autoreset_mode"]
        live = ~self.pending
        outcome = core.step(self.state, joint, self.continuous, self.local_ratio)
        self.cycles += 1
        last = self.cycles >= self.max_cycles
        self._reset(np.flatnonzero(~live))  # after stepping, so the RNG streams stay per game
        slot_live, done = self._per_slot(live), self._per_slot(last & live)
        reward = np.where(slot_live, outcome.reward.reshape(-1), 0.0)
        terminated = np.zeros(self.num_envs, dtype=bool)
        info = {
            "covered": self._per_slot(outcome.covered),
            "collisions": outcome.collisions.reshape(-1),
            "team_reward": self._per_slot(outcome.team),
            "success": done & self._per_slot(outcome.covered == self.n),
        }
        masks = {f"_{key}": slot_live.copy() for key in INFO_KEYS}
        if mode == AutoresetMode.SAME_STEP and done.any():
            masks = {key: mask & ~done for key, mask in masks.items()}
            info = self._same_step_reset(info, done, last & live)
        elif mode == AutoresetMode.NEXT_STEP:
            self.pending = last & live
        return self._obs(), reward, terminated, done, {**info, **masks}

    def _same_step_reset(
        self, info: dict[str, np.ndarray], done: np.ndarray, games: np.ndarray
    ) -> dict[str, Any]:
        final = same_step_final(self._obs(), done, info)
        self._reset(np.flatnonzero(games))
        return {**info, **final}
