"""Recording episodes as an env emits them while something else drives it (a training run).

:class:`RecordEpisodes` wraps one env (a trainer's wrappers, and any normalization, go on top
of it); :class:`RecordVectorEpisodes` wraps a vector env in ``SAME_STEP`` autoreset (a native
batched backend) and records its first ``k`` sub-envs; :class:`RecordJointEpisodes` wraps one
whose slots are the agents of games (parameter sharing's batched multi-agent backend) and
records its first ``k`` games as joint episodes (every agent's observation, action and reward
per step, the team's ends: :mod:`~rlbench_suite.datasets.joint`'s layout). Each hands every
completed episode to one :class:`EpisodeSink`, in the order the episodes ended (sub-envs or
games in index order within a step), with terminations and truncations apart and the true
final observation (a single env's own last step; a vector env's ``info["final_obs"]``, not
the reset observation that ``SAME_STEP`` returns in its place). An episode still running
when the driver stops is left out: :attr:`EpisodeSink.open_steps` counts its steps, so recorded
+ open steps are exactly the steps the recorded envs took.
"""

from __future__ import annotations

import abc
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.datasets.storage import Episode


def stack_values(values: list[Any], space: gym.Space) -> Any:
    """Values of ``space`` stacked along a first axis (dicts and tuples per key, text as a list)."""
    if isinstance(space, gym.spaces.Dict):
        return {k: stack_values([v[k] for v in values], s) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(stack_values([v[i] for v in values], s) for i, s in enumerate(space.spaces))
    if isinstance(space, gym.spaces.Text):
        return [str(v) for v in values]
    dtype = space.dtype if space.dtype is not None else None
    return np.asarray(values, dtype=dtype)


def _snapshot(value: Any) -> Any:
    """A copy of ``value`` that the env cannot change later (envs may reuse their buffers)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {k: _snapshot(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_snapshot(v) for v in value)
    return value


class _Track:
    """One env's episode in progress."""

    def __init__(self, sink: EpisodeSink, index: int) -> None:
        self.sink, self.index = sink, index
        self.seed: int | None = None
        self.observations: list[Any] = []
        self.actions: list[Any] = []
        self.rewards: list[Any] = []
        self.terminations: list[bool] = []
        self.truncations: list[bool] = []

    def start(self, obs: Any, seed: int | None) -> None:
        self.seed = seed
        self.observations, self.actions, self.rewards = [_snapshot(obs)], [], []
        self.terminations, self.truncations = [], []

    def step(self, action: Any, obs: Any, reward: Any, terminated: bool, truncated: bool) -> None:
        """One step; ``reward`` a number, or of joint data ``{agent: number}``."""
        if not self.observations:
            raise RuntimeError("a recorded env stepped before its first reset")
        self.observations.append(_snapshot(obs))
        self.actions.append(_snapshot(action))
        self.rewards.append({k: float(v) for k, v in reward.items()}
                            if isinstance(reward, dict) else float(reward))  # fmt: skip
        self.terminations.append(bool(terminated))
        self.truncations.append(bool(truncated))
        if terminated or truncated:
            self.sink.add(self.index, Episode(
                observations=stack_values(self.observations, self.sink.observation_space),
                actions=stack_values(self.actions, self.sink.action_space),
                rewards=_stack_rewards(self.rewards),
                terminations=np.asarray(self.terminations, dtype=bool),
                truncations=np.asarray(self.truncations, dtype=bool),
                seed=self.seed,
            ))  # fmt: skip
            self.observations = []

    @property
    def open_steps(self) -> int:
        return len(self.actions) if self.observations else 0


class EpisodeSink:
    """The completed episodes of every recorded env, in the order they ended."""

    def __init__(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        self.observation_space, self.action_space = observation_space, action_space
        self.episodes: list[Episode] = []
        self.origins: list[int] = []
        """The recorded env (its number) of each episode."""
        self.tracks: list[_Track] = []
        self.drained_steps = 0

    def track(self) -> _Track:
        """A new env's track (recorded envs are numbered in the order they ask)."""
        self.tracks.append(_Track(self, len(self.tracks)))
        return self.tracks[-1]

    def add(self, origin: int, episode: Episode) -> None:
        self.episodes.append(episode)
        self.origins.append(origin)

    def drain(self) -> list[Episode]:
        """The completed episodes so far, no longer kept (:attr:`steps` still counts them)."""
        episodes, self.episodes, self.origins = self.episodes, [], []
        self.drained_steps += sum(len(e) for e in episodes)
        return episodes

    @property
    def steps(self) -> int:
        """Steps of the completed episodes (drained ones included)."""
        return self.drained_steps + sum(len(e) for e in self.episodes)

    @property
    def open_steps(self) -> int:
        """Steps of the episodes still running (left out of the data)."""
        return sum(t.open_steps for t in self.tracks)


class RecordEpisodes(gym.Wrapper):
    """Records the episodes of one env into ``sink`` (module doc); changes nothing."""

    def __init__(self, env: gym.Env, sink: EpisodeSink) -> None:
        super().__init__(env)
        self.track = sink.track()

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        obs, info = self.env.reset(seed=seed, options=options)
        self.track.start(obs, seed)
        return obs, info

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.track.step(action, obs, reward, terminated, truncated)
        return obs, reward, terminated, truncated, info


class _RecordVector(gym.vector.VectorWrapper, abc.ABC):
    """Records the first ``count`` of a ``SAME_STEP`` vector env's ``units`` (sub-envs or
    games): unit ``u`` reset with an int ``seed`` starts with ``seed + u`` (Gymnasium's
    convention, and the batched backends' for games), later episodes with no seed of their
    own. Subclasses say what a unit's value of a batch is (:meth:`_value`) and step."""

    unit = "sub-envs"

    def __init__(self, env: gym.vector.VectorEnv, count: int, units: int,
                 sink: EpisodeSink) -> None:  # fmt: skip
        super().__init__(env)
        mode = env.metadata.get("autoreset_mode")
        if mode != gym.vector.AutoresetMode.SAME_STEP:
            raise ValueError(f"recording a vector env needs AutoresetMode.SAME_STEP, got {mode}")
        if not 0 < count <= units:
            raise ValueError(f"cannot record {count} of {units} {self.unit}: "
                             f"1..{units} accepted")  # fmt: skip
        self.units = units
        self.tracks = [sink.track() for _ in range(count)]

    @abc.abstractmethod
    def _value(self, batch: Any, u: int) -> Any:
        """Unit ``u``'s value of a batch (an observation, action or flag of each sub-env)."""

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict | None = None) -> Any:  # fmt: skip
        obs, info = self.env.reset(seed=seed, options=options)
        seeds = seed if isinstance(seed, list) else [
            None if seed is None else seed + u for u in range(self.units)
        ]  # fmt: skip
        for u, track in enumerate(self.tracks):
            track.start(self._value(obs, u), seeds[u])
        return obs, info


class RecordVectorEpisodes(_RecordVector):
    """Records the first ``count`` sub-envs of a ``SAME_STEP`` vector env into ``sink``
    (module doc); changes nothing. Sub-env ``i`` reset with ``seed`` starts with ``seed + i``
    (Gymnasium's convention), later episodes with no seed of their own."""

    def __init__(self, env: gym.vector.VectorEnv, count: int, sink: EpisodeSink) -> None:
        super().__init__(env, count, env.num_envs, sink)

    def _value(self, batch: Any, u: int) -> Any:
        return _row(batch, u)

    def step(self, actions: Any) -> Any:
        obs, rewards, terminations, truncations, info = self.env.step(actions)
        for i, track in enumerate(self.tracks):
            ended = bool(terminations[i] or truncations[i])
            last = info["final_obs"][i] if ended else _row(obs, i)
            track.step(_row(actions, i), last, rewards[i], terminations[i], truncations[i])
            if ended:
                track.start(_row(obs, i), None)  # SAME_STEP: obs is the new episode's first
        return obs, rewards, terminations, truncations, info


class RecordJointEpisodes(_RecordVector):
    """Records the first ``count`` games of a ``SAME_STEP`` vector env whose slot
    ``g * N + i`` is ``agents[i]`` of game ``g`` (parameter sharing's batched backend, e.g.
    ``CoopNavVectorEnv``) into ``sink`` as joint episodes (module doc); changes nothing. The
    sink's spaces are Dicts over ``agents`` (``joint.joint_spaces``). Game ``g`` reset with
    ``seed`` starts with ``seed + g`` (the batched backends' convention), later episodes with
    no seed of their own. A game's agents must end on the same step, alike."""

    unit = "games"

    def __init__(self, env: gym.vector.VectorEnv, agents: list[str], count: int,
                 sink: EpisodeSink) -> None:  # fmt: skip
        self.agents, n = list(agents), len(agents)
        if n == 0 or env.num_envs % n:
            raise ValueError(f"{env.num_envs} slots are not whole games of {n} agents {agents}")
        super().__init__(env, count, env.num_envs // n, sink)

    def _value(self, batch: Any, u: int) -> dict[str, Any]:
        """Game ``u``'s value of a batched value, by agent."""
        n = len(self.agents)
        return {a: _row(batch, u * n + i) for i, a in enumerate(self.agents)}

    def step(self, actions: Any) -> Any:
        obs, rewards, terminations, truncations, info = self.env.step(actions)
        n = len(self.agents)
        for g, track in enumerate(self.tracks):
            slots = slice(g * n, (g + 1) * n)
            terminated, truncated = np.asarray(terminations[slots]), np.asarray(truncations[slots])
            if terminated.any() != terminated.all() or truncated.any() != truncated.all():
                raise ValueError(f"game {g}: its agents ended on different steps or in different "
                                 "ways; joint data needs every agent every step")  # fmt: skip
            ended = bool(terminated[0] or truncated[0])
            last = self._value(info["final_obs"] if ended else obs, g)
            track.step(self._value(actions, g), last, self._value(rewards, g),
                       bool(terminated[0]), bool(truncated[0]))  # fmt: skip
            if ended:
                track.start(self._value(obs, g), None)  # SAME_STEP: the new episode's first
        return obs, rewards, terminations, truncations, info


def _stack_rewards(rewards: list[Any]) -> Any:
    """An episode's rewards as float64: one array, or of joint data ``{agent: array}``."""
    if rewards and isinstance(rewards[0], dict):
        return {k: np.asarray([r[k] for r in rewards], dtype=np.float64) for k in rewards[0]}
    return np.asarray(rewards, dtype=np.float64)


def _row(batch: Any, i: int) -> Any:
    """Sub-env ``i``'s value of a batched (array, dict or tuple) value."""
    if isinstance(batch, dict):
        return {k: _row(v, i) for k, v in batch.items()}
    if isinstance(batch, tuple):
        return tuple(_row(v, i) for v in batch)
    return batch[i]
