"""A grid over one hyperparameter of an offline algorithm, on tuning seeds only: how an
offline entry with ``origin: tuned`` in ``baselines/hyperparams/<algo>.yaml`` was chosen.

    OMP_NUM_THREADS=1 nohup python scripts/sweep_offline.py rlbench/Ant-expert-v0 \\
        rlbench/Ant-medium-v0 --algo td3bc --param alpha --values 2.5 1 0.5 0.25 0.1 \\
        --budget 5000 &                                     # resumable
    python scripts/sweep_offline.py --report                # the tables, from the JSON

Each trial trains ``--algo`` with the dataset's entry (the env's, as ``rlbench train`` finds
it) and one value changed, for ``--budget`` gradient steps, then plays ``--episodes``
episodes of its deterministic policy on the offline id. Seeds are ``rlbench tune``'s
(``baselines.tune``): trial ``k`` seeds torch and its minibatch sampler with
``TRIAL_TRAIN_SEED + k``, and every trial is evaluated on the same seeds from
``TRIAL_EVAL_FIRST_SEED`` (common random numbers), all in ``core.seeds.TUNING_SEEDS``: never a
training seed, an evaluation seed of a card or a dataset's episode. Trials are appended to
``benchmarks/results/offline_sweeps.json`` one by one; a trial already there (same dataset,
algorithm, parameter, value, seed, budget and episodes) is skipped, so the script can be
stopped and started again. The score of a value is the mean normalized score of its trials
over every dataset given.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "offline_sweeps.json"
KEYS = ("dataset", "algo", "param", "value", "seed", "budget", "episodes")
console = Console()


def _load() -> list[dict]:
    if not RESULTS.is_file():
        return []
    return json.loads(RESULTS.read_text(encoding="utf-8"))["trials"]


def _record(row: dict) -> None:
    """Add ``row`` to the JSON, re-read under a file lock so that sweeps running side by side
    keep each other's trials."""
    from filelock import FileLock

    with FileLock(str(RESULTS.with_name(f".{RESULTS.name}.lock"))):
        trials = [t for t in _load() if tuple(t[k] for k in KEYS) != tuple(row[k] for k in KEYS)]
        record = {"what": __doc__.split("\n\n")[0].strip(), "trials": [*trials, row]}
        tmp = RESULTS.with_suffix(f".json.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        tmp.replace(RESULTS)


@dataclasses.dataclass(frozen=True)
class Setup:
    """One dataset of a sweep, checked before any trial trains."""

    card: Any
    algo: Any
    params: Any
    module: Any
    observation_space: Any
    action_space: Any


def setup(dataset_id: str, algo_name: str, param: str, values: list[float]) -> Setup:
    """Check that ``algo_name`` trains on ``dataset_id`` (cached) with an entry, and that
    ``param`` and each value are accepted by its Config; a ValueError or LookupError saying
    what is wrong otherwise (nothing has trained yet)."""
    import difflib
    import importlib

    from rlbench_suite.baselines.algorithms import get_algorithm
    from rlbench_suite.baselines.hyperparams import load_hyperparams, native_config
    from rlbench_suite.baselines.offline_run import offline_algorithm, offline_settings
    from rlbench_suite.baselines.training_envs import TrainError
    from rlbench_suite.core.dataset_cards import get_dataset_card
    from rlbench_suite.datasets.cache import is_cached

    card = get_dataset_card(dataset_id)
    algo, observation_space, action_space = offline_algorithm(get_algorithm(algo_name), card.id)
    params = load_hyperparams(algo, [card.id, card.env_id])
    module = importlib.import_module(algo.package)
    fields = [f.name for f in dataclasses.fields(module.Config)]
    if param not in fields:
        close = difflib.get_close_matches(param, fields, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"--param {param!r} is not a hyperparameter of {algo.package}.Config; "
                         f"{hint}it has {', '.join(fields)}")  # fmt: skip
    for value in values:
        native_config(module.Config, params, {**offline_settings(params), param: value},
                      TrainError)  # fmt: skip
    if not is_cached(card):
        raise FileNotFoundError(f"{card.id} is not in the cache; run `rlbench datasets download "
                                f"{card.id} --build` first")  # fmt: skip
    return Setup(card, algo, params, module, observation_space, action_space)


def trial(s: Setup, param: str, value: float, seed: int, budget: int, episodes: int) -> dict:
    """Train one trial (the trainer's model, one setting changed) and evaluate it: its row."""
    from rlbench_suite.baselines.curves import CurveEvaluator
    from rlbench_suite.baselines.hyperparams import native_config
    from rlbench_suite.baselines.offline_run import build_model, offline_settings
    from rlbench_suite.baselines.training_envs import TrainError
    from rlbench_suite.baselines.tune import TRIAL_EVAL_FIRST_SEED
    from rlbench_suite.core.provenance import cpu_platform

    cfg = native_config(s.module.Config, s.params, {**offline_settings(s.params), param: value},
                        TrainError)  # fmt: skip
    model = build_model(s.module, cfg, s.card, s.observation_space, s.action_space, seed, budget)
    start = time.perf_counter()
    while model.agent.step < budget:
        model.agent.update(model.data.sample(cfg.batch_size))
    evaluator = CurveEvaluator(s.card.id, episodes, first_seed=TRIAL_EVAL_FIRST_SEED)
    try:
        row = evaluator(model, time.perf_counter() - start)
    finally:
        evaluator.close()
    return {
        "dataset": s.card.id, "algo": s.algo.name, "param": param, "value": value, "seed": seed,
        "budget": budget, "episodes": episodes, "entry": s.params.env_id,
        "eval_seeds": evaluator.seeds, "mean_return": row["mean_return"],
        "normalized_score": row["normalized_score"], "wall_time_s": row["wall_time_s"],
        "cpu": cpu_platform(),
    }  # fmt: skip


def report(trials: list[dict], only: tuple | None = None) -> None:
    """One table per (algorithm, parameter, budget, episodes), or only the group ``only``:
    each value's mean normalized score per dataset (trials in brackets) and over all, the best
    marked."""
    groups: dict[tuple, list[dict]] = {}
    for t in trials:
        groups.setdefault((t["algo"], t["param"], t["budget"], t["episodes"]), []).append(t)
    for key, rows in groups.items():
        if only is not None and key != only:
            continue
        algo, param, budget, episodes = key
        datasets = sorted({r["dataset"] for r in rows})
        values = sorted({r["value"] for r in rows}, reverse=True)
        plural = "" if episodes == 1 else "s"
        table = Table(title=f"{algo} {param}, {budget} gradient steps, {episodes} episode{plural} "
                            "a trial: mean normalized score (tuning seeds)")  # fmt: skip
        for column in (param, *datasets, "all"):
            table.add_column(column, justify="right")
        overall = {v: float(np.mean([r["normalized_score"] for r in rows if r["value"] == v]))
                   for v in values}  # fmt: skip
        best = max(overall, key=overall.get)  # type: ignore[arg-type]
        for v in values:
            cells = []
            for d in datasets:
                scores = [r["normalized_score"] for r in rows if r["value"] == v
                          and r["dataset"] == d]  # fmt: skip
                cells.append(f"{np.mean(scores):.1f} ({len(scores)})" if scores else "-")
            mark = " best" if v == best and len(values) > 1 else ""
            table.add_row(f"{v:g}", *cells, f"{overall[v]:.1f}{mark}")
        console.print(table)


def _count(low: int, high: int):
    def parse(text: str) -> int:
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not in {low}..{high}")
        return value

    return parse


def main() -> None:
    from rlbench_suite.baselines.tune import TRIAL_EVAL_FIRST_SEED, TRIAL_TRAIN_SEED

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="*", help="offline ids (rlbench/<Env>-<kind>-vN)")
    parser.add_argument("--algo", help="an offline algorithm: bc, td3bc, iql, cql")
    parser.add_argument("--param", help="the Config field to vary (e.g. alpha)")
    parser.add_argument("--values", nargs="+", type=float, help="its values")
    parser.add_argument("--seeds", type=_count(1, 1000), default=2,
                        help="trials per value and dataset (1..1000)")  # fmt: skip
    parser.add_argument("--budget", type=_count(1, 10**8), default=5000,
                        help="gradient steps a trial")  # fmt: skip
    parser.add_argument("--episodes", type=_count(1, 1000), default=5,
                        help="evaluation episodes a trial")  # fmt: skip
    parser.add_argument("--report", action="store_true", help="print the tables and stop")
    args = parser.parse_args()
    if args.report:
        report(_load())
        return
    if not (args.datasets and args.algo and args.param and args.values):
        parser.error("give datasets, --algo, --param and --values (or --report)")
    assert TRIAL_TRAIN_SEED + args.seeds <= TRIAL_EVAL_FIRST_SEED
    try:  # every dataset checked before anything trains
        setups = {d: setup(d, args.algo, args.param, args.values) for d in args.datasets}
    except (ValueError, LookupError, OSError) as exc:
        parser.error(" ".join(str(exc).split()))
    algo = next(iter(setups.values())).algo.name
    group = (algo, args.param, args.budget, args.episodes)
    done = {tuple(t[k] for k in KEYS) for t in _load()}
    todo = []
    for dataset_id in args.datasets:
        for value in args.values:
            for seed in range(TRIAL_TRAIN_SEED, TRIAL_TRAIN_SEED + args.seeds):
                key = (setups[dataset_id].card.id, algo, args.param, value, seed, args.budget,
                       args.episodes)  # fmt: skip
                if key not in done:
                    todo.append((dataset_id, value, seed))
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())  # fmt: skip
    with Progress(*columns, console=console) as progress:
        task = progress.add_task(f"{algo} {args.param}", total=len(todo))
        for dataset_id, value, seed in todo:
            progress.update(task, description=f"{dataset_id} {args.param}={value:g} seed {seed}")
            row = trial(setups[dataset_id], args.param, value, seed, args.budget, args.episodes)
            _record(row)
            progress.console.print(f"{row['dataset']} {algo} {args.param}={value:g} seed {seed}: "
                                   f"normalized score {row['normalized_score']:.1f} "
                                   f"({row['wall_time_s']:.0f} s)", soft_wrap=True)  # fmt: skip
            progress.advance(task)
    report(_load(), only=group)


if __name__ == "__main__":
    main()
