"""What every evaluation backend shares: building the policy, playing assigned episodes.

The in-process run, the local process pool (:mod:`~rlbench_suite.evaluation.local_pool`) and
the Ray actors (:mod:`~rlbench_suite.evaluation.ray_runner`) all divide episodes the same way
(:func:`split_statically`) and play them with :func:`run_episodes`, so per-episode results are
identical whatever the backend and worker count.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.result import EpisodeRecord
from rlbench_suite.evaluation.episodes import play_episode
from rlbench_suite.policies import Policy, as_policy
from rlbench_suite.wrappers import apply_wrappers

PolicySource = str | Policy | Callable[..., Any]
OnEpisode = Callable[[EpisodeRecord], None]


class EvaluationError(ValueError):
    """An evaluation could not run (a worker failed, the protocol does not fit the env)."""


def build_policy(source: PolicySource, env: gym.Env, deterministic: bool) -> Policy:
    """A policy from a spec string (``random``, ``sb3:PATH``, ...) or a policy object."""
    if isinstance(source, str):
        from rlbench_suite.policies import make_policy

        return make_policy(source, env=env, deterministic=deterministic)
    return as_policy(source)


def ensure_registered(card: EnvCard) -> None:
    """Register ``card`` in this process if it is not (a worker of an evaluation of a card
    registered from outside the suite, which the worker's own import did not register)."""
    if card.id not in gym.registry:
        from rlbench_suite.card_sources import register_cards

        register_cards(card)


def prepare(card: EnvCard, source: PolicySource, deterministic: bool) -> tuple[gym.Env, Policy]:
    """The environment ``gym.make(card.id)``, wrapped in the wrappers the policy was trained
    through (recorded with its artifact), and the policy built on it."""
    from rlbench_suite.policies.specs import declared_wrappers

    ensure_registered(card)
    env = gym.make(card.id)
    try:
        env = apply_wrappers(env, declared_wrappers(source))
        return env, build_policy(source, env, deterministic)
    except BaseException:
        env.close()
        raise


def split_statically(pending: list[tuple[int, int]], workers: int) -> list[list[tuple[int, int]]]:
    """Round-robin division of the pending episodes: worker k gets every k-th one."""
    return [chunk for chunk in (pending[k::workers] for k in range(workers)) if chunk]


def single_threaded_torch() -> None:
    """One torch thread per worker (as fast for small MLPs, and workers share the cores);
    torch is not imported for policies that do not use it."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def run_episodes(
    card: EnvCard,
    source: PolicySource,
    deterministic: bool,
    assignments: list[tuple[int, int]],
    on_episode: OnEpisode,
    reset_options: dict[str, Any] | None = None,
) -> None:
    """Play ``(index, seed)`` episodes in order in this process, reporting each."""
    env, policy = prepare(card, source, deterministic)
    try:
        parent = mp.parent_process()
        if parent is not None:  # a worker: keep to one core
            single_threaded_torch()
        for index, seed in assignments:
            if parent is not None and not parent.is_alive():
                return  # the run was stopped: do not go on alone
            on_episode(play_episode(env, policy, seed, index, reset_options))
    finally:
        env.close()
