"""Aggregates of an evaluation's episodes, with intervals, for its :class:`Result`."""

from __future__ import annotations

from typing import Any

import numpy as np

from rlbench_suite.catalog import EnvCard
from rlbench_suite.evaluation.metrics import interval_estimates, normalized_score, success_rate
from rlbench_suite.evaluation.result import EpisodeRecord, IntervalEstimate

BOOTSTRAP_REPS = 2000
BOOTSTRAP_SEED = 0  # fixed, and recorded in every estimate, so summaries are reproducible


def primary_values(card: EnvCard, returns: Any, successes: Any) -> np.ndarray:
    """Per-episode values of the card's primary metric (the return, or success as 0/1).

    ``score/max_score`` is the return too: games that use it reward the points gained over
    their maximum score, so an episode's return is its normalized score.
    """
    if card.primary_metric in ("success_rate", "win_rate"):
        return np.asarray(successes, dtype=float)
    return np.asarray(returns, dtype=float)


def normalized_values(card: EnvCard, returns: Any, successes: Any) -> np.ndarray | None:
    """Per-episode normalized scores of the primary metric; None without both references."""
    references = card.reference_values()
    if references is None:
        return None
    return normalized_score(primary_values(card, returns, successes), *references)


def summarize(card: EnvCard, episodes: list[EpisodeRecord]) -> dict[str, Any]:
    """``aggregates`` and ``normalized_score`` of a result.

    Aggregates: the mean, median and interquartile mean of the returns with bootstrap
    intervals, and the success rate with a Wilson interval. The normalized score is the
    mean of the primary metric on the card's 0 (random) to 100 (expert) scale, with a
    bootstrap interval; None until the card has both reference scores.
    """
    returns = np.array([e.r for e in episodes])
    estimates = interval_estimates(
        returns, ("mean", "median", "iqm"), reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED
    )
    aggregates = {f"return_{k}": IntervalEstimate(**v.as_dict()) for k, v in estimates.items()}
    rate = success_rate(np.array([e.success for e in episodes]))
    aggregates["success_rate"] = IntervalEstimate(**rate.as_dict())
    normalized = None
    values = normalized_values(card, returns, [e.success for e in episodes])
    if values is not None:
        estimate = interval_estimates(
            values, "mean", reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED
        )["mean"]
        normalized = IntervalEstimate(**estimate.as_dict())
    return {"aggregates": aggregates, "normalized_score": normalized}
