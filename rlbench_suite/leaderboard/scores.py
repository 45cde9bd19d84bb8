"""A stored result's per-run scores, computed once when it is stored (the ranking reads them).

A run's episode scores are the normalized scores (0 random, 100 expert) when the card has
both references, else the primary metric's own values; its score is their mean. They are
kept on the ``results`` row (``score``, ``episode_scores``, ``budget_class``) so a ranking
never parses the stored Result JSON, and recomputed by :func:`rescore_env` when a card's
scoring changes (references, primary metric).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.scoring import SUCCESS_METRICS, primary_values
from rlbench_suite.core.summary import normalized_values
from rlbench_suite.leaderboard.models import Result
from rlbench_suite.leaderboard.ranking import budget_class


def episode_scores(card: EnvCard, returns: Any, successes: Any) -> np.ndarray:
    """A result's per-episode scores: normalized (0-100) when the card has both references,
    else the primary metric's own values."""
    values = normalized_values(card, returns, successes)
    return values if values is not None else primary_values(card.primary_metric, returns, successes)


def success_scale(card: EnvCard) -> tuple[float, float] | None:
    """The scores of a failed and of a successful episode under ``card`` where its metric is
    a success (or win) rate, by :func:`episode_scores`' rule; None for other metrics."""
    if card.primary_metric not in SUCCESS_METRICS:
        return None
    failed, succeeded = episode_scores(card, [0.0, 0.0], [False, True])
    return float(failed), float(succeeded)


def score_columns(card: EnvCard, document: dict[str, Any]) -> dict[str, Any]:
    """The ``results`` columns derived from a Result JSON under ``card``."""
    scores = episode_scores(card, document["returns"], document["successes"])
    return {
        "score": float(scores.mean()),
        "episode_scores": [float(v) for v in scores],
        "budget_class": budget_class(document.get("training_budget_steps")),
    }


def rescore_env(session: Session, env_id: str, card: EnvCard) -> int:
    """Recompute the score columns of every result of ``env_id`` under ``card``; return how
    many rows changed."""
    changed = 0
    for row in session.scalars(select(Result).where(Result.env_id == env_id)):
        values = score_columns(card, row.document)
        if any(getattr(row, key) != value for key, value in values.items()):
            for key, value in values.items():
                setattr(row, key, value)
            changed += 1
    return changed
