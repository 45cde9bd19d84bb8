"""Batched quadrotor dynamics in NumPy: the Crazyflie 2.x model of "Learning to Fly".

The rigid-body, motor and aerodynamic model of gym-pybullet-drones' ``cf2x`` (X
configuration). Each motor's thrust is ``kf * rpm**2`` along the body z axis and its drag
torque ``km * rpm**2`` about it; rotor drag opposes the body-frame velocity in proportion to
the summed rotor speed; ground effect adds thrust near the floor; downwash pushes a drone
flying under another one down. Every function works on a batch of ``n`` drones at once,
which is what makes thousands of drones per call cheap.

Both backends use this model: :func:`step` integrates it (semi-implicit Euler, as Bullet
does) for the batched backend, and the PyBullet backend applies :func:`world_wrench`'s force
and torque to a rigid body and lets Bullet integrate it and add contacts.

Arrays are component-first, one contiguous row of ``n`` values per component, which is
what makes the arithmetic fast: position ``(3, n)`` [m], quaternion ``(4, n)`` (x, y, z, w)
body-to-world, velocity ``(3, n)`` [m/s] and angular velocity ``(3, n)`` [rad/s] in the
world frame (as PyBullet reports them), motor speeds ``(4, n)`` [rpm], rotation matrices
``(3, 3, n)``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from rlbench_suite.envs import libm

GRAVITY = 9.8  # m/s^2, as gym-pybullet-drones
DOWNWASH_MIN_HEIGHT = 0.1  # m


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
    prop_radius: float = 2.31348e-2  # m
    drag_coeff: tuple[float, float, float] = (9.1785e-7, 9.1785e-7, 10.311e-7)  # N s / (m rad)
    ground_effect_coeff: float = 11.36859
    downwash_coeffs: tuple[float, float, float] = (2267.18, 0.16, -0.11)

    @property
    def hover_rpm(self) -> float:
        """The motor speed at which four motors carry the weight."""
        return float(np.sqrt(GRAVITY * self.mass / (4 * self.kf)))

    @property
    def max_rpm(self) -> float:
        """The top motor speed (thrust-to-weight ratio times the weight, over four motors)."""
        return float(np.sqrt(self.thrust_to_weight * GRAVITY * self.mass / (4 * self.kf)))

    @property
    def ground_effect_clip(self) -> float:
        """The height [m] below which ground effect stops growing (gym-pybullet-drones)."""
        max_thrust = 4 * self.kf * self.max_rpm**2
        return float(
            0.25 * self.prop_radius
            * np.sqrt(15 * self.max_rpm**2 * self.kf * self.ground_effect_coeff / max_thrust)
        )  # fmt: skip

    @functools.cached_property
    def mixer(self) -> np.ndarray:
        """``(4, 4)``: per-motor thrusts -> (collective thrust, torque x, y, z)."""
        lever = self.arm / np.sqrt(2.0)  # X configuration
        return np.array(
            [
                [1.0, 1.0, 1.0, 1.0],
                [lever, lever, -lever, -lever],
                [-lever, lever, lever, -lever],
                list(np.asarray(self.yaw_signs) * self.km / self.kf),
            ]
        )

    @functools.cached_property
    def mixer_inverse(self) -> np.ndarray:
        """``(4, 4)``: (collective thrust, torque x, y, z) -> per-motor thrusts.

        The exact inverse rounded once (:func:`exact_inverse`), not LAPACK's, whose kernels
        round differently on different processors."""
        return exact_inverse(self.mixer)


CRAZYFLIE = QuadParams()


@dataclass(frozen=True)
class Aerodynamics:
    """Which aerodynamic effects act: rotor drag, ground effect, downwash (swarms only)."""

    drag: bool = True
    ground_effect: bool = True
    downwash: bool = False


FULL_AERODYNAMICS = Aerodynamics()
NO_AERODYNAMICS = Aerodynamics(drag=False, ground_effect=False, downwash=False)


def exact_inverse(matrix: np.ndarray) -> np.ndarray:
    """The inverse of a small square matrix, computed exactly (Gauss-Jordan on fractions)
    and rounded once to float64: the same bits on every machine."""
    size = len(matrix)
    if np.shape(matrix) != (size, size):
        raise ValueError(f"expected a square matrix, got shape {np.shape(matrix)}")
    rows = [[Fraction(float(v)) for v in row] + [Fraction(int(i == r)) for i in range(size)]
            for r, row in enumerate(matrix)]  # fmt: skip
    for col in range(size):
        pivot = next((r for r in range(col, size) if rows[r][col] != 0), None)
        if pivot is None:
            raise ValueError(f"the matrix is singular:\n{matrix}")
        rows[col], rows[pivot] = rows[pivot], rows[col]
        rows[col] = [v / rows[col][col] for v in rows[col]]
        for r in range(size):
            if r != col and rows[r][col] != 0:
                factor = rows[r][col]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[col], strict=True)]
    return np.array([[float(v) for v in row[size:]] for row in rows])


def mix(matrix: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``matrix @ columns`` for 2-D ``(m, k)`` and ``(k, n)`` as element-wise products summed in
    a fixed order: the same bits on every CPU. numpy's ``@`` calls OpenBLAS, whose kernels are
    chosen per processor and round differently in the last bit (QuadHover's data built on an
    Intel Xeon did not rebuild on an AMD EPYC)."""
    total = matrix[:, 0, None] * columns[0]
    for k in range(1, matrix.shape[1]):
        total = total + matrix[:, k, None] * columns[k]
    return total


def body_wrench(rpm: np.ndarray, params: QuadParams = CRAZYFLIE) -> tuple[np.ndarray, np.ndarray]:
    """Collective thrust ``(n,)`` [N] along body z and body torques ``(3, n)`` [N m]."""
    wrench = mix(params.mixer, params.kf * rpm * rpm)
    return wrench[0], wrench[1:]


def motor_rpms(
    thrust: np.ndarray, torque: np.ndarray, params: QuadParams = CRAZYFLIE
) -> np.ndarray:
    """The motor speeds ``(4, n)`` giving ``thrust`` ``(n,)`` and body ``torque`` ``(3, n)``.

    The inverse of :func:`body_wrench`; motor thrusts are clipped to what the motors can
    give (0 to the top speed), so a wrench out of reach is approximated.
    """
    forces = mix(params.mixer_inverse, np.concatenate([thrust[None], torque], axis=0))
    return np.sqrt(np.clip(forces / params.kf, 0.0, params.max_rpm**2))


def rotation_matrices(quat: np.ndarray) -> np.ndarray:
    """Body-to-world rotation matrices ``(3, 3, n)`` of unit quaternions ``(4, n)``."""
    x, y, z, w = quat
    xx, yy, zz, xy, xz, yz = x * x, y * y, z * z, x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    rotation = np.empty((3, 3, *x.shape))
    rotation[0, 0], rotation[0, 1], rotation[0, 2] = 1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)
    rotation[1, 0], rotation[1, 1], rotation[1, 2] = 2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)
    rotation[2, 0], rotation[2, 1], rotation[2, 2] = 2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy)
    return rotation


def rotate(rotation: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``R v`` for each drone: body-frame ``(3, n)`` vectors into the world frame."""
    return rotation[:, 0] * vector[0] + rotation[:, 1] * vector[1] + rotation[:, 2] * vector[2]


def unrotate(rotation: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``R^T v`` for each drone: world-frame ``(3, n)`` vectors into the body frame."""
    return rotation[0] * vector[0] + rotation[1] * vector[1] + rotation[2] * vector[2]


def world_wrench(
    position: np.ndarray, rotation: np.ndarray, velocity: np.ndarray, rpm: np.ndarray,
    params: QuadParams = CRAZYFLIE, aero: Aerodynamics = FULL_AERODYNAMICS,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Force ``(3, n)`` [N] (without gravity) and torque ``(3, n)`` [N m], world frame.

    ``rotation`` is :func:`rotation_matrices` of the attitudes. Gravity is left to the
    integrator (PyBullet's or :func:`step`'s).
    """
    force, torque_body = _force_and_body_torque(position, rotation, velocity, rpm, params, aero)
    return force, rotate(rotation, torque_body)


def _force_and_body_torque(
    position: np.ndarray, rotation: np.ndarray, velocity: np.ndarray, rpm: np.ndarray,
    params: QuadParams, aero: Aerodynamics,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """World force ``(3, n)`` (without gravity) and body torque ``(3, n)``."""
    thrust, torque = body_wrench(rpm, params)
    if aero.ground_effect:
        thrust = thrust + ground_effect(position, rotation, thrust, params)
    up = rotation[:, 2]  # body z in the world frame
    force = up * thrust
    if aero.drag:
        rotor_speed = (rpm[0] + rpm[1] + rpm[2] + rpm[3]) * (2 * np.pi / 60)
        cx, cy, cz = params.drag_coeff
        if cx == cy:  # R diag(c, c, cz) R^T v = c v + (cz - c) (v . up) up: no rotations
            along = (velocity * up).sum(axis=0) * (cz - cx)
            force -= rotor_speed * (cx * velocity + along * up)
        else:
            drag = np.asarray(params.drag_coeff)[:, None] * rotor_speed
            force -= rotate(rotation, drag * unrotate(rotation, velocity))
    if aero.downwash:
        force[2] += downwash(position, params)
    return force, torque


def ground_effect(
    position: np.ndarray, rotation: np.ndarray, thrust: np.ndarray,
    params: QuadParams = CRAZYFLIE,
) -> np.ndarray:  # fmt: skip
    """Extra thrust ``(n,)`` [N] near the floor (gym-pybullet-drones' model, at body height).

    ``thrust`` is the motors' collective thrust; the extra acts only while the drone is
    upright (body z pointing up).
    """
    height = np.maximum(position[2], params.ground_effect_clip)
    gain = params.ground_effect_coeff * (params.prop_radius / (4 * height)) ** 2
    return np.where(rotation[2, 2] > 0, thrust * gain, 0.0)


def downwash(position: np.ndarray, params: QuadParams = CRAZYFLIE) -> np.ndarray:
    """Vertical force ``(n,)`` [N] on each drone from the drones flying above it.

    gym-pybullet-drones' model, which is singular as the height difference goes to 0; here
    it acts only on drones at least ``DOWNWASH_MIN_HEIGHT`` below another.
    """
    c1, c2, c3 = params.downwash_coeffs
    dz = position[2][None, :] - position[2][:, None]  # [i, j]: how far j is above i
    dxy = np.hypot(position[0][None, :] - position[0][:, None],
                   position[1][None, :] - position[1][:, None])  # fmt: skip
    above = (dz > DOWNWASH_MIN_HEIGHT) & (dxy < 10)
    safe_dz = np.where(above, dz, 1.0)
    alpha = c1 * (params.prop_radius / (4 * safe_dz)) ** 2
    beta = c2 * safe_dz + c3
    push = alpha * libm.exp(-0.5 * (dxy / beta) ** 2)
    return -np.where(above, push, 0.0).sum(axis=1)


def step(
    position: np.ndarray, quat: np.ndarray, velocity: np.ndarray, omega: np.ndarray,
    rpm: np.ndarray, dt: float = 1 / 240, params: QuadParams = CRAZYFLIE,
    aero: Aerodynamics = NO_AERODYNAMICS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """One semi-implicit Euler step of ``n`` drones under motor speeds ``rpm`` ``(4, n)``.

    Velocities are updated first and positions and attitudes move with the new ones, as
    in Bullet. No contacts: the floor is the caller's business.
    """
    rotation = rotation_matrices(quat)
    force, torque = _force_and_body_torque(position, rotation, velocity, rpm, params, aero)
    velocity = velocity + (dt / params.mass) * force
    velocity[2] -= dt * GRAVITY
    # Euler's equations in the body frame, I w' = tau - w x I w, for a diagonal inertia
    wx, wy, wz = unrotate(rotation, omega)
    ix, iy, iz = params.inertia
    tx, ty, tz = torque
    wx, wy, wz = (
        wx + (dt / ix) * (tx - (iz - iy) * wy * wz),
        wy + (dt / iy) * (ty - (ix - iz) * wz * wx),
        wz + (dt / iz) * (tz - (iy - ix) * wx * wy),
    )
    omega = rotation[:, 0] * wx + rotation[:, 1] * wy + rotation[:, 2] * wz
    return position + dt * velocity, integrate_quaternion(quat, omega, dt), velocity, omega


def integrate_quaternion(quat: np.ndarray, omega: np.ndarray, dt: float) -> np.ndarray:
    """Rotate attitudes ``quat`` by world-frame rates ``omega`` for ``dt`` (exact exponential).

    The rotation is a unit quaternion, so the result stays normalized to rounding error.
    """
    speed = np.sqrt(omega[0] * omega[0] + omega[1] * omega[1] + omega[2] * omega[2])
    half = (0.5 * dt) * speed
    dx, dy, dz = omega * (np.sin(half) / np.maximum(speed, 1e-300))  # 0 when not turning
    dw = np.cos(half)
    x, y, z, w = quat
    # (dq) (x) q: a world-frame rotation applied after the current attitude
    result = np.empty_like(quat)
    result[0] = dw * x + dx * w + dy * z - dz * y
    result[1] = dw * y - dx * z + dy * w + dz * x
    result[2] = dw * z + dx * y - dy * x + dz * w
    result[3] = dw * w - dx * x - dy * y - dz * z
    return result
