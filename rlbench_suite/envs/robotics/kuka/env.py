"""``KukaReachEnv``: move the KUKA iiwa's end effector to a seeded target, on PyBullet.

Every instance owns one headless (``DIRECT``) PyBullet client, so several can live in one
process; :meth:`KukaReachEnv.close` disconnects it. Physics runs at 240 Hz and the policy
acts at 30 Hz (:data:`FRAME_SKIP` substeps per step).

Observation (23 floats, float64): joint positions (:data:`JOINT_POSITIONS`, 7, rad), joint
velocities (:data:`JOINT_VELOCITIES`, 7, rad/s), end-effector position (:data:`EE`, 3, m),
target position (:data:`TARGET`, 3, m), target minus end effector (:data:`TARGET_FROM_EE`, 3,
m); the scripted controller reads it by these names.
The end effector is the point :data:`TOOL_OFFSET` metres along the z axis of the last link
(PyBullet link 6, ``lbr_iiwa_link_7``), in the world frame (the robot's base frame).

Action: ``[-1, 1]^7`` joint-position increments; ``a`` moves joint ``i``'s position target
to ``q_i + a_i * MAX_JOINT_STEP`` (clipped to the joint's limits), about 1.5 rad/s at full
scale, tracked by PyBullet's position controller.

Reward: minus the distance from the end effector to the target (metres). The episode never
terminates (Meta-World style); the card's ``max_episode_steps`` truncates it.
``info["success"]`` is whether the distance is below :data:`SUCCESS_DISTANCE` (2 cm) after
this step, ``info["distance"]`` the distance and ``info["target"]`` the target.

Reset: the target is drawn uniformly from :data:`TARGET_LOW`..:data:`TARGET_HIGH`, then the
joints are set to :data:`HOME` plus uniform noise of :data:`HOME_NOISE` rad, at rest. Every
joint and motor is reset explicitly, so an episode depends only on its seed and actions.
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pybullet_data

from rlbench_suite.envs.robotics.pybullet_import import import_pybullet

pybullet = import_pybullet()

URDF_PATH = Path(pybullet_data.getDataPath()) / "kuka_iiwa" / "model.urdf"
N_JOINTS = 7
EE_LINK = 6
TOOL_OFFSET = 0.05
PHYSICS_HZ = 240
FRAME_SKIP = 8
MAX_JOINT_STEP = 0.05
POSITION_GAIN = 0.3
SUCCESS_DISTANCE = 0.02
HOME = np.array([0.0, 0.4, 0.0, -1.4, 0.0, 0.8, 0.0])
HOME_NOISE = 0.1
TARGET_LOW = np.array([0.3, -0.35, 0.2])
TARGET_HIGH = np.array([0.7, 0.35, 0.7])
JOINT_POSITIONS, JOINT_VELOCITIES = slice(0, N_JOINTS), slice(N_JOINTS, 2 * N_JOINTS)
EE, TARGET, TARGET_FROM_EE = (slice(2 * N_JOINTS + i, 2 * N_JOINTS + i + 3) for i in (0, 3, 6))
"""The observation layout (see the module docstring)."""
OBS_SIZE = TARGET_FROM_EE.stop


class KukaReachEnv(gym.Env[np.ndarray, np.ndarray]):
    """Reach a seeded target with the KUKA iiwa's end effector (see the module docstring)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": PHYSICS_HZ // FRAME_SKIP}

    def __init__(self, render_mode: str | None = None, width: int = 320, height: int = 240):
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode {render_mode!r} is not supported; accepted: rgb_array")
        self.render_mode = render_mode
        self.width, self.height = width, height
        self.action_space = gym.spaces.Box(-1.0, 1.0, (N_JOINTS,), np.float32)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (OBS_SIZE,), np.float64)
        self._client: int | None = pybullet.connect(pybullet.DIRECT)
        cid = self._client
        pybullet.setTimeStep(1.0 / PHYSICS_HZ, physicsClientId=cid)
        pybullet.setGravity(0.0, 0.0, -9.81, physicsClientId=cid)
        self._robot = pybullet.loadURDF(str(URDF_PATH), useFixedBase=True, physicsClientId=cid)
        marker = pybullet.createVisualShape(
            pybullet.GEOM_SPHERE,
            radius=SUCCESS_DISTANCE,
            rgbaColor=[0.1, 0.8, 0.2, 0.8],
            physicsClientId=cid,
        )
        self._marker = pybullet.createMultiBody(
            baseMass=0.0, baseVisualShapeIndex=marker, physicsClientId=cid
        )
        self._joints = list(range(N_JOINTS))
        info = [pybullet.getJointInfo(self._robot, j, physicsClientId=cid) for j in self._joints]
        self._lower = np.array([i[8] for i in info])
        self._upper = np.array([i[9] for i in info])
        self._forces = [i[10] for i in info]
        self._gains = [POSITION_GAIN] * N_JOINTS
        self._target = np.zeros(3)
        self._q = np.zeros(N_JOINTS)

    def _cid(self) -> int:
        if self._client is None:
            raise RuntimeError("this KukaReachEnv is closed; make a new one to keep going")
        return self._client

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        cid = self._cid()
        self._target = self.np_random.uniform(TARGET_LOW, TARGET_HIGH)
        q0 = HOME + self.np_random.uniform(-HOME_NOISE, HOME_NOISE, N_JOINTS)
        for joint, angle in zip(self._joints, q0, strict=True):
            pybullet.resetJointState(self._robot, joint, angle, 0.0, physicsClientId=cid)
        self._command(q0)
        pybullet.resetBasePositionAndOrientation(
            self._marker, self._target.tolist(), [0.0, 0.0, 0.0, 1.0], physicsClientId=cid
        )
        return self._observe()

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        cid = self._cid()
        action = np.asarray(action, dtype=np.float64)
        if action.shape != (N_JOINTS,) or not np.isfinite(action).all():
            raise ValueError(f"action must be {N_JOINTS} finite numbers in [-1, 1], got {action!r}")
        self._command(self._q + np.clip(action, -1.0, 1.0) * MAX_JOINT_STEP)
        for _ in range(FRAME_SKIP):
            pybullet.stepSimulation(physicsClientId=cid)
        obs, info = self._observe()
        return obs, -info["distance"], False, False, info

    def _command(self, targets: np.ndarray) -> None:
        pybullet.setJointMotorControlArray(
            self._robot,
            self._joints,
            pybullet.POSITION_CONTROL,
            targetPositions=np.clip(targets, self._lower, self._upper).tolist(),
            targetVelocities=[0.0] * N_JOINTS,
            forces=self._forces,
            positionGains=self._gains,
            physicsClientId=self._cid(),
        )

    def _observe(self) -> tuple[np.ndarray, dict[str, Any]]:
        cid = self._cid()
        states = pybullet.getJointStates(self._robot, self._joints, physicsClientId=cid)
        q = self._q = np.array([s[0] for s in states])
        qd = np.array([s[1] for s in states])
        link = pybullet.getLinkState(
            self._robot, EE_LINK, computeForwardKinematics=True, physicsClientId=cid
        )
        z_axis = np.array(pybullet.getMatrixFromQuaternion(link[5])).reshape(3, 3)[:, 2]
        ee = np.array(link[4]) + TOOL_OFFSET * z_axis
        delta = self._target - ee
        distance = math.hypot(*delta)  # not linalg.norm: BLAS, whose bits vary by CPU
        obs = np.empty(OBS_SIZE)
        obs[JOINT_POSITIONS], obs[JOINT_VELOCITIES] = q, qd
        obs[EE], obs[TARGET], obs[TARGET_FROM_EE] = ee, self._target, delta
        info = {
            "success": distance < SUCCESS_DISTANCE,
            "distance": distance,
            "target": self._target.copy(),
        }
        return obs, info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        cid = self._cid()
        view = pybullet.computeViewMatrixFromYawPitchRoll(
            cameraTargetPosition=[0.3, 0.0, 0.45],
            distance=1.5,
            yaw=60.0,
            pitch=-25.0,
            roll=0.0,
            upAxisIndex=2,
            physicsClientId=cid,
        )
        projection = pybullet.computeProjectionMatrixFOV(
            fov=50.0, aspect=self.width / self.height, nearVal=0.05, farVal=5.0, physicsClientId=cid
        )
        _, _, rgba, _, _ = pybullet.getCameraImage(
            self.width,
            self.height,
            viewMatrix=view,
            projectionMatrix=projection,
            renderer=pybullet.ER_TINY_RENDERER,
            physicsClientId=cid,
        )
        return np.asarray(rgba, dtype=np.uint8).reshape(self.height, self.width, 4)[..., :3]

    def close(self) -> None:
        """Disconnect the PyBullet client; later calls other than ``close`` raise."""
        if self._client is not None:
            pybullet.disconnect(physicsClientId=self._client)
            self._client = None

    def __del__(self) -> None:
        # An unclosed env must not keep its client (PyBullet has a fixed number of them).
        with contextlib.suppress(Exception):
            self.close()
