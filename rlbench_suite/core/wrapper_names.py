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

STANDARD_WRAPPERS: dict[str, str] = {
    "rlbench/EpisodeStatistics-v0": "rlbench_suite.wrappers.stats:EpisodeStatistics",
    "rlbench/FlattenDictObservation-v0": (
        "rlbench_suite.wrappers.observation:FlattenDictObservation"
    ),
    "rlbench/RescaleActionToUnit-v0": "rlbench_suite.wrappers.action:RescaleActionToUnit",
    "rlbench/ActionMaskInInfo-v0": "rlbench_suite.wrappers.action:ActionMaskInInfo",
    "rlbench/AdmissibleActions-v0": "rlbench_suite.wrappers.text:AdmissibleActionsV0",
    "rlbench/AdmissibleActions-v1": "rlbench_suite.wrappers.text:AdmissibleActions",
    "rlbench/HashedBagOfWords-v0": "rlbench_suite.wrappers.text:HashedBagOfWords",
    "rlbench/DiffHistory-v0": "rlbench_suite.wrappers.text:DiffHistory",
    "rlbench/WordleFeatures-v0": "rlbench_suite.envs.text.wordle.features:WordleFeatures",
    "rlbench/WordleShaping-v0": "rlbench_suite.envs.text.wordle.features:WordleShaping",
    "rlbench/MiniGridKeyDoorShaping-v0": "rlbench_suite.wrappers.shaping:MiniGridKeyDoorShaping",
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
