"""The single-drone quadrotor tasks, batched: episodes, observations, rewards, success.

A task holds the per-episode data (targets, waypoints, counters) of ``n`` drones as arrays
and reads the drones' state from a backend (:mod:`.backends`), so the same code serves
the single PyBullet environment (``n = 1``) and the batched vector environment.

Observations are ego-centric kinematic states, float32:

- target terms first (``QuadHover``: the target relative to the drone, 3 values;
  ``QuadWaypoints``: the current and the next waypoint relative to the drone and the
  fraction of waypoints still to pass, 7 values);
- then the drone's own state, ``STATE_SIZE`` = 20 values: height above the floor
  (:data:`HEIGHT`), the body-to-world rotation matrix (:data:`ROTATION`, 9, row-major), world
  velocity (:data:`VELOCITY`, 3), body angular rates (:data:`RATES`, 3), and the previous
  action (:data:`LAST_ACTION`, 4).

These names are the layout, used by :func:`observations` and by the PID expert; the first
target terms, :data:`TARGET`, are always the point to fly to (the target, the current
waypoint, or a swarm drone's slot) relative to the drone.
"""

from __future__ import annotations

import math

import numpy as np

from rlbench_suite.envs import libm
from rlbench_suite.envs.robotics.quad.backends import GROUND_Z, QuadBackend
from rlbench_suite.envs.robotics.quad.dynamics import rotation_matrices, unrotate

CONTROL_HZ = 48
ARENA_HALF_WIDTH = 3.0  # m: leaving |x|, |y| <= 3, z <= 3 ends the episode
ARENA_HEIGHT = 3.0
CRASH_PENALTY = 10.0
TARGET = slice(0, 3)  # the observation's first values: the point to fly to, relative
# where the drone's own state lies within its last STATE_SIZE observation values
HEIGHT, ROTATION, VELOCITY = 0, slice(1, 10), slice(10, 13)
RATES, LAST_ACTION = slice(13, 16), slice(16, 20)
STATE_SIZE = LAST_ACTION.stop


def observations(target_terms: np.ndarray, quads: QuadBackend, last_action: np.ndarray):
    """Observations ``(n, k + 20)`` float32: the task's terms ``(k, n)``, then the drone's own.

    ``last_action`` is batch-first ``(n, 4)``, as the environment received it.
    """
    rotation = rotation_matrices(quads.quat)
    rates = unrotate(rotation, quads.omega)
    k, n = target_terms.shape
    obs = np.empty((n, k + STATE_SIZE), dtype=np.float32)
    obs[:, :k] = target_terms.T
    own = obs[:, k:]
    own[:, HEIGHT] = quads.position[2]
    own[:, ROTATION] = rotation.reshape(9, n).T
    own[:, VELOCITY] = quads.velocity.T
    own[:, RATES] = rates.T
    own[:, LAST_ACTION] = last_action
    return obs


def crashed(quads: QuadBackend) -> np.ndarray:
    """Drones that left the arena or turned upside down, ``(n,)`` bool."""
    x, y, z = quads.position
    outside = (np.abs(x) > ARENA_HALF_WIDTH) | (np.abs(y) > ARENA_HALF_WIDTH) | (z > ARENA_HEIGHT)
    x, y, _, _ = quads.quat  # the body z axis points down when 1 - 2 (x^2 + y^2) < 0
    return outside | (x * x + y * y > 0.5)


def distances(points: np.ndarray, position: np.ndarray) -> np.ndarray:
    """Euclidean distances ``(n,)`` between ``(3, n)`` arrays."""
    delta = points - position
    return np.sqrt((delta * delta).sum(axis=0))


def _on_the_floor(xy: np.ndarray) -> np.ndarray:
    """Start positions ``(k, 3)`` resting on the floor at ``xy`` ``(k, 2)``."""
    return np.concatenate([xy, np.full((len(xy), 1), GROUND_Z)], axis=1)


class HoverTask:
    """Take off and hold a seeded target; success is staying within 5 cm of it for 2 s.

    Start: level on the floor at a seeded spot in [-0.5, 0.5]^2. Target: x, y in [-1, 1],
    z in [0.5, 1.5] m. Reward per step: ``exp(-2 * distance)`` (at most 1), minus 10 on a
    crash. ``info``: ``position_error`` [m] and ``success`` (within 5 cm for the last 96
    control steps).
    """

    target_size = 3
    success_radius = 0.05  # m
    hold_steps = 2 * CONTROL_HZ

    def __init__(self, n: int) -> None:
        self.n = n
        self.target = np.zeros((3, n))
        self.held = np.zeros(n, dtype=np.int64)

    @property
    def obs_size(self) -> int:
        return self.target_size + STATE_SIZE

    @staticmethod
    def draw(rng: np.random.Generator) -> np.ndarray:
        """One episode's variation, as 5 uniform numbers (scaled by :meth:`start`)."""
        return rng.random(5)

    def start(self, indices: np.ndarray, draws: np.ndarray) -> np.ndarray:
        """Begin episodes ``indices`` with their :meth:`draw` rows; return the starts ``(k, 3)``."""
        self.target[:, indices] = (draws[:, 2:] * (2.0, 2.0, 1.0) - (1.0, 1.0, -0.5)).T
        self.held[indices] = 0
        return _on_the_floor(draws[:, :2] - 0.5)

    def target_terms(self, quads: QuadBackend) -> np.ndarray:
        """The target relative to the drone, ``(3, n)``."""
        return self.target - quads.position

    def update(self, quads: QuadBackend) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Rewards, terminations and info arrays after a control step."""
        error = distances(self.target, quads.position)
        self.held = np.where(error < self.success_radius, self.held + 1, 0)
        crash = crashed(quads)
        reward = libm.exp(-2.0 * error) - CRASH_PENALTY * crash
        info = {"position_error": error, "success": self.held >= self.hold_steps}
        return reward, crash, info


class WaypointsTask:
    """Fly through a seeded sequence of 4 waypoints in order; success is passing them all.

    Waypoints: x, y in [-1.5, 1.5], z in [0.5, 1.5] m, each at least 0.5 m from the one
    before (and from the start). Passing: coming within 15 cm. Reward per step: 10 times
    the progress towards the current waypoint [m], plus 5 per waypoint passed, minus 10 on
    a crash. The episode terminates when the last waypoint is passed. ``info``:
    ``waypoints_passed`` and ``success``.
    """

    target_size = 7
    count = 4
    radius = 0.15  # m

    def __init__(self, n: int) -> None:
        self.n = n
        self.waypoints = np.zeros((3, self.count, n))
        self.index = np.zeros(n, dtype=np.int64)
        self.distance = np.zeros(n)

    @property
    def obs_size(self) -> int:
        return self.target_size + STATE_SIZE

    @classmethod
    def draw(cls, rng: np.random.Generator) -> np.ndarray:
        """One episode's variation: start x, y, then the waypoints' x, y, z in order."""
        start = rng.random(2) - 0.5
        previous = np.array([*start, GROUND_Z])
        values = [start]
        for _ in range(cls.count):
            while True:
                u = rng.random(3)
                point = np.array([3 * u[0] - 1.5, 3 * u[1] - 1.5, 0.5 + u[2]])
                if math.dist(point, previous) >= 0.5:  # no BLAS (the same bits anywhere)
                    break
            values.append(point)
            previous = point
        return np.concatenate(values)

    def start(self, indices: np.ndarray, draws: np.ndarray) -> np.ndarray:
        """Begin episodes ``indices`` with their :meth:`draw` rows; return the starts ``(k, 3)``."""
        starts = _on_the_floor(draws[:, :2])
        self.waypoints[:, :, indices] = draws[:, 2:].reshape(-1, self.count, 3).transpose(2, 1, 0)
        self.index[indices] = 0
        self.distance[indices] = np.linalg.norm(draws[:, 2:5] - starts, axis=1)
        return starts

    def _current(self, offset: int = 0) -> np.ndarray:
        k = np.minimum(self.index + offset, self.count - 1)
        return self.waypoints[:, k, np.arange(self.n)]

    def target_terms(self, quads: QuadBackend) -> np.ndarray:
        """The current and the next waypoint relative to the drone, and the fraction left."""
        remaining = (self.count - self.index) / self.count
        return np.concatenate(
            [self._current() - quads.position, self._current(1) - quads.position,
             remaining[None]],
        )  # fmt: skip

    def update(self, quads: QuadBackend) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        distance = distances(self._current(), quads.position)
        reward = 10.0 * (self.distance - distance)
        passed = distance < self.radius
        self.index += passed
        reward += 5.0 * passed
        done = self.index >= self.count
        self.distance = np.where(passed, distances(self._current(), quads.position), distance)
        crash = crashed(quads) & ~done
        reward -= CRASH_PENALTY * crash
        info = {"waypoints_passed": self.index.copy(), "success": done}
        return reward, crash | done, info


TASKS = {"hover": HoverTask, "waypoints": WaypointsTask}


def make_task(name: str, n: int) -> HoverTask | WaypointsTask:
    """The task ``name`` (``"hover"`` or ``"waypoints"``) for ``n`` drones."""
    if name not in TASKS:
        raise ValueError(f"unknown quadrotor task {name!r}; accepted: {', '.join(TASKS)}")
    return TASKS[name](n)
