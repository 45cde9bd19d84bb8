"""Registers every card: single-agent ids with Gymnasium, multi-agent ids with PettingZoo.

Registration is lazy: only ids, entry-point strings and wrapper specs are recorded, so
``import rlbench_suite`` imports no simulator. Each single-agent id gets the standardized
stack as ``additional_wrappers`` (episode statistics first, then the card's wrappers), so
``gym.make(id)`` builds it and ``gym.make(env.spec)`` rebuilds it.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, Literal

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec

from rlbench_suite.catalog import EnvCard, catalog, get_card
from rlbench_suite.wrappers import WRAPPERS, EpisodeStatistics

MultiAgentApi = Literal["parallel", "aec"]


def wrapper_specs(card: EnvCard) -> tuple[WrapperSpec, ...]:
    """The standardized wrapper stack of ``card``, innermost first."""
    refs = card.reference
    stats_kwargs = {
        "success": card.success.model_dump() if card.success else None,
        "random_score": refs.random.value if refs.random else None,
        "expert_score": refs.expert.value if refs.expert else None,
    }
    specs = [
        WrapperSpec(
            EpisodeStatistics.wrapper_name, WRAPPERS[EpisodeStatistics.wrapper_name], stats_kwargs
        )
    ]
    specs += [WrapperSpec(ref.name, WRAPPERS[ref.name], dict(ref.kwargs)) for ref in card.wrappers]
    return tuple(specs)


def register_card(card: EnvCard) -> None:
    """Register one card with Gymnasium (single-agent) or PettingZoo (multi-agent)."""
    if card.is_multiagent:
        _register_pettingzoo(card)
        return
    gym.register(
        id=card.id,
        entry_point=card.entry_point,
        vector_entry_point=card.vector_entry_point,
        max_episode_steps=card.max_episode_steps,
        reward_threshold=card.reward_threshold,
        kwargs=dict(card.kwargs),
        additional_wrappers=wrapper_specs(card),
    )


def _register_pettingzoo(card: EnvCard) -> None:
    try:
        import pettingzoo
    except ImportError:  # the multiagent extra is not installed: make_multiagent still explains
        return
    if not hasattr(pettingzoo, "register"):  # PettingZoo < 1.27 has no registry
        return
    for api in ("aec", "parallel"):
        if api in _supported_apis(card):
            entry_point = functools.partial(make_multiagent, card.id, api)
            pettingzoo.register(api, card.id, entry_point=entry_point)


def _supported_apis(card: EnvCard) -> tuple[str, ...]:
    return ("aec", "parallel") if card.api == "pettingzoo-parallel" else ("aec",)


@functools.cache
def register_all() -> int:
    """Register every card in the catalog (idempotent); returns how many."""
    cards = catalog()
    for card in cards.values():
        register_card(card)
    return len(cards)


def load_entry_point(entry_point: str) -> Any:
    """Import ``module:attr``."""
    module_name, attr = entry_point.split(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def make_multiagent(env_id: str, api: MultiAgentApi = "parallel", **kwargs: Any) -> Any:
    """Create a multi-agent id as a PettingZoo ``ParallelEnv`` (``api="parallel"``) or ``AECEnv``.

    Natively parallel games are converted to AEC with ``parallel_to_aec``; turn-based
    (AEC-only) games refuse ``api="parallel"`` with a clear error.
    """
    if api not in ("parallel", "aec"):
        raise ValueError(f"api must be 'parallel' or 'aec', got {api!r}")
    card = get_card(env_id)
    if not card.is_multiagent:
        raise ValueError(
            f"{card.id} is a single-agent environment; create it with gym.make({card.id!r})"
        )
    try:
        creator = load_entry_point(card.entry_point)
    except ImportError as exc:
        extra = card.extra or "multiagent"
        raise ImportError(
            f"{card.id} needs {exc.name!r}: pip install 'rlbench-suite[{extra}]'"
        ) from exc
    env = creator(**(dict(card.kwargs) | kwargs))
    native = card.api.removeprefix("pettingzoo-")
    if api == native:
        return env
    from pettingzoo.utils.conversions import aec_to_parallel, parallel_to_aec

    if api == "aec":
        return parallel_to_aec(env)
    if api not in _supported_apis(card):
        raise ValueError(
            f"{card.id} is turn-based and has only the AEC API; use api='aec', or "
            "rlbench_suite.wrappers.MultiAgentToSingleAgent to play it as a single agent"
        )
    return aec_to_parallel(env)


def make_scored_env(env_id: str, opponents: Any = None, **kwargs: Any) -> gym.Env:
    """A single-agent Gymnasium env for any id, with the card's episode statistics.

    Single-agent ids are ``gym.make(id)``. Multi-agent ids are played as the card's ``agent``
    against ``opponents`` (default: seeded random policies) via ``MultiAgentToSingleAgent``,
    then wrapped in the card's :class:`EpisodeStatistics`.
    """
    card = get_card(env_id)
    if not card.is_multiagent:
        return gym.make(card.id, **kwargs)
    from rlbench_suite.wrappers.multiagent import MultiAgentToSingleAgent

    env = MultiAgentToSingleAgent(
        make_multiagent(card.id, "aec", **kwargs), agent=card.agent, opponents=opponents
    )
    stats = wrapper_specs(card)[0]
    return EpisodeStatistics(env, **stats.kwargs)
