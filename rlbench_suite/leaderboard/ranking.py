"""Ranking stored results: pure functions over :class:`Run` records, on ``core.metrics``.

A *run* is one stored Result: one trained policy (one training seed) evaluated under the
card's protocol; its score is the mean normalized score of its episodes. Per environment a
method's runs are aggregated by the interquartile mean over runs with a 95%
stratified-bootstrap interval (the statistics of ``core.metrics``, with the reps and seed of
``core.summary``); a method with a single run gets the interval over that run's episodes:
a bootstrap one, or where the card scores success (a success rate: each episode scores one
of two values) the Wilson interval of its success rate (``core.metrics.success_rate``), which
stays honest when every episode failed or succeeded.
Rows whose intervals overlap share a rank range ("2-4"). Only runs of one protocol hash are
passed in together (the caller selects them); filters pick the training-budget class,
the verification level and the algorithm family.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from rlbench_suite.core.metrics import (
    Estimate,
    interval_estimates,
    performance_profile,
    probability_of_improvement,
    success_rate,
)
from rlbench_suite.core.summary import BOOTSTRAP_REPS, BOOTSTRAP_SEED

BUDGET_CLASSES: dict[str, int | None] = {"100k": 100_000, "1M": 1_000_000, "unlimited": None}
"""Training-budget classes, smallest first: a class holds budgets up to its steps."""
BUDGET_SLACK = 1.05
"""A budget counts in a class up to 5% over its nominal steps (SB3's PPO trains whole rollouts
past its budget, so a 100k-step run records e.g. 100,352 steps; ``rlbench train`` rounds down,
baselines/budget.py)."""


@dataclass(frozen=True)
class Run:
    """One stored result, as the ranking sees it."""

    result_id: int
    env_id: str
    method: str
    score: float
    episode_scores: tuple[float, ...] = ()
    family: str | None = None
    budget_steps: int | None = None
    verification: str = "self-reported"
    artifact: str | None = None


@dataclass(frozen=True)
class RankedRow:
    """One row of a ranking table: a method at one budget class, with its interval and rank."""

    method: str
    family: str | None
    budget_class: str
    estimate: Estimate
    runs: int
    interval_over: str  # "runs" or "episodes" (a single run)
    result_ids: tuple[int, ...]
    verified_runs: int
    rank_low: int = 0
    rank_high: int = 0
    missing_envs: tuple[str, ...] = field(default=())
    stored_runs: int | None = None
    """How many of the method's runs are stored for this row (a suite row's aggregate may use
    fewer: its matrix is full, so every env gives as many runs as the env with the fewest);
    None: all of them were used (``runs``)."""

    @property
    def rank(self) -> str:
        """The rank range: "3" or "2-4"."""
        low, high = self.rank_low, self.rank_high
        return str(low) if low == high else f"{low}-{high}"


def budget_class(steps: int | None) -> str:
    """The smallest budget class that holds ``steps`` (unknown budgets are ``unlimited``)."""
    for name, limit in BUDGET_CLASSES.items():
        if limit is not None and steps is not None and steps <= limit * BUDGET_SLACK:
            return name
    return "unlimited"


def budget_ceiling(name: str) -> float | None:
    """The most training steps a result may record to count in budget class ``name`` or a
    smaller one (None: any, unknown budgets included); ValueError for an unknown class."""
    _class_index(name)
    limit = BUDGET_CLASSES[name]
    return None if limit is None else limit * BUDGET_SLACK


def _class_index(name: str) -> int:
    if name not in BUDGET_CLASSES:
        raise ValueError(f"unknown budget class {name!r}; accepted: {', '.join(BUDGET_CLASSES)}")
    return list(BUDGET_CLASSES).index(name)


def filter_runs(
    runs: Iterable[Run],
    *,
    budget: str | None = None,
    verification: str | None = None,
    family: str | None = None,
) -> list[Run]:
    """The runs within budget class ``budget`` (at most that budget), of ``verification``
    level and of algorithm ``family``; None keeps all."""
    limit = _class_index(budget) if budget is not None else None
    kept = []
    for run in runs:
        if limit is not None and _class_index(budget_class(run.budget_steps)) > limit:
            continue
        if verification is not None and run.verification != verification:
            continue
        if family is not None and run.family != family:
            continue
        kept.append(run)
    return kept


def distinct_runs(runs: Iterable[Run]) -> list[Run]:
    """One run per policy artifact: a verified result before a self-reported one, else the
    first stored; results without an artifact hash are each their own run."""
    chosen: dict[tuple, Run] = {}
    for run in sorted(runs, key=lambda r: (r.verification != "verified", r.result_id)):
        key = (run.env_id, run.artifact) if run.artifact else ("id", run.result_id)
        chosen.setdefault(key, run)
    return sorted(chosen.values(), key=lambda r: r.result_id)


def matrix_metric(over: str) -> str:
    """The aggregate of a score matrix whose rows are ``over``: the IQM of its runs, or with
    one run per env (rows are episodes) the IQM over envs of each run's score, the mean of
    its episodes (an IQM over episodes would drop a success-rate run's failures)."""
    return "iqm_of_task_means" if over == "episodes" else "iqm"


SuccessScale = tuple[float, float]
"""The scores of a failed and of a successful episode, on a card whose metric is success."""


def _wilson_over_episodes(scores: np.ndarray, scale: SuccessScale) -> Estimate:
    """One success-rate run's score with the Wilson interval of its success rate, both on
    the scores' scale (a failed episode scores ``scale[0]``, a successful one ``scale[1]``)."""
    failed, succeeded = scale
    rate = success_rate(np.isclose(scores, succeeded))
    low, high = sorted(failed + (succeeded - failed) * v for v in (rate.low, rate.high))
    return Estimate(float(scores.mean()), low, high, rate.confidence, rate.method)


def iqm_estimate(runs: Sequence[Run], success: SuccessScale | None = None) -> tuple[Estimate, str]:
    """IQM over the runs' scores with its interval; one run: its score (the mean of its
    episodes) with an interval over its episodes, the Wilson interval of its success rate
    where ``success`` gives the two scores an episode can have, else a bootstrap one."""
    if len(runs) == 1 and runs[0].episode_scores:
        values, over = np.asarray(runs[0].episode_scores, dtype=float), "episodes"
        if success is not None:
            return _wilson_over_episodes(values, success), over
    else:
        values, over = np.asarray([r.score for r in runs], dtype=float), "runs"
    metric = matrix_metric(over)
    estimate = interval_estimates(values, metric, reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED)[
        metric
    ]
    return estimate, over


def rank_ranges(estimates: Sequence[Estimate]) -> list[tuple[int, int]]:
    """Each estimate's rank range: from 1 + the number of rows whose interval lies wholly
    above it, to the number of rows less those whose interval lies wholly below it."""
    ranges = []
    for mine in estimates:
        above = sum(other.low > mine.high for other in estimates)
        below = sum(other.high < mine.low for other in estimates)
        ranges.append((1 + above, len(estimates) - below))
    return ranges


def _ranked(rows: list[RankedRow]) -> list[RankedRow]:
    rows = sorted(rows, key=lambda r: (-r.estimate.point, -r.estimate.low, r.method))
    ranges = rank_ranges([r.estimate for r in rows])
    pairs = zip(rows, ranges, strict=True)
    return [replace(row, rank_low=low, rank_high=high) for row, (low, high) in pairs]


def group_runs(runs: Iterable[Run]) -> dict[tuple[str, str], list[Run]]:
    """Runs by (method, budget class), each group's runs distinct by artifact."""
    groups: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in distinct_runs(runs):
        groups[(run.method, budget_class(run.budget_steps))].append(run)
    return dict(groups)


def rank_env(runs: Iterable[Run], success: SuccessScale | None = None) -> list[RankedRow]:
    """The ranking of one environment's runs (all of one protocol hash), best first;
    ``success``: the scores of a failed and a successful episode where the card's metric is
    success (a single run's interval is then Wilson's)."""
    rows = []
    for (method, budget), group in group_runs(runs).items():
        estimate, over = iqm_estimate(group, success)
        rows.append(
            RankedRow(
                method=method,
                family=group[0].family,
                budget_class=budget,
                estimate=estimate,
                runs=len(group),
                interval_over=over,
                result_ids=tuple(r.result_id for r in group),
                verified_runs=sum(r.verification == "verified" for r in group),
            )
        )
    return _ranked(rows)


def matrix_runs(runs: Iterable[Run], envs: Sequence[str]) -> tuple[list[Run] | None, str]:
    """The runs a method's ``(runs, envs)`` matrix over ``envs`` is built from (None if an env
    has no run), and whether its rows are ``"runs"`` or ``"episodes"``.

    Every env contributes as many runs as the env with the fewest (its first ones stored),
    since the stratified bootstrap needs a full matrix; with one run per env the rows are
    the runs' episodes instead (as many as the shortest).
    """
    by_env: dict[str, list[Run]] = defaultdict(list)
    for run in distinct_runs(runs):
        by_env[run.env_id].append(run)
    if any(not by_env.get(env) for env in envs) or not envs:
        return None, "runs"
    fewest = min(len(by_env[env]) for env in envs)
    if fewest == 1 and all(by_env[env][0].episode_scores for env in envs):
        return [by_env[env][0] for env in envs], "episodes"
    return [r for env in envs for r in by_env[env][:fewest]], "runs"


def method_matrix(runs: Iterable[Run], envs: Sequence[str]) -> tuple[np.ndarray | None, str]:
    """A method's ``(runs, envs)`` score matrix over ``envs`` from :func:`matrix_runs` (None
    if an env has no run), and whether its rows are runs or episodes."""
    used, over = matrix_runs(runs, envs)
    return (None if used is None else level_matrix(used, envs, over)), over


def _largest_class(runs: Iterable[Run]) -> str:
    return max((budget_class(r.budget_steps) for r in runs), key=_class_index)


def rank_suite(runs: Iterable[Run], envs: Sequence[str]) -> tuple[list[RankedRow], list[RankedRow]]:
    """The suite ranking by IQM over the ``(runs, envs)`` matrix of each method, and the
    methods left out because they lack a run on some env (with the envs missing). A row
    counts, lists and checks for verification the runs its matrix used (``stored_runs``: all
    of the method's runs given); its budget class is the largest among them (filter the runs
    first to compare within one)."""
    groups: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        groups[run.method].append(run)
    rows, incomplete = [], []
    for method, group in sorted(groups.items()):
        used, over = matrix_runs(group, envs)
        if used is None:
            have = {r.env_id for r in group}
            missing = tuple(env for env in envs if env not in have)
            nan = Estimate(float("nan"), float("nan"), float("nan"), 0.95)
            incomplete.append(
                RankedRow(
                    method,
                    group[0].family,
                    _largest_class(group),
                    nan,
                    0,
                    over,
                    tuple(sorted(r.result_id for r in group)),
                    sum(r.verification == "verified" for r in group),
                    missing_envs=missing,
                    stored_runs=len(group),
                )
            )
            continue
        metric = matrix_metric(over)
        matrix = level_matrix(used, envs, over)
        estimate = interval_estimates(
            matrix, metric, reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED
        )[metric]
        # what the aggregate used: the matrix's runs (one per env where its rows are
        # episodes), with how many are stored beside them
        rows.append(
            RankedRow(
                method,
                group[0].family,
                _largest_class(used),
                estimate,
                len(used),
                over,
                tuple(sorted(r.result_id for r in used)),
                sum(r.verification == "verified" for r in used),
                stored_runs=len(group),
            )
        )
    return _ranked(rows), incomplete


def profiles(
    matrices: dict[str, np.ndarray], taus: np.ndarray | None = None
) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, np.ndarray | None]]]:
    """Performance profiles (fraction of runs x envs scoring above each tau) of each
    method's matrix, with stratified-bootstrap bands; the taus come back too."""
    if taus is None:
        taus = np.linspace(0.0, 120.0, 61)
    curves = {
        name: performance_profile(matrix, taus, reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED)
        for name, matrix in matrices.items()
    }
    return taus, curves


def comparison_level(run_counts: Iterable[tuple[int, int]]) -> str:
    """The one level two methods are compared at, over envs where they have
    ``(runs of X, runs of Y)``: ``"runs"`` (each run's score, as rliable compares) where both
    have at least 2 runs on every env, else ``"episodes"`` (each run's episodes, pooled)."""
    counts = list(run_counts)
    return "runs" if counts and all(min(pair) >= 2 for pair in counts) else "episodes"


def level_matrix(runs: Iterable[Run], envs: Sequence[str], level: str) -> np.ndarray | None:
    """A method's ``(rows, envs)`` matrix at ``level`` (see :func:`comparison_level`): rows
    are its runs' scores, or its episodes' scores pooled over its runs; every env gives as
    many rows as the env with the fewest (its first ones), so the matrix is full. None where
    an env has none."""
    by_env: dict[str, list[float]] = defaultdict(list)
    for run in distinct_runs(runs):
        by_env[run.env_id] += [run.score] if level == "runs" else list(run.episode_scores)
    if not envs or any(not by_env.get(env) for env in envs):
        return None
    k = min(len(by_env[env]) for env in envs)
    return np.asarray([by_env[env][:k] for env in envs], dtype=float).T


def improvement(x: np.ndarray, y: np.ndarray) -> Estimate:
    """P(a run of X beats a run of Y on the same env), averaged over envs, with interval."""
    return probability_of_improvement(x, y, reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED)
