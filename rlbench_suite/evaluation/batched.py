"""A quick score on a batched (vector) env: one deterministic episode per seed, all at once.

Not the harness (no Result, no protocol): the trainers' and benchmarks' look at a policy
during training, e.g. QuadHover's thousands of drones on its NumPy backend in one call.
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np


def evaluate_vector(
    make_envs: Callable[[int], gym.vector.VectorEnv], act: Callable[[np.ndarray], np.ndarray],
    seeds: list[int],
) -> dict[str, float]:  # fmt: skip
    """Mean return and success rate (``info["success"]`` at an episode's end) of one episode
    per seed on ``make_envs(len(seeds))``, env ``i`` reset with ``seeds[i]``; ``act`` maps the
    batch of observations to the batch of actions."""
    envs = make_envs(len(seeds))
    try:
        obs, _ = envs.reset(seed=list(seeds))
        alive = np.ones(len(seeds), bool)
        returns, success = np.zeros(len(seeds)), np.zeros(len(seeds), bool)
        while alive.any():
            obs, reward, terminated, truncated, info = envs.step(act(obs))
            returns += np.where(alive, reward, 0.0)
            if "success" in info:
                success |= alive & info["_success"] & np.asarray(info["success"], bool)
            alive &= ~(np.asarray(terminated) | np.asarray(truncated))
        return {"mean_return": float(returns.mean()), "success_rate": float(success.mean())}
    finally:
        envs.close()
