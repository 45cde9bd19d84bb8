"""Batched quadrotor dynamics in NumPy: the Crazyflie 2.x model of "Learning to Fly".

The rigid-body and motor model of gym-pybullet-drones' ``cf2x`` (X configuration): each
motor's thrust is ``kf * rpm**2`` along the body z axis and its drag torque ``km * rpm**2``
about it; the body follows Newton-Euler equations, integrated with explicit Euler at the
physics rate (240 Hz by default). Every function works on a batch of ``n`` drones at once,
which is what makes thousands of drones per call cheap. No contacts, no ground effect, no
drag: the PyBullet backend adds those (this is the "no contacts" fast backend).

State arrays (batch-first): position ``(n, 3)`` [m], quaternion ``(n, 4)`` (x, y, z, w)
body-to-world, velocity ``(n, 3)`` [m/s] in the world frame, angular velocity ``(n, 3)``
[rad/s] in the body frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

GRAVITY = 9.8  # m/s^2, as gym-pybullet-drones


@dataclass(frozen=True)
class QuadParams:
    """Physical parameters; the defaults are the Crazyflie 2.x (``cf2x.urdf``)."""

    mass: float = 0.027  # kg
    arm: float = 0.0397  # m, centre to motor
    kf: float = 3.16e-10  # N / rpm^2
    km: float = 7.94e-12  # N m / rpm^2
    thrust_to_weight: float = 2.25
    inertia: tuple[float, float, float] = (1.4e-5, 1.4e-5, 2.17e-5)  # kg m^2, diagonal
    # the sign of each motor's drag torque about body z (gym-pybullet-drones' cf2x order)
    yaw_signs: tuple[float, float, float, float] = field(default=(-1.0, 1.0, -1.0, 1.0))

    @property
    def hover_rpm(self) -> float:
        """The motor speed at which four motors carry the weight."""
        return float(np.sqrt(GRAVITY * self.mass / (4 * self.kf)))

    @property
    def max_rpm(self) -> float:
        """The top motor speed (thrust-to-weight ratio times the weight, over four motors)."""
        return float(np.sqrt(self.thrust_to_weight * GRAVITY * self.mass / (4 * self.kf)))


CRAZYFLIE = QuadParams()


def body_wrench(rpm: np.ndarray, params: QuadParams = CRAZYFLIE) -> tuple[np.ndarray, np.ndarray]:
    """Collective thrust ``(n,)`` [N] along body z and body torques ``(n, 3)`` [N m]."""
    forces = params.kf * np.square(rpm)
    thrust = forces.sum(axis=1)
    lever = params.arm / np.sqrt(2.0)  # X configuration
    torque_x = (forces[:, 0] + forces[:, 1] - forces[:, 2] - forces[:, 3]) * lever
    torque_y = (-forces[:, 0] + forces[:, 1] + forces[:, 2] - forces[:, 3]) * lever
    torque_z = params.km * np.square(rpm) @ np.asarray(params.yaw_signs)
    return thrust, np.stack([torque_x, torque_y, torque_z], axis=1)


def rotation_matrices(quat: np.ndarray) -> np.ndarray:
    """Body-to-world rotation matrices ``(n, 3, 3)`` of unit quaternions (x, y, z, w)."""
    x, y, z, w = quat.T
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
            np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
            np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=1,
    )


def step(
    position: np.ndarray, quat: np.ndarray, velocity: np.ndarray, omega: np.ndarray,
    rpm: np.ndarray, dt: float = 1 / 240, params: QuadParams = CRAZYFLIE,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """One explicit-Euler step of ``n`` drones under motor speeds ``rpm`` ``(n, 4)``."""
    thrust, torque = body_wrench(rpm, params)
    up = rotation_matrices(quat)[:, :, 2]  # body z axis in the world frame
    acceleration = up * (thrust / params.mass)[:, None]
    acceleration[:, 2] -= GRAVITY
    inertia = np.asarray(params.inertia)
    omega_dot = (torque - np.cross(omega, omega * inertia)) / inertia
    position = position + dt * velocity
    velocity = velocity + dt * acceleration
    quat = _integrate_quaternion(quat, omega, dt)
    omega = omega + dt * omega_dot
    return position, quat, velocity, omega


def _integrate_quaternion(quat: np.ndarray, omega: np.ndarray, dt: float) -> np.ndarray:
    """``q + dt/2 * q (x) (omega, 0)`` (body-frame rates), renormalized."""
    x, y, z, w = quat.T
    p, q, r = omega.T
    derivative = 0.5 * np.stack(
        [w * p + y * r - z * q, w * q + z * p - x * r, w * r + x * q - y * p,
         -x * p - y * q - z * r],
        axis=1,
    )  # fmt: skip
    quat = quat + dt * derivative
    return quat / np.linalg.norm(quat, axis=1, keepdims=True)
