"""The suite's own reader: whole datasets in memory, episode views and a transition sampler.

The file is read once into flat arrays (observations of all episodes one after another, each
episode with its ``T + 1`` rows); an episode is a view into them, and transitions pair row
``t`` with row ``t + 1`` of the *same* episode. So a transition never crosses an episode
boundary, and a truncated episode's last transition keeps its real next observation.

Text data (observations and commands as strings) is held in NumPy object arrays of ``str``;
joint multi-agent data as a dict per agent of observations, actions and rewards, each agent's
arrays indexed like a single agent's, and the team's ending flags as plain arrays.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlbench_suite.datasets.storage import (
    DatasetFileError,
    content_hash,
    episode_return,
    read_episodes,
)

TRANSITION_KEYS = ("observations", "actions", "rewards", "next_observations", "terminations",
                   "truncations")  # fmt: skip


@dataclass(frozen=True)
class EpisodeView:
    """One episode of an :class:`OfflineDataset` (views into its arrays)."""

    index: int
    seed: int | None
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray

    def __len__(self) -> int:
        """The episode's steps (its observations have one row more)."""
        return len(self.terminations)

    @property
    def id(self) -> int:
        """The episode's index (Minari's ``EpisodeData.id``)."""
        return self.index

    @property
    def total_return(self) -> float:
        """The episode's return; of joint data, the mean over agents of each agent's return."""
        return episode_return(self.rewards)

    def copy(self) -> EpisodeView:
        """The episode with arrays of its own: writing into them leaves the dataset as it is."""
        return copy.deepcopy(self)


class OfflineDataset:
    """A dataset file read into memory: :meth:`episode`, :meth:`transitions`, :meth:`sample`.

    With ``content_sha256`` (the card's), data that does not match it is refused. Minari's
    names work too: ``dataset[i]``, iteration, ``total_episodes``, ``total_steps``,
    ``episode_indices``, :meth:`iterate_episodes`, :meth:`sample_episodes`, :meth:`set_seed`.
    Episodes are views into the dataset's arrays: writing into one changes the dataset (what
    :meth:`sample` draws too); :meth:`EpisodeView.copy` one to change it.

    Observations and actions are arrays (Box, Discrete, MultiDiscrete, MultiBinary spaces),
    object arrays of ``str`` (Text spaces) or dicts of those (joint multi-agent data, one key
    per agent: the observations, actions and rewards are such dicts; the ending flags are the
    team's, plain arrays).
    """

    def __init__(self, path: Path, dataset_id: str | None = None,
                 content_sha256: str | None = None) -> None:  # fmt: skip
        self.path = Path(path)
        self.id = dataset_id
        episodes = list(read_episodes(self.path))
        if not episodes:
            raise DatasetFileError(f"{self.path}: holds no episodes")
        if content_sha256 is not None and content_hash(episodes) != content_sha256:
            raise DatasetFileError(
                f"{self.path}: the data does not match the card's content hash {content_sha256} "
                f"(the file is corrupt); `rlbench datasets download {self.id or 'ID'} --build` "
                "replaces it"
            )
        lengths = np.array([len(e) for e in episodes], dtype=np.int64)
        self.lengths = lengths
        self.seeds = [e.seed for e in episodes]
        self.step_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        self.obs_starts = self.step_starts + np.arange(len(episodes))
        self.observations = _concat([e.observations for e in episodes])
        self.actions = _concat([e.actions for e in episodes])
        self.rewards = _concat([e.rewards for e in episodes])
        self.terminations = _as_bool(_concat([e.terminations for e in episodes]))
        self.truncations = _as_bool(_concat([e.truncations for e in episodes]))
        self.joint = isinstance(self.rewards, dict)
        # the observation row of every step, and of its next observation
        episode_of_step = np.repeat(np.arange(len(episodes)), lengths)
        self.obs_index = np.arange(int(lengths.sum())) + episode_of_step
        self._rng = np.random.default_rng()

    @property
    def num_episodes(self) -> int:
        return len(self.lengths)

    @property
    def num_steps(self) -> int:
        return int(self.lengths.sum())

    total_episodes = num_episodes
    total_steps = num_steps

    @property
    def episode_indices(self) -> np.ndarray:
        """Every episode's index (Minari's attribute)."""
        return np.arange(self.num_episodes)

    def __len__(self) -> int:
        return self.num_episodes

    def __getitem__(self, index: int) -> EpisodeView:
        return self.episode(index)

    def __iter__(self) -> Iterator[EpisodeView]:
        return self.iterate_episodes()

    def iterate_episodes(self, episode_indices: Iterable[int] | None = None
                         ) -> Iterator[EpisodeView]:  # fmt: skip
        """The episodes ``episode_indices`` (all when None), in that order."""
        if episode_indices is None:
            episode_indices = range(self.num_episodes)
        elif not isinstance(episode_indices, Iterable) or isinstance(episode_indices, str):
            raise TypeError(f"episode_indices takes episode indices (integers from 0 to "
                            f"{self.num_episodes - 1}) or None for all, got {episode_indices!r}")
        return (self.episode(i) for i in episode_indices)

    def sample_episodes(self, n_episodes: int) -> list[EpisodeView]:
        """``n_episodes`` distinct episodes drawn uniformly (the sampler's random stream: see
        :meth:`seed`), as Minari's method of the same name."""
        if not _is_integer(n_episodes) or not 1 <= n_episodes <= self.num_episodes:
            error = ValueError if _is_integer(n_episodes) else TypeError
            raise error(f"n_episodes must be an integer from 1 to {self.num_episodes} (the "
                        f"episodes held), got {n_episodes!r}")  # fmt: skip
        chosen = self._rng.choice(self.num_episodes, size=int(n_episodes), replace=False)
        return [self.episode(int(i)) for i in chosen]

    def __repr__(self) -> str:
        name = self.id if self.id is not None else str(self.path)
        return f"OfflineDataset({name!r}, episodes={self.num_episodes}, steps={self.num_steps})"

    def episode(self, index: int) -> EpisodeView:
        """Episode ``index`` (negative indices count from the end)."""
        if not _is_integer(index):
            raise TypeError(f"an episode index is an integer, not {index!r}")
        try:
            index = range(self.num_episodes)[index]
        except IndexError:
            raise IndexError(f"episode {index}: {self.id or self.path} has {self.num_episodes} "
                             f"episodes (0 to {self.num_episodes - 1}, or -1 to "
                             f"-{self.num_episodes} from the end)") from None  # fmt: skip
        s, o, n = self.step_starts[index], self.obs_starts[index], self.lengths[index]
        steps, rows = slice(s, s + n), slice(o, o + n + 1)
        parts = ((self.observations, rows), (self.actions, steps), (self.rewards, steps),
                 (self.terminations, steps), (self.truncations, steps))  # fmt: skip
        return EpisodeView(index, self.seeds[index], *(_take(tree, part) for tree, part in parts))

    def episodes(self) -> list[EpisodeView]:
        return [self.episode(i) for i in range(self.num_episodes)]

    def episode_returns(self) -> np.ndarray:
        """Every episode's return, in order; of joint data the mean over agents of each agent's
        return (``storage.episode_return``'s rule)."""
        if self.joint:
            return np.mean([self._sums(r) for r in self.rewards.values()], axis=0)
        return self._sums(self.rewards)

    def _sums(self, rewards: np.ndarray) -> np.ndarray:
        """Each episode's sum of ``rewards`` (0 for an episode of no steps)."""
        sums = np.zeros(self.num_episodes)
        stepped = self.lengths > 0  # reduceat would give a step's reward for an empty one
        if stepped.any():
            sums[stepped] = np.add.reduceat(rewards.astype(np.float64),
                                            self.step_starts[stepped])  # fmt: skip
        return sums

    def transitions(self, indices: Any = None) -> dict[str, np.ndarray]:
        """Transitions ``indices`` (all when None; integers, or a boolean mask over every
        transition): ``observations, actions, rewards, next_observations, terminations,
        truncations``."""
        steps = np.arange(self.num_steps) if indices is None else self._step_indices(indices)
        return self._gather(steps)

    def _gather(self, steps: np.ndarray) -> dict[str, np.ndarray]:
        """The transitions of valid step indices ``steps`` (no check: the sampler's own)."""
        rows = self.obs_index[steps]
        return {
            "observations": _take(self.observations, rows),
            "actions": _take(self.actions, steps),
            "rewards": _take(self.rewards, steps),
            "next_observations": _take(self.observations, rows + 1),
            "terminations": _take(self.terminations, steps),
            "truncations": _take(self.truncations, steps),
        }

    def _step_indices(self, indices: Any) -> np.ndarray:
        """``indices`` as an integer array of transitions, or an error that says what is taken."""
        steps = np.asarray(indices)
        taken = (f"transition indices are integers from 0 to {self.num_steps - 1} (or -1 to "
                 f"-{self.num_steps} from the end; {self.id or self.path} holds {self.num_steps})")
        if steps.dtype == bool and steps.shape == (self.num_steps,):  # a mask of transitions
            return np.flatnonzero(steps)
        if steps.dtype.kind not in "iu" and steps.size:
            raise TypeError(f"{taken}, got {indices!r}")
        steps = steps.astype(np.int64, copy=False)
        if steps.size and (steps.min() < -self.num_steps or steps.max() >= self.num_steps):
            bad = steps[(steps < -self.num_steps) | (steps >= self.num_steps)][0]
            raise IndexError(f"transition {bad}: {taken}")
        return steps

    def seed(self, seed: int | None) -> None:
        """Seed the random stream of :meth:`sample` and :meth:`sample_episodes`: None (fresh
        entropy), a non-negative integer or a ``numpy.random.SeedSequence``."""
        if not (seed is None or isinstance(seed, np.random.SeedSequence)
                or (_is_integer(seed) and seed >= 0)):  # fmt: skip
            raise (ValueError if _is_integer(seed) else TypeError)(
                f"seed takes None, a non-negative integer or a SeedSequence, got {seed!r}")
        self._rng = np.random.default_rng(seed)

    set_seed = seed  # Minari's name

    def sample(self, batch_size: int, torch: bool = False, device: Any = None) -> dict[str, Any]:
        """``batch_size`` transitions drawn uniformly (with replacement): ``obs, action,
        reward, next_obs, terminated`` (and ``truncated``); torch tensors when ``torch``."""
        if not _is_integer(batch_size):
            raise TypeError(f"batch_size must be a positive integer, got {batch_size!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not isinstance(torch, bool | np.bool_):
            raise TypeError(f"torch takes True (tensors) or False (arrays), got {torch!r}")
        steps = self._rng.integers(0, self.num_steps, size=batch_size)
        t = self._gather(steps)  # in range by construction: not checked again
        batch = {"obs": t["observations"], "action": t["actions"], "reward": t["rewards"],
                 "next_obs": t["next_observations"], "terminated": t["terminations"],
                 "truncated": t["truncations"]}  # fmt: skip
        return to_torch(batch, device) if torch else batch

    def get_dataset(self) -> dict[str, np.ndarray]:
        """D4RL's dict: ``observations, actions, rewards, terminals, timeouts`` (one row per
        step) and ``next_observations``."""
        t = self.transitions()
        return {"observations": t["observations"], "actions": t["actions"],
                "rewards": t["rewards"], "next_observations": t["next_observations"],
                "terminals": t["terminations"], "timeouts": t["truncations"]}  # fmt: skip


def to_torch(batch: dict[str, np.ndarray], device: Any = None) -> dict[str, Any]:
    """The arrays of ``batch`` as torch tensors (floats as float32, flags as bool; a dict of
    arrays, joint data's, as a dict of tensors). Text (strings) has no tensor form: refused."""
    import torch

    out: dict[str, Any] = {}
    for key, value in batch.items():
        if isinstance(value, dict):
            out[key] = to_torch(value, device)
            continue
        array = np.asarray(value)
        if array.dtype.kind == "O":
            raise TypeError(f"{key!r} holds strings (text data), which have no tensor form; "
                            "sample without torch=True and encode the text first")  # fmt: skip
        if array.dtype.kind == "f":
            array = array.astype(np.float32, copy=False)
        try:
            out[key] = torch.as_tensor(array, device=device)
        except (AssertionError, RuntimeError, TypeError) as exc:  # torch's, for the device
            raise ValueError(f"device {device!r}: {exc}") from None
    return out


def _concat(values: list[Any]) -> Any:
    """One array of per-episode ``values``: arrays concatenated, lists of ``str`` as an object
    array, dicts (joint data) key by key."""
    if isinstance(values[0], dict):
        return {key: _concat([v[key] for v in values]) for key in values[0]}
    if isinstance(values[0], np.ndarray):
        return np.concatenate(values)
    flat = [item for value in values for item in value]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out


def _take(tree: Any, index: Any) -> Any:
    """``tree[index]`` of an array, or of every array of a dict (joint data)."""
    if isinstance(tree, dict):
        return {key: value[index] for key, value in tree.items()}
    return tree[index]


def _is_integer(value: Any) -> bool:
    """Whether ``value`` is an integer (Python's or NumPy's; not a bool)."""
    return not isinstance(value, bool) and isinstance(value, int | np.integer)


def _as_bool(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {key: np.asarray(value, dtype=bool) for key, value in tree.items()}
    return np.asarray(tree, dtype=bool)
