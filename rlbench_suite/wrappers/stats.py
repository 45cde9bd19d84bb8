"""Episode statistics with a success flag and a normalized score (single environments)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from rlbench_suite.wrappers.base import VersionedWrapper, register_wrapper

# The info key of the suite's episode statistics. Not "episode", so that Gymnasium's
# RecordEpisodeStatistics and SB3's Monitor (which own that key) can still be stacked on top.
STATS_KEY = "rlbench_episode"
SUCCESS_KINDS = ("info", "terminated", "terminated_positive", "return_at_least")
METRICS = ("return", "success_rate", "win_rate")


@dataclass(frozen=True)
class EpisodeScorer:
    """A card's success rule and score normalization; works on scalars and on numpy arrays."""

    kind: str | None
    key: str
    threshold: float | None
    by_success: bool
    random: float | None
    scale: float | None

    @classmethod
    def build(
        cls,
        success: dict[str, Any] | None = None,
        metric: str = "return",
        scores_from: str | None = None,
        random_score: float | None = None,
        expert_score: float | None = None,
    ) -> EpisodeScorer:
        """Validate the arguments (those of :class:`EpisodeStatistics`) into a scorer."""
        rule = dict(success or {})
        kind = rule.get("kind")
        if kind is not None and kind not in SUCCESS_KINDS:
            raise ValueError(f"unknown success kind {kind!r}; accepted: {', '.join(SUCCESS_KINDS)}")
        if kind == "return_at_least" and rule.get("threshold") is None:
            raise ValueError("success kind 'return_at_least' needs a 'threshold'")
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; accepted: {', '.join(METRICS)}")
        if scores_from is not None:
            random_score, expert_score = _reference_scores(scores_from)
        scale = (
            100.0 / (expert_score - random_score)
            if random_score is not None and expert_score is not None
            and expert_score != random_score
            else None
        )  # fmt: skip
        return cls(kind, rule.get("key", "success"), rule.get("threshold"), metric != "return",
                   random_score, scale)  # fmt: skip

    def final_success(self, seen: Any, terminated: Any, last_reward: Any, returns: Any) -> Any:
        """Whether episodes ending now are successes (``seen``: the ``info`` rule fired)."""
        if self.kind == "info":
            return seen
        if self.kind == "terminated":
            return np.asarray(terminated, dtype=bool) if np.ndim(terminated) else bool(terminated)
        if self.kind == "terminated_positive":
            hit = np.logical_and(terminated, np.asarray(last_reward, dtype=float) > 0)
            return hit if np.ndim(hit) else bool(hit)
        if self.kind == "return_at_least":
            hit = np.asarray(returns) >= self.threshold
            return hit if np.ndim(hit) else bool(hit)
        return np.zeros(np.shape(returns), bool) if np.ndim(returns) else False

    def normalized(self, returns: Any, success: Any) -> Any:
        """The primary metric's value on the 0 (random) to 100 (expert) scale, or None."""
        if self.scale is None:
            return None
        value = np.asarray(success, dtype=float) if self.by_success else np.asarray(returns, float)
        normalized = (value - self.random) * self.scale
        return normalized if np.ndim(normalized) else float(normalized)


@register_wrapper("rlbench/EpisodeStatistics-v0")
class EpisodeStatistics(VersionedWrapper, gym.Wrapper):
    """Adds ``info["rlbench_episode"]`` (:data:`STATS_KEY`) at the end of every episode.

    It holds ``r`` (return), ``l`` (length), ``success`` (by the success rule; False without
    one) and ``normalized_score``: the episode's value of the primary ``metric`` (its return,
    or its success as 0/1 for ``success_rate`` and ``win_rate``) on the 0 (random) to 100
    (expert) scale, ``None`` until both reference scores exist. There is no wall time in it,
    so infos stay identical under a seed (Gymnasium's ``RecordEpisodeStatistics`` adds ``t``
    under ``info["episode"]`` if wanted). ``info["is_success"]`` is set too, as
    Stable-Baselines3 expects. It sits directly above the time limit so it sees the
    environment's own rewards and truncations.

    Args:
        success: ``None`` or a success rule ``{"kind", "key", "threshold"}`` (see
            :class:`rlbench_suite.catalog.SuccessRule`).
        metric: the primary metric the normalized score is computed on.
        scores_from: a card id whose reference scores normalize (looked up when the
            wrapper is built, so re-measured scores never change the spec).
        random_score, expert_score: explicit reference scores, when ``scores_from`` is None.
    """

    def __init__(
        self,
        env: gym.Env,
        success: dict[str, Any] | None = None,
        metric: str = "return",
        scores_from: str | None = None,
        random_score: float | None = None,
        expert_score: float | None = None,
    ) -> None:
        kwargs = dict(success=success, metric=metric, scores_from=scores_from,
                      random_score=random_score, expert_score=expert_score)  # fmt: skip
        VersionedWrapper.__init__(self, **kwargs)
        gym.Wrapper.__init__(self, env)
        self._scorer = EpisodeScorer.build(**kwargs)
        self._by_info = self._scorer.kind == "info"
        self._return = 0.0
        self._length = 0
        self._seen = False

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self._return, self._length, self._seen = 0.0, 0, False
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._return += float(reward)
        self._length += 1
        if self._by_info and info.get(self._scorer.key):
            self._seen = True
        if terminated or truncated:
            scorer = self._scorer
            success = scorer.final_success(self._seen, terminated, reward, self._return)
            info = dict(info)
            info[STATS_KEY] = {
                "r": self._return,
                "l": self._length,
                "success": success,
                "normalized_score": scorer.normalized(self._return, success),
            }
            info["is_success"] = success
        return obs, reward, terminated, truncated, info


def _reference_scores(env_id: str) -> tuple[float | None, float | None]:
    from rlbench_suite.catalog import get_card

    return get_card(env_id).reference_values() or (None, None)
