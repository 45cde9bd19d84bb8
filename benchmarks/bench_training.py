"""Training speed (issue 13): the suite's ``fast_ppo`` beside SB3's PPO, on the same envs.

Four entries, all on wall-clock time (training is what a user waits for):

``cpu_burn``: the machine's own 2-process speed-up on a pure-Python CPU burn (a loop of
integer arithmetic), 1 process against 2 processes doing the same total work. Read every
parallel speed-up against this number measured in the same run, not against 2.0x.

``training_throughput``: env-steps per second *including the updates*, each algorithm
training on with its own hyperparameters (``baselines/hyperparams/fast_ppo.yaml`` and
``ppo.yaml``), one chunk of steps per round, interleaved. A chunk ends at a rollout
boundary at or past the chunk's size, and the time is divided by the steps it actually did.

- CartPole-v1: fast_ppo on Gymnasium's native ``CartPoleVectorEnv`` and on a
  ``SyncVectorEnv`` of ``rlbench/CartPole-v1``, SB3 PPO (rl-zoo's hyperparameters) on the
  ``SyncVectorEnv`` (SB3 cannot use the native one: it resets ``NEXT_STEP`` only);
- HalfCheetah-v5 (``training_throughput_mujoco``): the zoo's fast_ppo entry (CleanRL's
  ``ppo_continuous_action`` settings on 8 envs) beside SB3 PPO with rl-zoo's tuned entry (one
  env, 20 epochs of batch-64 updates), both on the card's ``SyncVectorEnv``;
- QuadHover-v0: fast_ppo on the batched NumPy backend with 1 and 2 torch threads, SB3 PPO on
  the batched backend (32 envs, ``VectorEnvToSB3``) and on Gymnasium's ``SyncVectorEnv`` over
  8 PyBullet envs (SB3 defaults, as ``ppo.yaml``). A call trains at least one whole rollout,
  so SB3's chunks here are a rollout of 2,048 steps per env (about 20-40 s).

``time_to_solve_cartpole``, ``time_to_solve_quadhover``: wall time from nothing to a goal,
one training seed per round (rounds are seeds, the variants interleaved), as the median over
seeds. SB3 runs one ``learn`` of its entry's whole budget (so its ``lin_`` schedules decay as in
``rlbench train``), stopped by a callback. A run is timed from the
construction of its envs and model; every few seconds of training (``every``) the
clock is paused and the policy is scored deterministically on the card's evaluation seeds
(``card.evaluation.seeds``: 50 episodes from seed 1,000,000), the time to the goal being the
training time of the first snapshot that scores it. Evaluations are not counted. A run that
does not reach the goal by the cap counts as the cap (``reached: false`` in its details; a
ratio against it is then a bound).

- CartPole-v1, goal a mean return of 475 (cap 60 s): fast_ppo on the native vector env
  (a snapshot every 0.5 s) beside SB3 PPO with rl-zoo's hyperparameters on the
  ``SyncVectorEnv`` (every 1 s; its rollouts are 256 steps). A snapshot is first
  screened on 5 episodes; only one whose 5 episodes average 475 is scored on all 50.
- QuadHover-v0, goal a success rate of 0.9 *on PyBullet* (cap 180 s; issue 13's goal is
  60 s): fast_ppo trained on the batched NumPy backend, a snapshot every 5 s scored on the
  PyBullet env (contacts the trainer never saw), beside SB3 PPO on 8 PyBullet envs
  (``SyncVectorEnv``, a snapshot every 20 s) given the 60 s. A snapshot is first screened on
  the batched NumPy backend (same 50 seeds, in one call); only one with NumPy success of at
  least 0.8 is flown on PyBullet. Every snapshot's screen numbers are kept (``runs``).

``--quick``: one round of a few seconds each, 2-5 evaluation episodes; numbers are rough.
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

import rlbench_suite  # noqa: F401  (registers the rlbench/ ids)
from benchmarks.harness import Case, Comparison, Settings, Timed, Variant, benchmark
from rlbench_suite.evaluation.batched import evaluate_vector

CARTPOLE, QUAD, CHEETAH = "rlbench/CartPole-v1", "rlbench/QuadHover-v0", "rlbench/HalfCheetah-v5"
SAME_STEP = {"autoreset_mode": AutoresetMode.SAME_STEP}


# -- the CPU burn -----------------------------------------------------------------------------


def burn(n: int) -> int:
    """Pure-Python integer arithmetic: ``n`` units of about a millisecond each."""
    total = 0
    for i in range(n * 20_000):
        total = (total + i * i) % 1_000_003
    return total


class Burner:
    """``n`` burn units in ``processes`` processes (a pool started once, outside the timing)."""

    def __init__(self, processes: int) -> None:
        self.processes = processes
        ctx = multiprocessing.get_context("fork")
        self.pool = ctx.Pool(processes) if processes > 1 else None

    def __call__(self, n: int) -> int:
        if self.pool is None:
            burn(n)
        else:
            share = [n // self.processes + (i < n % self.processes) for i in range(self.processes)]
            self.pool.map(burn, share)
        return n

    def describe(self) -> str:
        return f"pure-Python burn in {self.processes} process(es)"

    def close(self) -> None:
        if self.pool is not None:
            self.pool.terminate()


@benchmark("cpu_burn")
def cpu_burn(settings: Settings) -> list[Case]:
    """The machine's 2-process speed-up on pure CPU work (1 process's time / 2 processes')."""
    return [
        Case(
            env="pure-Python burn",
            variants=[
                Variant(f"{k} process{'es' if k > 1 else ''}", lambda k=k: Burner(k))
                for k in (1, 2)
            ],
            comparisons=[Comparison("1 process", "2 processes")],
            work_per_round=200,
            unit="ms-units",
            rounds=4 if settings.quick else 20,
            clock="wall",
        )
    ]


# -- trainers as workloads ----------------------------------------------------------------------


def _params(algo: str, env_id: str, **override: Any) -> Any:
    from rlbench_suite.baselines.algorithms import get_algorithm
    from rlbench_suite.baselines.hyperparams import load_hyperparams

    params = load_hyperparams(get_algorithm(algo), env_id)
    fields = type(params.entry).model_fields
    entry = params.entry.model_copy(update={k: v for k, v in override.items() if k in fields})
    kwargs = {**params.algo_kwargs, **{k: v for k, v in override.items() if k not in fields}}
    return type(params)(params.algo, params.env_id, entry, kwargs, params.path)


def cartpole_native(n: int) -> gym.vector.VectorEnv:
    """Gymnasium's native vector CartPole (``NEXT_STEP`` autoreset only)."""
    return gym.make_vec("CartPole-v1", n, vectorization_mode="vector_entry_point")


def card_sync(env_id: str, **env_kwargs: Any) -> Callable[[int], gym.vector.VectorEnv]:
    def make(n: int) -> gym.vector.VectorEnv:
        return gym.make_vec(env_id, n, vectorization_mode="sync", vector_kwargs=SAME_STEP,
                            **env_kwargs)  # fmt: skip

    return make


def quad_batched(n: int) -> gym.vector.VectorEnv:
    return gym.make_vec(QUAD, n, vectorization_mode="vector_entry_point", **SAME_STEP)


class FastPPO:
    """fast_ppo training on; a call trains whole rollouts until ``n`` more steps are done."""

    name = "fast_ppo"

    def __init__(self, make_envs: Callable[[int], Any], env_id: str, seed: int = 0,
                 threads: int = 1, anneal: bool = False, **override: Any) -> None:  # fmt: skip
        from rlbench_suite.baselines import fast_ppo

        self.fast_ppo, self.seed, self.threads = fast_ppo, seed, threads
        params = _params("fast_ppo", env_id, **override)
        self.envs = make_envs(params.entry.n_envs)
        # anneal: the learning rate decays over the entry's n_timesteps, as in `rlbench train`
        # (training stops there); else it stays at its initial value (throughput)
        budget = params.entry.n_timesteps if anneal else 10**12
        self.cfg = fast_ppo.PPOConfig(**params.algo_kwargs, total_timesteps=budget)
        self.state = fast_ppo.new_state(self.envs, self.cfg, seed)

    @property
    def steps(self) -> int:
        return self.state.global_step

    def __call__(self, n: int) -> int:
        start = self.steps
        self.fast_ppo.train(self.envs, self.cfg, self.seed, state=self.state, threads=self.threads,
                            on_update=lambda s: s.global_step >= start + n)  # fmt: skip
        return self.steps - start

    def act(self, obs: np.ndarray) -> np.ndarray:
        return self.state.agent.predict(obs)

    def run_until(self, stop: Callable[[], bool]) -> None:
        """Train to the budget, asking ``stop()`` at every rollout boundary."""
        if not stop():
            self.fast_ppo.train(self.envs, self.cfg, self.seed, state=self.state,
                                threads=self.threads, on_update=lambda _: stop())  # fmt: skip

    def describe(self) -> str:
        return f"fast_ppo {self.envs} threads={self.threads} {self.cfg}"

    def stats(self) -> dict[str, Any]:
        return {"num_envs": self.envs.num_envs, "steps": self.steps, "threads": self.threads}

    def close(self) -> None:
        self.envs.close()


class SB3Trainer:
    """An SB3 algorithm training on with its entry's hyperparameters; a call is ``learn`` of at
    least ``n`` more steps. ``make_envs(n)`` gives the Gymnasium vector env (behind SB3's
    adapter), or with ``sb3_env`` the SB3 VecEnv itself (e.g. ``rlbench train``'s own)."""

    def __init__(self, algo: str, make_envs: Callable[[int], Any], env_id: str,
                 seed: int | None = 0, sb3_env: bool = False, **override: Any) -> None:  # fmt: skip
        from rlbench_suite.baselines.algorithms import get_algorithm
        from rlbench_suite.baselines.hyperparams import new_sb3_class_model
        from rlbench_suite.wrappers.sb3 import VectorEnvToSB3

        params = _params(algo, env_id, **override)
        self.name, self.budget = f"sb3 {algo}", params.entry.n_timesteps
        made = make_envs(params.entry.n_envs)
        self.env = made if sb3_env else VectorEnvToSB3(made)
        self.model = new_sb3_class_model(get_algorithm(algo).load_class(), params, self.env, seed)
        self.started = False

    @property
    def steps(self) -> int:
        return int(self.model.num_timesteps)

    def __call__(self, n: int, callback: Any = None) -> int:
        import torch

        torch.set_num_threads(1)
        start = self.steps
        self.model.learn(n, reset_num_timesteps=not self.started, callback=callback)
        self.started = True
        return self.steps - start

    def act(self, obs: np.ndarray) -> np.ndarray:
        return self.model.predict(obs, deterministic=True)[0]

    def run_until(self, stop: Callable[[], bool]) -> None:
        """One ``learn`` of the entry's budget (so ``lin_`` schedules decay over it, as in
        ``rlbench train``), asking ``stop()`` after every step (the policy is the same
        through a rollout)."""
        from stable_baselines3.common.callbacks import BaseCallback

        class Stop(BaseCallback):
            def _on_step(self) -> bool:
                return not stop()

        import torch

        torch.set_num_threads(1)
        if not stop():
            self.model.learn(self.budget, callback=Stop())

    def describe(self) -> str:
        venv = getattr(self.env, "venv", self.env)
        return f"SB3 {type(self.model).__name__} on {venv}"

    def stats(self) -> dict[str, Any]:
        return {"num_envs": self.env.num_envs, "steps": self.steps}

    def close(self) -> None:
        self.env.close()


class SB3PPO(SB3Trainer):
    """SB3's PPO (the peer of fast_ppo)."""

    def __init__(self, make_envs: Callable[[int], Any], env_id: str, seed: int = 0,
                 **override: Any) -> None:  # fmt: skip
        super().__init__("ppo", make_envs, env_id, seed, **override)


# -- training throughput -----------------------------------------------------------------------


@benchmark("training_throughput")
def training_throughput(settings: Settings) -> list[Case]:
    """Env-steps/s including updates: fast_ppo vs SB3 PPO, and each backend under SB3."""
    quick = settings.quick
    sb3_quad = {"n_steps": 64} if quick else {}  # quick: short rollouts, rough numbers
    fast, fast2 = "fast_ppo numpy batched", "fast_ppo numpy batched, 2 threads"
    sb3_native, sb3_sync = "sb3 ppo numpy batched x32", "sb3 ppo SyncVectorEnv pybullet x8"
    return [
        Case(
            env="CartPole-v1",
            variants=[
                Variant("fast_ppo native vector", lambda: FastPPO(cartpole_native, CARTPOLE)),
                Variant("fast_ppo SyncVectorEnv", lambda: FastPPO(card_sync(CARTPOLE), CARTPOLE)),
                Variant("sb3 ppo SyncVectorEnv", lambda: SB3PPO(card_sync(CARTPOLE), CARTPOLE)),
            ],
            comparisons=[
                Comparison("fast_ppo native vector", "sb3 ppo SyncVectorEnv"),
                Comparison("fast_ppo SyncVectorEnv", "sb3 ppo SyncVectorEnv"),
                Comparison("fast_ppo native vector", "fast_ppo SyncVectorEnv"),
            ],
            work_per_round=8192,
            rounds=2 if quick else 6,
            clock="wall",
        ),
        Case(
            env="QuadHover-v0",
            variants=[
                Variant(fast, lambda: FastPPO(quad_batched, QUAD)),
                Variant(fast2, lambda: FastPPO(quad_batched, QUAD, threads=2)),
                Variant(sb3_native, lambda: SB3PPO(quad_batched, QUAD, **sb3_quad)),
                Variant(sb3_sync, lambda: SB3PPO(card_sync(QUAD), QUAD, n_envs=8, **sb3_quad)),
            ],
            comparisons=[
                Comparison(fast, sb3_native),
                Comparison(fast, sb3_sync),
                Comparison(sb3_native, sb3_sync),
                Comparison(fast, fast2),  # the speed-up of a second torch thread
            ],
            work_per_round=2_048 if quick else 16_384,  # quick: one rollout of each
            rounds=1 if quick else 2,
            clock="wall",
            warmup=False,  # an SB3 call is a whole rollout either way
        ),
    ]


@benchmark("training_throughput_mujoco")
def training_throughput_mujoco(settings: Settings) -> list[Case]:
    """Env-steps/s including updates on HalfCheetah: the zoo's fast_ppo entry (CleanRL's
    settings, 8 envs) beside SB3 PPO with rl-zoo's tuned entry (1 env), both SyncVectorEnv."""
    quick = settings.quick
    fast, sb3 = "fast_ppo SyncVectorEnv x8", "sb3 ppo (rl-zoo) SyncVectorEnv x1"
    fast_kw, sb3_kw = ({"num_steps": 64}, {"n_steps": 64}) if quick else ({}, {})
    return [
        Case(
            env="HalfCheetah-v5",
            variants=[
                Variant(fast, lambda: FastPPO(card_sync(CHEETAH), CHEETAH, **fast_kw)),
                Variant(sb3, lambda: SB3PPO(card_sync(CHEETAH), CHEETAH, **sb3_kw)),
            ],
            comparisons=[Comparison(fast, sb3)],
            work_per_round=512 if quick else 4_096,
            rounds=1 if quick else 3,
            clock="wall",
        )
    ]


# -- time to solve -----------------------------------------------------------------------------


def _next_step(env_id: str, **kwargs: Any) -> Callable[[int], gym.vector.VectorEnv]:
    def make(n: int) -> gym.vector.VectorEnv:
        return gym.make_vec(env_id, n, vectorization_mode="sync", **kwargs)

    return make


Screen = Callable[[Callable[[np.ndarray], np.ndarray], list[int]], tuple[bool, dict[str, float]]]


class Goal:
    """A goal on the card's evaluation seeds, with a cheap screen before the full score.

    ``screen(act, seeds)`` says whether the policy is worth the full score, and its numbers
    (kept in the snapshot's record as ``screen_*``).
    """

    def __init__(self, env_id: str, metric: str, threshold: float, episodes: int,
                 screen: Screen) -> None:  # fmt: skip
        from rlbench_suite import get_card

        self.seeds = get_card(env_id).evaluation.seeds[:episodes]
        self.env_id, self.metric, self.threshold, self.screen = env_id, metric, threshold, screen

    def reached(self, act: Callable[[np.ndarray], np.ndarray]) -> tuple[bool, dict[str, float]]:
        worth, screened = self.screen(act, self.seeds)
        record = {f"screen_{k}": round(v, 4) for k, v in screened.items()}
        if not worth:
            return False, record
        score = evaluate_vector(_next_step(self.env_id), act, self.seeds)
        return score[self.metric] >= self.threshold, {**record, **score}


def screen_cartpole(act: Callable, seeds: list[int]) -> tuple[bool, dict[str, float]]:
    """The first 5 evaluation episodes average 475."""
    score = evaluate_vector(_next_step(CARTPOLE), act, seeds[:5])
    return score["mean_return"] >= 475, score


def screen_quad(act: Callable, seeds: list[int]) -> tuple[bool, dict[str, float]]:
    """Success of at least 0.8 on the batched NumPy backend, the same seeds, in one call."""
    score = evaluate_vector(lambda n: gym.make_vec(QUAD, n), act, seeds)
    return score["success_rate"] >= 0.8, score


class ToGoal:
    """A call trains one new seed from nothing until ``goal`` is reached or ``cap`` seconds of
    training have passed, scoring a snapshot every ``every`` seconds with the clock paused;
    returns ``Timed(1, time to the goal or the cap)``."""

    def __init__(self, make_trainer: Callable[[int], Any], goal: Goal, every: float,
                 cap: float, first_seed: int = 0) -> None:  # fmt: skip
        self.make_trainer, self.goal, self.every, self.cap = make_trainer, goal, every, cap
        self.seed, self.runs, self.trainer_text = first_seed, [], ""

    def __call__(self, n: int) -> Timed:
        seed, self.seed = self.seed, self.seed + 1
        started, paused = time.perf_counter(), 0.0
        trainer = self.make_trainer(seed)
        self.trainer_text = trainer.describe()
        run: dict[str, Any] = {"seed": seed, "reached": False, "snapshots": []}
        next_check = self.every

        def check() -> bool:
            nonlocal paused, next_check
            now = time.perf_counter()
            trained = now - started - paused
            if trained < next_check and trained < self.cap:
                return False
            next_check = (trained // self.every + 1) * self.every
            reached, score = self.goal.reached(trainer.act)
            run["snapshots"].append({"time_s": round(trained, 2), "steps": trainer.steps,
                                     **score})  # fmt: skip
            paused += time.perf_counter() - now
            if reached and trained > self.cap:  # a rollout ran past the cap: too late
                run["snapshots"][-1]["after_cap"] = True
            elif reached:
                run.update(reached=True, time_s=round(trained, 3), steps=trainer.steps)
            return reached or trained >= self.cap

        try:
            trainer.run_until(check)
        finally:
            trainer.close()
        run.setdefault("time_s", round(self.cap, 3))
        self.runs.append(run)
        return Timed(1, run["time_s"])

    def describe(self) -> str:
        return self.trainer_text

    def stats(self) -> dict[str, Any]:
        times = [r["time_s"] for r in self.runs]
        return {
            "goal": f"{self.goal.metric} >= {self.goal.threshold} on {self.goal.env_id}, "
            f"{len(self.goal.seeds)} evaluation episodes",
            "cap_s": self.cap,
            "median_time_s": statistics.median(times) if times else None,
            "times_s": times,
            "reached": [r["reached"] for r in self.runs],
            "runs": self.runs,
        }


def _to_goal_cases(settings: Settings) -> dict[str, Case]:
    quick = settings.quick
    seeds, episodes = (1, 5) if quick else (5, 50)
    cart = Goal(CARTPOLE, "mean_return", 475.0, episodes, screen_cartpole)
    quad = Goal(QUAD, "success_rate", 0.9, 2 if quick else episodes, screen_quad)
    cart_cap, quad_cap, sb3_quad_cap = (3.0, 3.0, 3.0) if quick else (60.0, 180.0, 60.0)
    fast_cart, sb3_cart = "fast_ppo native vector", "sb3 ppo SyncVectorEnv (rl-zoo)"
    fast_quad, sb3_quad = "fast_ppo numpy batched", "sb3 ppo SyncVectorEnv pybullet x8"
    sb3_quad_kwargs = {"n_envs": 8, **({"n_steps": 64} if quick else {})}

    def fast(make_envs: Callable, env_id: str, goal: Goal, every: float, cap: float) -> Variant:
        trainer = lambda s: FastPPO(make_envs, env_id, seed=s, anneal=True)  # noqa: E731
        return Variant(fast_cart if env_id == CARTPOLE else fast_quad,
                       lambda: ToGoal(trainer, goal, every, cap))  # fmt: skip

    def sb3(name: str, env_id: str, goal: Goal, every: float, cap: float, **kw: Any) -> Variant:
        trainer = lambda s: SB3PPO(card_sync(env_id), env_id, seed=s, **kw)  # noqa: E731
        return Variant(name, lambda: ToGoal(trainer, goal, every, cap))

    common = {"work_per_round": 1, "unit": "solves", "rounds": seeds, "clock": "wall",
              "warmup": False}  # fmt: skip
    return {
        "cartpole": Case(
            env="CartPole-v1 to mean return 475",
            variants=[
                fast(cartpole_native, CARTPOLE, cart, 0.5, cart_cap),
                sb3(sb3_cart, CARTPOLE, cart, 1.0, cart_cap),
            ],
            comparisons=[Comparison(fast_cart, sb3_cart)],
            **common,
        ),
        "quadhover": Case(
            env="QuadHover-v0 to PyBullet success 0.9",
            variants=[
                fast(quad_batched, QUAD, quad, 5.0, quad_cap),
                sb3(sb3_quad, QUAD, quad, 20.0, sb3_quad_cap, **sb3_quad_kwargs),
            ],
            comparisons=[Comparison(fast_quad, sb3_quad)],
            **common,
        ),
    }


@benchmark("time_to_solve_cartpole")
def time_to_solve_cartpole(settings: Settings) -> list[Case]:
    """Wall time to a mean return of 475 on CartPole-v1 (median over seeds): fast_ppo vs SB3."""
    return [_to_goal_cases(settings)["cartpole"]]


@benchmark("time_to_solve_quadhover")
def time_to_solve_quadhover(settings: Settings) -> list[Case]:
    """Wall time to PyBullet success 0.9 on QuadHover-v0 (median over seeds): fast_ppo vs SB3."""
    return [_to_goal_cases(settings)["quadhover"]]
