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


def check_action_legal(action: Any, mask: np.ndarray | None) -> None:
    """Raise ``ValueError`` naming the legal actions if a discrete ``action`` is masked out."""
    if mask is None:
        return
    index = int(action)
    if not (0 <= index < len(mask)) or not mask[index]:
        legal = np.flatnonzero(mask).tolist()
        raise ValueError(f"action {action!r} is illegal here; legal actions: {legal}")
