"""Learning curves and final-score tables of training runs across seeds (``results curves``).

A run folder is what ``rlbench train`` writes (``run.json``, ``curve.csv``, ``result.json``);
the zoo commits them as ``baselines/results/<env-name>/<algo>/seed-<S>/``. Runs of one env
and algorithm are the seeds of one curve:

- the curve is the IQM across seeds at each step, with a stratified-bootstrap 95% interval
  (``core.metrics.interval_estimates``, seeds as runs), of the normalized score where the card
  has one (its references), else of the mean return; seeds whose curve points fall at
  different steps are interpolated onto the steps they share;
- the table has one row per env and algorithm: the budget, the number of seeds, the IQM across
  seeds of the final evaluation (``result.json``: its normalized score, else the card's
  primary metric, named) with its 95% interval, and the mean wall time per run.

:func:`build_report` regenerates a docs page's figures and table from a folder of runs.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from rlbench_suite.baselines.curves import CURVE_FILE, read_curve
from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.metrics import interval_estimates
from rlbench_suite.core.scoring import normalized_score, scored_by_success
from rlbench_suite.core.summary import BOOTSTRAP_REPS, BOOTSTRAP_SEED

RUN_FILE = "run.json"
RESULT_FILE = "result.json"
FORMATS = (".png", ".svg")
TABLE_FILE = "table.md"


@dataclasses.dataclass(frozen=True)
class RunData:
    """What a report needs of one training run."""

    dir: Path
    env_id: str
    algo: str
    seed: int
    budget: int
    steps: int
    wall_time_s: float
    curve: list[dict[str, float]]
    final: float | None
    """The final evaluation's normalized score (where the card has references), else its
    value of the card's primary metric; None when the run has no result.json yet."""
    normalized: bool
    metric: str = "return"
    """The card's primary metric (the scale of ``final`` when not ``normalized``)."""


def find_runs(paths: list[str | Path]) -> list[Path]:
    """The run folders named by ``paths``: run folders, their ``run.json``, or folders that
    hold runs anywhere below them (``baselines/results``), sorted."""
    found: set[Path] = set()
    for path in map(Path, paths):
        if path.is_file() and path.name == RUN_FILE:
            found.add(path.parent)
        elif (path / RUN_FILE).is_file():
            found.add(path)
        elif path.is_dir():
            found |= {p.parent for p in path.rglob(RUN_FILE)}
        else:
            raise FileNotFoundError(
                f"{path}: neither a run folder, a run.json nor a folder of runs"
            )
    if not found:
        raise FileNotFoundError(f"no training runs (folders with {RUN_FILE}) in {paths}")
    return sorted(found)


def load_run(path: str | Path) -> RunData:
    """One run folder (or its ``run.json``)."""
    folder = Path(path).parent if Path(path).name == RUN_FILE else Path(path)
    run = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
    card = get_card(run["env_id"])
    references = card.reference_values()
    final = None
    result_file = folder / RESULT_FILE
    if result_file.is_file():
        result = json.loads(result_file.read_text(encoding="utf-8"))
        aggregates = result["aggregates"]
        metric = "success_rate" if scored_by_success(card.primary_metric) else "return_mean"
        score = (result.get("normalized_score") or {}).get("point") if references else None
        if references and score is None:  # scored before the card had both references
            score = normalized_score(aggregates[metric]["point"], *references)
        final = score if score is not None else aggregates[metric]["point"]
    return RunData(
        folder,
        run["env_id"],
        run["algo"],
        int(run["seed"]),
        int(run["budget"]),
        int(run.get("steps", 0)),
        float(run.get("wall_time_s", math.nan)),
        _normalize_curve(read_curve(folder / CURVE_FILE), card),
        final,
        references is not None,
        card.primary_metric,
    )


def _normalize_curve(curve: list[dict[str, float]], card: Any) -> list[dict[str, float]]:
    """Fill a curve's normalized scores from the card's references where the run was
    trained before the card had them (the column is NaN there)."""
    references = card.reference_values()
    if references is None:
        return curve
    column = "success_rate" if scored_by_success(card.primary_metric) else "mean_return"
    return [
        {**row, "normalized_score": float(normalized_score(row[column], *references))}
        if not math.isfinite(row.get("normalized_score", math.nan)) and math.isfinite(row[column])
        else row
        for row in curve
    ]


def group_runs(runs: list[RunData]) -> dict[tuple[str, str], list[RunData]]:
    """Runs by (env id, algo), each group's seeds in order."""
    groups: dict[tuple[str, str], list[RunData]] = defaultdict(list)
    for run in runs:
        groups[run.env_id, run.algo].append(run)
    return {key: sorted(groups[key], key=lambda r: r.seed) for key in sorted(groups)}


def _curve_values(run: RunData, normalized: bool) -> tuple[np.ndarray, np.ndarray]:
    column = "normalized_score" if normalized else "mean_return"
    steps = np.array([row["step"] for row in run.curve], dtype=float)
    values = np.array([row[column] for row in run.curve], dtype=float)
    return steps, values


def curve_band(runs: list[RunData]) -> dict[str, Any]:
    """The IQM across seeds at each shared step with its 95% interval (module docstring)."""
    card = get_card(runs[0].env_id)
    normalized = card.reference_values() is not None and all(
        np.isfinite(_curve_values(r, True)[1]).all() for r in runs if r.curve
    )
    curves = [_curve_values(r, normalized) for r in runs if r.curve]
    if not curves:
        raise ValueError(f"no curve points in the runs of {runs[0].env_id} {runs[0].algo}")
    last = min(steps[-1] for steps, _ in curves)
    grid = np.unique(np.concatenate([steps[steps <= last] for steps, _ in curves]))
    matrix = np.stack([np.interp(grid, steps, values) for steps, values in curves])
    point, low, high = [], [], []
    for column in matrix.T:
        estimate = interval_estimates(
            column[:, None], ["iqm"], reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED
        )["iqm"]
        point.append(estimate.point)
        low.append(estimate.low)
        high.append(estimate.high)
    return {
        "steps": grid,
        "iqm": np.array(point),
        "low": np.array(low),
        "high": np.array(high),
        "seeds": len(curves),
        "normalized": normalized,
    }


def plot_curves(runs: list[RunData], path: str | Path) -> Path:
    """One panel per env, one IQM line with its interval band per algorithm (PNG or SVG)."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"figure file must end in {' or '.join(FORMATS)}, got {path.name!r}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "rlbench"  # the same runs give the same file
    groups = group_runs(runs)
    envs = sorted({env for env, _ in groups})
    columns = min(len(envs), 3)
    rows = -(-len(envs) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.4 * rows), squeeze=False)
    for ax, env in zip(axes.flat, envs, strict=False):
        normalized = True
        for (group_env, algo), members in groups.items():
            if group_env != env:
                continue
            band = curve_band(members)
            normalized = normalized and band["normalized"]
            (line,) = ax.plot(band["steps"], band["iqm"], label=f"{algo} ({band['seeds']} seeds)")
            ax.fill_between(
                band["steps"],
                band["low"],
                band["high"],
                alpha=0.25,
                color=line.get_color(),
                linewidth=0,
            )
        ax.set_title(env.removeprefix("rlbench/"), fontsize=10)
        ax.set_xlabel("environment steps")
        ax.set_ylabel("IQM normalized score" if normalized else "IQM mean return")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(envs) :]:
        ax.set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, metadata={"Date": None} if path.suffix.lower() == ".svg" else {})
    plt.close(fig)
    return path


def score_table(runs: list[RunData]) -> list[dict[str, Any]]:
    """One row per env and algorithm (module docstring); runs without a result are left out
    of the score (``seeds`` counts those with one)."""
    rows = []
    for (env, algo), members in group_runs(runs).items():
        finals = [r.final for r in members if r.final is not None]
        estimate = None
        if finals:
            estimate = interval_estimates(
                np.array(finals)[:, None],
                ["iqm"],
                reps=BOOTSTRAP_REPS,
                random_state=BOOTSTRAP_SEED,
            )["iqm"]
        rows.append(
            {
                "env_id": env,
                "algo": algo,
                "budget": max(r.budget for r in members),
                "seeds": len(finals),
                "normalized": all(r.normalized for r in members if r.final is not None),
                "metric": members[0].metric,
                "iqm": estimate.point if estimate else None,
                "low": estimate.low if estimate else None,
                "high": estimate.high if estimate else None,
                "wall_time_s": float(np.mean([r.wall_time_s for r in members])),
            }
        )
    return rows


def table_markdown(rows: list[dict[str, Any]]) -> str:
    """The score table as Markdown (a normalized score where the card has one, else the card's
    primary metric at three significant digits, marked with its name)."""
    lines = [
        "| env | algorithm | budget (steps) | seeds | IQM normalized score [95% CI] "
        "| wall time per run |",
        "| --- | --- | ---: | ---: | --- | ---: |",
    ]
    for row in rows:
        if row["iqm"] is None:
            score = "no result"
        else:
            score = (f"{row['iqm']:.1f} [{row['low']:.1f}, {row['high']:.1f}]" if row["normalized"]
                     else f"{row['iqm']:.3g} [{row['low']:.3g}, {row['high']:.3g}] "
                     f"({row['metric']})")  # fmt: skip
        lines.append(
            f"| {row['env_id']} | {row['algo']} | {row['budget']:,} | {row['seeds']} | {score} | "
            f"{run_duration(row['wall_time_s'])} |"
        )
    return "\n".join(lines) + "\n"


def run_duration(seconds: float) -> str:
    """A run's wall time as the tables say it (seconds under 10 minutes, else minutes)."""
    if not math.isfinite(seconds):
        return "?"
    return f"{seconds:.0f} s" if seconds < 600 else f"{seconds / 60:.0f} min"


def build_report(
    results_root: str | Path, out_dir: str | Path, *, fmt: str = "svg"
) -> dict[str, Path]:
    """Regenerate the figures and table of a docs page from committed runs.

    ``results_root`` holds runs as ``<env-name>/<algo>/seed-<S>/`` (``baselines/results``);
    writes ``curves-<env-name>.<fmt>`` (one per env) and ``table.md`` into ``out_dir`` and
    returns them by name. Deterministic: the same runs give the same files.
    """
    runs = [load_run(p) for p in find_runs([results_root])]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    by_env: dict[str, list[RunData]] = defaultdict(list)
    for run in runs:
        by_env[run.env_id].append(run)
    for env, members in sorted(by_env.items()):
        name = f"curves-{get_card(env).name}.{fmt.lstrip('.')}"
        written[name] = plot_curves(members, out / name)
    table = out / TABLE_FILE
    table.write_text(table_markdown(score_table(runs)), encoding="utf-8")
    written[TABLE_FILE] = table
    return written
