"""The text games' reference figures: normalized score, win rate and steps to win.

Every text game reports ``info["success"]`` (the game is won) and, where it keeps a score,
``info["score"]`` and ``info["max_score"]``. :func:`measure_text_game` plays seeded episodes
of a policy through the card's stack, as ``rlbench refscores`` does, and summarizes them:

- normalized score: the final ``score / max_score`` (a game without a score counts a win as 1);
- win rate: the share of episodes won;
- steps to win: the mean number of steps (commands sent) in the episodes won.

Run ``python -m rlbench_suite.envs.text.stats ID [--policy SPEC] [--episodes N]
[--first-seed S]`` to print them; the cards' descriptions quote its output.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from rich.progress import track

from rlbench_suite.policies import Policy, policy_seed
from rlbench_suite.refscores import reference_policy


@dataclass(frozen=True)
class TextGameFigures:
    """Summary of seeded episodes of one policy on one text game."""

    env_id: str
    policy: str
    seeds: tuple[int, ...]
    normalized_score: float
    win_rate: float
    steps_to_win: float | None
    """Mean steps of the episodes won; None when none was won."""

    def line(self) -> str:
        """One sentence for a card's description."""
        steps = "no wins" if self.steps_to_win is None else f"{self.steps_to_win:.2f} steps to win"
        return (
            f"{self.policy}: normalized score {self.normalized_score:.3f}, win rate "
            f"{self.win_rate:.2f}, {steps} (seeds {self.seeds[0]} to {self.seeds[-1]})"
        )


def normalized_score(info: dict[str, Any]) -> float:
    """``score / max_score`` from a final ``info``; a game without a score scores its win."""
    if info.get("max_score"):
        return float(info["score"]) / float(info["max_score"])
    return float(bool(info.get("success")))


def play_text_episode(env: gym.Env, policy: Policy, seed: int) -> tuple[dict[str, Any], int]:
    """The final ``info`` and the length of the episode ``env.reset(seed=seed)``."""
    obs, info = env.reset(seed=seed)
    policy.reset(policy_seed(seed))
    steps, done = 0, False
    while not done:
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        steps, done = steps + 1, terminated or truncated
    return info, steps


def measure_text_game(
    env_id: str, policy: str = "random", episodes: int = 100, first_seed: int = 10_000
) -> TextGameFigures:
    """Play ``episodes`` seeded episodes of ``policy`` (a ``--policy`` string) and summarize."""
    seeds = tuple(range(first_seed, first_seed + episodes))
    env = gym.make(env_id)
    try:
        actor = reference_policy(env, policy)
        finals = [play_text_episode(env, actor, s) for s in track(seeds, description=env_id)]
    finally:
        env.close()
    wins = [steps for info, steps in finals if info.get("success")]
    return TextGameFigures(
        env_id=env_id,
        policy=policy,
        seeds=seeds,
        normalized_score=float(np.mean([normalized_score(info) for info, _ in finals])),
        win_rate=len(wins) / episodes,
        steps_to_win=float(np.mean(wins)) if wins else None,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("env_id")
    parser.add_argument("--policy", default="random", help="a --policy spec (default: random)")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--first-seed", type=int, default=10_000)
    args = parser.parse_args(argv)
    print(measure_text_game(args.env_id, args.policy, args.episodes, args.first_seed).line())


if __name__ == "__main__":
    main()
