"""Multi-agent tasks: single-process speed, and the batched CoopNav backend against mpe2.

``multiagent_env_speed``: agent-steps per second of each of the suite's multi-agent
environments (PettingZoo Parallel API, random actions), each beside mpe2's
``simple_spread_v3`` (the peer a user would otherwise pick) in the same rounds.

``coopnav_batched``: ``rlbench_suite.make_batched("rlbench/CoopNav-v0", n)`` at n = 1, 256
and 4096 games against mpe2's ``simple_spread_v3`` and the suite's unbatched CoopNav, both
stepped one game at a time. Goal at 4096 games: at least 100x the unbatched PettingZoo env.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import rlbench_suite
from benchmarks.harness import Case, Comparison, Settings, Variant, benchmark
from benchmarks.workloads import VectorStepper

OWN_IDS = ("CoopNav-v0", "PredatorPrey-v0", "Duel-v0", "PrisonersDilemma-v0", "Kitchen-v0")
PEER = "mpe2 simple_spread"


class ParallelStepper:
    """Steps a PettingZoo ParallelEnv with pre-sampled random actions; counts agent-steps."""

    def __init__(self, make_env: Callable[[], Any], seed: int = 0) -> None:
        self.env = make_env()
        rng = np.random.default_rng(seed)
        agents = self.env.possible_agents
        self.actions = [
            {a: self._sample(self.env.action_space(a), rng) for a in agents} for _ in range(64)
        ]
        self.env.reset(seed=seed)
        self.i = 0

    @staticmethod
    def _sample(space: Any, rng: np.random.Generator) -> Any:
        if hasattr(space, "n"):
            return int(rng.integers(space.n))
        return rng.uniform(space.low, space.high).astype(space.dtype)

    def __call__(self, n: int) -> int:
        done = 0
        while done < n:
            if not self.env.agents:
                self.env.reset()
            actions = self.actions[self.i % 64]
            self.env.step({a: actions[a] for a in self.env.agents})
            done += len(actions)
            self.i += 1
        return done

    def describe(self) -> str:
        return type(self.env).__name__

    def stats(self) -> dict[str, int]:
        return {"cycles": self.i}

    def close(self) -> None:
        self.env.close()


def _own(env_id: str) -> Callable[[], ParallelStepper]:
    return lambda: ParallelStepper(
        lambda: rlbench_suite.make_multiagent(f"rlbench/{env_id}", "parallel")
    )


def _batched(num_games: int) -> Callable[[], VectorStepper]:
    return lambda: VectorStepper(
        lambda: rlbench_suite.make_batched("rlbench/CoopNav-v0", num_games=num_games)
    )


def _mpe2() -> ParallelStepper:
    from mpe2 import simple_spread_v3

    return ParallelStepper(lambda: simple_spread_v3.parallel_env(N=3, max_cycles=25))


def _available(env_id: str) -> bool:
    return f"rlbench/{env_id}" in rlbench_suite.cards()


@benchmark("multiagent_env_speed")
def multiagent_env_speed(settings: Settings) -> list[Case]:
    """Agent-steps per second of each multi-agent env beside mpe2's simple_spread."""
    return [
        Case(
            env=env_id,
            variants=[Variant(env_id, _own(env_id)), Variant(PEER, _mpe2)],
            comparisons=[Comparison(env_id, PEER)],
            work_per_round=600,
            rounds=4 if settings.quick else 20,
        )
        for env_id in OWN_IDS
        if _available(env_id)
    ]


@benchmark("coopnav_batched")
def coopnav_batched(settings: Settings) -> list[Case]:
    """Batched CoopNav at 1, 256 and 4096 games against unbatched PettingZoo envs."""
    cases = []
    for n in (1, 256, 4096):
        subject = f"batched CoopNav x{n}"
        cases.append(
            Case(
                env=f"CoopNav-v0 x{n}",
                variants=[
                    Variant(subject, _batched(n)),
                    Variant(PEER, _mpe2),
                    Variant("CoopNav-v0 (PettingZoo)", _own("CoopNav-v0")),
                ],
                comparisons=[
                    Comparison(subject, PEER, goal=1 / 100 if n == 4096 else None),
                    Comparison(subject, "CoopNav-v0 (PettingZoo)"),
                ],
                work_per_round=max(3 * n, 600),
                rounds=2 if settings.quick else 10,
                clock="wall",
            )
        )
    return cases
