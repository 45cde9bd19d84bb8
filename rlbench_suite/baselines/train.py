"""One training run: ``rlbench train ID --algo ALGO``, as a function (:func:`train`).

A run trains an SB3 algorithm (or one of the suite's own, ``native_run``; an offline one on a
dataset, ``offline_run``) on a card's environment with the hyperparameters of
``baselines/hyperparams/<algo>.yaml`` (or ``--hyperparams FILE``), checkpoints at rollout
boundaries, writes a learning curve, and ends with the policy as ONNX, scored by the
evaluation harness. Its folder (``<out>/<env-name>/<algo>/seed-<S>/``)::

    run.json                  hyperparameters, seed, budget (asked; budget_steps: trained,
                              whole rollouts, budget.py), versions, wall time, status
    curve.csv                 the learning curve (curves.COLUMNS)
    checkpoints/step-<N>/     the newest checkpoints (checkpoints.py)
    model.zip                 the final model, SB3's own format
    policy.onnx               the final deterministic policy on raw observations
    policy.onnx.meta.json     train_seeds, training_budget_steps, algo, env_id
    result.json               the harness's Result for policy.onnx under the card's protocol

``resume=True`` continues the run in that folder from its newest checkpoint, and refuses
if the hyperparameters, seed or budget recorded there differ.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rlbench_suite.baselines.algorithms import get_algorithm
from rlbench_suite.baselines.native_run import AGENT_FILE, NativeRun
from rlbench_suite.baselines.sb3_run import (
    RUN_FILE,
    Run,
    RunInterrupted,
    TrainConfig,
    TrainProgress,
    TrainReport,
    run_dir_for,
    versions,
)
from rlbench_suite.baselines.training_envs import (
    SeedOverlapError,
    TrainError,
    card_for,
    make_training_env,
    make_vector_env,
    training_seeds,
)

__all__ = [
    "AGENT_FILE",
    "RUN_FILE",
    "RunInterrupted",
    "SeedOverlapError",
    "TrainConfig",
    "TrainError",
    "TrainProgress",
    "TrainReport",
    "card_for",
    "make_training_env",
    "make_vector_env",
    "run_dir_for",
    "train",
    "training_seeds",
    "versions",
]


def train(
    config: TrainConfig,
    *,
    on_progress: Callable[[TrainProgress], None] | None = None,
    callbacks: Sequence[Any] = (),
    on_notice: Callable[[str], None] | None = None,
) -> TrainReport:
    """Train, checkpoint, export and score one run (module docstring); return its report.

    ``callbacks`` are extra SB3 callbacks; ``on_notice`` gets the one line saying how many
    steps are trained where the budget is not a whole number of rollouts (``budget.py``).
    Raises :class:`TrainError` (and its :class:`SeedOverlapError`), ``UnknownEnvError``,
    ``UnknownAlgorithmError`` or ``HyperparamsError`` before training when the run cannot be
    made; an interrupted run (``KeyboardInterrupt``) leaves ``status: interrupted`` and its
    checkpoints behind.
    """
    algo = get_algorithm(config.algo)
    if algo.offline:
        from rlbench_suite.baselines.offline_run import OfflineRun

        return OfflineRun(config, on_progress, on_notice).run(callbacks)
    run = NativeRun if algo.native else Run
    return run(config, on_progress, on_notice).run(callbacks)
