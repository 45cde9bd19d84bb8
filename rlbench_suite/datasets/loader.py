"""The suite's own reader: whole datasets in memory, episode views and a transition sampler.

The file is read once into flat arrays (observations of all episodes one after another, each
episode with its ``T + 1`` rows); an episode is a view into them, and transitions pair row
``t`` with row ``t + 1`` of the *same* episode. So a transition never crosses an episode
boundary, and a truncated episode's last transition keeps its real next observation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlbench_suite.datasets.storage import DatasetFileError, content_hash, read_episodes

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
        return len(self.rewards)

    @property
    def total_return(self) -> float:
        return float(self.rewards.sum(dtype=np.float64))


class OfflineDataset:
    """A dataset file read into memory: :meth:`episode`, :meth:`transitions`, :meth:`sample`.

    With ``content_sha256`` (the card's), data that does not match it is refused.

    Observations and actions must be arrays (Box, Discrete, MultiDiscrete, MultiBinary
    spaces); datasets of text or dict spaces are read with :func:`read_episodes`.
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
                "(the file is corrupt); run `rlbench datasets verify` and download or build it "
                "again"
            )
        for episode in episodes:
            if not isinstance(episode.observations, np.ndarray) or not isinstance(
                episode.actions, np.ndarray
            ):
                raise TypeError(
                    f"{self.path}: observations and actions must be arrays for the "
                    "transition sampler; use storage.read_episodes for other spaces"
                )
        lengths = np.array([len(e) for e in episodes], dtype=np.int64)
        self.lengths = lengths
        self.seeds = [e.seed for e in episodes]
        self.step_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        self.obs_starts = self.step_starts + np.arange(len(episodes))
        self.observations = np.concatenate([e.observations for e in episodes])
        self.actions = np.concatenate([e.actions for e in episodes])
        self.rewards = np.concatenate([e.rewards for e in episodes])
        self.terminations = np.concatenate([e.terminations for e in episodes]).astype(bool)
        self.truncations = np.concatenate([e.truncations for e in episodes]).astype(bool)
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

    def __len__(self) -> int:
        return self.num_episodes

    def episode(self, index: int) -> EpisodeView:
        """Episode ``index`` (negative indices count from the end)."""
        index = range(self.num_episodes)[index]
        s, o, n = self.step_starts[index], self.obs_starts[index], self.lengths[index]
        return EpisodeView(index, self.seeds[index], self.observations[o:o + n + 1],
                           self.actions[s:s + n], self.rewards[s:s + n],
                           self.terminations[s:s + n], self.truncations[s:s + n])  # fmt: skip

    def episodes(self) -> list[EpisodeView]:
        return [self.episode(i) for i in range(self.num_episodes)]

    def episode_returns(self) -> np.ndarray:
        """Every episode's return, in order."""
        return np.add.reduceat(self.rewards.astype(np.float64), self.step_starts)

    def transitions(self, indices: Any = None) -> dict[str, np.ndarray]:
        """Transitions ``indices`` (all when None): ``observations, actions, rewards,
        next_observations, terminations, truncations``."""
        steps = np.arange(self.num_steps) if indices is None else np.asarray(indices)
        rows = self.obs_index[steps]
        return {
            "observations": self.observations[rows],
            "actions": self.actions[steps],
            "rewards": self.rewards[steps],
            "next_observations": self.observations[rows + 1],
            "terminations": self.terminations[steps],
            "truncations": self.truncations[steps],
        }

    def seed(self, seed: int | None) -> None:
        """Seed the sampler's random stream."""
        self._rng = np.random.default_rng(seed)

    def sample(self, batch_size: int, torch: bool = False, device: Any = None) -> dict[str, Any]:
        """``batch_size`` transitions drawn uniformly (with replacement): ``obs, action,
        reward, next_obs, terminated`` (and ``truncated``); torch tensors when ``torch``."""
        steps = self._rng.integers(0, self.num_steps, size=batch_size)
        t = self.transitions(steps)
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
    """The arrays of ``batch`` as torch tensors (floats as float32, flags as bool)."""
    import torch

    out: dict[str, Any] = {}
    for key, value in batch.items():
        array = np.asarray(value)
        if array.dtype.kind == "f":
            array = array.astype(np.float32, copy=False)
        out[key] = torch.as_tensor(array, device=device)
    return out

