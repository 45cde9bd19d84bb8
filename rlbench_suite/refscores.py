"""Measuring reference scores and writing them onto cards (``rlbench refscores``)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import tomlkit

from rlbench_suite import __version__
from rlbench_suite.core.cards import EnvCard, RefScore, load_card
from rlbench_suite.core.result import EpisodeRecord
from rlbench_suite.core.scoring import DRAW, primary_values
from rlbench_suite.core.seeds import REFERENCE_EPISODES, REFERENCE_FIRST_SEED
from rlbench_suite.evaluation.episodes import play_episode
from rlbench_suite.policies import Policy, RandomPolicy, make_policy


def reference_policy(env: gym.Env, policy: Policy | str | None) -> Policy:
    """``policy`` as a Policy on ``env``: ``None``/``"random"`` is uniformly random (masked to
    the legal actions), any other string a ``--policy`` spec built on ``env``."""
    if policy is None or policy == "random":
        return RandomPolicy(env.action_space)
    if isinstance(policy, str):
        return make_policy(policy, env)
    return policy


def play_episodes(
    card: EnvCard, policy: Policy | str | None, seeds: list[int], on_episode: Any = None
) -> list[EpisodeRecord]:
    """Play one episode per seed through the card's stack (``gym.make(card.id)``).

    Episodes are played as the evaluation harness plays them
    (:func:`~rlbench_suite.evaluation.episodes.play_episode`). ``policy`` is a Policy, a
    ``--policy`` string for :func:`~rlbench_suite.policies.make_policy` (built on this env,
    deterministic), or ``None``: uniformly random actions, masked to the legal ones.
    """
    env = gym.make(card.id)
    try:
        policy = reference_policy(env, policy)
        records = []
        for index, seed in enumerate(seeds):
            records.append(play_episode(env, policy, seed, index))
            if on_episode is not None:
                on_episode()
    finally:
        env.close()
    return records


def metric_values(card: EnvCard, episodes: list[EpisodeRecord]) -> np.ndarray:
    """Per-episode values of the card's primary metric."""
    returns, successes = [e.r for e in episodes], [e.success for e in episodes]
    return primary_values(card.primary_metric, returns, successes)


def measure(
    card: EnvCard,
    policy: str = "random",
    episodes: int = REFERENCE_EPISODES,
    first_seed: int = REFERENCE_FIRST_SEED,
    on_episode: Any = None,
) -> RefScore:
    """Measure the primary metric of ``policy`` (a ``--policy`` string) over seeded episodes.

    The score records the command that reproduces it, and on a card with an ``[outcome]``
    rule the episodes drawn.
    """
    seeds = list(range(first_seed, first_seed + episodes))
    played = play_episodes(card, policy, seeds, on_episode)
    values = metric_values(card, played)
    draws = None
    if card.outcome is not None:
        scores = card.outcome.scores([e.r for e in played], [e.success for e in played])
        draws = int((scores == DRAW).sum())
    command = f"rlbench refscores {card.id} --episodes {episodes} --first-seed {first_seed}"
    return RefScore(
        value=round(float(values.mean()), 6),
        std=round(float(values.std()), 6),
        policy=policy,
        episodes=episodes,
        draws=draws,
        seeds=seeds,
        suite_version=__version__,
        measured=dt.date.today(),
        command=command if policy == "random" else f"{command} --policy {policy}",
    )


def write_reference(path: Path, kind: str, score: RefScore) -> None:
    """Write ``score`` as ``[reference.<kind>]`` into the card at ``path``, keeping its layout."""

    def edit(doc: tomlkit.TOMLDocument) -> None:
        if "reference" not in doc:
            doc.add(tomlkit.nl())
            doc["reference"] = tomlkit.table(is_super_table=True)
        table = tomlkit.table()
        for key, value in score.model_dump(exclude_none=True).items():
            table.add(key, value)
        doc["reference"][kind] = table  # type: ignore[index]

    rewrite_card(path, edit)


def write_trained(path: Path, trained: list[Any], suite: str | None = None,
                  member: bool = True) -> None:  # fmt: skip
    """Write the card's ``[[trained]]`` baselines (``TrainedBaseline``s, best first) and, if
    given, put the card in ``suite`` (``member``) or take it out (not ``member``), keeping the
    rest of the card's layout."""

    def edit(doc: tomlkit.TOMLDocument) -> None:
        suites = list(doc.get("suites", []))
        if suite is not None and member and suite not in suites:
            doc["suites"] = [*suites, suite]
        elif suite is not None and not member and suite in suites:
            doc["suites"] = [s for s in suites if s != suite]
        tables = tomlkit.aot()
        for baseline in trained:
            tables.append(tomlkit.item(baseline.model_dump(mode="json", exclude_none=True)))
        if "trained" in doc:
            del doc["trained"]  # the blank line before it stays
        else:
            doc.add(tomlkit.nl())
        doc["trained"] = tables

    rewrite_card(path, edit)


def rewrite_card(path: Path, edit: Any) -> None:
    """Apply ``edit`` to the parsed card at ``path``; write it back only if it still loads."""
    doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    edit(doc)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(tomlkit.dumps(doc), encoding="utf-8")
    try:
        load_card(tmp)
    except Exception:
        tmp.unlink()
        raise
    tmp.replace(path)  # atomic: a card is never left half-written
