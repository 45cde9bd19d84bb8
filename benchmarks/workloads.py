"""Reusable workloads for :class:`benchmarks.harness.Variant`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym


class EnvStepper:
    """Steps an environment with a fixed, pre-sampled action sequence.

    The actions are sampled once from the env's own action space seeded with ``seed``, so
    sampling is not timed and every variant built with the same seed gets the same actions
    (for equal action spaces). The env is reset with ``seed`` once, then reset without a
    seed whenever an episode ends: on ``terminated``, ``truncated`` or after
    ``max_episode_steps`` steps, so an env without a ``TimeLimit`` gets the same episode
    boundaries as one with it. Reset time is included in the measured time.
    """

    def __init__(
        self,
        make_env: Callable[[], gym.Env],
        *,
        seed: int = 0,
        max_episode_steps: int | None = None,
        n_actions: int = 4096,
    ) -> None:
        self.env = make_env()
        self.env.action_space.seed(seed)
        self.actions: list[Any] = [self.env.action_space.sample() for _ in range(n_actions)]
        self.limit = max_episode_steps or 0
        self.env.reset(seed=seed)
        self.index = 0
        self.t = 0
        self.episodes = 0

    def __call__(self, n: int) -> None:
        step, reset, actions, limit = self.env.step, self.env.reset, self.actions, self.limit
        i, t, n_actions, episodes = self.index, self.t, len(actions), self.episodes
        for _ in range(n):
            _, _, terminated, truncated, _ = step(actions[i])
            i = i + 1 if i + 1 < n_actions else 0
            t += 1
            if terminated or truncated or t == limit:
                reset()
                t = 0
                episodes += 1
        self.index, self.t, self.episodes = i, t, episodes

    def describe(self) -> str:
        return str(self.env)

    def stats(self) -> dict[str, int]:
        return {"episodes_ended": self.episodes}

    def close(self) -> None:
        self.env.close()


def env_stepper(make_env: Callable[[], gym.Env], **kwargs: Any) -> Callable[[], EnvStepper]:
    """A ``Variant.setup`` that builds an :class:`EnvStepper` (see there for ``kwargs``)."""
    return lambda: EnvStepper(make_env, **kwargs)


class VectorStepper:
    """Steps a vector env with 8 fixed action batches sampled from its own (seeded) action
    space; a call does at least ``n`` env-steps and returns how many it did."""

    def __init__(self, make_vec: Callable[[], Any], seed: int = 0) -> None:
        self.envs = make_vec()
        self.envs.action_space.seed(seed)
        self.actions = [self.envs.action_space.sample() for _ in range(8)]
        self.envs.reset(seed=seed)
        self.i = 0

    def __call__(self, n: int) -> int:
        calls = -(-n // self.envs.num_envs)  # ceiling division
        for _ in range(calls):
            self.envs.step(self.actions[self.i % 8])
            self.i += 1
        return calls * self.envs.num_envs

    def describe(self) -> str:
        return f"{type(self.envs.unwrapped).__name__}(num_envs={self.envs.num_envs})"

    def stats(self) -> dict[str, int]:
        return {"num_envs": self.envs.num_envs}

    def close(self) -> None:
        self.envs.close()
