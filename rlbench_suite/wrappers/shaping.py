"""Potential-based reward shaping for training on sparse-reward grid worlds.

Shaping of the form ``F = P(s') - P(s)`` (Ng, Harada and Russell, 1999) leaves the optimal
policy unchanged and its bonuses over an episode sum to ``P(last) - P(first)``. It is for
training only: the harness scores episodes by the environment's own reward, recorded by
``rlbench/EpisodeStatistics-v0`` below any shaping wrapper.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.wrappers.base import VersionedWrapper, register_wrapper


def key_door_progress(env: Any, locked: list[Any]) -> float:
    """How far a MiniGrid episode is along "get the key, unlock the door", 0..1.

    Half for holding a key (or having unlocked every door in ``locked``, so putting the key
    down afterwards loses nothing), half for every door in ``locked`` being unlocked.
    """
    unlocked = all(not door.is_locked for door in locked)
    holding_key = getattr(env.carrying, "type", None) == "key"
    return 0.5 * float(holding_key or unlocked) + 0.5 * float(unlocked)


@register_wrapper("rlbench/MiniGridKeyDoorShaping-v0")
class MiniGridKeyDoorShaping(VersionedWrapper, gym.Wrapper):
    """Rewards a MiniGrid agent for picking up a key and for unlocking the locked doors.

    For tasks behind a locked door (KeyCorridor, Unlock, UnlockPickup, DoorKey): each step's
    reward gains ``scale * (P(s') - P(s))`` with ``P`` = :func:`key_door_progress` over the
    doors locked at reset, so an episode's bonuses sum to at most ``scale``. Goes anywhere
    above the MiniGrid env (it reads ``env.unwrapped``'s grid and ``carrying``).
    """

    def __init__(self, env: gym.Env, scale: float = 0.5) -> None:
        if not (np.isfinite(scale) and scale >= 0):
            raise ValueError(f"scale must be a finite number >= 0, got {scale!r}")
        if not hasattr(env.unwrapped, "grid") or not hasattr(env.unwrapped, "carrying"):
            raise ValueError(f"{type(self).__name__} needs a MiniGrid env (with a grid and "
                             f"`carrying`), got {type(env.unwrapped).__name__}")  # fmt: skip
        gym.utils.RecordConstructorArgs.__init__(self, scale=scale)
        gym.Wrapper.__init__(self, env)
        self.scale, self.potential, self.locked = float(scale), 0.0, []

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        base = self.env.unwrapped
        self.locked = [cell for cell in base.grid.grid
                       if cell is not None and getattr(cell, "is_locked", False)]  # fmt: skip
        self.potential = key_door_progress(base, self.locked) if self.locked else 0.0
        return obs, info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.locked:
            potential, self.potential = self.potential, key_door_progress(
                self.env.unwrapped, self.locked)  # fmt: skip
            reward = float(reward) + self.scale * (self.potential - potential)
        return obs, reward, terminated, truncated, info
