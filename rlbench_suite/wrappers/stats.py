"""Episode statistics with a success flag and a normalized score."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym

from rlbench_suite.wrappers.base import VersionedWrapper, register_wrapper

# The info key of the suite's episode statistics. Not "episode", so that Gymnasium's
# RecordEpisodeStatistics and SB3's Monitor (which own that key) can still be stacked on top.
STATS_KEY = "rlbench_episode"
SUCCESS_KINDS = ("info", "terminated", "terminated_positive", "return_at_least")
METRICS = ("return", "success_rate", "win_rate")


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
        VersionedWrapper.__init__(
            self, success=success, metric=metric, scores_from=scores_from,
            random_score=random_score, expert_score=expert_score,
        )  # fmt: skip
        gym.Wrapper.__init__(self, env)
        rule = dict(success or {})
        kind = rule.get("kind")
        if kind is not None and kind not in SUCCESS_KINDS:
            raise ValueError(f"unknown success kind {kind!r}; accepted: {', '.join(SUCCESS_KINDS)}")
        if kind == "return_at_least" and rule.get("threshold") is None:
            raise ValueError("success kind 'return_at_least' needs a 'threshold'")
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; accepted: {', '.join(METRICS)}")
        self._kind = kind
        self._key = rule.get("key", "success")
        self._threshold = rule.get("threshold")
        self._by_success = metric != "return"
        if scores_from is not None:
            random_score, expert_score = _reference_scores(scores_from)
        self._random = random_score
        self._scale = (
            100.0 / (expert_score - random_score)
            if random_score is not None and expert_score is not None
            and expert_score != random_score
            else None
        )  # fmt: skip
        self._return = 0.0
        self._length = 0
        self._success = False

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self._return, self._length, self._success = 0.0, 0, False
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._return += float(reward)
        self._length += 1
        if self._kind == "info" and info.get(self._key):
            self._success = True
        if terminated or truncated:
            info = dict(info)
            info[STATS_KEY] = self._episode_stats(reward, terminated)
            info["is_success"] = info[STATS_KEY]["success"]
        return obs, reward, terminated, truncated, info

    def _episode_stats(self, last_reward: SupportsFloat, terminated: bool) -> dict[str, Any]:
        if self._kind == "terminated":
            self._success = bool(terminated)
        elif self._kind == "terminated_positive":
            self._success = bool(terminated and float(last_reward) > 0)
        elif self._kind == "return_at_least":
            self._success = self._return >= self._threshold
        value = float(self._success) if self._by_success else self._return
        normalized = (value - self._random) * self._scale if self._scale is not None else None
        return {
            "r": self._return,
            "l": self._length,
            "success": self._success,
            "normalized_score": normalized,
        }


def _reference_scores(env_id: str) -> tuple[float | None, float | None]:
    from rlbench_suite.catalog import get_card

    reference = get_card(env_id).reference
    return (
        reference.random.value if reference.random else None,
        reference.expert.value if reference.expert else None,
    )
