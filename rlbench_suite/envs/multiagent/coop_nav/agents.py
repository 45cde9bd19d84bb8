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


def first_agents_landmarks(cost: np.ndarray) -> np.ndarray:
    """For a batch of costs ``(B, N, N)``: the landmark :func:`assign` gives agent 0 (row 0)
    in each, ``(B,)``; all permutations at once up to :data:`EXACT_UP_TO` agents."""
    n = cost.shape[1]
    if n > EXACT_UP_TO:
        return np.array([assign(c)[0] for c in cost], dtype=np.int64)
    perms = np.array(list(itertools.permutations(range(n))))  # (P, N)
    totals = cost[:, np.arange(n)[None, :], perms].sum(axis=2)  # (B, P)
    return perms[totals.argmin(axis=1), 0]


def aim(observations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each agent's velocity and the point it aims at (relative to it), from a batch of
    observations ``(B, 4N + 2)``: ``((B, 2), (B, 2))``."""
    obs = np.asarray(observations, dtype=np.float64)
    batch, n = obs.shape[0], agents_in(obs.shape[1]) or 0
    landmarks = obs[:, landmarks_slice(n)].reshape(batch, n, 2)
    others = obs[:, others_slice(n)].reshape(batch, n - 1, 2)
    agents = np.concatenate([np.zeros((batch, 1, 2)), others], axis=1)  # this agent first
    cost = np.linalg.norm(landmarks[:, None, :, :] - agents[:, :, None, :], axis=3)
    target = landmarks[np.arange(batch), first_agents_landmarks(cost)]
    apart = np.linalg.norm(others, axis=2)  # (B, N - 1)
    away = -others / np.maximum(apart[:, :, None], 1e-9)
    weight = np.where(apart < AVOID_RADIUS, AVOID_RADIUS - apart, 0.0)
    push = AVOID_GAIN * (weight[:, :, None] * away).sum(axis=1)
    return obs[:, VELOCITY], target + push


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
        action = self.act_batch(np.asarray(observation)[None])[0]
        return action.astype(np.float32) if self.continuous else int(action)

    def act_batch(self, observations: np.ndarray) -> np.ndarray:
        """The actions of a batch of agents, one observation ``(B, 4N + 2)`` each: ``(B,)``
        integers, or ``(B, 5)`` float32 accelerations if continuous. The policy is memoryless,
        so any agents of any games may be batched together."""
        velocity, target = aim(observations)
        # this step moves the agent by v * dt whatever the action; the action sets v'
        kept = (1.0 - DAMPING) * velocity
        target = target - DT * velocity
        if self.continuous:  # the v' that coasts to a stop on the target
            u = np.clip((target / COAST - kept) / IMPULSE, -1.0, 1.0)
            pushes = np.maximum(np.stack([-u[:, 0], u[:, 0], -u[:, 1], u[:, 1]], axis=1), 0.0)
            return np.concatenate([np.zeros((len(u), 1)), pushes], axis=1).astype(np.float32)
        # a discrete agent only comes to rest on a 0.2 grid, so it hovers instead: the move
        # keeping it nearest the target over the next steps (coasting after this one)
        nexts = kept[:, None, :] + IMPULSE * MOVES[None]  # (B, moves, 2)
        paths = HORIZON[None, :, None, None] * nexts[:, None, :, :]  # (B, steps, moves, 2)
        distance = np.linalg.norm(target[:, None, None, :] - paths, axis=3)
        return distance.sum(axis=1).argmin(axis=1)
