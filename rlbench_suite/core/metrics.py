"""Aggregate metrics with stratified-bootstrap confidence intervals, in the manner of rliable.

Definitions follow "Deep RL at the Edge of the Statistical Precipice" (Agarwal et al., 2021)
and its library, rliable, on numpy alone. Scores are a ``(runs, tasks)`` matrix of normalized
scores (one row per independent run or seed, one column per environment) or a 1-D array of
per-episode values of one environment (read as one column). NaN, infinite and empty input is
refused with a :class:`ValueError`, never silently dropped.

Intervals come from the stratified bootstrap: every replicate resamples the runs of each task
(column) with replacement, independently of the other tasks, and the interval is the
percentile interval of the replicates. Given ``random_state`` the replicates are reproducible
(``numpy.random.default_rng(random_state)``); with ``None`` a fresh seed is drawn and recorded
in the :class:`Estimate`, so every reported interval can be recomputed exactly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from statistics import NormalDist
from typing import Any

import numpy as np

BOOTSTRAP_METHOD = "stratified-bootstrap-percentile"
DEFAULT_METRICS = ("mean", "median", "iqm", "optimality_gap")
METRICS = (*DEFAULT_METRICS, "iqm_of_task_means")
"""Every metric name :func:`interval_estimates` takes: ``iqm_of_task_means`` is the IQM over
tasks of each task's mean over rows, for one run per task whose rows are its episodes (the
run's score is the mean of its episodes; the bootstrap resamples episodes within each task)."""
_CHUNK_ELEMENTS = 1 << 21  # resampled values held at once (16 MiB of float64)


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A point estimate with its confidence interval and how the interval was computed.

    Its fields are those of :class:`rlbench_suite.core.result.IntervalEstimate`, so
    ``IntervalEstimate(**estimate.as_dict())`` stores it in a result.
    """

    point: float
    low: float
    high: float
    confidence: float
    method: str = BOOTSTRAP_METHOD
    reps: int | None = None
    random_state: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------- input validation


def as_score_matrix(scores: Any, name: str = "scores") -> np.ndarray:
    """``scores`` as a finite float ``(runs, tasks)`` matrix; a 1-D array becomes one column."""
    try:
        array = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be numbers: a (runs, tasks) matrix or a 1-D array ({exc})"
        ) from None
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise ValueError(
            f"{name} must be a (runs, tasks) matrix or a 1-D array of per-episode values, "
            f"got shape {array.shape}"
        )
    if array.size == 0:
        raise ValueError(f"{name} is empty (shape {array.shape}); at least one score is needed")
    bad = ~np.isfinite(array)
    if bad.any():
        run, task = np.argwhere(bad)[0]
        raise ValueError(
            f"{name} contains {int(bad.sum())} NaN or infinite value(s) (first at run {run}, "
            f"task {task}); drop or impute them before aggregating"
        )
    return array


def _check_confidence(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")
    return float(confidence)


def _check_reps(reps: int) -> int:
    if isinstance(reps, bool) or not isinstance(reps, int | np.integer) or reps < 1:
        raise ValueError(f"reps must be a positive integer, got {reps!r}")
    return int(reps)


def resolve_random_state(random_state: int | None) -> int:
    """The seed to use: ``random_state`` itself, or a fresh 32-bit one when it is None."""
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1)[0])
    if isinstance(random_state, bool) or not isinstance(random_state, int | np.integer):
        raise ValueError(f"random_state must be a non-negative int or None, got {random_state!r}")
    if random_state < 0:
        raise ValueError(f"random_state must be non-negative, got {random_state}")
    return int(random_state)


# ---------------------------------------------------------------- point estimates
# Batched forms take a (reps, runs, tasks) array and return one value per replicate.


def _iqm_batched(samples: np.ndarray) -> np.ndarray:
    flat = samples.reshape(len(samples), -1)
    cut = int(0.25 * flat.shape[1])  # scipy.stats.trim_mean(x, 0.25) on the flattened scores
    top = flat.shape[1] - cut
    middle = np.partition(flat, (cut, top - 1), axis=1)[:, cut:top]
    return middle.mean(axis=1)


def _batched_metric(name: str, per_episode: bool, gamma: float) -> Callable:
    if name == "mean":
        return lambda s: s.mean(axis=1).mean(axis=1)
    if name == "median":
        if per_episode:
            return lambda s: np.median(s[:, :, 0], axis=1)
        return lambda s: np.median(s.mean(axis=1), axis=1)
    if name == "iqm":
        return _iqm_batched
    if name == "iqm_of_task_means":
        return lambda s: _iqm_batched(s.mean(axis=1))
    if name == "optimality_gap":
        if not np.isfinite(gamma):
            raise ValueError(f"gamma must be a finite threshold, got {gamma!r}")
        return lambda s: np.maximum(gamma - s, 0.0).mean(axis=(1, 2))
    raise ValueError(f"unknown metric {name!r}; accepted: {', '.join(METRICS)}")


def _point(name: str, scores: Any, gamma: float = 100.0) -> float:
    matrix = as_score_matrix(scores)
    return float(_batched_metric(name, np.ndim(scores) == 1, gamma)(matrix[None])[0])


def mean(scores: Any) -> float:
    """Mean over tasks of the per-task mean scores (the plain mean of a 1-D array)."""
    return _point("mean", scores)


def median(scores: Any) -> float:
    """Median over tasks of the per-task mean scores (rliable's ``aggregate_median``).

    A 1-D array of per-episode values gives the median of those values.
    """
    return _point("median", scores)


def iqm(scores: Any) -> float:
    """Interquartile mean: the mean of the middle 50% of all scores pooled.

    ``int(0.25 * n)`` scores are cut from each end of the ``n`` sorted scores, exactly as
    ``scipy.stats.trim_mean(scores, 0.25, axis=None)``.
    """
    return _point("iqm", scores)


def optimality_gap(scores: Any, gamma: float = 100.0) -> float:
    """Mean of ``max(gamma - score, 0)`` over all scores: how far runs fall short of ``gamma``.

    On the normalized scale ``gamma=100`` is the expert score; lower is better.
    """
    return _point("optimality_gap", scores, gamma)


# ---------------------------------------------------------------- the stratified bootstrap


def _resampled_indices(
    shape: tuple[int, int], reps: int, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """Chunks of ``(chunk, runs, tasks)`` run indices: each task's runs drawn with replacement."""
    runs, tasks = shape
    chunk = max(1, _CHUNK_ELEMENTS // (runs * tasks))
    for start in range(0, reps, chunk):
        yield rng.integers(0, runs, size=(min(chunk, reps - start), runs, tasks))


def _counts(indices: np.ndarray) -> np.ndarray:
    """How often each run is drawn, per replicate and task: ``(chunk, tasks, runs)``."""
    chunk, runs, tasks = indices.shape
    keys = (np.arange(chunk)[:, None, None] * tasks + np.arange(tasks)) * runs + indices
    return np.bincount(keys.ravel(), minlength=chunk * tasks * runs).reshape(chunk, tasks, runs)


def _interval(replicates: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    alpha = 1.0 - confidence
    low, high = np.quantile(replicates, [alpha / 2, 1.0 - alpha / 2], axis=0)
    return low, high


def interval_estimates(
    scores: Any,
    metrics: Iterable[str] = DEFAULT_METRICS,
    *,
    reps: int = 2000,
    confidence: float = 0.95,
    random_state: int | None = None,
    gamma: float = 100.0,
) -> dict[str, Estimate]:
    """Point estimates with stratified-bootstrap percentile intervals, one per metric name.

    ``metrics`` are names among ``mean``, ``median``, ``iqm``, ``optimality_gap`` (with
    threshold ``gamma``) and ``iqm_of_task_means`` (see :data:`METRICS`). All metrics are
    evaluated on the same ``reps`` replicates.
    """
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise ValueError(f"no metrics requested; accepted: {', '.join(METRICS)}")
    matrix = as_score_matrix(scores)
    functions = {name: _batched_metric(name, np.ndim(scores) == 1, gamma) for name in names}
    reps, confidence = _check_reps(reps), _check_confidence(confidence)
    seed = resolve_random_state(random_state)
    rng = np.random.default_rng(seed)
    columns = np.arange(matrix.shape[1])
    replicates: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for indices in _resampled_indices(matrix.shape, reps, rng):
        samples = matrix[indices, columns]
        for name, function in functions.items():
            replicates[name].append(function(samples))
    estimates = {}
    for name, function in functions.items():
        low, high = _interval(np.concatenate(replicates[name]), confidence)
        point = float(function(matrix[None])[0])
        estimates[name] = Estimate(
            point, float(low), float(high), confidence, BOOTSTRAP_METHOD, reps, seed
        )
    return estimates


# ---------------------------------------------------------------- proportions


def wilson_interval(successes: float, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``successes / trials`` (no continuity
    correction; the same as ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``).
    """
    if trials < 1:
        raise ValueError(f"a proportion needs at least one trial, got {trials}")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be between 0 and trials={trials}, got {successes}")
    z = NormalDist().inv_cdf(0.5 + _check_confidence(confidence) / 2)
    p, z2 = successes / trials, z * z / trials
    center = (p + z2 / 2) / (1 + z2)
    half = z / (1 + z2) * np.sqrt(p * (1 - p) / trials + z2 / (4 * trials))
    # at 0 and at `trials` successes a bound is exactly 0 or 1 (not floating-point dust)
    low = 0.0 if successes == 0 else max(0.0, float(center - half))
    high = 1.0 if successes == trials else min(1.0, float(center + half))
    return low, high


def _indicator(values: Any, name: str) -> np.ndarray:
    """``values`` (booleans or 0/1, any shape) as a flat float array of zeros and ones."""
    try:
        array = np.asarray(values, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        array = np.array([np.nan])
    if array.size == 0:
        raise ValueError(f"{name} is empty; at least one episode is needed")
    if not np.isin(array, (0.0, 1.0)).all():
        raise ValueError(f"{name} must be booleans or 0/1 values, one per episode")
    return array


def success_rate(successes: Any, confidence: float = 0.95) -> Estimate:
    """Fraction of successful episodes (booleans or 0/1, any shape, pooled), Wilson interval."""
    values = _indicator(successes, "successes")
    k, n = int(values.sum()), values.size
    low, high = wilson_interval(k, n, confidence)
    return Estimate(k / n, low, high, _check_confidence(confidence), "wilson")


# ---------------------------------------------------------------- comparing two algorithms


def _improvement(counts_x: np.ndarray, counts_y: np.ndarray, wins: np.ndarray) -> np.ndarray:
    """P(X > Y) averaged over tasks, from run counts ``(reps, tasks, n|m)`` and the per-task
    pairwise table ``wins[t, i, j]`` (1 if ``x_i > y_j``, 1/2 if equal, else 0).
    """
    n, m = counts_x.shape[-1], counts_y.shape[-1]
    per_pair = np.matmul(counts_x.transpose(1, 0, 2), wins)  # (tasks, reps, m)
    u = (per_pair * counts_y.transpose(1, 0, 2)).sum(axis=-1)  # Mann-Whitney U per task
    return (u / (n * m)).mean(axis=0)


def probability_of_improvement(
    x: Any,
    y: Any,
    *,
    reps: int = 2000,
    confidence: float = 0.95,
    random_state: int | None = None,
) -> Estimate:
    """P(X > Y): the probability that a run of X beats a run of Y on the same task, averaged
    over tasks. Each task's term is the Mann-Whitney U statistic over ``n * m`` (ties count
    1/2); ``x`` is ``(n, tasks)``, ``y`` is ``(m, tasks)``. The interval resamples the runs of
    ``x`` and of ``y`` independently within each task.
    """
    x, y = as_score_matrix(x, "x"), as_score_matrix(y, "y")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"x has {x.shape[1]} task(s) and y has {y.shape[1]}; they must match")
    reps, confidence = _check_reps(reps), _check_confidence(confidence)
    seed = resolve_random_state(random_state)
    rng = np.random.default_rng(seed)
    xt, yt = x.T[:, :, None], y.T[:, None, :]
    wins = (xt > yt) + 0.5 * (xt == yt)  # (tasks, n, m)
    point = _improvement(np.ones((1, *x.T.shape)), np.ones((1, *y.T.shape)), wins)[0]
    replicates = []
    chunk = max(1, _CHUNK_ELEMENTS // (x.shape[1] * max(x.shape[0], y.shape[0])))
    for start in range(0, reps, chunk):
        size = min(chunk, reps - start)
        counts_x = _counts(rng.integers(0, x.shape[0], size=(size, *x.shape)))
        counts_y = _counts(rng.integers(0, y.shape[0], size=(size, *y.shape)))
        replicates.append(_improvement(counts_x, counts_y, wins))
    low, high = _interval(np.concatenate(replicates), confidence)
    return Estimate(float(point), float(low), float(high), confidence, BOOTSTRAP_METHOD, reps, seed)


# ---------------------------------------------------------------- performance profiles


def _profile(
    scores: Any,
    taus: Any,
    reps: int | None,
    confidence: float,
    random_state: int | None,
    average: bool,
) -> tuple[np.ndarray, np.ndarray | None]:
    matrix = as_score_matrix(scores)
    taus = np.asarray(taus, dtype=np.float64).ravel()
    if taus.size == 0 or not np.isfinite(taus).all():
        raise ValueError("taus must be a non-empty sequence of finite thresholds")
    runs, tasks = matrix.shape

    def from_counts(counts: np.ndarray) -> np.ndarray:  # counts: (reps, tasks, runs)
        if average:
            task_means = (counts * matrix.T).sum(axis=-1) / runs  # (reps, tasks)
            return (task_means[:, :, None] > taus).mean(axis=1)
        above = (matrix.T.reshape(-1, 1) > taus).astype(np.float64)  # (tasks * runs, taus)
        return counts.reshape(len(counts), -1) @ above / (runs * tasks)

    profile = from_counts(np.ones((1, tasks, runs)))[0]
    if reps is None:
        return profile, None
    reps, confidence = _check_reps(reps), _check_confidence(confidence)
    rng = np.random.default_rng(resolve_random_state(random_state))
    replicates = [from_counts(_counts(i)) for i in _resampled_indices(matrix.shape, reps, rng)]
    low, high = _interval(np.concatenate(replicates), confidence)
    return profile, np.stack([low, high])


def performance_profile(
    scores: Any,
    taus: Any,
    *,
    reps: int | None = None,
    confidence: float = 0.95,
    random_state: int | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Score distribution: for each threshold ``tau``, the fraction of all runs x tasks
    scores that exceed it (``score > tau``).

    With ``reps`` a ``(2, len(taus))`` stratified-bootstrap band (low row, high row) comes
    back too (pass ``random_state`` to make it reproducible); otherwise the band is None.
    """
    return _profile(scores, taus, reps, confidence, random_state, average=False)


def average_score_profile(
    scores: Any,
    taus: Any,
    *,
    reps: int | None = None,
    confidence: float = 0.95,
    random_state: int | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Average-score distribution: the fraction of tasks whose mean score over runs exceeds
    each ``tau``; the band as in :func:`performance_profile`.
    """
    return _profile(scores, taus, reps, confidence, random_state, average=True)
