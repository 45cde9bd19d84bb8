"""Action wrappers: rescaling continuous actions to [-1, 1], the action mask in ``info``."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rlbench_suite.wrappers.base import VersionedWrapper, register_wrapper
from rlbench_suite.wrappers.masks import split_masked_observation, unmasked_observation_space


@register_wrapper("rlbench/RescaleActionToUnit-v0")
class RescaleActionToUnit(VersionedWrapper, gym.ActionWrapper):
    """Exposes a bounded ``Box`` action space as ``[-1, 1]`` and maps actions affinely back.

    Actions outside ``[-1, 1]`` are clipped to it before mapping. If the environment's
    bounds already are ``[-1, 1]`` the action passes through untouched, at no per-step cost,
    and the environment treats out-of-range actions as it always does (MuJoCo clamps them
    to its control range).
    """

    def __init__(self, env: gym.Env) -> None:
        VersionedWrapper.__init__(self)
        gym.ActionWrapper.__init__(self, env)
        space = env.action_space
        if not isinstance(space, spaces.Box) or not space.is_bounded("both"):
            raise TypeError(f"RescaleActionToUnit needs a bounded Box action space, got {space}")
        # precomputed in the env's dtype: the per-step map is two clamps, a multiply, an add
        self._half_range = ((space.high.astype(np.float64) - space.low) / 2).astype(space.dtype)
        self._middle = ((space.high.astype(np.float64) + space.low) / 2).astype(space.dtype)
        self._dtype = space.dtype
        self._identity = bool(np.all(space.low == -1) and np.all(space.high == 1))
        self.action_space = spaces.Box(-1.0, 1.0, shape=space.shape, dtype=space.dtype)

    def step(self, action: Any):  # type: ignore[override]
        if self._identity:
            return self.env.step(action)
        return self.env.step(self.action(action))

    def action(self, action: Any) -> np.ndarray:
        unit = np.minimum(np.maximum(np.asarray(action, dtype=self._dtype), -1.0), 1.0)
        return unit * self._half_range + self._middle


@register_wrapper("rlbench/ActionMaskInInfo-v0")
class ActionMaskInInfo(VersionedWrapper, gym.Wrapper):
    """Moves a ``{"observation", "action_mask"}`` observation's mask into ``info["action_mask"]``.

    This is the suite's action-mask convention (see :mod:`rlbench_suite.wrappers.masks`),
    the same one the multi-agent wrappers follow.
    """

    def __init__(self, env: gym.Env) -> None:
        VersionedWrapper.__init__(self)
        gym.Wrapper.__init__(self, env)
        self.observation_space = unmasked_observation_space(env.observation_space)

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        return split_masked_observation(obs, info)

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        obs, info = split_masked_observation(obs, info)
        return obs, reward, terminated, truncated, info
