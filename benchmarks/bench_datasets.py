"""Offline datasets beside Minari, on the same synthetic CartPole-shaped data.

``dataset_write``: writing episodes (obs 4 x float32, a discrete action, episode lengths
10-200) to an HDF5 file: the suite's :func:`~rlbench_suite.datasets.storage.write_episodes`
(with the content hash) against Minari's ``create_dataset_from_buffers(data_format="hdf5")``.
The unit is the step; each variant's detail records its bytes per step. (The issue's
DataCollector peer imports jax, which ``minari[create]`` would install; this is the HDF5 writer
behind it, without the env steps.)

``dataset_sample``: minibatches of 256 transitions: :meth:`OfflineDataset.sample` against the
Minari path (``sample_episodes(256)``, then one transition from each sampled episode). The
unit is the transition.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import Case, Comparison, Settings, Variant, benchmark

BATCH = 256


def _episodes(count: int, seed: int = 0) -> list[Any]:
    from rlbench_suite.datasets.storage import Episode

    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(10, 201))
        out.append(Episode(rng.normal(size=(n + 1, 4)).astype(np.float32),
                           rng.integers(0, 2, n), np.ones(n),
                           np.arange(n) == n - 1, np.zeros(n, bool), seed=i))  # fmt: skip
    return out


def _spaces() -> tuple[Any, Any]:
    import gymnasium as gym

    return gym.spaces.Box(-np.inf, np.inf, (4,), np.float32), gym.spaces.Discrete(2)


class _Writer:
    """Writes whole episodes until ``n`` steps are done; records bytes per step."""

    def __init__(self, minari: bool) -> None:
        self.minari = minari
        self.folder = Path(tempfile.mkdtemp(prefix="bench-datasets-"))
        self.pool = _episodes(400)
        self.calls = 0
        self.bytes_per_step = 0.0

    def __call__(self, n: int) -> int:
        episodes, steps = [], 0
        for episode in self.pool[self.calls % 7:]:
            episodes.append(episode)
            steps += len(episode)
            if steps >= n:
                break
        self.calls += 1
        size = self._minari(episodes) if self.minari else self._ours(episodes)
        self.bytes_per_step = size / steps
        return steps

    def _ours(self, episodes: list[Any]) -> int:
        from rlbench_suite.datasets.storage import content_hash, write_episodes

        path = self.folder / f"ours-{self.calls}.hdf5"
        write_episodes(path, episodes)
        content_hash(episodes)
        size = path.stat().st_size
        path.unlink()
        return size

    def _minari(self, episodes: list[Any]) -> int:
        import warnings

        import minari
        from minari.data_collector import EpisodeBuffer

        os.environ["MINARI_DATASETS_PATH"] = str(self.folder)
        buffers = [EpisodeBuffer(id=i, seed=e.seed, observations=e.observations,
                                 actions=e.actions, rewards=e.rewards,
                                 terminations=e.terminations, truncations=e.truncations)
                   for i, e in enumerate(episodes)]  # fmt: skip
        observation_space, action_space = _spaces()
        dataset_id = f"bench/write-{self.calls}-v0"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            minari.create_dataset_from_buffers(
                dataset_id, buffers, observation_space=observation_space,
                action_space=action_space, data_format="hdf5", jpeg_encoding=False,
            )  # fmt: skip
        folder = self.folder / "bench" / f"write-{self.calls}-v0"
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        minari.delete_dataset(dataset_id)
        return size

    def stats(self) -> dict[str, Any]:
        return {"bytes_per_step": round(self.bytes_per_step, 1)}


def _sample_file(episodes_count: int) -> tuple[Path, str]:
    """A dataset of ``episodes_count`` episodes, written once by each library (Minari's in its
    data path)."""
    import warnings

    import minari
    from minari.data_collector import EpisodeBuffer

    from rlbench_suite.datasets.storage import write_episodes

    folder = Path(tempfile.mkdtemp(prefix="bench-sample-"))
    episodes = _episodes(episodes_count, seed=1)
    write_episodes(folder / "ours.hdf5", episodes)
    os.environ["MINARI_DATASETS_PATH"] = str(folder)
    observation_space, action_space = _spaces()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        minari.create_dataset_from_buffers(
            "bench/sample-v0",
            [EpisodeBuffer(id=i, observations=e.observations, actions=e.actions,
                           rewards=e.rewards, terminations=e.terminations,
                           truncations=e.truncations) for i, e in enumerate(episodes)],
            observation_space=observation_space, action_space=action_space,
            data_format="hdf5", jpeg_encoding=False,
        )  # fmt: skip
    return folder, "bench/sample-v0"


def _ours_sampler(folder: Path) -> Any:
    from rlbench_suite.datasets.loader import OfflineDataset

    dataset = OfflineDataset(folder / "ours.hdf5")
    dataset.seed(0)

    def run(n: int) -> int:
        batches = max(1, n // BATCH)
        for _ in range(batches):
            dataset.sample(BATCH)
        return batches * BATCH

    return run


def _minari_sampler(folder: Path, dataset_id: str) -> Any:
    import minari

    os.environ["MINARI_DATASETS_PATH"] = str(folder)
    dataset = minari.load_dataset(dataset_id)
    dataset.set_seed(0)
    rng = np.random.default_rng(0)

    def run(n: int) -> int:
        batches = max(1, n // BATCH)
        for _ in range(batches):
            obs, nxt, act, rew, term = [], [], [], [], []
            for episode in dataset.sample_episodes(BATCH):
                t = int(rng.integers(len(episode.rewards)))
                obs.append(episode.observations[t])
                nxt.append(episode.observations[t + 1])
                act.append(episode.actions[t])
                rew.append(episode.rewards[t])
                term.append(episode.terminations[t])
            np.stack(obs), np.stack(nxt), np.asarray(act), np.asarray(rew), np.asarray(term)
        return batches * BATCH

    return run


@benchmark("dataset_write")
def dataset_write(settings: Settings) -> list[Case]:
    """Writing CartPole-shaped episodes to HDF5: the suite's writer against Minari's."""
    return [Case(
        env="CartPole-shaped",
        variants=[Variant("rlbench write_episodes", lambda: _Writer(minari=False)),
                  Variant("minari create_dataset_from_buffers", lambda: _Writer(minari=True))],
        comparisons=[Comparison("rlbench write_episodes", "minari create_dataset_from_buffers",
                                goal=1 / 20)],
        work_per_round=20_000, rounds=5 if not settings.quick else 2,
    )]  # fmt: skip


@benchmark("dataset_sample")
def dataset_sample(settings: Settings) -> list[Case]:
    """Minibatches of 256 transitions: the suite's sampler against Minari's episode path."""
    folder, dataset_id = _sample_file(300 if settings.quick else 1000)
    return [Case(
        env="CartPole-shaped",
        variants=[Variant("rlbench sample", lambda: _ours_sampler(folder)),
                  Variant("minari sample_episodes", lambda: _minari_sampler(folder, dataset_id))],
        comparisons=[Comparison("rlbench sample", "minari sample_episodes", goal=1 / 5)],
        work_per_round=BATCH * 4, rounds=20 if not settings.quick else 3, unit="transitions",
    )]  # fmt: skip
