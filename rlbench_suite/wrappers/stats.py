"""Episode statistics with a success flag and a normalized score."""

from __future__ import annotations

import math
import time
from typing import Any, SupportsFloat

import gymnasium as gym

from rlbench_suite.wrappers.base import VersionedWrapper, register_wrapper

SUCCESS_KINDS = ("info", "terminated", "terminated_positive", "return_at_least")


@register_wrapper("rlbench/EpisodeStatistics-v0")
class EpisodeStatistics(VersionedWrapper, gym.Wrapper):
    """Adds ``info["episode"]`` at the end of every episode.

    ``info["episode"]`` holds ``r`` (return), ``l`` (length), ``t`` (wall seconds),
    ``success`` (by the card's success rule; False without one) and ``normalized_score``
    (0 = random, 100 = expert reference; NaN until both references exist). ``info["is_success"]``
    is set too, as Stable-Baselines3 expects. It should sit directly above the time limit so
    it sees the environment's own rewards.

    Args:
        success: ``None`` or a success rule ``{"kind", "key", "threshold"}`` (see
            :class:`rlbench_suite.catalog.SuccessRule`).
        random_score, expert_score: the card's reference scores, for normalization.
    """

    def __init__(
        self,
        env: gym.Env,
        success: dict[str, Any] | None = None,
        random_score: float | None = None,
        expert_score: float | None = None,
    ) -> None:
        VersionedWrapper.__init__(
            self, success=success, random_score=random_score, expert_score=expert_score
        )
        gym.Wrapper.__init__(self, env)
        rule = dict(success or {})
        kind = rule.get("kind")
        if kind is not None and kind not in SUCCESS_KINDS:
            raise ValueError(f"unknown success kind {kind!r}; accepted: {', '.join(SUCCESS_KINDS)}")
        if kind == "return_at_least" and rule.get("threshold") is None:
            raise ValueError("success kind 'return_at_least' needs a 'threshold'")
        self._kind = kind
        self._key = rule.get("key", "success")
        self._threshold = rule.get("threshold")
        self._scale = (
            100.0 / (expert_score - random_score)
            if random_score is not None
            and expert_score is not None
            and expert_score != random_score
            else None
        )
        self._random = random_score
        self._return = 0.0
        self._length = 0
        self._success = False
        self._start = time.perf_counter()

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self._return, self._length, self._success = 0.0, 0, False
        self._start = time.perf_counter()
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._return += float(reward)
        self._length += 1
        if self._kind == "info" and info.get(self._key):
            self._success = True
        if terminated or truncated:
            info = dict(info)
            info["episode"] = self._episode_stats(reward, terminated)
            info["is_success"] = info["episode"]["success"]
        return obs, reward, terminated, truncated, info

    def _episode_stats(self, last_reward: SupportsFloat, terminated: bool) -> dict[str, Any]:
        if self._kind == "terminated":
            self._success = bool(terminated)
        elif self._kind == "terminated_positive":
            self._success = bool(terminated and float(last_reward) > 0)
        elif self._kind == "return_at_least":
            self._success = self._return >= self._threshold
        normalized = (
            (self._return - self._random) * self._scale if self._scale is not None else math.nan
        )
        return {
            "r": self._return,
            "l": self._length,
            "t": round(time.perf_counter() - self._start, 6),
            "success": self._success,
            "normalized_score": normalized,
        }
