"""Figures of results (matplotlib, PNG or SVG): per-env bars, aggregates, profiles."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from rlbench_suite.core.metrics import interval_estimates, performance_profile
from rlbench_suite.core.result import Result
from rlbench_suite.core.summary import BOOTSTRAP_REPS, BOOTSTRAP_SEED
from rlbench_suite.evaluation.suite import normalized_matrix
from rlbench_suite.policies import display_names

FORMATS = (".png", ".svg")


def policy_labels(results: list[Result]) -> list[str]:
    """How the results' policies are named in tables and figures, one name per result: their
    short, distinct display names (:func:`~rlbench_suite.policies.display_names`); results
    of the same policy share one."""
    texts = [str(r.policy.get("spec") or r.policy.get("name") or "policy") for r in results]
    unique = list(dict.fromkeys(texts))
    names = dict(zip(unique, display_names(unique), strict=True))
    return [names[text] for text in texts]


def plot_results(results: list[Result], path: str | Path) -> Path:
    """Per-env mean returns with 95% intervals for each policy; with normalized scores, also
    the aggregate interval estimates and the performance profile of each policy."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"plot file must end in {' or '.join(FORMATS)}, got {path.name!r}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_policy: dict[str, list[Result]] = defaultdict(list)
    for label, result in zip(policy_labels(results), results, strict=True):
        by_policy[label].append(result)
    envs = sorted({r.env_id for r in results})
    normalized = {p: normalized_matrix(rs) for p, rs in by_policy.items()}
    has_scores = any(m.size for m, _, _ in normalized.values())
    panels = len(envs) + (2 if has_scores else 0)
    columns = min(panels, 4)
    rows = -(-panels // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3.2 * rows), squeeze=False)
    flat = list(axes.flat)
    for ax, env in zip(flat, envs, strict=False):
        _env_bars(ax, env, by_policy)
    if has_scores:
        _aggregates(flat[len(envs)], normalized)
        _profiles(flat[len(envs) + 1], normalized)
    for ax in flat[panels:]:
        ax.set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _env_bars(ax, env: str, by_policy: dict[str, list[Result]]) -> None:
    labels, points, errors = [], [], []
    for label, results in by_policy.items():
        for result in results:
            if result.env_id == env:
                mean = result.aggregates["return_mean"]
                labels.append(label)
                points.append(mean.point)
                errors.append([mean.point - mean.low, mean.high - mean.point])
    x = np.arange(len(labels))
    ax.bar(x, points, yerr=np.array(errors).T if errors else None, capsize=4, color="tab:blue")
    ax.set_xticks(x, labels, rotation=20, ha="right", fontsize=8)
    ax.set_title(env.removeprefix("rlbench/"), fontsize=10)
    ax.set_ylabel("mean return (95% CI)", fontsize=8)


def _aggregates(ax, normalized: dict) -> None:
    names = ("iqm", "mean", "median", "optimality_gap")
    for offset, (label, (matrix, _, _)) in enumerate(normalized.items()):
        if not matrix.size:
            continue
        estimates = interval_estimates(
            matrix, names, reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED
        )
        for row, name in enumerate(names):
            est = estimates[name]
            y = row + 0.15 * offset
            ax.plot(
                [est.low, est.high],
                [y, y],
                linewidth=4,
                alpha=0.6,
                label=label if row == 0 else None,
            )
            ax.plot([est.point], [y], "k|")
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("normalized score (95% CI)")
    ax.legend(fontsize=7)


def _profiles(ax, normalized: dict) -> None:
    taus = np.linspace(-50, 150, 101)
    for label, (matrix, _, _) in normalized.items():
        if not matrix.size:
            continue
        profile, band = performance_profile(matrix, taus, reps=500, random_state=BOOTSTRAP_SEED)
        ax.plot(taus, profile, label=label)
        if band is not None:
            ax.fill_between(taus, band[0], band[1], alpha=0.2)
    ax.set_xlabel("normalized score tau")
    ax.set_ylabel("fraction of runs > tau")
    ax.legend(fontsize=7)
