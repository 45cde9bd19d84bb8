"""The demo's training: ``fast_ppo`` on QuadHover's batched NumPy backend, for a step budget.

The hyperparameters are the zoo's (``baselines/hyperparams/fast_ppo.yaml``), with the
learning-rate schedule of the entry's full budget, as ``benchmarks/bench_training.py`` times
it to a goal. Every :data:`SCREEN_EVERY_UPDATES` updates the policy is flown on the batched
backend for the curve seeds (``baselines.curves.curve_seeds``: inside the training range,
never an evaluation seed); the best snapshot is kept, and training stops once a snapshot
reaches :data:`GOAL` there, at the step budget, or at the wall-time cap. Training is
deterministic per seed (one torch thread) and the screens fall on fixed updates, so the same
seed stops at the same step on every run on one machine (a busy one only takes longer); on
another kind of CPU torch's kernels may round differently, and the step may differ. The snapshot
is exported to ONNX with its sidecar; the caller scores it on the PyBullet env with the
harness.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import gymnasium as gym

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.evaluation.batched import evaluate_vector
from rlbench_suite.policies.core import PolicyMetadata, file_sha256, write_metadata

if TYPE_CHECKING:
    from rlbench_suite.demo.board import NewMethod

QUAD_ID = "rlbench/QuadHover-v0"
DEMO_SEED = 1
"""The training seed: of the five that the training benchmark times to PyBullet success 0.9
with these hyperparameters, the quickest (its times and steps: ``time_to_solve_quadhover`` in
benchmarks/results/training.json). Training is deterministic (one torch thread), so the same
seed learns the same way here, in the same steps."""
SCREEN_EVERY_UPDATES = 5
"""Updates (of ``n_envs x num_steps`` env steps each) between two screens of the policy."""
SCREEN_EPISODES = 50
GOAL = 0.9
"""Success on the batched backend at which training stops early (PyBullet adds contacts
with the floor at take-off, so the goal there is set above the 0.9 aimed at on PyBullet)."""


@dataclass(frozen=True)
class Screen:
    """One look at the policy during training."""

    steps: int
    seconds: float
    success_rate: float
    mean_return: float


@dataclass(frozen=True)
class QuadRun:
    """What a demo training made."""

    policy: Path
    steps: int
    """Environment steps trained (the whole run; the kept snapshot's are ``best.steps``)."""
    seconds: float
    n_envs: int
    best: Screen
    screens: list[Screen]
    stopped: str
    """Why training stopped, as a sentence."""
    reached: bool
    """Whether the kept snapshot reached :data:`GOAL` on the batched backend."""

    @property
    def steps_per_s(self) -> float:
        """Training speed (screens not counted)."""
        return self.steps / max(self.seconds, 1e-9)


DEMO_METHOD = "demo-trained fast_ppo"
"""The leaderboard method of the policy the demo trained: one name for every demo, holding only
the newest demo's policy (:func:`rlbench_suite.demo.board.store` with ``replace``)."""


def demo_method(card: EnvCard, run: QuadRun) -> NewMethod:
    """The leaderboard method of a policy the demo trained: :data:`DEMO_METHOD`, whose rows a
    new demo policy replaces, so the run just trained is ranked on its own (never pooled with
    an earlier demo's policy or with the shipped baseline's seeds) and re-runs add no method."""
    from rlbench_suite.demo.board import NewMethod, zoo_method

    short = file_sha256(run.policy)[:8]
    return NewMethod(
        name=DEMO_METHOD,
        description=(
            f"fast_ppo trained on {card.id} by `rlbench demo` on the machine that ran it: "
            f"seed {DEMO_SEED}, {run.seconds:.0f} s of wall time, the snapshot at "
            f"{run.best.steps:,} steps (policy SHA-256 {short}...). The newest demo's policy "
            f"only (a new demo replaces it), not the suite's shipped baseline "
            f"({zoo_method(card, 'fast_ppo')})."
        ),
        replace=True,
    )


Progress = Callable[[int, float, Screen | None], None]
"""Called as ``(steps, seconds, last screen)`` after every update."""


def stop_reason(best: Screen, steps: int, seconds: float, budget: int, cap_s: float) -> str:
    """Why a run stopped, as a sentence; one that missed the goal says how to rerun it."""
    if best.success_rate >= GOAL:
        return (f"reached success {best.success_rate:.2f} on the batched backend at "
                f"{best.steps:,} steps")  # fmt: skip
    missed = (f"did not reach success {GOAL} on the batched backend (best "
              f"{best.success_rate:.2f} at {best.steps:,} steps)")  # fmt: skip
    if steps < budget:
        rate = steps / max(seconds, 1e-9)
        return (f"{missed} in {seconds:.0f} s at {rate:,.0f} steps/s, {steps:,} of the "
                f"{budget:,}-step budget: the machine is busy; rerun with --train-seconds "
                f"{max(2 * cap_s, 1.5 * budget / rate):.0f} (a wall-time cap, not a budget)")
    return f"{missed} within its budget of {budget:,} steps; rerun with --train-steps {2 * budget}"


def train_quad(card: EnvCard, folder: Path, steps: int, cap_s: float, seed: int = DEMO_SEED,
               progress: Progress | None = None) -> QuadRun:  # fmt: skip
    """Train for ``steps`` env steps (rounded up to whole updates) or until the goal, within
    ``cap_s`` seconds of wall time (module doc); the best snapshot as ONNX in ``folder``."""
    from rlbench_suite.baselines import fast_ppo
    from rlbench_suite.baselines.algorithms import get_algorithm
    from rlbench_suite.baselines.curves import curve_seeds
    from rlbench_suite.baselines.hyperparams import load_hyperparams
    from rlbench_suite.baselines.training_envs import make_vector_env, training_seeds

    params = load_hyperparams(get_algorithm("fast_ppo"), card.id)
    n_envs = params.entry.n_envs
    seeds = training_seeds(card, seed, n_envs)
    cfg = fast_ppo.PPOConfig(**params.algo_kwargs, total_timesteps=int(params.entry.n_timesteps))
    budget = min(steps, cfg.total_timesteps)
    envs = make_vector_env(card, n_envs)
    state = fast_ppo.new_state(envs, cfg, seed)
    batched = partial(gym.make_vec, card.id, vectorization_mode="vector_entry_point")
    screens: list[Screen] = []
    kept: dict = {}
    started, paused = time.perf_counter(), 0.0

    def look(s: fast_ppo.TrainState, trained: float) -> Screen:
        score = evaluate_vector(batched, s.agent.predict, curve_seeds(SCREEN_EPISODES))
        rate, mean = score["success_rate"], score["mean_return"]
        screens.append(Screen(s.global_step, round(trained, 1), rate, mean))
        if not kept or (rate, mean) > (kept["screen"].success_rate, kept["screen"].mean_return):
            kept.update(screen=screens[-1], agent=copy.deepcopy(s.agent.state_dict()))
        return screens[-1]

    def at_update(s: fast_ppo.TrainState) -> bool:
        nonlocal paused
        now = time.perf_counter()
        trained = now - started - paused
        done = s.global_step >= budget or trained >= cap_s
        if s.update % SCREEN_EVERY_UPDATES == 0 or done:
            done = look(s, trained).success_rate >= GOAL or done
            paused += time.perf_counter() - now
        if progress is not None:
            progress(s.global_step, trained, screens[-1] if screens else None)
        return done

    try:
        fast_ppo.train(envs, cfg, seed, state=state, threads=1, on_update=at_update)
    finally:
        envs.close()
    if not screens or screens[-1].steps != state.global_step:  # the entry's budget ended it
        look(state, time.perf_counter() - started - paused)
    trained_s = time.perf_counter() - started - paused
    best = kept["screen"]
    stopped = stop_reason(best, state.global_step, trained_s, budget, cap_s)
    state.agent.load_state_dict(kept["agent"])
    folder.mkdir(parents=True, exist_ok=True)
    policy = fast_ppo.export_onnx(state.agent, folder / "policy.onnx")
    write_metadata(policy, PolicyMetadata(
        name=f"demo-fast_ppo-{card.name}-seed-{seed}", algo="fast_ppo", env_id=card.id,
        train_seeds=seeds, training_budget_steps=best.steps,
        extra={"trained_s": round(trained_s, 1), "stopped": stopped,
               "screen": {"seeds": "curve seeds", "success_rate": best.success_rate}},
    ))  # fmt: skip
    return QuadRun(policy, state.global_step, trained_s, n_envs, best, screens, stopped,
                   best.success_rate >= GOAL)  # fmt: skip
