"""Observation wrappers: flattening of Dict observations, and MiniGrid's mission as numbers."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import Any

import gymnasium as gym
import numpy as np
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


@register_wrapper("rlbench/MissionPlaceholders-v0")
class MissionPlaceholders(VersionedWrapper, gym.ObservationWrapper):
    """Replaces a MiniGrid ``mission`` string by which placeholder value fills each of its
    slots (GoToDoor's ``"go to the {color} door"``: the colour's index of 6), a
    ``MultiDiscrete`` that :class:`FlattenDictObservation` one-hots, so a learner sees the
    task the text names. The missions are read off the env's ``MissionSpace``
    (``mission_func`` over every combination of its ``ordered_placeholders``)."""

    def __init__(self, env: gym.Env, key: str = "mission") -> None:
        VersionedWrapper.__init__(self, key=key)
        gym.ObservationWrapper.__init__(self, env)
        space = env.observation_space
        if not isinstance(space, spaces.Dict) or key not in space.spaces:
            raise KeyError(
                f"MissionPlaceholders needs a Dict observation with {key!r}; got {space}"
            )
        mission = space[key]
        slots = getattr(mission, "ordered_placeholders", None)
        if not slots:
            raise TypeError(
                f"observation part {key!r} ({mission}) has no placeholders to encode: accepted "
                "is a MiniGrid MissionSpace with ordered_placeholders (a fixed mission says "
                "nothing; leave it out with FlattenDictObservation's keys)"
            )
        self._key = key
        self._indices = {
            mission.mission_func(*(slot[i] for slot, i in zip(slots, combo, strict=True))): combo
            for combo in itertools.product(*(range(len(slot)) for slot in slots))
        }
        parts = dict(space.spaces) | {key: spaces.MultiDiscrete([len(slot) for slot in slots])}
        self.observation_space = spaces.Dict(OrderedDict(parts))

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        text = observation[self._key]
        try:
            combo = self._indices[text]
        except KeyError:
            raise ValueError(f"mission {text!r} is not one the env's MissionSpace generates; "
                             f"known: {sorted(self._indices)[:6]}...") from None
        return {**observation, self._key: np.asarray(combo, dtype=np.int64)}
