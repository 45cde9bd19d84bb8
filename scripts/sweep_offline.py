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
import json
import time
from pathlib import Path

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


def _save(trials: list[dict]) -> None:
    from rlbench_suite.core.provenance import cpu_platform

    record = {"what": __doc__.split("\n\n")[0].strip(), "cpu": cpu_platform(), "trials": trials}
    tmp = RESULTS.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    tmp.replace(RESULTS)


def trial(dataset_id: str, algo_name: str, param: str, value: float, seed: int, budget: int,
          episodes: int) -> dict:  # fmt: skip
    """Train one trial and evaluate it: its row of the JSON."""
    import importlib

    import torch

    from rlbench_suite.baselines.algorithms import get_algorithm
    from rlbench_suite.baselines.curves import CurveEvaluator
    from rlbench_suite.baselines.hyperparams import load_hyperparams, native_config
    from rlbench_suite.baselines.offline.common import Transitions, data_spec
    from rlbench_suite.baselines.offline_run import OfflineModel
    from rlbench_suite.baselines.tune import TRIAL_EVAL_FIRST_SEED
    from rlbench_suite.core.dataset_cards import get_dataset_card
    from rlbench_suite.datasets.offline import load

    card = get_dataset_card(dataset_id)
    algo = get_algorithm(algo_name)
    params = load_hyperparams(algo, [card.id, card.env_id])
    module = importlib.import_module(algo.package)
    settings = {**params.algo_kwargs, param: value}
    cfg = native_config(module.Config, params, settings)
    evaluator = CurveEvaluator(card.id, episodes, first_seed=TRIAL_EVAL_FIRST_SEED)
    dataset = load(card)
    spec = data_spec(dataset, evaluator.env.observation_space, evaluator.env.action_space,
                     cfg.normalize)  # fmt: skip
    torch.manual_seed(seed)
    data = Transitions(dataset, spec, seed)
    agent = module.Agent(spec, cfg, budget)
    start = time.perf_counter()
    while agent.step < budget:
        agent.update(data.sample(cfg.batch_size))
    row = evaluator(OfflineModel(agent, data, spec, cfg, module), time.perf_counter() - start)
    evaluator.close()
    return {
        "dataset": card.id, "algo": algo.name, "param": param, "value": value, "seed": seed,
        "budget": budget, "episodes": episodes, "entry": params.env_id,
        "eval_seeds": evaluator.seeds, "mean_return": row["mean_return"],
        "normalized_score": row["normalized_score"], "wall_time_s": row["wall_time_s"],
    }  # fmt: skip


def report(trials: list[dict]) -> None:
    """One table per (algorithm, parameter, budget): each value's mean normalized score per
    dataset and over all, the best marked."""
    groups: dict[tuple, list[dict]] = {}
    for t in trials:
        groups.setdefault((t["algo"], t["param"], t["budget"]), []).append(t)
    for (algo, param, budget), rows in groups.items():
        datasets = sorted({r["dataset"] for r in rows})
        values = sorted({r["value"] for r in rows}, reverse=True)
        table = Table(title=f"{algo} {param}, {budget} gradient steps: mean normalized score "
                            "(tuning seeds)")  # fmt: skip
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
            mark = " best" if v == best else ""
            table.add_row(f"{v:g}", *cells, f"{overall[v]:.1f}{mark}")
        console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="*", help="offline ids (rlbench/<Env>-<kind>-vN)")
    parser.add_argument("--algo", help="an offline algorithm: bc, td3bc, iql, cql")
    parser.add_argument("--param", help="the Config field to vary (e.g. alpha)")
    parser.add_argument("--values", nargs="+", type=float, help="its values")
    parser.add_argument("--seeds", type=int, default=2, help="trials per value and dataset")
    parser.add_argument("--budget", type=int, default=5000, help="gradient steps a trial")
    parser.add_argument("--episodes", type=int, default=5, help="evaluation episodes a trial")
    parser.add_argument("--report", action="store_true", help="print the tables and stop")
    args = parser.parse_args()
    trials = _load()
    if args.report:
        report(trials)
        return
    if not (args.datasets and args.algo and args.param and args.values):
        parser.error("give datasets, --algo, --param and --values (or --report)")
    from rlbench_suite.baselines.tune import TRIAL_TRAIN_SEED

    todo = [(d, v, TRIAL_TRAIN_SEED + k) for d in args.datasets for v in args.values
            for k in range(args.seeds)]  # fmt: skip
    done = {tuple(t[k] for k in KEYS) for t in trials}
    todo = [(d, v, s) for d, v, s in todo if (d, args.algo, args.param, v, s, args.budget,
                                              args.episodes) not in done]  # fmt: skip
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())  # fmt: skip
    with Progress(*columns, console=console) as progress:
        task = progress.add_task(f"{args.algo} {args.param}", total=len(todo))
        for dataset_id, value, seed in todo:
            progress.update(task, description=f"{dataset_id} {args.param}={value:g} seed {seed}")
            row = trial(dataset_id, args.algo, args.param, value, seed, args.budget,
                        args.episodes)  # fmt: skip
            trials.append(row)
            _save(trials)
            progress.console.print(f"{dataset_id} {args.algo} {args.param}={value:g} seed {seed}: "
                                   f"normalized score {row['normalized_score']:.1f} "
                                   f"({row['wall_time_s']:.0f} s)")  # fmt: skip
            progress.advance(task)
    report(trials)


if __name__ == "__main__":
    main()
