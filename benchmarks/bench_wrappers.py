"""Per-step cost of the suite's single-agent wrapper stack.

For CartPole-v1, Pendulum-v1 (whose actions really are rescaled) and HalfCheetah-v5, three
variants step side by side:

- ``bare``: the env class constructed directly, no wrappers at all;
- ``gym.make default``: ``gym.make(ID)`` (PassiveEnvChecker, OrderEnforcing, TimeLimit);
- ``rlbench stack``: ``gym.make("rlbench/ID")``, the default stack plus the suite's
  wrappers (``env.spec.additional_wrappers``).

All variants reset at the same steps (see :class:`benchmarks.workloads.EnvStepper`), and
reset time is counted in for all of them.
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym

from benchmarks.harness import Case, Comparison, Settings, Variant, benchmark
from benchmarks.workloads import env_stepper


def _bare_cartpole() -> gym.Env:
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv

    return CartPoleEnv()


def _bare_pendulum() -> gym.Env:
    from gymnasium.envs.classic_control.pendulum import PendulumEnv

    return PendulumEnv()


def _bare_half_cheetah() -> gym.Env:
    from gymnasium.envs.mujoco.half_cheetah_v5 import HalfCheetahEnv

    return HalfCheetahEnv()


def _rlbench(env_id: str) -> Callable[[], gym.Env]:
    def make() -> gym.Env:
        import rlbench_suite  # noqa: F401  (registers the rlbench/ ids)

        return gym.make(f"rlbench/{env_id}")

    return make


def _case(env_id: str, bare: Callable[[], gym.Env], steps: int, goal: float | None) -> Case:
    limit = gym.spec(env_id).max_episode_steps
    stepper = {"max_episode_steps": limit, "seed": 0}
    return Case(
        env=env_id,
        variants=[
            Variant("bare", env_stepper(bare, **stepper)),
            Variant("gym.make default", env_stepper(lambda: gym.make(env_id), **stepper)),
            Variant("rlbench stack", env_stepper(_rlbench(env_id), **stepper)),
        ],
        comparisons=[
            Comparison("rlbench stack", "bare", goal=goal),
            Comparison("rlbench stack", "gym.make default"),
            Comparison("gym.make default", "bare"),
        ],
        work_per_round=steps,
    )


@benchmark("wrapper_overhead")
def wrapper_overhead(settings: Settings) -> list[Case]:
    """The rlbench stack against the bare env and against gym.make's default stack."""
    return [
        _case("CartPole-v1", _bare_cartpole, steps=5_000, goal=None),
        _case("Pendulum-v1", _bare_pendulum, steps=3_000, goal=None),  # really rescales actions
        _case("HalfCheetah-v5", _bare_half_cheetah, steps=800, goal=1.10),
    ]
