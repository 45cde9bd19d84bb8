"""The offline baselines' manifest (``baselines/offline.yaml``), their committed results and
the table of them in ``docs/datasets.md``.

Each entry trains one offline algorithm on one dataset for a budget of gradient steps and
several seeds (``scripts/train_offline.py``); results are committed as the zoo's are, under
``baselines/results/<Env>-<kind>-vN/<algo>/seed-<S>/`` (``run.json``, ``curve.csv``,
``result.json``) with the policies under ``baselines/policies/`` (``baseline:`` names).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import yaml

from rlbench_suite.core.dataset_cards import DatasetCard, get_dataset_card
from rlbench_suite.core.result import Result, load_result
from rlbench_suite.resources import content_dir

MANIFEST = "offline.yaml"
REPORT_START = "<!-- offline-baselines:start (scripts/train_offline.py --report) -->"
REPORT_END = "<!-- offline-baselines:end -->"
ALGO_ORDER = ("bc", "td3bc", "iql", "cql")


@dataclasses.dataclass(frozen=True)
class OfflineEntry:
    """One algorithm on one dataset: its budget (gradient steps) and seeds."""

    dataset: str
    algo: str
    budget: int
    seeds: tuple[int, ...]

    @property
    def card(self) -> DatasetCard:
        return get_dataset_card(self.dataset)


def offline_entries(path: Path | None = None) -> list[OfflineEntry]:
    """The manifest's entries, in order (the order they train in)."""
    path = path or content_dir("baselines") / MANIFEST
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    entries = []
    for i, item in enumerate(raw):
        try:
            entry = OfflineEntry(item["dataset"], item["algo"], int(item["budget"]),
                                 tuple(int(s) for s in item["seeds"]))  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: entry {i}: expected {{dataset, algo, budget, seeds}}, "
                             f"got {item!r} ({exc})") from None  # fmt: skip
        get_dataset_card(entry.dataset)  # an unknown id names the closest
        entries.append(entry)
    return entries


def baseline_name(dataset_id: str, algo: str, seed: int) -> str:
    """``<Env>-<kind>-vN/<algo>/seed-<S>``: the folder under ``results/`` and ``policies/``,
    and the ``baseline:`` name of the policy."""
    return f"{get_dataset_card(dataset_id).name}/{algo}/seed-{seed}"


def result_folder(dataset_id: str, algo: str, seed: int) -> Path:
    return content_dir("baselines") / "results" / baseline_name(dataset_id, algo, seed)


@dataclasses.dataclass(frozen=True)
class CommittedRun:
    """One committed seed: its Result and its run record."""

    entry: OfflineEntry
    seed: int
    result: Result
    run: dict

    @property
    def mean_return(self) -> float:
        return float(np.mean(self.result.returns))

    @property
    def score(self) -> float:
        assert self.result.normalized_score is not None
        return self.result.normalized_score.point

    def stale(self) -> str | None:
        """Why this seed no longer stands for its entry (the manifest's budget or the
        dataset's content changed since it trained), or None."""
        return stale_reason(self.entry, self.run)


def stale_reason(entry: OfflineEntry, run: dict) -> str | None:
    """Why a run record (``run.json``) is not a run of ``entry`` on its dataset as the card
    has it now, with the hyperparameters its entry has now, or None: the one rule
    ``train_offline.py`` and the tests share."""
    from rlbench_suite.baselines.algorithms import get_algorithm
    from rlbench_suite.baselines.hyperparams import load_hyperparams
    from rlbench_suite.baselines.offline_run import offline_settings

    if run.get("budget") != entry.budget:
        return f"trained {run.get('budget')} gradient steps, the manifest asks {entry.budget}"
    params = load_hyperparams(get_algorithm(entry.algo), [entry.dataset, entry.card.env_id])
    recorded, settings = run.get("hyperparams") or {}, offline_settings(params)
    changed = [k for k, v in settings.items() if recorded.get(k) != v]
    if changed:
        was = ", ".join(f"{k} {recorded.get(k)!r}" for k in changed)
        now = ", ".join(f"{k} {settings[k]!r}" for k in changed)
        return f"trained with {was}; {params.env_id} in {params.path.name} now has {now}"
    trained_on = (run.get("dataset") or {}).get("content_sha256")
    if trained_on != entry.card.content_sha256:
        return (
            f"trained on data with content hash {trained_on}, the card's is "
            f"{entry.card.content_sha256}"
        )
    return None


def committed(entry: OfflineEntry) -> list[CommittedRun]:
    """The seeds of ``entry`` whose results are committed."""
    runs = []
    for seed in entry.seeds:
        folder = result_folder(entry.dataset, entry.algo, seed)
        if (folder / "result.json").is_file():
            record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
            runs.append(CommittedRun(entry, seed, load_result(folder / "result.json"), record))
    return runs


def scores_by_dataset(entries: list[OfflineEntry]) -> dict[str, dict[str, list[CommittedRun]]]:
    """dataset id -> algo -> its committed runs (entries with none are left out)."""
    table: dict[str, dict[str, list[CommittedRun]]] = {}
    for entry in entries:
        runs = committed(entry)
        if runs:
            table.setdefault(entry.dataset, {})[entry.algo] = runs
    return table


def _cell(runs: list[CommittedRun] | None) -> str:
    if not runs:
        return "-"
    scores = np.array([r.score for r in runs])
    spread = f" ± {scores.std():.1f}" if len(scores) > 1 else ""
    return f"{scores.mean():.1f}{spread} ({len(scores)})"


def report_markdown(entries: list[OfflineEntry]) -> str:
    """The offline baselines' table: one row per dataset, the mean normalized score (0 random,
    100 expert: the dataset's references, 100 x D4RL's score) ± its std over seeds (seeds in
    brackets) per algorithm, the data's own score, and the compute behind it."""
    table = scores_by_dataset(entries)
    algos = [a for a in ALGO_ORDER if any(a in row for row in table.values())]
    budgets = {a: sorted({r.entry.budget for row in table.values() for r in row.get(a, [])})
               for a in algos}  # fmt: skip
    header = [f"{a} ({', '.join(map(str, budgets[a]))})" for a in algos]
    lines = [
        "| dataset | data | " + " | ".join(header) + " |",
        "| --- | --- | " + " | ".join("---" for _ in algos) + " |",
    ]
    seconds = 0.0
    for dataset_id, row in table.items():
        card = get_dataset_card(dataset_id)
        data = card.normalized_score(card.mean_return) if card.mean_return is not None else None
        seconds += sum(r.run["wall_time_s"] for runs in row.values() for r in runs)
        cells = " | ".join(_cell(row.get(a)) for a in algos)
        data_cell = f"{data:.1f}" if data is not None else "-"
        lines.append(f"| `{dataset_id}` | {data_cell} | {cells} |")
    runs = sum(len(r) for row in table.values() for r in row.values())
    lines += ["", f"Gradient steps in brackets after each algorithm. {runs} runs, "
              f"{seconds / 60:.1f} minutes of training in all (the runs' wall time on one niced "
              "CPU core each, curve evaluations included)."]  # fmt: skip
    return "\n".join(lines)


def replace_report(text: str, report: str) -> str:
    """``text`` with the part between :data:`REPORT_START` and :data:`REPORT_END` replaced."""
    from rlbench_suite.datasets.table import replace_between

    return replace_between(text, REPORT_START, REPORT_END, report)
