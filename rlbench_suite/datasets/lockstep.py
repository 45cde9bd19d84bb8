"""Lockstep rollouts: many seeded episodes (of a card's policies) stepped together as arrays.

Where the env has batch dynamics here (:data:`DYNAMICS`: Gymnasium's CartPole under the
standard wrappers) and every policy can act on a batch (:func:`batch_actor`: a greedy or
action-head ONNX policy without recurrent state, the random policy), :func:`lockstep_rollouts`
plays up to :data:`SLOTS` episodes at once, a slot taking the next episode when its own ends.
Every episode still starts with the real ``env.reset(seed=...)``; its steps are the env's own
arithmetic on arrays (the same operations in the same order, so the same float64 bits); the
policy runs once per step for the whole batch; and each episode's random streams (its policy
seed, its epsilon stream) are drawn exactly as :func:`~rlbench_suite.datasets.builder.play`
draws them. So the episodes, and the dataset's content hash, are those of the one-at-a-time
path (the tests compare both). Anything else returns None and the builder plays one episode
at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from rlbench_suite.core.seeds import policy_seed
from rlbench_suite.datasets.storage import Episode

SLOTS = 256
"""Episodes played at once (fewer when a card has fewer, or their buffers would be large)."""
BUFFER_BYTES = 256 << 20
"""Upper bound on the per-slot episode buffers of one lockstep rollout."""
AHEAD = 64
"""Random values drawn ahead per episode and stream (see :class:`_Draws`)."""
EPSILON_STREAM = 0xE951
"""The second word of an episode's epsilon stream's seed (``[seed, EPSILON_STREAM]``)."""


class Dynamics(Protocol):
    """An env's step on arrays: ``state`` rows are episodes."""

    observation_dtype: np.dtype

    def state(self, core: gym.Env) -> np.ndarray:
        """The state row of the core env just after its ``reset``."""
        ...

    def step(
        self, state: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(next state, observations, rewards, terminated)`` of a batch."""
        ...


class CartPoleDynamics:
    """Gymnasium's ``CartPoleEnv.step`` on a batch (its formulas, term by term)."""

    observation_dtype = np.dtype(np.float32)

    def __init__(self, core: Any) -> None:
        for name in ("gravity", "masspole", "total_mass", "length", "polemass_length",
                     "force_mag", "tau", "kinematics_integrator", "theta_threshold_radians",
                     "x_threshold", "_sutton_barto_reward"):  # fmt: skip
            setattr(self, name, getattr(core, name))

    def state(self, core: Any) -> np.ndarray:
        return np.array(core.state, dtype=np.float64)

    def step(
        self, state: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if ((actions != 0) & (actions != 1)).any():
            raise ValueError(f"CartPole actions must be 0 or 1, got {np.unique(actions)}")
        x, x_dot, theta, theta_dot = state.T
        force = np.where(actions == 1, self.force_mag, -self.force_mag)
        costheta = np.cos(theta)
        sintheta = np.sin(theta)
        temp = (force + self.polemass_length * np.square(theta_dot) * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * np.square(costheta) / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        if self.kinematics_integrator == "euler":
            x = x + self.tau * x_dot
            x_dot = x_dot + self.tau * xacc
            theta = theta + self.tau * theta_dot
            theta_dot = theta_dot + self.tau * thetaacc
        else:  # semi-implicit euler
            x_dot = x_dot + self.tau * xacc
            x = x + self.tau * x_dot
            theta_dot = theta_dot + self.tau * thetaacc
            theta = theta + self.tau * theta_dot
        state = np.stack((x, x_dot, theta, theta_dot), axis=1)
        terminated = ((x < -self.x_threshold) | (x > self.x_threshold)
                      | (theta < -self.theta_threshold_radians)
                      | (theta > self.theta_threshold_radians))  # fmt: skip
        if self._sutton_barto_reward:
            rewards = np.where(terminated, -1.0, 0.0)
        else:
            rewards = np.ones(len(state))
        return state, state.astype(np.float32), rewards, terminated


def _dynamics_table() -> dict[type, Callable[[Any], Dynamics]]:
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv

    return {CartPoleEnv: CartPoleDynamics}


DYNAMICS = _dynamics_table()
"""Core env class -> its batch dynamics."""


def _passive_wrappers() -> tuple[type, ...]:
    from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

    from rlbench_suite.wrappers.stats import EpisodeStatistics

    return (OrderEnforcing, PassiveEnvChecker, EpisodeStatistics)


def dynamics_of(env: gym.Env) -> tuple[Dynamics, int] | None:
    """``(batch dynamics, time limit)`` of ``env``: its core class has dynamics here, it is
    not rendering, and its wrappers are one ``TimeLimit`` plus wrappers that change nothing
    an episode records (order checks, the suite's statistics); else None."""
    limit = None
    layer: Any = env
    while isinstance(layer, gym.Wrapper):
        if isinstance(layer, gym.wrappers.TimeLimit) and limit is None:
            limit = layer._max_episode_steps
        elif not isinstance(layer, _passive_wrappers()):
            return None
        layer = layer.env
    make = DYNAMICS.get(type(layer))
    if make is None or limit is None or getattr(layer, "render_mode", None) is not None:
        return None
    return make(layer), int(limit)


class BatchActor(Protocol):
    """A policy acting for the episodes in slots; actors with equal ``key`` act alike (their
    slots' state is set by ``start`` at each episode), so blocks of one policy share one."""

    key: Any

    def start(self, slot: int, seed: int) -> None:
        """A new episode reset with ``seed`` begins in ``slot``."""
        ...

    def act(self, slots: np.ndarray, observations: np.ndarray) -> np.ndarray: ...


def _discrete_copies(space: gym.spaces.Discrete, count: int) -> list[gym.spaces.Discrete]:
    return [gym.spaces.Discrete(int(space.n), start=int(space.start), dtype=space.dtype)
            for _ in range(count)]  # fmt: skip


def uniform_actions(space: gym.spaces.Discrete, count: int) -> np.ndarray:
    """``count`` values of ``space.sample()`` (uniform, no mask) in one call."""
    return space.start + space.np_random.integers(space.n, size=count, dtype=space.dtype.type)


class _Draws:
    """Each slot's next values from its own generator, drawn :data:`AHEAD` at a time.

    ``draw(slot, k)`` must give what ``k`` single draws give, which holds for
    ``Generator.random`` (one 64-bit draw each) and ``Generator.integers`` (the bit generator
    itself keeps a spare 32-bit half between calls); the tests check both against single draws.
    """

    def __init__(self, slots: int, dtype: Any, draw: Callable[[int, int], np.ndarray]) -> None:
        self.values = np.zeros((slots, AHEAD), dtype=dtype)
        self.used = np.full(slots, AHEAD)
        self.draw = draw

    def restart(self, slot: int) -> None:
        """The slot's generator was seeded anew: drop what was drawn ahead."""
        self.used[slot] = AHEAD

    def take(self, slots: np.ndarray) -> np.ndarray:
        """The next value of each of ``slots``."""
        for slot in slots[self.used[slots] == AHEAD]:
            self.values[slot] = self.draw(int(slot), AHEAD)
            self.used[slot] = 0
        values = self.values[slots, self.used[slots]]
        self.used[slots] += 1
        return values


class _OnnxActor:
    """A stateless deterministic ONNX policy: one run for the batch."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.key = ("onnx", str(policy.path), policy.output, repr(policy.action_space))

    def start(self, slot: int, seed: int) -> None:
        pass

    def act(self, slots: np.ndarray, observations: np.ndarray) -> np.ndarray:
        return self.policy.act_batch(observations)


class _RandomActor:
    """The random policy: a copy of its (Discrete) action space per slot, seeded as
    ``RandomPolicy.reset`` seeds it."""

    def __init__(self, space: gym.spaces.Discrete, slots: int) -> None:
        self.key = ("random", repr(space))
        self.spaces = _discrete_copies(space, slots)
        self.draws = _Draws(slots, space.dtype, lambda s, k: uniform_actions(self.spaces[s], k))

    def start(self, slot: int, seed: int) -> None:
        self.spaces[slot].seed(policy_seed(seed))
        self.draws.restart(slot)

    def act(self, slots: np.ndarray, observations: np.ndarray) -> np.ndarray:
        return self.draws.take(slots)


def batch_actor(policy: Any, slots: int) -> BatchActor | None:
    """A :class:`BatchActor` for ``policy`` where its actions on a batch are those it gives
    one observation at a time (no recurrent state, no sampling from logits); else None."""
    from rlbench_suite.policies.core import RandomPolicy
    from rlbench_suite.policies.onnx import OnnxPolicy

    if isinstance(policy, OnnxPolicy) and policy.batchable:
        return _OnnxActor(policy)
    if type(policy) is RandomPolicy and type(policy.action_space) is gym.spaces.Discrete:
        return _RandomActor(policy.action_space, slots)
    return None


class _Epsilon:
    """Each slot's epsilon stream and random action space, drawn as ``play`` draws them."""

    def __init__(self, epsilon: float, space: gym.spaces.Discrete, slots: int) -> None:
        self.epsilon = epsilon
        self.spaces = _discrete_copies(space, slots)
        self.streams = [np.random.default_rng(0)] * slots
        self.uniforms = _Draws(slots, np.float64, lambda s, k: self.streams[s].random(k))
        self.actions = _Draws(slots, space.dtype, lambda s, k: uniform_actions(self.spaces[s], k))

    def start(self, slot: int, seed: int) -> None:
        stream = np.random.default_rng(np.random.SeedSequence([seed, EPSILON_STREAM]))
        self.spaces[slot].seed(int(stream.integers(2**31)))
        self.streams[slot] = stream
        self.uniforms.restart(slot)
        self.actions.restart(slot)

    def apply(self, slots: np.ndarray, actions: np.ndarray) -> np.ndarray:
        hits = self.uniforms.take(slots) < self.epsilon
        if hits.any():
            actions[hits] = self.actions.take(slots[hits])
        return actions


@dataclass(frozen=True)
class Block:
    """Episodes of one policy: their reset seeds, in order, and the epsilon of random actions."""

    policy: Any
    seeds: list[int]
    epsilon: float = 0.0


def lockstep_rollouts(env: gym.Env, blocks: list[Block]) -> Iterator[Episode] | None:
    """The episodes of ``blocks`` on ``env`` (a block's seeds in order, then the next
    block's), all played together in lockstep; None when the env or a policy does not allow
    it (module doc)."""
    found = dynamics_of(env)
    count = sum(len(b.seeds) for b in blocks)
    if found is None or count == 0:
        return None
    if any(b.epsilon > 0 for b in blocks) and type(env.action_space) is not gym.spaces.Discrete:
        return None
    dynamics, limit = found
    obs_shape = env.observation_space.shape or ()
    row = int(np.prod(obs_shape)) * 4 + 32
    slots = max(1, min(SLOTS, count, BUFFER_BYTES // (row * (limit + 1))))
    actors: dict[Any, BatchActor] = {}
    keys = []
    for block in blocks:
        actor = batch_actor(block.policy, slots)
        if actor is None:
            return None
        keys.append(actor.key)
        actors.setdefault(actor.key, actor)  # blocks of one policy share its runs
    return _Lockstep(env, dynamics, limit, slots, blocks, [actors[k] for k in keys]).play()


class _Lockstep:
    """The slots, their episode buffers and the loop of :func:`lockstep_rollouts`."""

    def __init__(self, env: gym.Env, dynamics: Dynamics, limit: int, slots: int,
                 blocks: list[Block], actors: list[BatchActor]) -> None:  # fmt: skip
        self.env, self.dynamics, self.limit = env, dynamics, limit
        self.space = space = env.action_space
        self.seeds = [seed for b in blocks for seed in b.seeds]
        self.block_of_episode = np.repeat(np.arange(len(blocks)), [len(b.seeds) for b in blocks])
        self.actors = actors
        self.noises = [_Epsilon(b.epsilon, space, slots) if b.epsilon > 0 else None  # type: ignore[arg-type]
                       for b in blocks]  # fmt: skip
        self.groups = {id(a): a for a in actors}  # each distinct actor runs once per step
        self.group_of_block = np.array([list(self.groups).index(id(a)) for a in actors])
        shape, dtype = env.observation_space.shape or (), dynamics.observation_dtype
        self.observations = np.zeros((slots, limit + 1, *shape), dtype=dtype)
        self.actions = np.zeros((slots, limit, *space.shape), dtype=space.dtype)  # type: ignore[misc]
        self.rewards = np.zeros((slots, limit))
        self.terminations = np.zeros((slots, limit), dtype=bool)
        self.truncations = np.zeros((slots, limit), dtype=bool)
        self.states: np.ndarray | None = None
        self.steps = np.zeros(slots, dtype=np.int64)
        self.episode_of = np.full(slots, -1)
        self.block_of = np.zeros(slots, dtype=np.int64)
        self.upcoming = 0

    def start(self, slot: int) -> None:
        """The next episode begins in ``slot``: the env's own reset, then its state."""
        index, seed = self.upcoming, self.seeds[self.upcoming]
        obs, _ = self.env.reset(seed=seed)
        state = self.dynamics.state(self.env.unwrapped)
        if self.states is None:
            self.states = np.zeros((len(self.steps), len(state)))
        self.states[slot], self.observations[slot, 0], self.steps[slot] = state, obs, 0
        block = int(self.block_of_episode[index])
        self.episode_of[slot], self.block_of[slot] = index, block
        self.actors[block].start(slot, seed)
        noise = self.noises[block]
        if noise is not None:
            noise.start(slot, seed)
        self.upcoming += 1

    def choose(self, live: np.ndarray, observations: np.ndarray) -> np.ndarray:
        """The actions of the live slots: each actor once, then each block's epsilon."""
        blocks = self.block_of[live]
        if len(self.groups) == 1:  # one policy: no sorting out whose slot is whose
            (actor,) = self.groups.values()
            chosen = np.asarray(actor.act(live, observations), dtype=self.space.dtype)
        else:
            groups = self.group_of_block[blocks]
            chosen = np.zeros((len(live), *self.space.shape), dtype=self.space.dtype)  # type: ignore[misc]
            for g, actor in enumerate(self.groups.values()):
                mine = groups == g
                if mine.any():
                    chosen[mine] = actor.act(live[mine], observations[mine])
        for b, noise in enumerate(self.noises):
            if noise is None:
                continue
            mine = blocks == b
            if mine.all():
                chosen = noise.apply(live, chosen)
            elif mine.any():
                chosen[mine] = noise.apply(live[mine], chosen[mine])
        return chosen

    def finish(self, slot: int) -> Episode:
        n, index = self.steps[slot], int(self.episode_of[slot])
        self.episode_of[slot] = -1
        return Episode(
            self.observations[slot, : n + 1].copy(), self.actions[slot, :n].copy(),
            self.rewards[slot, :n].copy(), self.terminations[slot, :n].copy(),
            self.truncations[slot, :n].copy(), seed=self.seeds[index],
        )  # fmt: skip

    def play(self) -> Iterator[Episode]:
        finished: dict[int, Episode] = {}
        emitted = 0
        for slot in range(len(self.steps)):
            self.start(slot)
        while emitted < len(self.seeds):
            live = np.flatnonzero(self.episode_of >= 0)
            t = self.steps[live]
            chosen = self.choose(live, self.observations[live, t])
            states, obs, reward, terminated = self.dynamics.step(self.states[live], chosen)  # type: ignore[index]
            self.states[live] = states  # type: ignore[index]
            self.observations[live, t + 1] = obs
            self.actions[live, t] = chosen
            self.rewards[live, t] = reward
            self.terminations[live, t] = terminated
            self.truncations[live, t] = truncated = t + 1 >= self.limit
            self.steps[live] = t + 1
            for slot in live[terminated | truncated]:
                index = int(self.episode_of[slot])
                finished[index] = self.finish(slot)
                if self.upcoming < len(self.seeds):
                    self.start(slot)
            while emitted in finished:
                yield finished.pop(emitted)
                emitted += 1
