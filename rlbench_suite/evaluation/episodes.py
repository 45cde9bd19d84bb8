"""Playing one seeded episode of a policy (shared by the runners and ``refscores``)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from rlbench_suite.core.result import EpisodeRecord
from rlbench_suite.core.seeds import policy_seed
from rlbench_suite.policies import Policy
from rlbench_suite.wrappers.stats import STATS_KEY


def play_episode(
    env: gym.Env, policy: Policy, seed: int, index: int = 0,
    reset_options: dict[str, Any] | None = None,
) -> EpisodeRecord:  # fmt: skip
    """Play the episode ``env.reset(seed=seed, options=reset_options)``.

    The policy is reset with ``policy.reset(policy_seed(seed))``.

    The policy's random stream is derived from the seed but independent of the
    environment's, so an episode depends on its seed only: the same seed gives the same
    episode in any process, order or worker.
    """
    obs, info = env.reset(seed=seed, options=reset_options or None)
    policy.reset(policy_seed(seed))
    while True:
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        if terminated or truncated:
            break
    stats: dict[str, Any] = info.get(STATS_KEY) or {}
    if not stats:
        raise RuntimeError(
            f"{env.spec.id if env.spec else env}: no info[{STATS_KEY!r}] at the end of the "
            "episode; evaluate environments made with gym.make('rlbench/...')"
        )
    return EpisodeRecord(
        index=index,
        seed=seed,
        r=float(stats["r"]),
        l=int(stats["l"]),
        success=bool(stats["success"]),
        normalized_score=stats.get("normalized_score"),
    )
