"""The suite's action-mask convention, shared by single- and multi-agent environments.

Convention: a legal-action mask is an ``np.int8`` array with 1 for legal and 0 for
illegal actions, of shape ``(n,)`` for ``Discrete(n)``. It lives in the step's info dict
under :data:`ACTION_MASK_KEY` (``info["action_mask"]`` for single-agent envs,
``infos[agent]["action_mask"]`` for multi-agent envs) and can be passed unchanged to
``action_space.sample(mask=...)``. PettingZoo's classic games put it in the observation
(``{"observation": ..., "action_mask": ...}``); :func:`get_action_mask` reads either place.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

ACTION_MASK_KEY = "action_mask"


def get_action_mask(observation: Any, info: dict[str, Any] | None) -> np.ndarray | None:
    """Return the action mask from ``info`` or from a dict observation, else ``None``."""
    if info and ACTION_MASK_KEY in info:
        return np.asarray(info[ACTION_MASK_KEY], dtype=np.int8)
    if isinstance(observation, dict) and ACTION_MASK_KEY in observation:
        return np.asarray(observation[ACTION_MASK_KEY], dtype=np.int8)
    return None


def split_masked_observation(observation: Any, info: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Move a PettingZoo-style ``{"observation", "action_mask"}`` mask into ``info``.

    Returns ``(observation, info)``; observations without a mask are returned unchanged.
    """
    if isinstance(observation, dict) and ACTION_MASK_KEY in observation:
        info = {**info, ACTION_MASK_KEY: np.asarray(observation[ACTION_MASK_KEY], dtype=np.int8)}
        observation = observation["observation"]
    return observation, info


def unmasked_observation_space(space: gym.Space) -> gym.Space:
    """The observation space without the mask part (see :func:`split_masked_observation`)."""
    if isinstance(space, gym.spaces.Dict) and ACTION_MASK_KEY in space.spaces:
        return space["observation"]
    return space


def scalar_discrete_observation(observation: Any, space: gym.Space) -> Any:
    """A 0-d ``Discrete`` observation (PettingZoo returns 0-d arrays) as a numpy scalar."""
    if isinstance(space, spaces.Discrete) and np.ndim(observation) == 0:
        return space.dtype.type(observation)
    return observation


def coerce_action(action: Any, space: gym.Space) -> Any:
    """``action`` in ``space``'s dtype where that is sensible, else unchanged.

    Integer numpy scalars and 0-d arrays become scalars of a ``Discrete`` space's dtype;
    numeric arrays (and lists) are cast to a ``Box`` space's dtype (same kind of number).
    """
    if isinstance(space, spaces.Discrete):
        integer = isinstance(action, np.generic | np.ndarray) and action.dtype.kind in "biu"
        if integer and np.ndim(action) == 0:
            value, limits = int(action), np.iinfo(space.dtype)
            if limits.min <= value <= limits.max:
                return space.dtype.type(value)
        return action
    if isinstance(space, spaces.Box):
        try:
            array = np.asarray(action)
        except (TypeError, ValueError):
            return action
        if array.dtype.kind in "biuf" and np.can_cast(array.dtype, space.dtype, "same_kind"):
            return array.astype(space.dtype)
    return action


def validate_action(
    action: Any, space: gym.Space, mask: np.ndarray | None = None, refuse_masked: bool = True
) -> Any:
    """``action`` coerced to ``space`` (:func:`coerce_action`); ``ValueError`` if it is not in
    ``space`` or, for ``Discrete`` spaces with ``refuse_masked``, if ``mask`` marks it illegal.

    The error names the action, the space and, with a mask, the legal actions.
    """
    coerced = coerce_action(action, space)
    legal = None
    if mask is not None and isinstance(space, spaces.Discrete):
        legal = (np.flatnonzero(mask) + int(space.start)).tolist()
    try:
        valid = bool(space.contains(coerced))
    except (TypeError, ValueError):
        valid = False
    if not valid:
        hint = f"; legal actions: {legal}" if legal is not None else ""
        raise ValueError(f"invalid action {action!r} for the action space {space}{hint}")
    if refuse_masked and legal is not None and int(coerced) not in legal:
        raise ValueError(f"action {action!r} is illegal here; legal actions: {legal}")
    return coerced
