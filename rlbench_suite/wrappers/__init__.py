"""The suite's standardized wrappers, each with a versioned name recorded in ``env.spec``.

Single-agent: :class:`EpisodeStatistics`, :class:`FlattenDictObservation`,
:class:`RescaleActionToUnit`, :class:`ActionMaskInInfo`; for text games,
:class:`AdmissibleActions` (and version 0, :class:`AdmissibleActionsV0`),
:class:`HashedBagOfWords`, :class:`DiffHistory`; MiniGrid's mission as numbers,
:class:`MissionPlaceholders`; for training on sparse grid worlds,
:class:`MiniGridKeyDoorShaping` (potential-based shaping); for native vector
environments,
:class:`VectorEpisodeStatistics`. Multi-agent:
:class:`MultiAgentToSingleAgent` (plays the other agents with given policies) and
:class:`ParallelEnvToVectorEnv` (PettingZoo Parallel to a Gymnasium ``VectorEnv``, one slot
per agent). ``rlbench_suite.wrappers.sb3.VectorEnvToSB3`` adapts a ``VectorEnv`` to SB3.
"""

from rlbench_suite.wrappers.action import ActionMaskInInfo, RescaleActionToUnit
from rlbench_suite.wrappers.base import (
    WRAPPERS,
    apply_wrappers,
    register_wrapper,
    wrapper_entry_point,
)
from rlbench_suite.wrappers.masks import ACTION_MASK_KEY, get_action_mask
from rlbench_suite.wrappers.observation import FlattenDictObservation, MissionPlaceholders
from rlbench_suite.wrappers.shaping import MiniGridKeyDoorShaping
from rlbench_suite.wrappers.stats import STATS_KEY, EpisodeStatistics
from rlbench_suite.wrappers.text import (
    AdmissibleActions,
    AdmissibleActionsV0,
    DiffHistory,
    HashedBagOfWords,
)
from rlbench_suite.wrappers.vector import VectorEpisodeStatistics

__all__ = [
    "ACTION_MASK_KEY",
    "STATS_KEY",
    "WRAPPERS",
    "ActionMaskInInfo",
    "AdmissibleActions",
    "AdmissibleActionsV0",
    "DiffHistory",
    "EpisodeStatistics",
    "FlattenDictObservation",
    "HashedBagOfWords",
    "MiniGridKeyDoorShaping",
    "MissionPlaceholders",
    "MultiAgentToSingleAgent",
    "ParallelEnvToVectorEnv",
    "RescaleActionToUnit",
    "VectorEpisodeStatistics",
    "apply_wrappers",
    "get_action_mask",
    "register_wrapper",
    "wrapper_entry_point",
]


def __getattr__(name: str):
    # The multi-agent wrappers import PettingZoo; load them only when asked for.
    if name == "MultiAgentToSingleAgent":
        from rlbench_suite.wrappers.multiagent import MultiAgentToSingleAgent

        return MultiAgentToSingleAgent
    if name == "ParallelEnvToVectorEnv":
        from rlbench_suite.wrappers.pz_vector import ParallelEnvToVectorEnv

        return ParallelEnvToVectorEnv
    raise AttributeError(f"module 'rlbench_suite.wrappers' has no attribute {name!r}")
