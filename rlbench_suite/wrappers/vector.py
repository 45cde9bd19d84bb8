"""Episode statistics for vector environments, in every Gymnasium autoreset mode."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from rlbench_suite.wrappers.stats import STATS_KEY, build_scorer


class VectorEpisodeStatistics(gym.vector.VectorWrapper):
    """The vector form of :class:`~rlbench_suite.wrappers.EpisodeStatistics`.

    When sub-environments end, ``info["rlbench_episode"]`` holds arrays ``r``, ``l``,
    ``success`` and ``normalized_score`` (an object array of None without reference scores)
    with ``info["_rlbench_episode"]`` marking the sub-environments that ended, following
    Gymnasium's vector info convention. The statistics of a sub-environment ending under
    ``SAME_STEP`` autoreset include that step; under ``NEXT_STEP`` the reset step after an
    ending counts for nothing; under ``DISABLED`` ``reset(options={"reset_mask": m})``
    starts new episodes for the masked sub-environments. Takes the same arguments as
    ``EpisodeStatistics``.
    """

    wrapper_name = "rlbench/VectorEpisodeStatistics-v0"

    def __init__(self, env: VectorEnv, **scoring: Any) -> None:
        super().__init__(env)
        self._scorer = build_scorer(**scoring)
        self._mode = AutoresetMode(env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP))
        self._clear(np.ones(self.num_envs, bool))

    def _clear(self, which: np.ndarray) -> None:
        if not hasattr(self, "_returns"):
            self._returns = np.zeros(self.num_envs)
            self._lengths = np.zeros(self.num_envs, int)
            self._seen = np.zeros(self.num_envs, bool)
            self._pending = np.zeros(self.num_envs, bool)  # NEXT_STEP: resets on the next step
        self._returns[which], self._lengths[which] = 0.0, 0
        self._seen[which] = self._pending[which] = False

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        mask = (options or {}).get("reset_mask")
        obs, info = self.env.reset(seed=seed, options=options)
        self._clear(np.ones(self.num_envs, bool) if mask is None else np.asarray(mask, bool))
        return obs, info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        obs, rewards, terminated, truncated, info = self.env.step(actions)
        counting = ~self._pending
        self._returns[counting] += np.asarray(rewards, dtype=float)[counting]
        self._lengths[counting] += 1
        if self._scorer.info_key is not None:
            self._seen |= counting & self._info_flag(info, terminated | truncated)
        done = np.logical_and(np.logical_or(terminated, truncated), counting)
        if done.any():
            info = {**info, **self._episode_info(done, terminated, rewards)}
        if self._mode == AutoresetMode.NEXT_STEP:
            self._clear(self._pending)  # the reset step just happened
            self._pending = done.copy()
        else:
            self._clear(done)
        return obs, rewards, terminated, truncated, info

    def _info_flag(self, info: dict[str, Any], ending: np.ndarray) -> np.ndarray:
        """Where ``info[key]`` is set (the terminal step's info under SAME_STEP autoreset)."""
        flags = _flag(info, self._scorer.info_key, self.num_envs)
        if self._mode == AutoresetMode.SAME_STEP and "final_info" in info:
            final = _flag(info["final_info"], self._scorer.info_key, self.num_envs)
            flags = np.where(ending, final, flags)
        return flags

    def _episode_info(self, done: np.ndarray, terminated: Any, rewards: Any) -> dict[str, Any]:
        scorer = self._scorer
        success = scorer.success(self._seen, terminated, rewards, self._returns) & done
        normalized = scorer.normalized(self._returns, success)
        stats = {
            "r": np.where(done, self._returns, 0.0),
            "l": np.where(done, self._lengths, 0),
            "success": success,
            "normalized_score": (
                np.full(self.num_envs, None, dtype=object)
                if normalized is None
                else np.where(done, normalized, 0.0)
            ),
        }
        return {STATS_KEY: stats, f"_{STATS_KEY}": done, "is_success": success,
                "_is_success": done}  # fmt: skip


def _flag(info: dict[str, Any], key: str, n: int) -> np.ndarray:
    if key not in info:
        return np.zeros(n, bool)
    present = np.asarray(info.get(f"_{key}", np.ones(n, bool)), bool)
    return present & np.asarray(info[key]).astype(bool)


def _rescale_to_unit(env: VectorEnv) -> VectorEnv:
    from gymnasium.wrappers.vector import RescaleAction

    return RescaleAction(env, -1.0, 1.0)


# Standardized wrappers that have a vector form, for cards with a native vector env.
VECTOR_FORMS: dict[str, Any] = {"rlbench/RescaleActionToUnit-v0": _rescale_to_unit}
