"""Text games: steps per second of each text env beside CartPole-v1 and MiniGrid's DoorKey.

``text_env_speed``: every card of the ``text`` family (``gym.make``, the suite's standard
stack) against Gymnasium's ``CartPole-v1`` and MiniGrid's ``MiniGrid-DoorKey-8x8-v0`` (plain
``gym.make``, the envs a user would otherwise reach for), stepped in the same rounds. The
text games play random *admissible* commands (a pre-sampled index into
``info["admissible_commands"]``), so the timing covers the game logic rather than the
parser's rejection of random strings; the peers play pre-sampled random actions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import rlbench_suite
from benchmarks.harness import Case, Comparison, Settings, Variant, benchmark
from benchmarks.workloads import EnvStepper, env_stepper

CARTPOLE, DOORKEY = "CartPole-v1", "MiniGrid-DoorKey-8x8-v0"


class AdmissibleStepper(EnvStepper):
    """Steps a text game with random admissible commands, resetting when an episode ends
    (:class:`EnvStepper`'s bookkeeping, its own choice of actions)."""

    def __init__(self, make_env: Callable[[], gym.Env], seed: int = 0) -> None:
        self.env = make_env()
        self.picks = np.random.default_rng(seed).integers(1 << 30, size=4096).tolist()
        _, self.info = self.env.reset(seed=seed)
        self.i = 0
        self.episodes = 0

    def __call__(self, n: int) -> None:
        env, info, picks, i = self.env, self.info, self.picks, self.i
        for _ in range(n):
            commands = info.get("admissible_commands") or ["look"]
            action = commands[picks[i % len(picks)] % len(commands)]
            _, _, terminated, truncated, info = env.step(action)
            i += 1
            if terminated or truncated:
                _, info = env.reset()
                self.episodes += 1
        self.info, self.i = info, i


def _make(env_id: str, **kwargs: Any) -> Callable[[], gym.Env]:
    def make() -> gym.Env:
        if env_id.startswith("MiniGrid"):
            import minigrid  # noqa: F401  (registers the MiniGrid ids)
        return gym.make(env_id, **kwargs)

    return make


def text_ids() -> list[str]:
    """The ids of every text game in the catalog."""
    return [card.id for card in rlbench_suite.core.catalog.select_cards(family="text")]


@benchmark("text_env_speed")
def text_env_speed(settings: Settings) -> list[Case]:
    """Steps per second of each text env beside CartPole-v1 and MiniGrid DoorKey-8x8."""
    peers = [
        Variant(CARTPOLE, env_stepper(_make(CARTPOLE), max_episode_steps=500, seed=0)),
        Variant(DOORKEY, env_stepper(_make(DOORKEY), max_episode_steps=640, seed=0)),
    ]
    return [
        Case(
            env=env_id.split("/", 1)[1],
            variants=[Variant(env_id, lambda e=env_id: AdmissibleStepper(_make(e))), *peers],
            comparisons=[Comparison(env_id, CARTPOLE), Comparison(env_id, DOORKEY)],
            work_per_round=400,
            rounds=4 if settings.quick else 20,
        )
        for env_id in text_ids()
    ]
