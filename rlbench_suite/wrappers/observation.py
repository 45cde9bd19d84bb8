"""Observation wrappers: flattening of Dict observations."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from rlbench_suite.wrappers.base import VersionedWrapper, register_wrapper


@register_wrapper("rlbench/FlattenDictObservation-v0")
class FlattenDictObservation(VersionedWrapper, gym.ObservationWrapper):
    """Flattens a ``Dict`` observation into one 1-D ``Box``, keys in the given (or sorted) order.

    ``keys`` selects the parts to keep (e.g. MiniGrid's ``["image", "direction"]``, leaving out
    the ``mission`` text); every kept part must be flattenable (``Box``, ``Discrete``,
    ``MultiDiscrete``, ``MultiBinary`` or nested ``Dict``/``Tuple`` of those). Discrete
    parts become one-hot vectors.
    """

    def __init__(self, env: gym.Env, keys: list[str] | None = None) -> None:
        VersionedWrapper.__init__(self, keys=keys)
        gym.ObservationWrapper.__init__(self, env)
        space = env.observation_space
        if not isinstance(space, spaces.Dict):
            raise TypeError(f"FlattenDictObservation needs a Dict observation space, got {space}")
        chosen = list(keys) if keys is not None else sorted(space.spaces)
        missing = [k for k in chosen if k not in space.spaces]
        if missing:
            raise KeyError(f"keys {missing} not in the observation; accepted: {list(space.spaces)}")
        self._keys = chosen
        # an OrderedDict keeps the given order (a plain dict would be sorted by Gymnasium)
        self._source = spaces.Dict(OrderedDict((k, space[k]) for k in chosen))
        for key in chosen:
            if not _flattenable(space[key]):
                raise TypeError(
                    f"observation part {key!r} ({space[key]}) cannot be flattened; leave it out "
                    "with keys=[...] (flattenable: Box, Discrete, MultiDiscrete, MultiBinary)"
                )
        self.observation_space = spaces.flatten_space(self._source)

    def observation(self, observation: dict[str, Any]) -> Any:
        return spaces.flatten(self._source, {k: observation[k] for k in self._keys})


def _flattenable(space: spaces.Space) -> bool:
    try:
        return bool(space.is_np_flattenable)
    except NotImplementedError:  # custom spaces (e.g. MiniGrid's MissionSpace) may not say
        return False
