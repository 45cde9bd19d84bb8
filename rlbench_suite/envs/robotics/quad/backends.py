"""The two physics backends of the quadrotor tasks, behind one small batched interface.

- :class:`NumpyQuads`: :mod:`.dynamics` integrated in NumPy for a batch of drones. No
  contacts: the floor is a plane the drones cannot sink through (no friction, no bounce,
  no tipping), and drones pass through each other.
- :class:`PyBulletQuads`: the same forces applied to rigid bodies in PyBullet (one DIRECT
  client per instance), which adds contacts with the floor and between drones.

Both hold component-first arrays ``position`` ``(3, n)``, ``quat`` ``(4, n)``, ``velocity``
and ``omega`` ``(3, n)`` (world frame, see :mod:`.dynamics`) and step one physics tick at
a time under motor speeds ``(4, n)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from rlbench_suite.envs.robotics.quad.dynamics import (
    CRAZYFLIE,
    FULL_AERODYNAMICS,
    GRAVITY,
    Aerodynamics,
    QuadParams,
    step,
    world_wrench,
)

PHYSICS_HZ = 240
GROUND_Z = 0.0125  # m: the height of the centre of a drone resting on the floor


CAMERA_DISTANCE = 0.7
"""Metres from the followed point to the render camera for one drone (more for a spread swarm)."""
SPREAD_MARGIN, SPREAD_DISTANCE = 0.3, 1.3
"""The camera of drones ``r`` metres from their centre is ``SPREAD_MARGIN + SPREAD_DISTANCE * r``
metres away (at least :data:`CAMERA_DISTANCE`): every drone in the 60-degree view, each still
a dozen pixels or more in a 200-pixel preview."""


def drone_urdf() -> str:
    """Path of the Crazyflie URDF shipped beside this module (``data/cf2x.urdf``)."""
    return str(Path(__file__).parent / "data" / "cf2x.urdf")


class QuadBackend(Protocol):
    """What the tasks need from a physics backend."""

    position: np.ndarray
    quat: np.ndarray
    velocity: np.ndarray
    omega: np.ndarray

    def place(self, indices: np.ndarray, position: np.ndarray) -> None:
        """Put drones ``indices`` level and at rest at ``position`` ``(k, 3)`` (one row each)."""

    def tick(self, rpm: np.ndarray) -> None:
        """Advance one physics step with motor speeds ``rpm`` ``(4, n)``."""

    def close(self) -> None:
        """Release the simulator."""


class NumpyQuads:
    """``n`` drones integrated in NumPy (the batched fast backend)."""

    def __init__(
        self, n: int, params: QuadParams = CRAZYFLIE, aero: Aerodynamics = FULL_AERODYNAMICS
    ) -> None:
        self.n, self.params, self.aero = n, params, aero
        self.position = np.zeros((3, n))
        self.position[2] = GROUND_Z
        self.quat = np.zeros((4, n))
        self.quat[3] = 1.0
        self.velocity = np.zeros((3, n))
        self.omega = np.zeros((3, n))

    def place(self, indices: np.ndarray, position: np.ndarray) -> None:
        self.position[:, indices] = np.asarray(position).T
        self.quat[:, indices] = np.array([0.0, 0.0, 0.0, 1.0])[:, None]
        self.velocity[:, indices] = 0.0
        self.omega[:, indices] = 0.0

    def tick(self, rpm: np.ndarray) -> None:
        self.position, self.quat, self.velocity, self.omega = step(
            self.position, self.quat, self.velocity, self.omega, rpm,
            1.0 / PHYSICS_HZ, self.params, self.aero,
        )  # fmt: skip
        below = self.position[2] < GROUND_Z
        if below.any():  # the floor: drones stop on it, nothing more
            self.position[2, below] = GROUND_Z
            self.velocity[:, below & (self.velocity[2] < 0)] = 0.0
            self.omega[:, below] = 0.0

    def close(self) -> None:
        return None


class PyBulletQuads:
    """``n`` drones as rigid bodies in their own PyBullet DIRECT client, over a floor plane."""

    def __init__(
        self, n: int, params: QuadParams = CRAZYFLIE, aero: Aerodynamics = FULL_AERODYNAMICS
    ) -> None:
        import pybullet_data

        from rlbench_suite.envs.robotics.pybullet_import import import_pybullet

        p = import_pybullet()

        self.p, self.n, self.params, self.aero = p, n, params, aero
        self.plane_urdf = f"{pybullet_data.getDataPath()}/plane.urdf"
        self.client = p.connect(p.DIRECT)
        self.position, self.quat = np.zeros((3, n)), np.zeros((4, n))
        self.velocity, self.omega = np.zeros((3, n)), np.zeros((3, n))
        self.rotation = np.zeros((3, 3, n))  # body-to-world, from Bullet's own conversion
        self.place(np.arange(n), np.tile([0.0, 0.0, GROUND_Z], (n, 1)))

    def place(self, indices: np.ndarray, position: np.ndarray) -> None:
        """Rebuild the world with every drone placed (PyBullet places all drones at once).

        Rebuilding, rather than moving bodies, clears Bullet's contact caches, so an episode
        depends only on its seed and actions, not on the episodes before it.
        """
        if sorted(np.atleast_1d(indices).tolist()) != list(range(self.n)):
            raise ValueError("the PyBullet backend places all its drones at once")
        p, client = self.p, self.client
        p.resetSimulation(physicsClientId=client)
        p.setGravity(0, 0, -GRAVITY, physicsClientId=client)
        p.setTimeStep(1.0 / PHYSICS_HZ, physicsClientId=client)
        self.plane = p.loadURDF(self.plane_urdf, physicsClientId=client)
        self.drones = []
        for xyz in np.atleast_2d(position)[np.argsort(np.atleast_1d(indices))]:
            drone = p.loadURDF(drone_urdf(), xyz.tolist(), flags=p.URDF_USE_INERTIA_FROM_FILE,
                               physicsClientId=client)  # fmt: skip
            # the model's rotor drag replaces Bullet's default damping
            p.changeDynamics(drone, -1, linearDamping=0.0, angularDamping=0.0,
                             physicsClientId=client)  # fmt: skip
            self.drones.append(drone)
        self._read()

    def tick(self, rpm: np.ndarray) -> None:
        p, client = self.p, self.client
        force, torque = world_wrench(
            self.position, self.rotation, self.velocity, rpm, self.params, self.aero
        )
        for i, drone in enumerate(self.drones):
            p.applyExternalForce(drone, -1, force[:, i].tolist(), self.position[:, i].tolist(),
                                 p.WORLD_FRAME, physicsClientId=client)  # fmt: skip
            p.applyExternalTorque(drone, -1, torque[:, i].tolist(), p.WORLD_FRAME,
                                  physicsClientId=client)  # fmt: skip
        p.stepSimulation(physicsClientId=client)
        self._read()

    def park(self, i: int) -> None:
        """Move drone ``i`` out of the way (far from the arena), as when it leaves a game."""
        self.p.resetBasePositionAndOrientation(
            self.drones[i], [100.0 + 10.0 * i, 100.0, 50.0], [0.0, 0.0, 0.0, 1.0],
            physicsClientId=self.client,
        )  # fmt: skip
        self.p.resetBaseVelocity(self.drones[i], [0.0] * 3, [0.0] * 3, physicsClientId=self.client)
        self._read()

    def contacts(self) -> list[tuple[int, int]]:
        """Pairs ``(i, j)``, ``i < j``, of drones touching each other now."""
        pairs = set()
        for i, drone in enumerate(self.drones):
            for contact in self.p.getContactPoints(bodyA=drone, physicsClientId=self.client):
                other = contact[2]
                if other in self.drones and other != drone:
                    j = self.drones.index(other)
                    pairs.add((min(i, j), max(i, j)))
        return sorted(pairs)

    def render(self, width: int = 320, height: int = 240, focus: np.ndarray | None = None,
               drones: np.ndarray | None = None):  # fmt: skip
        """An ``(height, width, 3)`` uint8 frame from PyBullet's tiny (headless) renderer: a
        camera following the centre of ``drones`` (indices; all of them when None or empty)
        or ``focus``, as close as frames them (a Crazyflie is 9 cm across: from 0.7 m
        it is about 25 pixels wide at 320 x 240; a 0.5 m formation is framed from 0.95 m)."""
        p = self.p
        chosen = self.position if drones is None or len(drones) == 0 else self.position[:, drones]
        centre = chosen.mean(axis=1)
        target = centre if focus is None else focus
        spread = float(np.max(np.linalg.norm(chosen - centre[:, None], axis=0)))
        distance = max(CAMERA_DISTANCE, SPREAD_MARGIN + SPREAD_DISTANCE * spread)
        view = p.computeViewMatrixFromYawPitchRoll(
            target.tolist(), distance, 45.0, -30.0, 0.0, 2, physicsClientId=self.client
        )
        projection = p.computeProjectionMatrixFOV(60.0, width / height, 0.05, 50.0,
                                                  physicsClientId=self.client)  # fmt: skip
        _, _, rgba, _, _ = p.getCameraImage(
            width, height, view, projection, renderer=p.ER_TINY_RENDERER,
            physicsClientId=self.client,
        )  # fmt: skip
        return np.asarray(rgba, dtype=np.uint8).reshape(height, width, 4)[:, :, :3].copy()

    def close(self) -> None:
        if self.client is not None and self.p.isConnected(self.client):
            self.p.disconnect(self.client)
        self.client = None

    def _read(self) -> None:
        p, client = self.p, self.client
        for i, drone in enumerate(self.drones):
            position, quat = p.getBasePositionAndOrientation(drone, physicsClientId=client)
            velocity, omega = p.getBaseVelocity(drone, physicsClientId=client)
            self.position[:, i], self.quat[:, i] = position, quat
            self.velocity[:, i], self.omega[:, i] = velocity, omega
            self.rotation[:, :, i] = np.reshape(p.getMatrixFromQuaternion(quat), (3, 3))
