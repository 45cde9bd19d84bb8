"""Cost of the evaluation harness (:func:`rlbench_suite.evaluation.runner.evaluate`).

``eval_overhead``: the same random-policy evaluation, one whole evaluation per call, done
three ways side by side:

- ``hand-written loop``: ``gym.make("rlbench/ID")``, then for each seed ``reset(seed=s)``
  and step with a random policy until the episode ends, then the mean return;
- ``evaluate``: ``evaluate("rlbench/ID", "random", protocol, workers=1)``, the whole call
  (probe env and policy, the env, the episodes, the bootstrap summary, the provenance);
- ``sb3 evaluate_policy``: ``evaluate_policy`` on a ``DummyVecEnv`` of one
  ``gym.make("rlbench/ID")`` with a random ``predict``, for the same number of episodes.

The hand-written loop and ``evaluate`` play the very same episodes: each episode resets
the env with its seed and the action space with ``policy_seed(seed)``, as the harness's
``random`` policy does. ``evaluate_policy`` takes no per-episode seeds: its vec env is
seeded once with the first seed and its predictor reseeds its actions at each episode
start from the next seed, so its first episode is the same and the others are not. Its
episodes can therefore differ in length (CartPole), which is why the unit is the
environment step: every call counts the steps it played. Each call builds (and closes)
its own env, as a one-off evaluation does.

``eval_parallel``: ``evaluate("rlbench/HalfCheetah-v5", "random", protocol, workers=k)``
for k = 2 against k = 1 on the same protocol, whole-call wall time (the work happens in
worker processes, which this process's CPU time would not see). Each call with 2 workers
starts its 2 worker processes (forked from the forkserver, which the warm-up starts
once), and that start-up is counted in. The row's ratio is time(2 workers) / time(1
worker); the row's ratio (1 worker's time over 2 workers') is the speed-up (goal >= 1.7x).

Nothing runs at import time: the worker processes of ``evaluate`` can import this module
safely.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np

from benchmarks.harness import Case, Comparison, Settings, Variant, benchmark

HAND = "hand loop"
HARNESS = "evaluate"
SB3 = "evaluate_policy"


def _protocol(env_id: str, episodes: int) -> Any:
    from rlbench_suite.evaluation.protocols import default_protocol

    return default_protocol(env_id, episodes=episodes)


class _Counted:
    """Shared bookkeeping of the evaluation workloads: totals, the last call's mean return."""

    def __init__(self, env_id: str) -> None:
        import rlbench_suite  # noqa: F401  (registers the rlbench/ ids)

        self.env_id = env_id
        self.protocols: dict[int, Any] = {}
        self.calls = self.episodes = self.steps = 0
        self.last_mean_return = float("nan")

    def seeds(self, n: int) -> list[int]:
        if n not in self.protocols:
            self.protocols[n] = _protocol(self.env_id, n)
        return list(self.protocols[n].seeds)

    def count(self, returns: list[float], lengths: list[int]) -> int:
        steps = int(sum(lengths))
        self.calls += 1
        self.episodes += len(lengths)
        self.steps += steps
        self.last_mean_return = float(np.mean(returns))  # what an evaluation reports
        return steps

    def stats(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "episodes": self.episodes,
            "steps": self.steps,
            "last_call_mean_return": self.last_mean_return,
        }


class HandLoop(_Counted):
    """``n`` seeded random-policy episodes in a plain loop; returns the steps played."""

    def __call__(self, n: int) -> int:
        from rlbench_suite.policies import policy_seed

        env = gym.make(self.env_id)
        try:
            space = env.action_space
            returns, lengths = [], []
            for seed in self.seeds(n):
                env.reset(seed=seed)
                space.seed(policy_seed(seed))
                total, length = 0.0, 0
                while True:
                    _, reward, terminated, truncated, _ = env.step(space.sample())
                    total += reward  # type: ignore[assignment]
                    length += 1
                    if terminated or truncated:
                        break
                returns.append(float(total))
                lengths.append(length)
        finally:
            env.close()
        return self.count(returns, lengths)

    def describe(self) -> str:
        return f"for seed in seeds: gym.make({self.env_id!r}).reset(seed=seed), step until done"


class Harness(_Counted):
    """``evaluate(env_id, "random", protocol with n episodes, workers=k)``, the whole call;
    returns the steps played."""

    def __init__(self, env_id: str, workers: int = 1) -> None:
        super().__init__(env_id)
        self.workers = workers

    def __call__(self, n: int) -> int:
        from rlbench_suite.evaluation.runner import evaluate

        self.seeds(n)
        result = evaluate(self.env_id, "random", self.protocols[n], workers=self.workers)
        return self.count(result.returns, result.lengths)

    def describe(self) -> str:
        return f"evaluate({self.env_id!r}, 'random', protocol, workers={self.workers})"


class RandomPredictor:
    """The SB3 ``predict`` interface with random actions, reseeded at each episode start
    from the next evaluation seed (``policy_seed``), like the harness's ``random``."""

    def __init__(self, action_space: gym.Space, seeds: list[int]) -> None:
        from rlbench_suite.policies import policy_seed

        self.space = action_space
        self.seeds = iter(seeds)
        self.policy_seed = policy_seed

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, None]:
        if episode_start is not None and episode_start[0]:
            seed = next(self.seeds, None)
            if seed is not None:
                self.space.seed(self.policy_seed(seed))
        return np.asarray([self.space.sample() for _ in range(len(observation))]), None


class SB3Evaluate(_Counted):
    """SB3's ``evaluate_policy`` for ``n`` episodes on a one-env ``DummyVecEnv`` seeded once."""

    def __call__(self, n: int) -> int:
        from stable_baselines3.common.evaluation import evaluate_policy
        from stable_baselines3.common.vec_env import DummyVecEnv

        seeds = self.seeds(n)
        venv = DummyVecEnv([lambda: gym.make(self.env_id)])
        try:
            venv.seed(seeds[0])
            model = RandomPredictor(venv.action_space, seeds)
            returns, lengths = evaluate_policy(
                model,  # type: ignore[arg-type]
                venv,
                n_eval_episodes=n,
                return_episode_rewards=True,
                warn=False,
            )
        finally:
            venv.close()
        return self.count(list(returns), list(lengths))  # type: ignore[arg-type]

    def describe(self) -> str:
        return f"evaluate_policy(random predictor, DummyVecEnv([gym.make({self.env_id!r})]))"


def _overhead_case(
    env: str, episodes: int, rounds: int, goal: float | None, settings: Settings
) -> Case:
    env_id = f"rlbench/{env}"
    return Case(
        env=env,
        variants=[
            Variant(HAND, partial(HandLoop, env_id)),
            Variant(HARNESS, partial(Harness, env_id, workers=1)),
            Variant(SB3, partial(SB3Evaluate, env_id)),
        ],
        comparisons=[
            Comparison(HARNESS, HAND, goal=goal),
            Comparison(HARNESS, SB3, goal=goal),
            Comparison(SB3, HAND),
        ],
        work_per_round=episodes,  # episodes per call; the time is divided by the steps
        unit="steps",
        rounds=3 if settings.quick else rounds,
    )


@benchmark("eval_overhead")
def eval_overhead(settings: Settings) -> list[Case]:
    """evaluate(workers=1) against a hand-written loop and SB3's evaluate_policy."""
    return [
        _overhead_case("HalfCheetah-v5", 10, rounds=10, goal=1.05, settings=settings),
        # random CartPole episodes are ~20 steps: fixed per-call costs dominate (no goal)
        _overhead_case("CartPole-v1", 50, rounds=30, goal=None, settings=settings),
    ]


@benchmark("eval_parallel")
def eval_parallel(settings: Settings) -> list[Case]:
    """evaluate() with 2 local workers against 1, whole-call wall time."""
    env_id = "rlbench/HalfCheetah-v5"
    return [
        Case(
            env="HalfCheetah-v5",
            variants=[
                Variant("workers=1", partial(Harness, env_id, workers=1)),
                Variant("workers=2", partial(Harness, env_id, workers=2)),
            ],
            # time(1 worker) / time(2 workers): the speed-up, goal at least 1.7x
            comparisons=[Comparison("workers=1", "workers=2", goal=1.7, at_least=True)],
            work_per_round=40,  # episodes per call (the warm-up call starts the forkserver)
            unit="steps",  # all 1,000 steps long: the ratio is that of whole calls
            rounds=2 if settings.quick else 6,
            clock="wall",
        )
    ]
