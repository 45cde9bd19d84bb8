"""``rlbench text-figures``: the text games' reference figures (score fraction, win rate and
steps to win).

Every text game reports ``info["success"]`` (the game is won) and, where it keeps a score,
``info["score"]`` and ``info["max_score"]``. :func:`figures` plays seeded episodes of a policy
through the card's stack, as ``rlbench refscores`` does, and summarizes them:

- score fraction: the final ``score / max_score`` (a game without a score counts a win as 1);
- win rate: the share of episodes won;
- steps to win: the mean number of steps (commands sent) in the episodes won.

``rlbench text-figures ID [--policy SPEC] [--episodes N] [--first-seed S]`` prints them; the
cards' descriptions quote its output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import gymnasium as gym
import numpy as np
import typer

from rlbench_suite.cli.common import app, fail, progress_bar
from rlbench_suite.core.catalog import UnknownEnvError
from rlbench_suite.core.seeds import REFERENCE_EPISODES, REFERENCE_FIRST_SEED
from rlbench_suite.policies import Policy, policy_seed
from rlbench_suite.refscores import reference_policy


@dataclass(frozen=True)
class TextGameFigures:
    """Summary of seeded episodes of one policy on one text game."""

    env_id: str
    policy: str
    seeds: tuple[int, ...]
    score_fraction_mean: float
    win_rate: float
    steps_to_win: float | None
    """Mean steps of the episodes won; None when none was won."""

    def line(self) -> str:
        """One sentence for a card's description."""
        steps = "no wins" if self.steps_to_win is None else f"{self.steps_to_win:.2f} steps to win"
        return (
            f"{self.policy}: score fraction {self.score_fraction_mean:.3f}, win rate "
            f"{self.win_rate:.2f}, {steps} (seeds {self.seeds[0]} to {self.seeds[-1]})"
        )


def score_fraction(info: dict[str, Any]) -> float:
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


def figures(
    env_id: str,
    policy: str = "random",
    episodes: int = REFERENCE_EPISODES,
    first_seed: int = REFERENCE_FIRST_SEED,
    on_episode: Callable[[], Any] | None = None,
) -> TextGameFigures:
    """Play ``episodes`` seeded episodes of ``policy`` (a ``--policy`` string) and summarize
    them; ``on_episode`` is called after each episode."""
    seeds = tuple(range(first_seed, first_seed + episodes))
    env = gym.make(env_id)
    finals = []
    try:
        actor = reference_policy(env, policy)
        for seed in seeds:
            finals.append(play_text_episode(env, actor, seed))
            if on_episode is not None:
                on_episode()
    finally:
        env.close()
    wins = [steps for info, steps in finals if info.get("success")]
    return TextGameFigures(
        env_id=env_id,
        policy=policy,
        seeds=seeds,
        score_fraction_mean=float(np.mean([score_fraction(info) for info, _ in finals])),
        win_rate=len(wins) / episodes,
        steps_to_win=float(np.mean(wins)) if wins else None,
    )


@app.command("text-figures")
def text_figures(
    env_id: Annotated[str, typer.Argument(help="A text game's id, e.g. rlbench/TextMaze-v0.")],
    policy: Annotated[str, typer.Option(help="A --policy spec.")] = "random",
    episodes: Annotated[
        int, typer.Option(min=1, help="Episodes to play.")
    ] = REFERENCE_EPISODES,
    first_seed: Annotated[
        int, typer.Option(min=0, help="Seed of the first episode.")
    ] = REFERENCE_FIRST_SEED,
) -> None:
    """Print a text game's figures for a policy: score fraction, win rate, steps to win."""
    with progress_bar() as progress:
        task = progress.add_task(env_id, total=episodes)
        try:
            result = figures(env_id, policy, episodes, first_seed,
                             on_episode=lambda: progress.advance(task))  # fmt: skip
        except (ValueError, FileNotFoundError, UnknownEnvError, gym.error.Error) as exc:
            raise fail(f"{env_id}: cannot measure policy {policy!r}: {exc}") from None
    typer.echo(result.line())  # one unwrapped line, as the cards quote it
