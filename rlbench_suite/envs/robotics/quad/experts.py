"""The PID reference controller of the quadrotor tasks, acting from the observation alone.

It reads the target relative to the drone (``TARGET``, the first three observation values of
both ``QuadHover`` and ``QuadWaypoints``: the target, or the current waypoint) and the drone's
own state (the layout is named in :mod:`.tasks`), and runs
:class:`~rlbench_suite.envs.robotics.quad.control.QuadPID`'s position cascade at the control
rate, with the yaw held at 0. It answers in the environments' default ``"rpm"`` action type;
``action_type="velocity"`` flies the same target with velocity commands.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlbench_suite.envs.robotics.quad.control import MAX_SPEED, QuadPID, rpms_to_action
from rlbench_suite.envs.robotics.quad.dynamics import rotate
from rlbench_suite.envs.robotics.quad.tasks import (
    CONTROL_HZ,
    RATES,
    ROTATION,
    STATE_SIZE,
    TARGET,
    VELOCITY,
)


class QuadPIDPolicy:
    """Fly to (and hold) the target in the observation with the built-in PID cascade."""

    def __init__(self, observation_space: Any = None, action_type: str = "rpm") -> None:
        if action_type not in ("rpm", "velocity"):
            raise ValueError(f"action_type must be 'rpm' or 'velocity', got {action_type!r}")
        if observation_space is not None and observation_space.shape[0] < 3 + STATE_SIZE:
            raise ValueError(
                f"expected a quadrotor observation of at least {3 + STATE_SIZE} values, "
                f"got shape {observation_space.shape}"
            )
        self.action_type = action_type
        self.pid = QuadPID(1)

    def reset(self, seed: int | None = None) -> None:
        self.pid.reset()

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        obs = np.asarray(observation, dtype=np.float64)
        if self.action_type == "velocity":
            target = np.clip(1.5 * obs[TARGET], -MAX_SPEED, MAX_SPEED) / MAX_SPEED
            return np.append(target, 0.0).astype(np.float32)
        own = obs[-STATE_SIZE:, None]  # component-first, one drone
        rotation = own[ROTATION].reshape(3, 3, 1)
        omega = rotate(rotation, own[RATES])
        rpm = self.pid.position_rpms(obs[TARGET, None], rotation, own[VELOCITY], omega,
                                     1.0 / CONTROL_HZ, np.zeros(1))  # fmt: skip
        return rpms_to_action(rpm)[0].astype(np.float32)
