"""Single-drone quadrotor environments: ``rlbench/QuadHover-v0`` and ``rlbench/QuadWaypoints-v0``.

After "Learning to Fly" (gym-pybullet-drones): a Crazyflie 2.x (:mod:`.dynamics`) with
physics at 240 Hz and control at 48 Hz (5 physics steps per ``step``), ground effect and
rotor drag, on PyBullet by default (``backend="numpy"`` uses the batched contact-free
backend, as the vector env does). Actions are 4 values in [-1, 1] whose meaning is set by
``action_type`` (see :mod:`.control`); observations and rewards are the task's (see
:mod:`.tasks`). The environment truncates itself after ``max_episode_steps``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.envs.robotics.quad.backends import PHYSICS_HZ, NumpyQuads, PyBulletQuads
from rlbench_suite.envs.robotics.quad.control import ACTION_TYPES, QuadPID, action_to_rpms
from rlbench_suite.envs.robotics.quad.dynamics import Aerodynamics
from rlbench_suite.envs.robotics.quad.tasks import CONTROL_HZ, make_task, observations

BACKENDS = ("pybullet", "numpy")
SUBSTEPS = PHYSICS_HZ // CONTROL_HZ


def quad_spaces(obs_size: int) -> tuple[gym.spaces.Box, gym.spaces.Box]:
    """Observation and action spaces of a drone."""
    observation = gym.spaces.Box(-np.inf, np.inf, (obs_size,), np.float32)
    action = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    return observation, action


def check_choice(name: str, value: str, accepted: tuple[str, ...]) -> str:
    """``value`` if it is one of ``accepted``, else a ValueError naming them."""
    if value not in accepted:
        raise ValueError(f"unknown {name} {value!r}; accepted: {', '.join(accepted)}")
    return value


def clipped_actions(actions: Any, count: int, who: str = "action") -> np.ndarray:
    """``count`` drones' actions as a ``(count, 4)`` array clipped to [-1, 1].

    Values outside [-1, 1] are clipped (as the cards say); a wrong shape or a non-finite
    value is a ValueError naming what is accepted.
    """
    array = np.asarray(actions, dtype=np.float64)
    if array.size != 4 * count:
        shape = "(4,)" if count == 1 else f"({count}, 4)"
        raise ValueError(
            f"{who} must be {4 * count} numbers, shape {shape} (values outside [-1, 1] are "
            f"clipped to it); got shape {array.shape}"
        )
    array = array.reshape(count, 4)
    if not np.all(np.isfinite(array)):
        raise ValueError(
            f"{who} must be finite numbers (values outside [-1, 1] are clipped to it); got "
            f"{array.tolist() if count == 1 else 'a NaN or infinite value'}"
        )
    return np.clip(array, -1.0, 1.0)


def fly(quads: NumpyQuads | PyBulletQuads, pid: QuadPID, action_type: str, actions: np.ndarray):
    """One control step: ``SUBSTEPS`` physics ticks under actions ``(n, 4)``.

    Motor speeds are held over the ticks for ``"rpm"`` actions; the PID of the other action
    types runs at the physics rate.
    """
    rpm = None
    for _ in range(SUBSTEPS):
        if rpm is None or action_type != "rpm":
            rpm = action_to_rpms(action_type, actions, pid, quads.quat, quads.velocity,
                                 quads.omega)  # fmt: skip
        quads.tick(rpm)


def make_quads(backend: str, n: int, aero: Aerodynamics) -> NumpyQuads | PyBulletQuads:
    """A physics backend by name."""
    check_choice("backend", backend, BACKENDS)
    return PyBulletQuads(n, aero=aero) if backend == "pybullet" else NumpyQuads(n, aero=aero)


class QuadEnv(gym.Env):
    """One drone on one of the tasks of :mod:`.tasks`."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": CONTROL_HZ}
    task_name = "hover"

    def __init__(
        self,
        action_type: str = "rpm",
        backend: str = "pybullet",
        max_episode_steps: int = 480,
        ground_effect: bool = True,
        drag: bool = True,
        render_mode: str | None = None,
    ) -> None:
        self.action_type = check_choice("action_type", action_type, ACTION_TYPES)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"unsupported render_mode {render_mode!r}; accepted: 'rgb_array'")
        if render_mode is not None and backend != "pybullet":
            raise ValueError("render_mode='rgb_array' needs backend='pybullet'")
        self.render_mode, self.max_episode_steps = render_mode, max_episode_steps
        self.quads = make_quads(backend, 1, Aerodynamics(drag=drag, ground_effect=ground_effect))
        self.task = make_task(self.task_name, 1)
        self.pid = QuadPID(1)
        self.observation_space, self.action_space = quad_spaces(self.task.obs_size)
        self.last_action = np.zeros((1, 4))
        self.steps = 0

    def _obs(self) -> np.ndarray:
        return observations(self.task.target_terms(self.quads), self.quads, self.last_action)[0]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        start = self.task.start(np.array([0]), self.task.draw(self.np_random)[None])
        self.quads.place(np.array([0]), start)
        self.pid.reset()
        self.last_action[:] = 0.0
        self.steps = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.last_action = clipped_actions(action, 1)
        fly(self.quads, self.pid, self.action_type, self.last_action)
        reward, terminated, info = self.task.update(self.quads)
        self.steps += 1
        truncated = not terminated[0] and self.steps >= self.max_episode_steps
        info = {key: value[0].item() for key, value in info.items()}
        return self._obs(), float(reward[0]), bool(terminated[0]), truncated, info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return self.quads.render()

    def close(self) -> None:
        self.quads.close()


class QuadHoverEnv(QuadEnv):
    """``rlbench/QuadHover-v0``: take off and hold a seeded target (see ``HoverTask``)."""

    task_name = "hover"


class QuadWaypointsEnv(QuadEnv):
    """``rlbench/QuadWaypoints-v0``: pass 4 seeded waypoints in order (see ``WaypointsTask``)."""

    task_name = "waypoints"
