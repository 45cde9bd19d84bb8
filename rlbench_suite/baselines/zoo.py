"""The reference zoo: its manifest, its committed results, and their summaries on the cards.

``baselines/zoo.yaml`` lists what is trained (card, algorithm, budget, training seeds);
``scripts/train_zoo.py`` trains and commits it; this module reads what was committed. A
card's trained baseline is summarized as the interquartile mean over its training seeds of
each seed's mean primary metric (and normalized score), with a stratified-bootstrap 95%
interval (:func:`rlbench_suite.core.metrics.interval_estimates`).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from rlbench_suite import __version__
from rlbench_suite.baselines.curve_report import RunData, load_run, score_table, table_markdown
from rlbench_suite.core.cards import EnvCard, Interval, TrainedBaseline
from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.metrics import interval_estimates
from rlbench_suite.core.result import Result, load_result
from rlbench_suite.core.scoring import normalized_score, primary_values
from rlbench_suite.core.summary import BOOTSTRAP_REPS, BOOTSTRAP_SEED
from rlbench_suite.resources import content_dir

REFERENCE_SUITE = "rlbench-reference"


MAX_ARTIFACT_BYTES = 5 * 1024 * 1024
"""The largest file the zoo commits (the repository holds small artifacts only)."""


def copy_run_artifacts(run: Path, policy_dir: Path, result_dir: Path) -> None:
    """Copy a finished run's ONNX policy (+ sidecar) into ``policy_dir`` and its ``run.json``
    and ``curve.csv`` into ``result_dir``, refusing any file over :data:`MAX_ARTIFACT_BYTES`."""
    import shutil

    policy_dir.mkdir(parents=True, exist_ok=True)
    result_dir.mkdir(parents=True, exist_ok=True)
    for name, folder in (("policy.onnx", policy_dir), ("policy.onnx.meta.json", policy_dir),
                         ("run.json", result_dir), ("curve.csv", result_dir)):  # fmt: skip
        if (run / name).stat().st_size > MAX_ARTIFACT_BYTES:
            raise SystemExit(f"{run / name} is over 5 MB; the zoo commits only small files")
        shutil.copyfile(run / name, folder / name)
"""The suite of cards with a complete trained baseline (every seed of the zoo committed)."""


@dataclass(frozen=True)
class ZooEntry:
    """One line of ``baselines/zoo.yaml``."""

    env: str
    algo: str
    budget: int
    seeds: tuple[int, ...]
    expert_only: bool = False
    """Trained only to measure the card's expert reference (``expert_only: true``; one seed
    may do): the card gains no ``[[trained]]`` baseline from it and does not join the suite."""
    trained_on: str | None = None
    """Scored only (``trained_on: ID``): the policies are the runs of the same algorithm and
    seeds on card ``ID`` (its own entry trains them), scored here by the harness under this
    card's protocol, e.g. Kitchen's learner beside the held-out partners of
    ``rlbench/KitchenHeldOut-v0``. Its results hold the harness result and the training
    record; the policies, curves and compute are the training card's."""


@dataclass(frozen=True)
class SeedRun:
    """One committed seed: its harness result and its training record."""

    seed: int
    result: Result
    run: dict[str, Any]


def zoo_entries(only: str | None = None) -> list[ZooEntry]:
    """The zoo's entries in order (``only``: those whose env id contains it)."""
    raw = yaml.safe_load((content_dir("baselines") / "zoo.yaml").read_text(encoding="utf-8"))
    entries = [ZooEntry(e["env"], e["algo"], int(e["budget"]), tuple(e["seeds"]),
                        bool(e.get("expert_only", False)), e.get("trained_on"))
               for e in raw]  # fmt: skip
    return [e for e in entries if only is None or only in e.env]


def policy_card(entry: ZooEntry) -> EnvCard:
    """The card whose runs an entry's policies are: its own, or the one it is ``trained_on``."""
    return get_card(entry.trained_on or entry.env)


def baseline_name(card: EnvCard, algo: str, seed: int | None = None) -> str:
    """``<env-name>/<algo>[/seed-<S>]``, the name ``baseline:`` specs use."""
    return f"{card.name}/{algo}" + (f"/seed-{seed}" if seed is not None else "")


def results_dir(card: EnvCard, algo: str, seed: int | None = None) -> Path:
    """Where the committed results of a baseline (or one seed of it) live."""
    return content_dir("baselines") / "results" / baseline_name(card, algo, seed)


def committed_runs(card: EnvCard, algo: str, seeds: tuple[int, ...]) -> list[SeedRun]:
    """The seeds of ``seeds`` whose results are committed, in order."""
    runs = []
    for seed in seeds:
        folder = results_dir(card, algo, seed)
        if (folder / "result.json").is_file():
            record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
            runs.append(SeedRun(seed, load_result(folder / "result.json"), record))
    return runs


def _iqm(values: list[float]) -> Interval:
    estimate = interval_estimates(np.array(values), "iqm", reps=BOOTSTRAP_REPS,
                                  random_state=BOOTSTRAP_SEED)["iqm"]  # fmt: skip
    return Interval(point=estimate.point, low=estimate.low, high=estimate.high)


def seed_means(card: EnvCard, runs: list[SeedRun]) -> list[float]:
    """Each seed's mean primary metric over its evaluation episodes."""
    return [float(primary_values(card.primary_metric, r.result.returns,
                                 r.result.successes).mean()) for r in runs]  # fmt: skip


def seeds_below_random(card: EnvCard, runs: list[SeedRun]) -> list[int]:
    """The training seeds whose policy does not beat the card's random reference."""
    if card.reference.random is None:
        return []
    floor = card.reference.random.value
    return [r.seed for r, m in zip(runs, seed_means(card, runs), strict=True) if not m > floor]


def beats_random(card: EnvCard, baseline: TrainedBaseline) -> bool:
    """Whether a trained baseline beats the card's random reference: the lower end of its 95%
    interval over seeds (of the IQM) lies above it, not just its point estimate."""
    random = card.reference.random
    return random is None or baseline.value.low > random.value


def summarize(card: EnvCard, entry: ZooEntry, runs: list[SeedRun]) -> TrainedBaseline:
    """The card's trained baseline from its committed seeds."""
    means = seed_means(card, runs)
    references = card.reference_values()
    normalized = None
    if references is not None:
        normalized = _iqm([float(normalized_score(m, *references)) for m in means])
    return TrainedBaseline(
        name=f"baseline:{baseline_name(policy_card(entry), entry.algo)}",
        algo=entry.algo,
        budget_steps=max(int(r.run.get("steps", entry.budget)) for r in runs),  # as trained
        seeds=[r.seed for r in runs],
        value=_iqm(means),
        normalized=normalized,
        wall_time_s=round(sum(float(r.run.get("wall_time_s", 0.0)) for r in runs), 1),
        results=f"results/{baseline_name(card, entry.algo)}",
        suite_version=__version__,
        measured=dt.date.today(),
    )


REPORT_START = "<!-- zoo report: written by `python scripts/train_zoo.py --report`; do not edit -->"
REPORT_END = "<!-- end of zoo report -->"


def reported_runs(entries: list[ZooEntry] | None = None) -> list[RunData]:
    """The committed runs the docs report: every seed of each complete entry that trained
    (not ``expert_only``, not scored-only ``trained_on``; an entry still training is left out
    until all its seeds are in)."""
    runs = []
    for entry in zoo_entries() if entries is None else entries:
        if entry.trained_on:
            continue
        card = get_card(entry.env)
        folders = [results_dir(card, entry.algo, seed) for seed in entry.seeds]
        if not entry.expert_only and all((f / "result.json").is_file() for f in folders):
            runs += [load_run(folder) for folder in folders]
    return runs


def report_markdown(runs: list[RunData], image_dir: str) -> str:
    """The docs' zoo section: the score table, the total compute and a curve image per env
    (``image_dir``/``curves-<env-name>.svg``, as :func:`~.curve_report.build_report` names them)."""
    hours = sum(r.wall_time_s for r in runs) / 3600
    names = sorted({get_card(r.env_id).name for r in runs})
    images = "\n".join(f"![Learning curves of {n}]({image_dir}/curves-{n}.svg)" for n in names)
    return (
        f"{REPORT_START}\n\n{table_markdown(score_table(runs))}\n"
        f"Total training compute of what is committed: {len(runs)} runs, {hours:.1f} hours of "
        "wall time, each run on one CPU core of the project's 2-core machines (under `nice`, "
        "beside other work, so the times are upper bounds).\n\n"
        f"{images}\n\n{REPORT_END}"
    )
