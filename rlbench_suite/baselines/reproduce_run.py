"""Reproducing a training run: ``rlbench reproduce RUN_DIR`` (:func:`reproduce_run`).

The run is trained again from what its ``run.json`` records (the hyperparameters themselves,
not the file they came from, the seed, budget and curve settings), into ``out`` (default a
temporary folder, removed afterwards), its final policy scored under the same protocol, and
the two compared: package versions and machine (the results' provenance), the policy (its
artifact hash, seeds, budget), every final-evaluation episode, and the aggregates with their
intervals. Where training is deterministic (PPO on CartPole on the same builds) everything
but the wall times is identical.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from rlbench_suite.baselines.budget import LEGACY
from rlbench_suite.baselines.train import (
    RUN_FILE,
    TrainConfig,
    TrainError,
    TrainProgress,
    train,
)
from rlbench_suite.core.result import IntervalEstimate, Result, load_result
from rlbench_suite.evaluation.reproduce import compare_runs, provenance_changes

RESULT_FILE = "result.json"
COMPARED_POLICY_KEYS = ("artifact_sha256", "train_seeds", "tuning_seeds", "training_budget_steps")


@dataclasses.dataclass(frozen=True)
class RunReproduction:
    """What reproducing a run found (``differences`` empty: reproduced)."""

    original_dir: Path
    again_dir: Path | None
    """The re-trained run's folder; None once a temporary one is removed."""
    differences: list[str]
    version_changes: list[str]
    aggregates: dict[str, tuple[IntervalEstimate | None, IntervalEstimate | None]]
    """Each final aggregate (and the normalized score): (recorded, now)."""
    max_return_difference: float
    episodes: int

    @property
    def identical(self) -> bool:
        return not self.differences


def read_run(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """The run folder and its record, from the folder or its ``run.json``."""
    path = Path(path)
    folder = path.parent if path.name == RUN_FILE else path
    record_file = folder / RUN_FILE
    if not record_file.is_file():
        raise TrainError(f"{path}: not a training run (no {RUN_FILE})")
    record = json.loads(record_file.read_text(encoding="utf-8"))
    if record.get("status") != "finished" or not (folder / RESULT_FILE).is_file():
        raise TrainError(
            f"the run in {folder} has not finished (status {record.get('status')!r}): there is "
            "no final evaluation to compare with; finish it with rlbench train ... --resume"
        )
    return folder, record


def is_training_run(path: str | Path) -> bool:
    """A run folder or a ``run.json`` (``rlbench reproduce`` re-trains those)."""
    path = Path(path)
    return (path / RUN_FILE).is_file() or path.name == RUN_FILE


def reproduce_run(
    path: str | Path,
    out: str | Path | None = None,
    *,
    workers: int = 1,
    on_progress: Callable[[TrainProgress], None] | None = None,
) -> RunReproduction:
    """Re-train the run at ``path`` from its record and compare (module docstring)."""
    folder, record = read_run(path)
    original = load_result(folder / RESULT_FILE)
    root = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="rlbench-reproduce-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        hyperparams = root / f"{record['algo']}-recorded.yaml"
        hyperparams.write_text(
            yaml.safe_dump({record["env_id"]: record["hyperparams"]}, sort_keys=False),
            encoding="utf-8",
        )
        config = TrainConfig(
            env_id=record["env_id"],
            algo=record["algo"],
            seed=int(record["seed"]),
            budget=int(record["budget"]),
            hyperparams=hyperparams,
            out=root,
            device=_recorded_device(record),
            eval_every=int(record["eval_every"]),
            eval_episodes=int(record["eval_episodes"]),
            checkpoint_every=int(record["checkpoint_every"]),
            final_episodes=original.protocol.episodes,
            workers=workers,
            budget_rounding=record.get("budget_rounding", LEGACY),
        )
        report = train(config, on_progress=on_progress)
        again = load_result(report.run_dir / RESULT_FILE)
        reproduction = compare(folder, record, original, report.run_dir, report.run, again)
    except BaseException:
        if out is None:
            shutil.rmtree(root, ignore_errors=True)
        raise
    if out is None:
        shutil.rmtree(root, ignore_errors=True)
        reproduction = dataclasses.replace(reproduction, again_dir=None)
    return reproduction


def compare(
    folder: Path,
    record: dict[str, Any],
    original: Result,
    again_dir: Path,
    again_record: dict[str, Any],
    again: Result,
) -> RunReproduction:
    """The differences between a run and its re-run (wall times are never compared)."""
    differences = []
    for key in ("hyperparams_sha256", "train_seeds", "steps", "curve_seeds"):
        if record.get(key) != again_record.get(key):
            differences.append(
                f"run {key}: {record.get(key)!r} recorded, {again_record.get(key)!r} now"
            )
    if original.protocol_hash != again.protocol_hash:
        differences.append(
            f"protocol hash {original.protocol_hash[:12]} recorded, {again.protocol_hash[:12]} now"
        )
    differences += _curve_differences(folder, again_dir)
    differences += compare_runs(original, again, COMPARED_POLICY_KEYS)
    names = sorted(set(original.aggregates) | set(again.aggregates))
    aggregates = {n: (original.aggregates.get(n), again.aggregates.get(n)) for n in names}
    aggregates["normalized_score"] = (original.normalized_score, again.normalized_score)
    shared = min(len(original.returns), len(again.returns))
    gaps = [
        abs(a - b) for a, b in zip(original.returns[:shared], again.returns[:shared], strict=True)
    ]
    return RunReproduction(
        folder,
        again_dir,
        differences,
        provenance_changes(original, again),
        aggregates,
        max(gaps, default=0.0),
        shared,
    )


def _curve_differences(folder: Path, again_dir: Path) -> list[str]:
    from rlbench_suite.baselines.curves import CURVE_FILE, read_curve

    def rows(path: Path) -> list[dict[str, float]]:
        return [{k: v for k, v in row.items() if k != "wall_time_s"} for row in read_curve(path)]

    before, after = rows(folder / CURVE_FILE), rows(again_dir / CURVE_FILE)
    if before == after or (not before and not after):
        return []
    for index, (a, b) in enumerate(zip(before, after, strict=False)):
        if a != b and not all(a[k] == b[k] or (a[k] != a[k] and b[k] != b[k]) for k in a):
            return [f"learning curve row {index} (step {a['step']:.0f}): {a} recorded, {b} now"]
    if len(before) != len(after):
        return [f"learning curve: {len(before)} rows recorded, {len(after)} now"]
    return []


def _recorded_device(record: dict[str, Any]) -> str:
    """The device ``record``'s run trained on: the CPU for an algorithm that trains there only
    (older records of those wrote whatever ``--device`` was given), else the recorded one."""
    from rlbench_suite.baselines.algorithms import get_algorithm

    return "cpu" if get_algorithm(record["algo"]).cpu_only else record.get("device", "cpu")
