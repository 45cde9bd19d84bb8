"""The NumPy physics, rewards and observations of cooperative navigation, for a batch of games.

Every function works on a batch of ``B`` games of ``N`` agents and ``N`` landmarks; the
single PettingZoo game (:mod:`.env`) is a batch of one and the vector env
(:mod:`.vector`) a batch of many, so the two cannot drift apart. Inputs and outputs
are batch-first (actions ``(B, N)`` or ``(B, N, 5)``, observations ``(B, N, 4N + 2)``,
rewards ``(B, N)``); the state inside is component-first and batch-last (positions
``(2, N, B)``), so that every NumPy operation runs over the batch in its innermost loop.

Constants follow the multi-particle environments' ``simple_spread`` (MPE): agents are discs
of radius 0.15 and mass 1 with damping 0.25, accelerated by 5 per unit of action, integrated
at dt = 0.1; overlapping agents push each other apart with MPE's soft contact force (100,
margin 0.001). Landmarks do not collide.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DT, DAMPING, MASS, SENSITIVITY = 0.1, 0.25, 1.0, 5.0
AGENT_SIZE = 0.15
LANDMARK_SIZE = 0.05
CONTACT_FORCE, CONTACT_MARGIN, CONTACT_RANGE = 100.0, 1e-3, 40.0
COVER_DISTANCE = 0.1  # a landmark is covered with an agent's centre this close
# action -> direction: no-op, left, right, down, up (MPE's order); continuous actions
# (5 values in [0, 1]) are mixed with the same rows
MOVES = np.array([[0.0, 0.0], [-1.0, 0.0], [1.0, 0.0], [0.0, -1.0], [0.0, 1.0]])


def _norm(vectors: np.ndarray) -> np.ndarray:
    return np.sqrt(vectors[0] * vectors[0] + vectors[1] * vectors[1])


class CoopNavState:
    """Positions and velocities of ``B`` games, and the relations derived from them.

    ``pos``, ``vel``: agents, ``(2, N, B)``; ``landmarks``: ``(2, N, B)``. After every change
    of positions, :meth:`refresh` derives ``between[:, i, j] = pos_j - pos_i``
    ``(2, N, N, B)`` with its norms ``apart`` ``(N, N, B)`` (``inf`` for ``i == j``), and
    ``to_landmarks[:, i, l] = landmark_l - pos_i`` with its norms ``reach`` ``(N, N, B)``.
    """

    def __init__(self, batch: int, num_agents: int) -> None:
        self.pos, self.vel, self.landmarks = (np.zeros((2, num_agents, batch)) for _ in range(3))
        self.others = np.array([[j for j in range(num_agents) if j != i]
                                for i in range(num_agents)])  # fmt: skip
        self.pairs = np.triu_indices(num_agents, 1)
        self.refresh()

    def refresh(self) -> None:
        """Derive the pairwise relations of the current positions."""
        n = self.pos.shape[1]
        self.between = self.pos[:, None, :, :] - self.pos[:, :, None, :]
        self.apart = _norm(self.between)
        self.apart[np.arange(n), np.arange(n)] = np.inf
        self.to_landmarks = self.landmarks[:, None, :, :] - self.pos[:, :, None, :]
        self.reach = _norm(self.to_landmarks)

    def spawn(self, games: np.ndarray, draws: np.ndarray) -> None:
        """Start games ``games`` from ``draws`` ``(len(games), 2N, 2)`` (see :func:`draw`)."""
        n = self.pos.shape[1]
        self.pos[:, :, games] = draws[:, :n].transpose(2, 1, 0)
        self.vel[:, :, games] = 0.0
        self.landmarks[:, :, games] = draws[:, n:].transpose(2, 1, 0)
        self.refresh()


def draw(rng: np.random.Generator, num_agents: int) -> np.ndarray:
    """One game's start: agents then landmarks, uniform in [-1, 1]^2, ``(2N, 2)``."""
    return rng.uniform(-1.0, 1.0, (2 * num_agents, 2))


# The observation layout: own velocity, own position, the N landmarks relative to the agent,
# the N - 1 other agents relative to it (in index order), x and y each.
VELOCITY, POSITION = slice(0, 2), slice(2, 4)


def observation_size(num_agents: int) -> int:
    """Own velocity and position, N landmarks and N - 1 other agents, relative: 4N + 2."""
    return 4 * num_agents + 2


def agents_in(size: int) -> int | None:
    """The number of agents N of an observation of ``size`` = 4N + 2 values (None if no N fits)."""
    n = (size - 2) // 4
    return n if observation_size(n) == size else None


def landmarks_slice(num_agents: int) -> slice:
    """Where the landmarks (relative to the agent) lie in an observation."""
    return slice(POSITION.stop, POSITION.stop + 2 * num_agents)


def others_slice(num_agents: int) -> slice:
    """Where the other agents (relative to the agent) lie in an observation."""
    return slice(landmarks_slice(num_agents).stop, observation_size(num_agents))


def controls(actions: np.ndarray, continuous: bool) -> np.ndarray:
    """Action forces ``(2, N, B)`` from ``(B, N)`` discrete or ``(B, N, 5)`` continuous actions."""
    if continuous:
        return SENSITIVITY * (np.clip(actions, 0.0, 1.0) @ MOVES).transpose(2, 1, 0)
    return SENSITIVITY * MOVES.T[:, actions.T]


def contact_forces(state: CoopNavState) -> np.ndarray:
    """MPE's soft contact forces between agents, summed per agent: ``(2, N, B)``.

    Agents more than :data:`CONTACT_RANGE` margins from touching exert none (MPE's force is
    below 1e-18 there, and computing it would only cost time).
    """
    upper = state.pairs
    apart = state.apart[upper]  # each pair once, (N (N - 1) / 2, B)
    overlap = -(apart - 2 * AGENT_SIZE) / CONTACT_MARGIN
    penetration = np.zeros_like(overlap)
    np.logaddexp(0.0, overlap, out=penetration, where=overlap > -CONTACT_RANGE)
    penetration *= CONTACT_MARGIN
    scale = np.zeros_like(state.apart)
    scale[upper] = scale[upper[::-1]] = CONTACT_FORCE * penetration / np.maximum(apart, 1e-12)
    return -(state.between * scale).sum(axis=2)


def integrate(state: CoopNavState, force: np.ndarray) -> None:
    """One explicit Euler step with damping, in place: positions move with the velocities
    from before the step, as in PettingZoo's and mpe2's ``integrate_state``."""
    state.pos += state.vel * DT
    state.vel *= 1.0 - DAMPING
    state.vel += force / MASS * DT
    state.refresh()


@dataclass
class StepOutcome:
    """What one step scores: per-agent ``reward`` and ``collisions`` ``(B, N)``, per-game
    ``team`` reward and number of ``covered`` landmarks ``(B,)``."""

    reward: np.ndarray
    collisions: np.ndarray
    team: np.ndarray
    covered: np.ndarray


def score(state: CoopNavState, local_ratio: float) -> StepOutcome:
    """Team reward ``-sum_l min_i |p_i - l|``, mixed with each agent's collision penalty.

    ``reward_i = (1 - local_ratio) * team - local_ratio * collisions_i`` (MPE's mixing), where
    ``collisions_i`` counts the agents overlapping agent ``i``.
    """
    nearest = state.reach.min(axis=0)
    team = -nearest.sum(axis=0)
    collisions = (state.apart < 2 * AGENT_SIZE).sum(axis=1)
    reward = (1.0 - local_ratio) * team - local_ratio * collisions
    covered = (nearest < COVER_DISTANCE).sum(axis=0)
    return StepOutcome(reward.T, collisions.T, team, covered)


def step(
    state: CoopNavState, actions: np.ndarray, continuous: bool, local_ratio: float
) -> StepOutcome:
    """Advance every game one cycle (in place) and score the new positions."""
    integrate(state, controls(actions, continuous) + contact_forces(state))
    return score(state, local_ratio)


def observations(state: CoopNavState) -> np.ndarray:
    """``(B, N, 4N + 2)`` float32: own velocity, own position, landmarks relative to the
    agent, the other agents (in index order) relative to the agent."""
    _, n, batch = state.pos.shape
    out = np.empty((observation_size(n), n, batch), np.float32)
    out[VELOCITY], out[POSITION] = state.vel, state.pos
    landmarks = state.to_landmarks.transpose(2, 0, 1, 3)
    out[landmarks_slice(n)].reshape(n, 2, n, batch)[:] = landmarks
    others = state.between[:, np.arange(n)[:, None], state.others]  # (2, N, N - 1, B)
    out[others_slice(n)].reshape(n - 1, 2, n, batch)[:] = others.transpose(2, 0, 1, 3)
    return out.transpose(2, 1, 0)
