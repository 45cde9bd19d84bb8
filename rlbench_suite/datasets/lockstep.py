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
        self.forces = np.array([-self.force_mag, self.force_mag])  # by action

    def state(self, core: Any) -> np.ndarray:
        return np.array(core.state, dtype=np.float64)

    def step(
        self, state: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if (actions.astype(np.uint64) > 1).any():  # a negative one wraps to a large one
            raise ValueError(f"CartPole actions must be 0 or 1, got {np.unique(actions)}")
        x, x_dot, theta, theta_dot = state.T
        force = self.forces.take(actions)
        costheta = np.cos(theta)
        sintheta = np.sin(theta)
        temp = (force + self.polemass_length * np.square(theta_dot) * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * np.square(costheta) / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        if self.kinematics_integrator == "euler":  # each column: value + tau * its derivative
            state = state + self.tau * np.array((x_dot, xacc, theta_dot, thetaacc)).T
            x, theta = state[:, 0], state[:, 2]
        else:  # semi-implicit euler
            x_dot = x_dot + self.tau * xacc
            x = x + self.tau * x_dot
            theta_dot = theta_dot + self.tau * thetaacc
            theta = theta + self.tau * theta_dot
            state = np.stack((x, x_dot, theta, theta_dot), axis=1)
        # |v| > t is (v < -t) | (v > t), NaN included
        terminated = (np.abs(x) > self.x_threshold) | (np.abs(theta) > self.theta_threshold_radians)
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

    def act(self, slots: np.ndarray, steps: np.ndarray, observations: np.ndarray) -> np.ndarray:
        """The actions of ``slots`` at their episodes' ``steps`` (0 first)."""
        ...


def uniform_actions(space: gym.spaces.Discrete, count: int) -> np.ndarray:
    """``count`` values of ``space.sample()`` (uniform, no mask) in one call.

    ``count`` draws at once give what ``count`` single draws give: ``Generator.integers``
    keeps a spare 32-bit half in the bit generator between calls, and ``Generator.random``
    takes one 64-bit draw each (the tests check both)."""
    return space.start + space.np_random.integers(space.n, size=count, dtype=space.dtype.type)


class _OnnxActor:
    """A stateless deterministic ONNX policy: one run for the batch."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.key = ("onnx", str(policy.path), policy.output, repr(policy.action_space))

    def start(self, slot: int, seed: int) -> None:
        pass

    def act(self, slots: np.ndarray, steps: np.ndarray, observations: np.ndarray) -> np.ndarray:
        return self.policy.act_batch(observations)


class _RandomActor:
    """The random policy: each episode's actions, all its time limit's worth drawn at its
    start from the action space seeded as ``RandomPolicy.reset`` seeds it."""

    def __init__(self, space: gym.spaces.Discrete, slots: int, limit: int) -> None:
        self.key = ("random", repr(space))
        self.space = gym.spaces.Discrete(int(space.n), start=int(space.start), dtype=space.dtype)
        self.actions = np.zeros((slots, limit), dtype=space.dtype)

    def start(self, slot: int, seed: int) -> None:
        self.space.seed(policy_seed(seed))
        self.actions[slot] = uniform_actions(self.space, self.actions.shape[1])

    def act(self, slots: np.ndarray, steps: np.ndarray, observations: np.ndarray) -> np.ndarray:
        return self.actions[slots, steps]


def batch_actor(policy: Any, slots: int, limit: int) -> BatchActor | None:
    """A :class:`BatchActor` for ``policy`` (episodes of at most ``limit`` steps) where its
    actions on a batch are those it gives one observation at a time (no recurrent state, no
    sampling from logits); else None."""
    from rlbench_suite.policies.core import RandomPolicy
    from rlbench_suite.policies.onnx import OnnxPolicy

    if isinstance(policy, OnnxPolicy) and policy.batchable:
        return _OnnxActor(policy)
    if type(policy) is RandomPolicy and type(policy.action_space) is gym.spaces.Discrete:
        return _RandomActor(policy.action_space, slots, limit)
    return None


class _Epsilon:
    """Each episode's epsilon steps and their random actions, drawn at its start as ``play``
    draws them one step at a time: a uniform from the epsilon stream per step, and the
    random action space's next sample at each step where that uniform is below epsilon."""

    def __init__(self, epsilon: float, space: gym.spaces.Discrete, slots: int,
                 limit: int) -> None:  # fmt: skip
        self.epsilon = epsilon
        self.space = gym.spaces.Discrete(int(space.n), start=int(space.start), dtype=space.dtype)
        self.hits = np.zeros((slots, limit), dtype=bool)
        self.actions = np.zeros((slots, limit), dtype=space.dtype)

    def start(self, slot: int, seed: int) -> None:
        stream = np.random.default_rng(np.random.SeedSequence([seed, EPSILON_STREAM]))
        self.space.seed(int(stream.integers(2**31)))
        limit = self.hits.shape[1]
        hits = self.hits[slot] = stream.random(limit) < self.epsilon
        self.actions[slot, hits] = uniform_actions(self.space, limit)[: int(hits.sum())]

    def apply(self, slots: np.ndarray, steps: np.ndarray, actions: np.ndarray) -> np.ndarray:
        hits = self.hits[slots, steps]
        if hits.any():
            actions = np.where(hits, self.actions[slots, steps], actions)
        return actions


@dataclass(frozen=True)
class Block:
    """Episodes of one policy: their reset seeds, in order, the epsilon of random actions and
    the std of Gaussian action noise (None: none; builder.noise_scale)."""

    policy: Any
    seeds: list[int]
    epsilon: float = 0.0
    noise_std: np.ndarray | None = None


def lockstep_rollouts(env: gym.Env, blocks: list[Block]) -> Iterator[Episode] | None:
    """The episodes of ``blocks`` on ``env`` (a block's seeds in order, then the next
    block's), all played together in lockstep; None when the env or a policy does not allow
    it (module doc)."""
    found = dynamics_of(env)
    count = sum(len(b.seeds) for b in blocks)
    if found is None or count == 0 or any(b.noise_std is not None for b in blocks):
        return None
    if any(b.epsilon > 0 for b in blocks) and type(env.action_space) is not gym.spaces.Discrete:
        return None
    dynamics, limit = found
    obs_shape = env.observation_space.shape or ()
    row = int(np.prod(obs_shape)) * 4 + 48  # the ring's and the per-step draws' bytes
    slots = max(1, min(SLOTS, count, BUFFER_BYTES // (row * (limit + 1))))
    actors: dict[Any, BatchActor] = {}
    keys = []
    for block in blocks:
        actor = batch_actor(block.policy, slots, limit)
        if actor is None:
            return None
        keys.append(actor.key)
        actors.setdefault(actor.key, actor)  # blocks of one policy share its runs
    return _Lockstep(env, dynamics, limit, slots, blocks, [actors[k] for k in keys]).play()


class _Lockstep:
    """The slots, the ring of their recent steps and the loop of :func:`lockstep_rollouts`.

    Every iteration steps every slot (a slot without an episode left to play idles at the
    zero state and step 0, its results ignored), so each step is whole-array operations and
    the ring's row of the iteration is written as a whole: row ``i % rows`` holds iteration ``i``'s
    actions, rewards and terminations and the observations before it. An episode's rows never
    wrap onto themselves (``rows`` is the time limit plus one); it is copied out when it ends.
    """

    def __init__(self, env: gym.Env, dynamics: Dynamics, limit: int, slots: int,
                 blocks: list[Block], actors: list[BatchActor]) -> None:  # fmt: skip
        self.env, self.dynamics, self.limit, self.rows = env, dynamics, limit, limit + 1
        self.space = space = env.action_space
        self.seeds = [seed for b in blocks for seed in b.seeds]
        self.block_of_episode = np.repeat(np.arange(len(blocks)), [len(b.seeds) for b in blocks])
        self.actors = actors
        self.noises = [_Epsilon(b.epsilon, space, slots, limit) if b.epsilon > 0 else None  # type: ignore[arg-type]
                       for b in blocks]  # fmt: skip
        self.groups = {id(a): a for a in actors}  # each distinct actor runs once per step
        self.group_of_block = np.array([list(self.groups).index(id(a)) for a in actors])
        shape, dtype = env.observation_space.shape or (), dynamics.observation_dtype
        self.observations = np.zeros((self.rows, slots, *shape), dtype=dtype)
        self.actions = np.zeros((self.rows, slots, *space.shape), dtype=space.dtype)  # type: ignore[misc]
        self.rewards = np.zeros((self.rows, slots))
        self.terminations = np.zeros((self.rows, slots), dtype=bool)
        self.current = np.zeros((slots, *shape), dtype=dtype)  # each slot's last observation
        self.states: np.ndarray | None = None
        self.steps = np.zeros(slots, dtype=np.int64)
        self.first = np.zeros(slots, dtype=np.int64)  # the iteration its episode began at
        self.episode_of = np.full(slots, -1)
        self.active = np.zeros(slots, dtype=np.int64)  # 1 where a slot plays an episode
        self.playing = 0  # slots that do
        self.block_of = np.zeros(slots, dtype=np.int64)
        self.all = np.arange(slots)
        self.iteration = self.upcoming = 0

    def start(self, slot: int) -> None:
        """The next episode begins in ``slot``: the env's own reset, then its state."""
        index, seed = self.upcoming, self.seeds[self.upcoming]
        obs, _ = self.env.reset(seed=seed)
        state = self.dynamics.state(self.env.unwrapped)
        if self.states is None:
            self.states = np.zeros((len(self.steps), len(state)))
        self.states[slot], self.current[slot] = state, obs
        self.observations[self.iteration % self.rows, slot] = obs
        self.playing += 1 - int(self.active[slot])
        self.steps[slot], self.first[slot], self.active[slot] = 0, self.iteration, 1
        block = int(self.block_of_episode[index])
        self.episode_of[slot], self.block_of[slot] = index, block
        self.actors[block].start(slot, seed)
        noise = self.noises[block]
        if noise is not None:
            noise.start(slot, seed)
        self.upcoming += 1

    def idle(self, slot: int) -> None:
        """No episode is left for ``slot``: it idles at the zero state."""
        self.playing -= 1
        self.episode_of[slot], self.active[slot], self.steps[slot] = -1, 0, 0
        self.states[slot] = 0  # type: ignore[index]
        self.current[slot] = 0

    def choose(self) -> np.ndarray:
        """Every slot's action (an idle slot's is any); when most slots idle, the policies
        act for the others alone."""
        if 2 * self.playing > len(self.all):
            return self._choose(self.all, self.steps, self.current)
        live = np.flatnonzero(self.active)
        chosen = np.zeros((len(self.all), *self.space.shape), dtype=self.space.dtype)  # type: ignore[misc]
        chosen[live] = self._choose(live, self.steps[live], self.current[live])
        return chosen

    def _choose(self, slots: np.ndarray, steps: np.ndarray, observations: np.ndarray) -> np.ndarray:
        """The actions of ``slots``: each actor once, then each block's epsilon."""
        blocks = self.block_of[slots]
        if len(self.groups) == 1:  # one policy: no sorting out whose slot is whose
            (actor,) = self.groups.values()
            chosen = np.asarray(actor.act(slots, steps, observations), dtype=self.space.dtype)
        else:
            groups = self.group_of_block[blocks]
            chosen = np.zeros((len(slots), *self.space.shape), dtype=self.space.dtype)  # type: ignore[misc]
            for g, actor in enumerate(self.groups.values()):
                mine = groups == g
                if mine.any():
                    chosen[mine] = actor.act(slots[mine], steps[mine], observations[mine])
        for b, noise in enumerate(self.noises):
            if noise is None:
                continue
            mine = blocks == b
            if mine.all():
                chosen = noise.apply(slots, steps, chosen)
            elif mine.any():
                chosen[mine] = noise.apply(slots[mine], steps[mine], chosen[mine])
        return chosen

    def finish(self, slot: int) -> Episode:
        """The episode that just ended in ``slot``, copied out of the ring."""
        n, index = int(self.steps[slot]), int(self.episode_of[slot])
        rows = (self.first[slot] + np.arange(n + 1)) % self.rows
        truncations = np.zeros(n, dtype=bool)
        truncations[n - 1 :] = n >= self.limit
        return Episode(
            self.observations[rows, slot], self.actions[rows[:n], slot],
            self.rewards[rows[:n], slot], self.terminations[rows[:n], slot], truncations,
            seed=self.seeds[index],
        )  # fmt: skip

    def play(self) -> Iterator[Episode]:
        finished: dict[int, Episode] = {}
        emitted = 0
        for slot in self.all:
            self.start(int(slot))
        while emitted < len(self.seeds):
            row = self.iteration % self.rows
            chosen = self.choose()
            states, obs, reward, terminated = self.dynamics.step(self.states, chosen)  # type: ignore[arg-type]
            self.states, self.current = states, obs
            self.observations[(self.iteration + 1) % self.rows] = obs
            self.actions[row] = chosen
            self.rewards[row] = reward
            self.terminations[row] = terminated
            self.steps += self.active  # an idle slot stays at step 0
            self.iteration += 1
            ended = (terminated | (self.steps >= self.limit)) & (self.active == 1)
            for slot in np.flatnonzero(ended):
                finished[int(self.episode_of[slot])] = self.finish(slot)
                if self.upcoming < len(self.seeds):
                    self.start(slot)
                else:
                    self.idle(slot)
            while emitted in finished:
                yield finished.pop(emitted)
                emitted += 1
