"""MuJoCo table-top manipulation in the manner of Meta-World: reach, push and pick-and-place.

One model (``data/arm.xml`` beside this module): a 3-DoF Cartesian (gantry) arm with a
two-finger parallel gripper over a table, and a 4 cm block. Position actuators drive the
slides, whose joint positions equal the end effector's (grip point's) world position, and the
two fingers.

Shared by the three tasks:

- **Action** ``Box(-1, 1, (4,), float32)``: ``a[:3]`` moves the end-effector target by
  ``a[:3] * 0.025`` m from the current end-effector position (clipped to the workspace);
  ``a[3]`` commands the gripper, -1 fully open (9 cm gap) to +1 closed.
- **Observation** ``Box(-inf, inf, (22,), float64)``: end-effector position (:data:`EE`, 3),
  gripper opening in metres (:data:`OPENING`, 1), end-effector velocity (:data:`EE_VELOCITY`,
  3), block position (:data:`BLOCK`, 3), block minus end effector (:data:`BLOCK_FROM_EE`, 3),
  goal (:data:`GOAL`, 3), goal minus block (:data:`GOAL_FROM_BLOCK`, 3), goal minus end
  effector (:data:`GOAL_FROM_EE`, 3). The env's rewards and the scripted controllers read it
  by these names.
- **Control**: 25 Hz (5 physics steps of 8 ms).
- **Episodes** never terminate (Meta-World's rule); the card's ``max_episode_steps`` truncates.
  ``info["success"]`` is reported on every step; an episode is a success if any step is.
- **Splits**: a variation is the vector of the task's sampled coordinates (see each task). Its
  split is the parity of the sum of its 5 cm grid-cell indices (:func:`variation_split`): even
  is ``"train"``, odd is ``"test"``, a checkerboard, so the two sets are disjoint. ``reset``
  samples uniformly and rejects variations of the other split; ``options={"split": ...}``
  overrides the constructor's ``split``.
"""

from __future__ import annotations

import abc
import math
import os
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from gymnasium import spaces
from gymnasium.envs.mujoco import MujocoEnv
from numpy.typing import NDArray

SPLITS = ("train", "test")
CELL_SIZE = 0.05
"""Edge of the checkerboard cells (metres) that assign variations to splits."""

MAX_DELTA = 0.025
"""End-effector target displacement (metres) per step at ``|a| = 1``."""

FINGER_OPEN = 0.045
"""Finger travel (metres) from the centre plane when fully open."""

HOME = np.array([0.0, 0.0, 0.15])
"""End-effector position at reset."""

BLOCK_HALF = 0.02
PARKED_BLOCK = np.array([0.33, 0.0, BLOCK_HALF])
"""Where the block rests, out of the arm's reach, in the reach task."""

EE, OPENING, EE_VELOCITY, BLOCK = slice(0, 3), 3, slice(4, 7), slice(7, 10)
BLOCK_FROM_EE, GOAL, GOAL_FROM_BLOCK, GOAL_FROM_EE = (slice(i, i + 3) for i in (10, 13, 16, 19))
"""The observation layout (see the module docstring)."""
OBS_SIZE = GOAL_FROM_EE.stop
RENDER_HELP = (
    "MuJoCo could not open an offscreen rendering context. Headless machines need EGL "
    "(apt-get install libegl1; MUJOCO_GL=egl) or OSMesa (apt-get install libosmesa6; "
    "MUJOCO_GL=osmesa); MUJOCO_GL is now {gl!r}."
)


def model_path() -> str:
    """Absolute path of the arm's MJCF model."""
    return str(Path(__file__).parent / "data" / "arm.xml")


def variation_split(coordinates: NDArray[np.float64]) -> str:
    """The split (``"train"`` or ``"test"``) a variation's sampled coordinates belong to."""
    cells = np.floor(np.asarray(coordinates, dtype=np.float64) / CELL_SIZE).astype(np.int64)
    return SPLITS[int(cells.sum()) % 2]


def check_split(split: Any) -> str:
    """``split`` if it is one of :data:`SPLITS`; otherwise a ValueError naming them."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; accepted: {', '.join(map(repr, SPLITS))}")
    return split


class ArmEnv(MujocoEnv, abc.ABC):
    """Base class of the arm tasks: simulation, action, observation and split handling.

    Subclasses set :attr:`success_threshold` and implement :meth:`_sample_variation`
    (coordinates, block position, goal) and :meth:`_evaluate` (reward, success, info).
    """

    metadata = {"render_modes": ["human", "rgb_array", "depth_array"], "render_fps": 25}
    success_threshold: float

    def __init__(
        self,
        split: str = "train",
        render_mode: str | None = None,
        width: int = 480,
        height: int = 480,
    ) -> None:
        self.split = check_split(split)
        observation_space = spaces.Box(-np.inf, np.inf, (OBS_SIZE,), np.float64)
        super().__init__(
            model_path(),
            frame_skip=5,
            observation_space=observation_space,
            render_mode=render_mode,
            width=width,
            height=height,
            camera_name="front",
        )
        self.action_space = spaces.Box(-1.0, 1.0, (4,), np.float32)
        model = self.model
        self._goal_site = model.site("goal").id
        self._block_geom = model.geom("block").id
        self._finger_geoms = (model.geom("finger_l").id, model.geom("finger_r").id)
        self._block_qpos = model.joint("block").qposadr[0]
        self._ee_low, self._ee_high = model.actuator_ctrlrange[:3].T.copy()
        self._reset_split = self.split
        self.goal = np.zeros(3)
        self.variation = np.zeros(0)
        """The sampled coordinates of the current variation (see :func:`variation_split`)."""

    # -- variations -------------------------------------------------------------------------

    @abc.abstractmethod
    def _sample_variation(
        self, rng: np.random.Generator
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """One uniform draw: ``(coordinates, block position, goal)``; may be rejected."""

    def _draw(self, split: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        while True:
            coordinates, block, goal = self._sample_variation(self.np_random)
            if variation_split(coordinates) == split:
                self.variation = coordinates
                return block, goal

    # -- Gymnasium API -----------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[NDArray[np.float64], dict[str, Any]]:
        """Reset to a variation of ``options["split"]`` (default: the constructor's split)."""
        self._reset_split = check_split((options or {}).get("split", self.split))
        return super().reset(seed=seed, options=options)

    def reset_model(self) -> NDArray[np.float64]:
        block, self.goal = self._draw(self._reset_split)
        qpos = self.init_qpos.copy()
        qpos[:3] = HOME
        qpos[3:5] = FINGER_OPEN
        qpos[self._block_qpos : self._block_qpos + 3] = block
        self.data.ctrl[:3] = HOME
        self.data.ctrl[3:5] = FINGER_OPEN
        self.model.site_pos[self._goal_site] = self.goal
        self.set_state(qpos, self.init_qvel)
        return self._get_obs()

    def _get_reset_info(self) -> dict[str, Any]:
        return self._evaluate(self._get_obs())[2]

    def step(
        self, action: NDArray[np.float32]
    ) -> tuple[NDArray[np.float64], float, bool, bool, dict[str, Any]]:
        a = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
        ctrl = self.data.ctrl
        target = self.data.qpos[:3] + a[:3] * MAX_DELTA
        ctrl[:3] = np.clip(target, self._ee_low, self._ee_high)
        ctrl[3:5] = FINGER_OPEN * 0.5 * (1.0 - a[3])
        mujoco.mj_step(self.model, self.data, nstep=self.frame_skip)
        obs = self._get_obs()
        reward, _, info = self._evaluate(obs)
        if self.render_mode == "human":
            self.render()
        return obs, reward, False, False, info

    def render(self) -> Any:
        """Render with Gymnasium's MuJoCo renderer; a clear error if no GL context opens."""
        try:
            return super().render()
        except (mujoco.FatalError, RuntimeError, AttributeError, ImportError, OSError) as exc:
            raise RuntimeError(RENDER_HELP.format(gl=os.environ.get("MUJOCO_GL"))) from exc

    # -- observation, reward -----------------------------------------------------------------

    def _get_obs(self) -> NDArray[np.float64]:
        data = self.data
        ee = data.qpos[:3]  # the gantry's joint positions are the grip point's position
        block = data.qpos[self._block_qpos : self._block_qpos + 3]
        obs = np.empty(OBS_SIZE)
        obs[EE], obs[OPENING], obs[EE_VELOCITY] = ee, data.qpos[3] + data.qpos[4], data.qvel[:3]
        obs[BLOCK], obs[BLOCK_FROM_EE] = block, block - ee
        goal = self.goal
        obs[GOAL], obs[GOAL_FROM_BLOCK], obs[GOAL_FROM_EE] = goal, goal - block, goal - ee
        return obs

    def _grasped(self) -> bool:
        """Both fingers touch the block."""
        contact, block = self.data.contact, self._block_geom
        pairs = set(zip(contact.geom1.tolist(), contact.geom2.tolist(), strict=True))
        return all((f, block) in pairs or (block, f) in pairs for f in self._finger_geoms)

    @abc.abstractmethod
    def _evaluate(self, obs: NDArray[np.float64]) -> tuple[float, bool, dict[str, Any]]:
        """``(reward, success, info)`` for observation ``obs`` of the current state."""


def dot(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """``a . b`` in plain float arithmetic, the same bits on every CPU: numpy's ``@`` calls
    OpenBLAS, whose kernels (chosen per processor) round differently in the last bit, so the
    rewards, and the data built from them, would differ between an Intel and an AMD machine."""
    return math.fsum(float(x) * float(y) for x, y in zip(a, b, strict=True))


def _distance(a: NDArray[np.float64]) -> float:
    return math.sqrt(dot(a, a))


def _closeness(distance: float) -> float:
    """Shaping term in (0, 1]: 1 at distance 0, about 0.24 at 10 cm."""
    return 1.0 - math.tanh(10.0 * distance)


class ArmReachEnv(ArmEnv):
    """Move the end effector to a goal in the air (``rlbench/ArmReach-v0``).

    Variation: the goal, uniform in [-0.15, 0.15]^2 x [0.05, 0.25] m and at least 10 cm from
    the start position. The block is parked out of reach. Reward ``1 - tanh(10 d)`` with ``d``
    the end-effector-to-goal distance; success when ``d < 0.05`` m.
    """

    success_threshold = 0.05

    def _sample_variation(
        self, rng: np.random.Generator
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        while True:
            goal = rng.uniform([-0.15, -0.15, 0.05], [0.15, 0.15, 0.25])
            if _distance(goal - HOME) >= 0.1:
                return goal.copy(), PARKED_BLOCK.copy(), goal

    def _evaluate(self, obs: NDArray[np.float64]) -> tuple[float, bool, dict[str, Any]]:
        distance = _distance(obs[GOAL_FROM_EE])
        success = distance < self.success_threshold
        info = {"success": success, "distance": distance, "goal": self.goal.copy()}
        return _closeness(distance), success, info


class _BlockTaskEnv(ArmEnv):
    """A task about moving the block to the goal; ``goal_z`` bounds where the goal may be."""

    goal_z: tuple[float, float]
    _grasp_bonus: float

    def _sample_variation(
        self, rng: np.random.Generator
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        while True:
            block_xy = rng.uniform(-0.12, 0.12, 2)
            goal = rng.uniform([-0.15, -0.15, self.goal_z[0]], [0.15, 0.15, self.goal_z[1]])
            block = np.array([*block_xy, BLOCK_HALF])
            if _distance(goal - block) >= 0.1:
                varied = goal if self.goal_z[1] > self.goal_z[0] else goal[:2]
                return np.concatenate([block_xy, varied]), block, goal

    def _evaluate(self, obs: NDArray[np.float64]) -> tuple[float, bool, dict[str, Any]]:
        reach, distance = _distance(obs[BLOCK_FROM_EE]), _distance(obs[GOAL_FROM_BLOCK])
        grasped = self._grasped()
        success = distance < self.success_threshold
        reward = 0.5 * _closeness(reach) + self._grasp_bonus * grasped + _closeness(distance)
        info = {
            "success": success,
            "distance": distance,
            "grasped": grasped,
            "goal": self.goal.copy(),
        }
        return reward, success, info


class ArmPushEnv(_BlockTaskEnv):
    """Push the block to a goal on the table (``rlbench/ArmPush-v0``).

    Variation: block and goal positions on the table, the block uniform in [-0.12, 0.12]^2,
    the goal in [-0.15, 0.15]^2, at least 10 cm apart. Reward
    ``0.5 (1 - tanh(10 d_hand)) + (1 - tanh(10 d_goal))`` with ``d_hand`` the
    end-effector-to-block and ``d_goal`` the block-to-goal distance; success when
    ``d_goal < 0.05`` m.
    """

    success_threshold = 0.05
    goal_z = (BLOCK_HALF, BLOCK_HALF)
    _grasp_bonus = 0.0


class ArmPickPlaceEnv(_BlockTaskEnv):
    """Grasp the block and hold it at a goal in the air (``rlbench/ArmPickPlace-v0``).

    Variation: the block uniform in [-0.12, 0.12]^2 on the table, the goal in
    [-0.15, 0.15]^2 x [0.08, 0.22] m (so pushing alone never succeeds), at least 10 cm apart.
    Reward ``0.5 (1 - tanh(10 d_hand)) + 0.5 grasped + (1 - tanh(10 d_goal))``, ``grasped``
    meaning both fingers touch the block; success when ``d_goal < 0.05`` m.
    """

    success_threshold = 0.05
    goal_z = (0.08, 0.22)
    _grasp_bonus = 0.5
