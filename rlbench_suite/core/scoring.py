"""How episodes are scored: the success rule, the primary metric, the one normalization and
a competitive card's outcome rule (won, drawn or lost).

Every part of the suite that decides whether an episode succeeded, which per-episode value a
card is ranked by, or where a value falls on the 0 (random) to 100 (expert) scale calls this
module: the statistics wrappers during an episode, the result summary, the reference-score
tool and (later) the leaderboard. Works on scalars and on numpy arrays alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

Metric = Literal["return", "success_rate", "win_rate", "score/max_score"]
METRICS: tuple[str, ...] = Metric.__args__  # type: ignore[attr-defined]
SUCCESS_METRICS = ("success_rate", "win_rate")
"""Metrics whose per-episode value is the success flag (0 or 1)."""
SuccessKind = Literal["info", "terminated", "terminated_positive", "return_at_least"]
SUCCESS_KINDS: tuple[str, ...] = SuccessKind.__args__  # type: ignore[attr-defined]


class SuccessRule(BaseModel):
    """When an episode counts as a success.

    ``info``: ``info[key]`` was truthy at any step (Meta-World's definition);
    ``terminated``: the episode terminated (reached a terminal state) rather than being truncated;
    ``terminated_positive``: it terminated with a positive last reward;
    ``return_at_least``: the episode return is at least ``threshold``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: SuccessKind
    key: str = "success"
    threshold: float | None = None

    @model_validator(mode="after")
    def _threshold_given(self) -> SuccessRule:
        if self.kind == "return_at_least" and self.threshold is None:
            raise ValueError("success kind 'return_at_least' needs a 'threshold'")
        return self


WIN, DRAW, LOSS = 1.0, 0.5, 0.0
"""A game's score for the player: a draw is half a win (the Bradley-Terry model with ties)."""


class OutcomeRule(BaseModel):
    """How a competitive card's episode ended: won, drawn or lost.

    A win is a success (the card's success rule, which its win rate counts); an episode not
    won is a draw when its return is within ``draw_within`` of 0, else a loss. This suits
    games whose reward ends with +1 to the winner and -1 to the loser (0 each for a draw) on
    top of smaller shaping: Duel's per-frame (damage dealt - damage taken) / 100 leaves a
    drawn round within 0.1 of 0 (chip damage past a knock-out) and a lost one below -0.9.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    draw_within: float = Field(
        gt=0, description="an episode not won whose |return| is at most this is a draw"
    )

    def scores(self, returns: Any, successes: Any) -> np.ndarray:
        """Each episode's score: :data:`WIN`, :data:`DRAW` or :data:`LOSS`."""
        won = np.asarray(successes, dtype=bool)
        drawn = ~won & (np.abs(np.asarray(returns, dtype=float)) <= self.draw_within)
        return np.where(won, WIN, np.where(drawn, DRAW, LOSS))


def check_metric(metric: str) -> str:
    """``metric`` if it is one of :data:`METRICS`, else a ValueError listing them."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; accepted: {', '.join(METRICS)}")
    return metric


def scored_by_success(metric: str) -> bool:
    """Whether ``metric``'s per-episode value is the success flag rather than the return.

    ``score/max_score`` is the return: games that use it reward the points gained over their
    maximum score, so an episode's return is its score over the maximum.
    """
    return check_metric(metric) in SUCCESS_METRICS


def primary_values(metric: str, returns: Any, successes: Any) -> np.ndarray:
    """Per-episode values of the primary ``metric``: the return, or success as 0/1."""
    chosen = successes if scored_by_success(metric) else returns
    return np.asarray(chosen, dtype=float)


def normalized_score(value: Any, random: float | None, expert: float | None) -> Any:
    """``100 * (value - random) / (expert - random)``: 0 is the random policy, 100 the expert.

    ``value`` is a number or an array (an array comes back); NaN values and missing (None),
    non-finite or equal reference scores are refused with a ValueError.
    """
    for label, ref in (("random", random), ("expert", expert)):
        if ref is None:
            raise ValueError(f"normalized_score needs the {label} reference score, got None")
        if not np.isfinite(ref):
            raise ValueError(f"the {label} reference score must be finite, got {ref!r}")
    if expert == random:
        raise ValueError(f"expert and random reference scores are equal ({expert}); cannot scale")
    if value is None:
        raise ValueError("normalized_score got value=None")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"normalized_score takes a number or an array of numbers (returns), "
                         f"got {value!r}") from None  # fmt: skip
    if np.isnan(array).any():
        raise ValueError("normalized_score got NaN value(s); drop or impute them first")
    result = 100.0 * (array - random) / (expert - random)
    return result if array.ndim else float(result)


def primary_aggregate(metric: str) -> str:
    """The aggregate of a result whose interval its normalized score carries (mapped through
    :func:`normalized_interval`): ``success_rate`` for a success metric, else ``return_mean``."""
    return "success_rate" if scored_by_success(metric) else "return_mean"


def normalized_interval(low: float, high: float, random: float | None,
                        expert: float | None) -> tuple[float, float]:  # fmt: skip
    """The interval ``[low, high]`` of the primary metric's aggregate on the 0-100 scale (its
    ends normalized, in order: an expert below the random reference turns them round)."""
    mapped = sorted(normalized_score([low, high], random, expert))
    return float(mapped[0]), float(mapped[1])


SEPARATION_STANDARD_ERRORS = 3.0
"""How far the expert reference must beat the random one, in standard errors of the
difference (measured references), for a card to have a normalized score."""


def references_separated(
    random: float, random_se: float, expert: float, expert_se: float
) -> str | None:
    """None when ``expert`` beats ``random`` by the margin, else why not.

    The margin is :data:`SEPARATION_STANDARD_ERRORS` standard errors of the difference
    (``sqrt(se_random**2 + se_expert**2)``); with exact references (standard errors 0) any
    positive difference counts. Below the margin a 0-100 scale would mostly measure noise
    (a random policy could score 270), so such a card has no normalized score.
    """
    margin = SEPARATION_STANDARD_ERRORS * float(np.hypot(random_se, expert_se))
    gap = expert - random
    if gap > margin and gap > 1e-9 * max(1.0, abs(expert), abs(random)):
        return None
    return (
        f"the expert reference ({expert:.4g}) does not beat the random one ({random:.4g}) by "
        f"the margin ({SEPARATION_STANDARD_ERRORS:g} standard errors = {margin:.3g})"
    )


References = tuple[float, float]
"""``(random, expert)`` reference values of a card's primary metric."""


@dataclass(frozen=True)
class EpisodeScorer:
    """A card's success rule, primary metric and references, applied to finished episodes."""

    rule: SuccessRule | None
    metric: str
    references: References | None

    @classmethod
    def build(
        cls,
        success: dict[str, Any] | SuccessRule | None,
        metric: str,
        references: References | None,
    ) -> EpisodeScorer:
        """Validate a success rule given as a dict (as wrappers receive it) and a metric."""
        rule = success
        if isinstance(success, dict):
            kind = success.get("kind")
            if kind not in SUCCESS_KINDS:
                accepted = ", ".join(SUCCESS_KINDS)
                raise ValueError(f"unknown success kind {kind!r}; accepted: {accepted}")
            rule = SuccessRule.model_validate(success)
        return cls(rule, check_metric(metric), references)

    @property
    def info_key(self) -> str | None:
        """The ``info`` key to watch during an episode (rule kind ``info``), else None."""
        return self.rule.key if self.rule is not None and self.rule.kind == "info" else None

    def success(self, seen: Any, terminated: Any, last_reward: Any, returns: Any) -> Any:
        """Whether episodes ending now are successes (``seen``: the ``info`` rule fired)."""
        kind = self.rule.kind if self.rule is not None else None
        if kind == "info":
            hit = seen
        elif kind == "terminated":
            hit = np.asarray(terminated, dtype=bool)
        elif kind == "terminated_positive":
            hit = np.logical_and(terminated, np.asarray(last_reward, dtype=float) > 0)
        elif kind == "return_at_least":
            hit = np.asarray(returns) >= self.rule.threshold  # type: ignore[union-attr]
        else:
            hit = np.zeros(np.shape(returns), bool)
        return hit if np.ndim(hit) else bool(hit)

    def normalized(self, returns: Any, success: Any) -> Any:
        """The primary metric's value on the 0 (random) to 100 (expert) scale, or None."""
        if self.references is None:
            return None
        return normalized_score(primary_values(self.metric, returns, success), *self.references)
