"""The standardized wrappers' versioned names and where each is implemented.

Cards name wrappers (``[[wrappers]] name = "rlbench/FlattenDictObservation-v0"``) and
Gymnasium specs record them by entry point, so the name-to-entry-point table is part of the
contract: it lives here, with no wrapper code imported. The classes register under these
names with :func:`rlbench_suite.wrappers.register_wrapper`, which checks that a suite name is
implemented where this table says; other names (a third party's wrappers) are added by the
same decorator when their module is imported.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

STANDARD_WRAPPERS: dict[str, str] = {
    "rlbench/EpisodeStatistics-v0": "rlbench_suite.wrappers.stats:EpisodeStatistics",
    "rlbench/FlattenDictObservation-v0": (
        "rlbench_suite.wrappers.observation:FlattenDictObservation"
    ),
    "rlbench/MissionPlaceholders-v0": "rlbench_suite.wrappers.observation:MissionPlaceholders",
    "rlbench/RescaleActionToUnit-v0": "rlbench_suite.wrappers.action:RescaleActionToUnit",
    "rlbench/ActionMaskInInfo-v0": "rlbench_suite.wrappers.action:ActionMaskInInfo",
    "rlbench/AdmissibleActions-v0": "rlbench_suite.wrappers.text:AdmissibleActionsV0",
    "rlbench/AdmissibleActions-v1": "rlbench_suite.wrappers.text:AdmissibleActions",
    "rlbench/HashedBagOfWords-v0": "rlbench_suite.wrappers.text:HashedBagOfWords",
    "rlbench/DiffHistory-v0": "rlbench_suite.wrappers.text:DiffHistory",
    "rlbench/WordleFeatures-v0": "rlbench_suite.envs.text.wordle.features:WordleFeatures",
    "rlbench/WordleShaping-v0": "rlbench_suite.envs.text.wordle.features:WordleShaping",
    "rlbench/MiniGridKeyDoorShaping-v0": "rlbench_suite.wrappers.shaping:MiniGridKeyDoorShaping",
    "rlbench/KitchenOwnContribution-v0": (
        "rlbench_suite.envs.multiagent.kitchen.contribution:OwnContributionBonus"
    ),
    "rlbench/OfflineDataset-v0": "rlbench_suite.datasets.offline:OfflineEnv",
}

WRAPPERS: dict[str, str] = dict(STANDARD_WRAPPERS)
"""Every known wrapper name -> ``module:Class`` (the suite's, plus any registered since)."""


def add_wrapper_name(name: str, entry_point: str) -> None:
    """Record ``name`` as implemented at ``entry_point``; a name is never given twice."""
    known = WRAPPERS.get(name)
    if known is not None and known != entry_point:
        raise ValueError(f"wrapper name {name!r} is already taken by {known}")
    WRAPPERS[name] = entry_point


def wrapper_entry_point(name: str) -> str:
    """The ``module:Class`` entry point of wrapper ``name``, with a clear error if unknown."""
    try:
        return WRAPPERS[name]
    except KeyError:
        close = difflib.get_close_matches(name, WRAPPERS, n=3)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise KeyError(
            f"unknown wrapper {name!r}.{hint} Known wrappers: {', '.join(sorted(WRAPPERS))}"
        ) from None


RECORD_WRAPPERS: tuple[str, ...] = ("rlbench/EpisodeStatistics-v0",)
"""Wrappers that write the episode record (``info["rlbench_episode"]``) the harness scores:
only a card's own stack places them, below everything a policy adds."""

TRAINING_ONLY_WRAPPERS: tuple[str, ...] = (
    "rlbench/WordleShaping-v0",
    "rlbench/MiniGridKeyDoorShaping-v0",
    "rlbench/KitchenOwnContribution-v0",
)
"""Wrappers that change only the reward a learner sees (shaping): a policy records them with
the stack it trained through, and evaluations leave them out."""

GAME_WRAPPERS: tuple[str, ...] = ("rlbench/KitchenOwnContribution-v0",)
"""Wrappers of a PettingZoo game (below its partners and views), not of a Gymnasium env:
``shared_ppo`` entries name them under ``game_wrappers``."""

EPISODE_END_ARGUMENTS: dict[str, tuple[str, ...]] = {"rlbench/AdmissibleActions-v1": ("max_turns",)}
"""Arguments by which a wrapper would end episodes before the card does."""


def _name_and_kwargs(ref: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(ref, dict):
        return ref["name"], dict(ref.get("kwargs") or {})
    return ref.name, dict(ref.kwargs or {})


def policy_wrappers(stack: Iterable[Any]) -> list[Any]:
    """The wrappers an evaluation puts between a card's env and a policy, from the stack the
    policy records (innermost first; ``{"name", "kwargs"}`` dicts or objects with those
    attributes). A policy's stack adapts observations and actions, never the score:
    training-only wrappers (:data:`TRAINING_ONLY_WRAPPERS`) are left out, and a wrapper that
    writes the scored episode record (:data:`RECORD_WRAPPERS`), an argument that ends
    episodes early (:data:`EPISODE_END_ARGUMENTS`) or a name outside :data:`WRAPPERS` is
    refused with a ``ValueError`` saying what is accepted."""
    kept = []
    for ref in stack:
        name, kwargs = _name_and_kwargs(ref)
        if name in TRAINING_ONLY_WRAPPERS:
            continue
        if name in RECORD_WRAPPERS:
            raise ValueError(
                f"a policy's wrappers may not include {name}: the card's own stack records "
                f"the episodes the harness scores; accepted: the observation and action "
                f"wrappers of the suite ({', '.join(sorted(_adapters()))})"
            )
        if name not in WRAPPERS:
            wrapper_entry_point(name)  # raises, naming the known wrappers
        early = [arg for arg in EPISODE_END_ARGUMENTS.get(name, ()) if kwargs.get(arg) is not None]
        if early:
            raise ValueError(
                f"a policy's {name} may not set {', '.join(early)}: episodes end where the "
                f"card ends them; leave {'/'.join(early)} out (None)"
            )
        kept.append(ref)
    return kept


def _adapters() -> list[str]:
    return [n for n in WRAPPERS if n not in RECORD_WRAPPERS and n not in TRAINING_ONLY_WRAPPERS]
