"""A damped-least-squares reaching controller for ``rlbench/KukaReach-v0``.

It reads the joint positions and the target-minus-end-effector vector from the observation,
computes the end effector's position Jacobian with a NumPy forward-kinematics model built
from the joint origins in the robot's URDF, and commands the joint step that closes a fixed
fraction of the error, plus a null-space pull towards the home posture. It never touches
the simulator.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.envs.robotics.kuka.env import (
    HOME,
    JOINT_POSITIONS,
    MAX_JOINT_STEP,
    N_JOINTS,
    TARGET_FROM_EE,
    TOOL_OFFSET,
    URDF_PATH,
)

GAIN = 0.6  # fraction of the remaining error to close per step
DAMPING = 0.05
NULL_GAIN = 0.1
LIMIT_MARGIN = 0.02  # rad; a joint this close to a limit is not pushed further


def _rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF's fixed-axis roll-pitch-yaw rotation, ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
    cr, sr, cp, sp, cy, sy = (f(a) for a in (roll, pitch, yaw) for f in (np.cos, np.sin))
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def revolute_joints(urdf: Path = URDF_PATH) -> tuple[list[np.ndarray], np.ndarray]:
    """The revolute joints' 4x4 parent-to-joint transforms (all turn about local z) and limits.

    The limits come as a ``(2, N_JOINTS)`` array of lower and upper bounds.
    """
    transforms, limits = [], []
    for joint in ET.parse(urdf).getroot().iter("joint"):
        if joint.get("type") != "revolute":
            continue
        origin, axis, limit = (joint.find(tag) for tag in ("origin", "axis", "limit"))
        if origin is None or limit is None or axis is None or axis.get("xyz") != "0 0 1":
            raise ValueError(f"{urdf}: joint {joint.get('name')} does not turn about its z axis")
        transform = np.eye(4)
        transform[:3, :3] = _rpy_matrix(*map(float, origin.get("rpy", "0 0 0").split()))
        transform[:3, 3] = [float(v) for v in origin.get("xyz", "0 0 0").split()]
        transforms.append(transform)
        limits.append([float(limit.get("lower", "nan")), float(limit.get("upper", "nan"))])
    if len(transforms) != N_JOINTS:
        raise ValueError(f"{urdf}: expected {N_JOINTS} revolute joints, found {len(transforms)}")
    return transforms, np.array(limits).T


def tool_jacobian(origins: list[np.ndarray], q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tool point's position and its 3x7 position Jacobian at joint angles ``q``."""
    frame = np.eye(4)
    axes, points = [], []
    for transform, angle in zip(origins, q, strict=True):
        c, s = np.cos(angle), np.sin(angle)
        turn = np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
        frame = frame @ transform
        axes.append(frame[:3, 2])
        points.append(frame[:3, 3])
        frame = frame @ turn
    tool = frame[:3, 3] + TOOL_OFFSET * frame[:3, 2]
    return tool, np.cross(np.array(axes), tool - np.array(points)).T


class KukaReachScripted:
    """Damped-least-squares IK on the observation, with a null-space pull to :data:`HOME`.

    Joints that the step would push past a limit are frozen and the step is recomputed
    with the others, so the arm keeps converging when the elbow or wrist is at a stop.
    """

    def __init__(
        self,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
        seed: int | None = None,
    ) -> None:
        self.origins, (self.lower, self.upper) = revolute_joints()

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the controller is deterministic and stateless."""

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        observation = np.asarray(observation, dtype=np.float64)
        q, error = observation[JOINT_POSITIONS], observation[TARGET_FROM_EE]
        _, jacobian = tool_jacobian(self.origins, q)
        free = np.ones(N_JOINTS, dtype=bool)
        for _ in range(N_JOINTS):
            step = self._step(jacobian * free, q, error) * free
            blocked = ((q + step > self.upper - LIMIT_MARGIN) & (step > 0)) | (
                (q + step < self.lower + LIMIT_MARGIN) & (step < 0)
            )
            if not blocked.any():
                break
            free &= ~blocked
        action = step / MAX_JOINT_STEP
        return (action / max(1.0, float(np.abs(action).max()))).astype(np.float32)

    @staticmethod
    def _step(jacobian: np.ndarray, q: np.ndarray, error: np.ndarray) -> np.ndarray:
        """The damped-least-squares joint step for ``error`` plus the null-space pull."""
        gram = jacobian @ jacobian.T + DAMPING**2 * np.eye(3)
        step = jacobian.T @ np.linalg.solve(gram, GAIN * error)
        null = np.eye(N_JOINTS) - np.linalg.pinv(jacobian) @ jacobian
        return step + null @ (NULL_GAIN * (HOME - q))
