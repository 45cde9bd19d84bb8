"""A batched cascaded PID controller for the quadrotors, and the action abstractions built on it.

The controller is a geometric (SO(3)) cascade: a position/velocity PID gives the desired
thrust vector, whose direction and the desired yaw give the desired attitude; an attitude
PD on the rotation error gives body torques; the mixer turns collective thrust and torques
into motor speeds. It works on a batch of drones, so the same code runs inside the
environments (to track velocity or attitude targets) and as the scripted reference policy.

Action abstractions (``action_type=``), each a ``Box(-1, 1, (4,))``:

- ``"rpm"`` (default): normalized motor speeds, ``rpm = hover_rpm * (1 + 0.5 * a)``
  (so ``a = 1`` is the top speed and ``a = 0`` hovers);
- ``"velocity"``: target world velocity ``a[:3] * 1 m/s`` and yaw rate ``a[3] * pi/3 rad/s``;
- ``"attitude"``: target roll and pitch ``a[:2] * 30 deg``, yaw rate ``a[2] * pi/3 rad/s`` and
  collective thrust ``hover * (1 + 0.5 * a[3])``.

The last two are tracked by the PID at the physics rate. Arrays are component-first, as in
:mod:`.dynamics` (``(3, n)`` vectors, ``(3, 3, n)`` rotations, ``(4, n)`` motor speeds);
actions are batch-first ``(n, 4)``, as environments take them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from rlbench_suite.envs import libm
from rlbench_suite.envs.robotics.quad.dynamics import (
    CRAZYFLIE,
    GRAVITY,
    QuadParams,
    motor_rpms,
    rotation_matrices,
    unrotate,
)

ActionType = Literal["rpm", "velocity", "attitude"]
ACTION_TYPES: tuple[str, ...] = ("rpm", "velocity", "attitude")
MAX_SPEED = 1.0  # m/s, velocity actions
MAX_YAW_RATE = np.pi / 3  # rad/s
MAX_TILT = np.radians(30.0)  # attitude actions and the position loop's tilt limit
_TAN_MAX_TILT = math.tan(MAX_TILT)  # libm's, not numpy's per-CPU code paths
RPM_SPAN = 0.5  # rpm actions: hover * (1 +- 0.5)


@dataclass
class PIDGains:
    """Gains of the cascade (per unit mass for the position loop, per unit inertia below)."""

    position_p: tuple[float, float, float] = (4.0, 4.0, 6.0)
    position_i: tuple[float, float, float] = (0.5, 0.5, 1.0)
    velocity_p: tuple[float, float, float] = (3.5, 3.5, 4.5)
    attitude_p: tuple[float, float, float] = (180.0, 180.0, 40.0)
    rate_p: tuple[float, float, float] = (20.0, 20.0, 10.0)
    integral_limit: float = 0.2
    integral_zone: float = 0.2  # m: the integral runs only this close to the target


@dataclass
class QuadPID:
    """The cascade for ``n`` drones; holds the position loop's integral state."""

    n: int
    params: QuadParams = CRAZYFLIE
    gains: PIDGains = field(default_factory=PIDGains)

    def __post_init__(self) -> None:
        self.integral = np.zeros((3, self.n))

    def reset(self, indices: np.ndarray | slice | None = None) -> None:
        """Clear the integral state of drones ``indices`` (all by default)."""
        self.integral[:, slice(None) if indices is None else indices] = 0.0

    def position_rpms(
        self, position_error: np.ndarray, rotation: np.ndarray, velocity: np.ndarray,
        omega: np.ndarray, dt: float, target_yaw: np.ndarray | None = None,
    ) -> np.ndarray:  # fmt: skip
        """Motor speeds that fly to ``position + position_error`` and stop there."""
        g = self.gains
        near = np.sqrt((position_error * position_error).sum(axis=0)) < g.integral_zone
        self.integral = np.clip(
            self.integral + dt * near * position_error, -g.integral_limit, g.integral_limit
        )
        accel = (
            _column(g.position_p) * position_error
            + _column(g.position_i) * self.integral
            - _column(g.velocity_p) * velocity
        )
        return self._thrust_vector_rpms(accel, rotation, omega, target_yaw)

    def velocity_rpms(
        self, target_velocity: np.ndarray, rotation: np.ndarray, velocity: np.ndarray,
        omega: np.ndarray, yaw_rate: np.ndarray,
    ) -> np.ndarray:  # fmt: skip
        """Motor speeds that track world velocity ``target_velocity`` and ``yaw_rate``."""
        accel = _column(self.gains.velocity_p) * (target_velocity - velocity)
        return self._thrust_vector_rpms(accel, rotation, omega, None, yaw_rate)

    def attitude_rpms(
        self, roll: np.ndarray, pitch: np.ndarray, yaw_rate: np.ndarray, thrust: np.ndarray,
        rotation: np.ndarray, omega: np.ndarray,
    ) -> np.ndarray:  # fmt: skip
        """Motor speeds that track roll and pitch [rad], ``yaw_rate`` and ``thrust`` [N]."""
        yaw = libm.arctan2(rotation[1, 0], rotation[0, 0])
        desired = _euler_to_rotation(roll, pitch, yaw)
        return self._attitude_rpms(desired, rotation, omega, thrust, yaw_rate)

    def _thrust_vector_rpms(
        self, accel: np.ndarray, rotation: np.ndarray, omega: np.ndarray,
        target_yaw: np.ndarray | None, yaw_rate: np.ndarray | None = None,
    ) -> np.ndarray:  # fmt: skip
        """Desired acceleration (without gravity) -> thrust direction and attitude -> rpms."""
        vertical = np.maximum(accel[2] + GRAVITY, 0.2 * GRAVITY)
        horizontal = np.hypot(accel[0], accel[1])
        shrink = np.minimum(1.0, vertical * _TAN_MAX_TILT / np.maximum(horizontal, 1e-9))
        force = self.params.mass * np.stack([accel[0] * shrink, accel[1] * shrink, vertical])
        if target_yaw is None:
            target_yaw = libm.arctan2(rotation[1, 0], rotation[0, 0])
        z_axis = force / np.sqrt((force * force).sum(axis=0))
        heading = np.stack([np.cos(target_yaw), np.sin(target_yaw), np.zeros_like(target_yaw)])
        y_axis = np.cross(z_axis, heading, axis=0)
        y_axis /= np.sqrt((y_axis * y_axis).sum(axis=0))
        desired = np.stack([np.cross(y_axis, z_axis, axis=0), y_axis, z_axis], axis=1)
        thrust = (force * rotation[:, 2]).sum(axis=0)
        return self._attitude_rpms(desired, rotation, omega, thrust, yaw_rate)

    def _attitude_rpms(
        self, desired: np.ndarray, rotation: np.ndarray, omega: np.ndarray,
        thrust: np.ndarray, yaw_rate: np.ndarray | None,
    ) -> np.ndarray:  # fmt: skip
        # e_R = vee(Rd^T R - R^T Rd) / 2; column j of Rd^T R is Rd^T (column j of R)
        # (unrotate sums in a fixed order: the same bits on every CPU)
        cross = [unrotate(desired, rotation[:, j]) for j in range(3)]  # cross[j][i]
        attitude_error = 0.5 * np.stack(
            [cross[1][2] - cross[2][1], cross[2][0] - cross[0][2], cross[0][1] - cross[1][0]]
        )
        rate_error = unrotate(rotation, omega)  # body rates
        if yaw_rate is not None:
            attitude_error[2] = 0.0
            rate_error[2] -= yaw_rate
        torque = -_column(self.params.inertia) * (
            _column(self.gains.attitude_p) * attitude_error
            + _column(self.gains.rate_p) * rate_error
        )
        return motor_rpms(np.maximum(thrust, 0.0), torque, self.params)


def _column(values: tuple[float, ...]) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)[:, None]


def _euler_to_rotation(roll: np.ndarray, pitch: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """``R = Rz(yaw) Ry(pitch) Rx(roll)``, ``(3, 3, n)``."""
    cr, sr, cp, sp = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch)
    cy, sy = np.cos(yaw), np.sin(yaw)
    return np.stack(
        [
            np.stack([cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr]),
            np.stack([sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr]),
            np.stack([-sp, cp * sr, cp * cr]),
        ]
    )


def action_to_rpms(
    action_type: str, action: np.ndarray, pid: QuadPID, quat: np.ndarray,
    velocity: np.ndarray, omega: np.ndarray, params: QuadParams = CRAZYFLIE,
) -> np.ndarray:  # fmt: skip
    """Motor speeds ``(4, n)`` for a batch of normalized actions ``(n, 4)`` in [-1, 1]."""
    action = np.clip(action, -1.0, 1.0).T
    if action_type == "rpm":
        return params.hover_rpm * (1.0 + RPM_SPAN * action)
    rotation = rotation_matrices(quat)
    if action_type == "velocity":
        return pid.velocity_rpms(
            MAX_SPEED * action[:3], rotation, velocity, omega, MAX_YAW_RATE * action[3]
        )
    if action_type == "attitude":
        hover_thrust = params.mass * GRAVITY
        return pid.attitude_rpms(
            MAX_TILT * action[0], MAX_TILT * action[1], MAX_YAW_RATE * action[2],
            hover_thrust * (1.0 + RPM_SPAN * action[3]), rotation, omega,
        )  # fmt: skip
    raise ValueError(f"unknown action_type {action_type!r}; accepted: {', '.join(ACTION_TYPES)}")


def rpms_to_action(rpm: np.ndarray, params: QuadParams = CRAZYFLIE) -> np.ndarray:
    """The ``"rpm"`` actions ``(n, 4)`` giving motor speeds ``rpm`` ``(4, n)`` (clipped)."""
    return np.clip((rpm.T / params.hover_rpm - 1.0) / RPM_SPAN, -1.0, 1.0)
