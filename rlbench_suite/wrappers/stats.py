"""Episode statistics with a success flag and a normalized score (single environments)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, SupportsFloat

import gymnasium as gym

from rlbench_suite.core.scoring import EpisodeScorer, References
from rlbench_suite.wrappers.base import VersionedWrapper, register_wrapper

# The info key of the suite's episode statistics. Not "episode", so that Gymnasium's
# RecordEpisodeStatistics and SB3's Monitor (which own that key) can still be stacked on top.
STATS_KEY = "rlbench_episode"

ReferenceLookup = Callable[[str], "References | None"]
_reference_lookup: ReferenceLookup | None = None


def set_reference_lookup(lookup: ReferenceLookup) -> None:
    """Install how ``scores_from=ID`` finds the ``(random, expert)`` references of card ID.

    The registry installs a lookup over the cards it registered, so the statistics wrappers
    import no catalog and also score cards registered from outside the suite.
    """
    global _reference_lookup
    _reference_lookup = lookup


def build_scorer(
    success: dict[str, Any] | None = None,
    metric: str = "return",
    scores_from: str | None = None,
    random_score: float | None = None,
    expert_score: float | None = None,
) -> EpisodeScorer:
    """The scorer of the statistics wrappers' arguments (see :class:`EpisodeStatistics`)."""
    references: References | None = None
    if scores_from is not None:
        if _reference_lookup is None:
            raise RuntimeError(
                f"scores_from={scores_from!r} needs the registry's reference lookup: "
                "import rlbench_suite first"
            )
        references = _reference_lookup(scores_from)
    elif None not in (random_score, expert_score) and random_score != expert_score:
        references = (float(random_score), float(expert_score))  # type: ignore[arg-type]
    return EpisodeScorer.build(success, metric, references)


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
            :class:`rlbench_suite.core.scoring.SuccessRule`).
        metric: the primary metric the normalized score is computed on.
        scores_from: a card id whose reference scores normalize (looked up through the
            registry's lookup, :func:`set_reference_lookup`, when the wrapper is built, so
            re-measured scores never change the spec).
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
        self._scorer = build_scorer(**kwargs)
        self._info_key = self._scorer.info_key
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
        if self._info_key is not None and info.get(self._info_key):
            self._seen = True
        if terminated or truncated:
            record = self.episode_record(terminated, reward)
            info = {**info, STATS_KEY: record, "is_success": record["success"]}
        return obs, reward, terminated, truncated, info

    def episode_record(self, terminated: bool = False, last_reward: float = 0.0) -> dict:
        """The statistics of the episode so far, as ``info["rlbench_episode"]`` holds them at
        its end; a wrapper above that ends an episode the game did not end (a turn limit)
        reports them with ``terminated=False``."""
        scorer = self._scorer
        success = scorer.success(self._seen, terminated, last_reward, self._return)
        return {
            "r": self._return,
            "l": self._length,
            "success": success,
            "normalized_score": scorer.normalized(self._return, success),
        }
