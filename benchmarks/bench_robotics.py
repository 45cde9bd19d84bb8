"""Robotic tasks: single-process speed next to HalfCheetah-v5, and the batched quadrotor backend.

``robotics_env_speed``: each of the suite's robotic ids (``gym.make``, the standard stack,
random actions) against ``rlbench/HalfCheetah-v5`` stepped in the same rounds.

``quad_batched``: ``gym.make_vec("rlbench/QuadHover-v0", n)`` (the batched NumPy backend) at
n = 1, 256 and 4096 against Gymnasium's ``SyncVectorEnv`` and ``AsyncVectorEnv`` over the
PyBullet env. The unit is an env-step (1/48 s of simulated flight per drone). One process
cannot open 4096 PyBullet clients, and 4096 worker processes do not fit on 2 cores, so the
peers run at most 256 (sync) and 8 (async) envs; their cost per env-step does not shrink
with n (each env is stepped on its own), so their rates are what they would be at 4096.
``--quick`` runs them at most 16 and 2 envs, two rounds.
"""

from __future__ import annotations

import gymnasium as gym

import rlbench_suite  # noqa: F401  (registers the rlbench/ ids)
from benchmarks.harness import Case, Comparison, Settings, Variant, benchmark
from benchmarks.workloads import VectorStepper, env_stepper

ROBOTIC_IDS = ("QuadHover-v0", "QuadWaypoints-v0", "KukaReach-v0", "ArmReach-v0", "ArmPush-v0",
               "ArmPickPlace-v0")  # fmt: skip
PEER = "HalfCheetah-v5"


def _make(env_id: str):
    def make() -> gym.Env:
        return gym.make(f"rlbench/{env_id}")

    return make


@benchmark("robotics_env_speed")
def robotics_env_speed(settings: Settings) -> list[Case]:
    """Steps per second of each robotic env beside HalfCheetah-v5 (rlbench stacks)."""
    cases = []
    for env_id in ROBOTIC_IDS:
        limit = gym.spec(f"rlbench/{env_id}").max_episode_steps
        stepper = {"max_episode_steps": limit, "seed": 0}
        cases.append(
            Case(
                env=env_id,
                variants=[
                    Variant(env_id, env_stepper(_make(env_id), **stepper)),
                    Variant(PEER, env_stepper(_make(PEER), max_episode_steps=1000, seed=0)),
                ],
                comparisons=[Comparison(env_id, PEER)],
                work_per_round=400,
                rounds=4 if settings.quick else 20,
            )
        )
    return cases


def _vector(num_envs: int, mode: str | None):
    def setup() -> VectorStepper:
        kwargs = {} if mode is None else {"vectorization_mode": mode}
        return VectorStepper(
            lambda: gym.make_vec("rlbench/QuadHover-v0", num_envs=num_envs, **kwargs)
        )

    return setup


@benchmark("quad_batched")
def quad_batched(settings: Settings) -> list[Case]:
    """The batched quadrotor backend against Sync/AsyncVectorEnv over PyBullet."""
    cases = []
    for n in (1, 256, 4096):
        sync_n, async_n = (min(n, 16), min(n, 2)) if settings.quick else (min(n, 256), min(n, 8))
        cases.append(
            Case(
                env=f"QuadHover-v0 x{n}",
                variants=[
                    Variant(f"batched numpy x{n}", _vector(n, None)),
                    Variant(f"SyncVectorEnv pybullet x{sync_n}", _vector(sync_n, "sync")),
                    Variant(f"AsyncVectorEnv pybullet x{async_n}", _vector(async_n, "async")),
                ],
                comparisons=[
                    Comparison(
                        f"batched numpy x{n}",
                        f"SyncVectorEnv pybullet x{sync_n}",
                        goal=1 / 50 if n == 4096 else None,
                    ),
                    Comparison(f"batched numpy x{n}", f"AsyncVectorEnv pybullet x{async_n}"),
                ],
                work_per_round=max(n, 256),
                rounds=2 if settings.quick else 8,
                clock="wall",
            )
        )
    return cases
