"""The scripted reference team of ``rlbench/CoopNav-v0``, acting on one agent's observation.

Every agent sees all landmarks and all other agents relative to itself, so every agent can
solve the same assignment of agents to landmarks (least total distance) and head for its
own landmark: the team spreads out with no communication. Each agent steers towards a
desired velocity (proportional to the distance left, capped), pushed away from agents
closer than :data:`AVOID_RADIUS`; a discrete action is the move whose next velocity comes
closest to it, a continuous one the acceleration towards it.
"""

from __future__ import annotations

import itertools
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.envs.multiagent.coop_nav.core import (
    DAMPING,
    DT,
    MASS,
    MOVES,
    SENSITIVITY,
    VELOCITY,
    agents_in,
    landmarks_slice,
    others_slice,
)

IMPULSE = SENSITIVITY / MASS * DT  # velocity change per unit of action
COAST = DT / DAMPING  # how far a velocity carries an agent that stops accelerating
LOOKAHEAD = 4  # steps a discrete agent looks ahead
# distance covered in 1..LOOKAHEAD steps, per unit of velocity, coasting
HORIZON = DT * np.cumsum((1.0 - DAMPING) ** np.arange(LOOKAHEAD))
AVOID_RADIUS, AVOID_GAIN = 0.4, 1.0  # aim away from agents closer than AVOID_RADIUS
EXACT_UP_TO = 7  # agents; larger teams assign greedily (nearest pair first)


def assign(cost: np.ndarray) -> np.ndarray:
    """The landmark of each agent (row) minimizing the total ``cost`` ``(N, N)``."""
    n = cost.shape[0]
    if n <= EXACT_UP_TO:
        perms = np.array(list(itertools.permutations(range(n))))
        return perms[cost[np.arange(n), perms].sum(axis=1).argmin()]
    choice = np.empty(n, dtype=np.int64)
    cost = cost.astype(float)
    for _ in range(n):
        agent, landmark = np.unravel_index(cost.argmin(), cost.shape)
        choice[agent] = landmark
        cost[agent, :], cost[:, landmark] = np.inf, np.inf
    return choice


def aim(observation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The agent's velocity and the point it aims at (relative to it), from its observation."""
    obs = np.asarray(observation, dtype=np.float64)
    n = agents_in(obs.size) or 0
    landmarks = obs[landmarks_slice(n)].reshape(n, 2)
    others = obs[others_slice(n)].reshape(n - 1, 2)
    agents = np.vstack([np.zeros(2), others])  # this agent first, all relative to it
    cost = np.linalg.norm(landmarks[None, :, :] - agents[:, None, :], axis=2)
    target = landmarks[assign(cost)[0]]
    apart = np.linalg.norm(others, axis=1)
    near = apart < AVOID_RADIUS
    away = -others[near] / np.maximum(apart[near, None], 1e-9)
    push = AVOID_GAIN * ((AVOID_RADIUS - apart[near, None]) * away).sum(axis=0)
    return obs[VELOCITY], target + push


class GreedyLandmarks:
    """Each agent heads for its landmark in the team's least-distance assignment."""

    def __init__(
        self,
        observation_space: gym.spaces.Box | None = None,
        action_space: gym.spaces.Space | None = None,
        seed: int | None = None,
    ) -> None:
        if observation_space is not None and (
            len(observation_space.shape) != 1 or agents_in(observation_space.shape[0]) is None
        ):
            raise ValueError(
                f"expected a CoopNav observation of 4N + 2 values, got {observation_space.shape}"
            )
        self.continuous = isinstance(action_space, gym.spaces.Box)

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the policy is deterministic and memoryless."""

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> Any:
        velocity, target = aim(observation)
        # this step moves the agent by v * dt whatever the action; the action sets v'
        kept = (1.0 - DAMPING) * velocity
        target = target - DT * velocity
        if self.continuous:  # the v' that coasts to a stop on the target
            u = np.clip((target / COAST - kept) / IMPULSE, -1.0, 1.0)
            pushes = np.maximum([-u[0], u[0], -u[1], u[1]], 0.0)
            return np.concatenate([[0.0], pushes]).astype(np.float32)
        # a discrete agent only comes to rest on a 0.2 grid, so it hovers instead: the move
        # keeping it nearest the target over the next steps (coasting after this one)
        nexts = kept + IMPULSE * MOVES
        paths = HORIZON[:, None, None] * nexts[None, :, :]  # (steps, moves, 2)
        return int(np.linalg.norm(target - paths, axis=2).sum(axis=0).argmin())
