"""The Ray Tune backend of ``rlbench tune`` (imported only for ``--backend ray``).

Ray Tune runs the trials, two at a time, with Ray's Optuna searcher on the study's own storage
and Ray's median stopping rule as the pruner. What a trial does comes from
:mod:`rlbench_suite.baselines.tune`, passed in (``run_trial``, the sampler), so this module
imports nothing of the tuner.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
import ray
from ray import tune
from ray.tune.schedulers import MedianStoppingRule
from ray.tune.search.optuna import OptunaSearch

FINISHED = "finished"
"""Set in a trial's last report when it trained to its budget."""


class PruningOptunaSearch(OptunaSearch):
    """Ray's Optuna searcher, except that a trial the scheduler stopped before its budget is
    told to Optuna as pruned (Ray's own would record it complete, with its last value), as
    the local backend's pruner does."""

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        if result is not None and not result.get(FINISHED):
            result = None  # no value and no error: pruned
        super().on_trial_complete(trial_id, result, error)


class Space:
    """The define-by-run search space (picklable, as Ray saves its searcher)."""

    def __init__(self, sample: Callable[[Any], None]) -> None:
        self.sample = sample

    def __call__(self, trial: Any) -> None:
        self.sample(trial)


def _trainable(
    config: dict[str, Any], spec: Any, run_trial: Callable, pruned: type, metric: str
) -> None:
    """One trial: ``config`` is what the searcher sampled."""

    def report(step: int, value: float) -> bool:
        tune.report({metric: value, "step": step})
        return False  # the scheduler stops the trial itself

    name = f"ray-{tune.get_context().get_trial_id()}"
    try:
        value = run_trial(spec, dict(config), report, name)
    except pruned:
        return  # no finished report: pruned
    tune.report({metric: value, FINISHED: True})


def run(
    *,
    spec: Any,
    run_trial: Callable,
    pruned: type,
    sample: Callable[[Any], None],
    sampler: Any,
    storage_url: str,
    study_name: str,
    metric: str,
    trials: int,
    evaluations: int,
    startup_trials: int,
    study_dir: Path,
    on_complete: Callable[[], None],
) -> None:
    """Run ``trials`` more trials of the stored study on Ray Tune (a local Ray of 2 CPUs
    unless the caller connected to a cluster)."""
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    searcher = PruningOptunaSearch(
        space=Space(sample),
        metric=metric,
        mode="max",
        sampler=sampler,
        storage=optuna.storages.RDBStorage(storage_url),
        study_name=study_name,
    )
    scheduler = MedianStoppingRule(
        time_attr="training_iteration",
        grace_period=max(1, evaluations // 3),
        min_samples_required=max(1, startup_trials),
        min_time_slice=float("inf"),  # never yield to a waiting trial: it would start over
    )

    class Progress(tune.Callback):
        def on_trial_complete(self, *args: Any, **kwargs: Any) -> None:
            on_complete()

    trainable = tune.with_parameters(
        _trainable,
        spec=dataclasses.asdict(spec) if dataclasses.is_dataclass(spec) else spec,
        run_trial=run_trial,
        pruned=pruned,
        metric=metric,
    )
    tuner = tune.Tuner(
        tune.with_resources(trainable, {"cpu": 1}),
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            scheduler=scheduler,
            num_samples=trials,
            max_concurrent_trials=2,
            metric=metric,
            mode="max",
        ),
        run_config=tune.RunConfig(
            name=f"ray-{int(time.time())}",
            storage_path=str((study_dir / "ray").resolve()),
            verbose=0,
            callbacks=[Progress()],
        ),
    )
    try:
        tuner.fit()
    finally:
        if started:
            ray.shutdown()
