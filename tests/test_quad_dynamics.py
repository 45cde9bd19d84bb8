"""The batched NumPy quadrotor model: equilibria, free fall, torque signs, batching."""

from __future__ import annotations

import numpy as np
import pytest

from rlbench_suite.envs.robotics.quad.dynamics import (
    CRAZYFLIE,
    GRAVITY,
    body_wrench,
    exact_inverse,
    mix,
    rotation_matrices,
    step,
)


def _state(n: int, z: float = 1.0):
    position = np.zeros((3, n))
    position[2] = z
    quat = np.zeros((4, n))
    quat[3] = 1.0
    return position, quat, np.zeros((3, n)), np.zeros((3, n))


def _fly(rpm: np.ndarray, seconds: float, state=None):
    """Fly ``rpm`` ``(n, 4)`` (one row per drone) for ``seconds``."""
    rpm = rpm.T
    n = rpm.shape[1]
    state = state or _state(n)
    for _ in range(round(seconds * 240)):
        state = step(*state, rpm)
    return state


def test_crazyflie_motor_limits():
    assert CRAZYFLIE.hover_rpm == pytest.approx(np.sqrt(GRAVITY * 0.027 / (4 * 3.16e-10)))
    assert CRAZYFLIE.max_rpm / CRAZYFLIE.hover_rpm == pytest.approx(np.sqrt(2.25))


def test_hover_rpm_holds_position():
    position, _, _, omega = _fly(np.full((3, 4), CRAZYFLIE.hover_rpm), 2.0)
    np.testing.assert_allclose(position.T, [[0.0, 0.0, 1.0]] * 3, atol=1e-9)
    np.testing.assert_allclose(omega, 0.0, atol=1e-12)


def test_free_fall_matches_the_closed_form():
    position, _, velocity, _ = _fly(np.zeros((1, 4)), 0.5)
    steps, dt = 120, 1 / 240
    # semi-implicit Euler (as Bullet): z drops by g dt^2 * (1 + 2 + ... + steps)
    assert position[2, 0] == pytest.approx(1.0 - GRAVITY * dt * dt * steps * (steps + 1) / 2)
    assert velocity[2, 0] == pytest.approx(-GRAVITY * 0.5)
    # within Euler's O(dt) of the exact 1 - g t^2 / 2 (off by g dt t / 2 = 1 cm here)
    assert position[2, 0] == pytest.approx(1.0 - 0.5 * GRAVITY * 0.25, abs=0.011)


def test_torque_signs_roll_pitch_yaw():
    hover = CRAZYFLIE.hover_rpm
    _, torque = body_wrench(np.array([[hover * 1.01, hover * 1.01, hover, hover]]).T)
    assert torque[0, 0] > 0 and abs(torque[1, 0]) < 1e-12  # motors 0, 1 up: +x torque
    _, torque = body_wrench(np.array([[hover, hover * 1.01, hover * 1.01, hover]]).T)
    assert torque[1, 0] > 0 and abs(torque[0, 0]) < 1e-12  # motors 1, 2 up: +y torque
    _, torque = body_wrench(np.array([[hover, hover * 1.01, hover, hover * 1.01]]).T)
    assert torque[2, 0] > 0  # motors 1, 3 up: +z (yaw) torque
    thrust, torque = body_wrench(np.full((4, 1), hover))
    assert thrust[0] == pytest.approx(CRAZYFLIE.mass * GRAVITY)
    np.testing.assert_allclose(torque, 0.0, atol=1e-15)


def test_yaw_spins_up_without_tilting():
    hover = CRAZYFLIE.hover_rpm
    rpm = np.array([[hover * 0.99, hover * 1.01, hover * 0.99, hover * 1.01]])
    _, quat, _, omega = _fly(rpm, 0.5)
    assert omega[2, 0] > 0.1 and np.allclose(omega[:2, 0], 0.0, atol=1e-12)
    up = rotation_matrices(quat)[:, 2, 0]
    np.testing.assert_allclose(up, [0, 0, 1], atol=1e-9)  # still level
    np.testing.assert_allclose(np.linalg.norm(quat[:, 0]), 1.0)


def test_batch_equals_one_drone_at_a_time():
    rng = np.random.default_rng(0)
    rpm = CRAZYFLIE.hover_rpm * rng.uniform(0.95, 1.05, size=(5, 4))
    batched = _fly(rpm, 1.0)
    for i in range(5):
        single = _fly(rpm[i : i + 1], 1.0)
        for a, b in zip(batched, single, strict=True):
            np.testing.assert_allclose(a[:, i], b[:, 0], rtol=1e-12, atol=1e-12)


def test_rotation_matrices_are_orthonormal():
    rng = np.random.default_rng(1)
    quat = rng.normal(size=(50, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    rotations = rotation_matrices(quat.T).transpose(2, 0, 1)
    np.testing.assert_allclose(
        rotations @ rotations.transpose(0, 2, 1), np.eye(3)[None].repeat(50, 0), atol=1e-12
    )
    np.testing.assert_allclose(np.linalg.det(rotations), 1.0)


def test_mix_and_the_exact_inverse_are_the_matrix_product_and_inverse():
    """Fixed-order products and an inverse rounded once from exact fractions (no BLAS or
    LAPACK, whose kernels differ per CPU) agree with numpy's to rounding error; the mixer's
    inverse turns a wrench back into the motor thrusts that gave it."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(3, 7))
    np.testing.assert_allclose(mix(a, b), a @ b, rtol=1e-14, atol=1e-15)
    square = rng.normal(size=(5, 5))
    np.testing.assert_allclose(exact_inverse(square), np.linalg.inv(square), rtol=1e-12)
    thrusts = rng.uniform(0.01, 0.1, size=(4, 6))
    wrench = mix(CRAZYFLIE.mixer, thrusts)
    np.testing.assert_allclose(mix(CRAZYFLIE.mixer_inverse, wrench), thrusts, rtol=1e-12)
    with pytest.raises(ValueError, match="singular"):
        exact_inverse(np.array([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(ValueError, match="square"):
        exact_inverse(np.ones((2, 3)))
