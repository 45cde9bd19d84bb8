"""Scripted controllers for the arm tasks (``rlbench/ArmReach-v0``, ``ArmPush-v0``,
``ArmPickPlace-v0``).

Each is a stateless state machine on the observation (layout in
:mod:`rlbench_suite.envs.robotics.arm.env`): it picks an end-effector waypoint and a gripper
command from the observation alone and moves toward the waypoint with a saturated
proportional controller.
"""

from __future__ import annotations

import abc
import math
from typing import Any

import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from rlbench_suite.envs.robotics.arm.env import BLOCK, EE, GOAL, MAX_DELTA, OPENING, dot

OPEN, CLOSE = -1.0, 1.0
SAFE_Z = 0.09
"""Travel height (end effector) above the table: fingers clear the 4 cm block."""


class _ArmScripted(abc.ABC):
    """Common part: spaces, reset, and the move-to-waypoint action (``seed`` is unused: the
    controllers are deterministic)."""

    def __init__(
        self,
        observation_space: spaces.Space | None = None,
        action_space: spaces.Space | None = None,
        seed: int | None = None,
    ) -> None:
        self.observation_space = observation_space
        self.action_space = action_space

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the controller keeps no state between steps."""
        return None

    def act(self, observation: NDArray[np.float64], info: dict[str, Any]) -> NDArray[np.float32]:
        """The action for ``observation`` (``info`` is not used)."""
        obs = np.asarray(observation, dtype=np.float64)
        waypoint, grip = self._plan(obs)
        return _move(obs[EE], waypoint, grip)

    @abc.abstractmethod
    def _plan(self, obs: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
        """``(end-effector waypoint, gripper command)`` for the observation."""


def _move(
    ee: NDArray[np.float64], waypoint: NDArray[np.float64], grip: float
) -> NDArray[np.float32]:
    delta = (waypoint - ee) / MAX_DELTA
    return np.clip(np.append(delta, grip), -1.0, 1.0).astype(np.float32)


class ArmReachScripted(_ArmScripted):
    """Move straight to the goal."""

    def _plan(self, obs: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
        return obs[GOAL], OPEN


class ArmPickPlaceScripted(_ArmScripted):
    """Above the block, descend, close, then carry the block to the goal."""

    def _plan(self, obs: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
        ee, opening, block, goal = obs[EE], obs[OPENING], obs[BLOCK], obs[GOAL]
        offset = block - ee
        horizontal = math.hypot(offset[0], offset[1])
        if 0.025 < opening < 0.045 and math.sqrt(dot(offset, offset)) < 0.02:
            return goal - offset, CLOSE  # holding it: carry
        at_block = horizontal < 0.01 and abs(offset[2]) < 0.01
        if at_block:
            return ee, CLOSE if opening > 0.02 else OPEN  # close on it (or reopen after a miss)
        if horizontal < 0.01:
            return block, OPEN  # aligned: descend
        if ee[2] < SAFE_Z - 0.02 and opening < 0.08:
            return np.array([ee[0], ee[1], SAFE_Z]), OPEN  # leave: rise while opening
        return np.array([block[0], block[1], SAFE_Z]), OPEN


class ArmPushScripted(_ArmScripted):
    """Get behind the block (as seen from the goal) at table height, then push it there."""

    def _plan(self, obs: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
        ee, block, goal = obs[EE], obs[BLOCK], obs[GOAL]
        to_goal = goal[:2] - block[:2]
        remaining = math.hypot(*to_goal)
        if remaining < 0.01:
            return ee, CLOSE
        direction = to_goal / remaining
        behind = block[:2] - direction * 0.05  # clear of the block by about 1.5 cm
        low_z = block[2]
        relative = ee[:2] - block[:2]
        along = dot(relative, direction)
        across = abs(float(relative[0] * direction[1] - relative[1] * direction[0]))
        low = ee[2] < low_z + 0.015
        if low and along < -0.02 and across < 0.015:
            # Aim 2 cm into the block from the contact point right behind it: this advances
            # the block and steers the hand back onto the block-goal line at once.
            target = block[:2] - direction * (0.034 - min(0.02, remaining))
            return np.array([target[0], target[1], low_z]), CLOSE  # push
        if math.hypot(*(ee[:2] - behind)) < 0.01:
            return np.array([behind[0], behind[1], low_z]), CLOSE  # descend behind it
        if low and along >= -0.045:
            distance = math.hypot(*relative)
            if distance < 0.06:  # back away horizontally before rising, so as not to lift it
                away = block[:2] + relative / max(distance, 1e-6) * 0.08
                return np.array([away[0], away[1], low_z]), CLOSE
            return np.array([ee[0], ee[1], SAFE_Z]), CLOSE  # rise before passing over it
        z = ee[2] if low else SAFE_Z  # low only while behind the block
        return np.array([behind[0], behind[1], z]), CLOSE
