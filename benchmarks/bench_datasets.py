"""Offline datasets beside Minari and a bare HTTP client: building, sampling, downloading.

``dataset_build``: building each CartPole dataset card from source (its policies, seeds and
epsilon; episodes of 10 to 500 steps), env steps included, as each library's user does it:
``rlbench_suite.datasets.builder.build`` (rollouts, HDF5 file, metadata, file and content
hashes) against a loop over Minari's ``DataCollector`` wrapping the same env, acting with the
same policy objects, then ``create_dataset`` (HDF5). The unit is the step (both variants check
they played the card's steps); each variant's detail has its bytes per step (all files).

``dataset_sample``: minibatches of 256 transitions: :meth:`OfflineDataset.sample` against the
Minari path (``sample_episodes(256)``, then one transition from each sampled episode), on
synthetic CartPole-shaped episodes of 10-200 steps. The unit is the transition.

``dataset_download``: a 100 MB dataset file (20 MB with ``--quick``) served on 127.0.0.1 by
``rlbench datasets serve`` (its own process), fetched by ``remotes.download`` (the download
path of ``rlbench datasets download``: ``.part`` file, SHA-256 check, move into the cache)
against a bare ``urllib`` GET written to a file and hashed; and a resumed download: a
download in a subprocess is killed half-way, then resumed, its detail counting the bytes the
server sent against the bytes that were missing (an in-process server of the same handler,
which counts them). Wall time (the server works in another process); unit MB (10^6 bytes).
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import hashlib
import io
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import Case, Comparison, Settings, Timed, Variant, benchmark

BATCH = 256
REPO = Path(__file__).resolve().parents[1]
MB = 10**6


# -- building ---------------------------------------------------------------------------------


def _card(kind: str) -> Any:
    from rlbench_suite.core.dataset_cards import load_dataset_card

    return load_dataset_card(REPO / "datasets" / "CartPole" / f"{kind}.toml")


class _Build:
    """Builds the card once per call (ignoring ``n``); returns the steps played."""

    def __init__(self, kind: str, minari: bool) -> None:
        self.card = _card(kind)
        self.minari = minari
        self.folder = Path(tempfile.mkdtemp(prefix="bench-build-"))
        self.calls = 0
        self.bytes_per_step = 0.0

    def __call__(self, n: int) -> int:
        self.calls += 1
        steps, size = self._minari() if self.minari else self._ours()
        if steps != self.card.steps:
            raise RuntimeError(f"{self.card.id}: played {steps} steps, the card has "
                               f"{self.card.steps}")  # fmt: skip
        self.bytes_per_step = size / steps
        return steps

    def _ours(self) -> tuple[int, int]:
        from rlbench_suite.datasets.builder import build

        out = build(self.card, self.folder / f"ours-{self.calls}")
        shutil.rmtree(out.folder)
        return out.steps, sum(f.size for f in out.files)

    def _minari(self) -> tuple[int, int]:
        import gymnasium as gym
        import minari
        from minari import DataCollector

        from rlbench_suite.core.seeds import policy_seed
        from rlbench_suite.policies import make_policy

        os.environ["MINARI_DATASETS_PATH"] = str(self.folder)
        env = DataCollector(gym.make(self.card.env_id), data_format="hdf5")
        seed, steps = self.card.build.seed, 0
        for component in self.card.source.policies:
            policy = make_policy(component.policy, env, deterministic=component.deterministic)
            space = copy.deepcopy(env.action_space)
            for _ in range(component.episodes):
                obs, info = env.reset(seed=seed)
                policy.reset(policy_seed(seed))
                stream = np.random.default_rng(np.random.SeedSequence([seed, 0xE951]))
                if component.epsilon > 0:
                    space.seed(int(stream.integers(2**31)))
                while True:
                    action = policy.act(obs, info)
                    if component.epsilon > 0 and stream.random() < component.epsilon:
                        action = space.sample()
                    obs, _, terminated, truncated, info = env.step(action)
                    steps += 1
                    if terminated or truncated:
                        break
                seed += 1
        dataset_id = f"bench/build-{self.calls}-v0"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dataset = env.create_dataset(dataset_id, algorithm_name="bench")
        folder = Path(dataset.spec.data_path).parent
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        env.close()
        with contextlib.redirect_stdout(io.StringIO()):  # it prints "Dataset ... deleted!"
            minari.delete_dataset(dataset_id)
        return steps, size

    def stats(self) -> dict[str, Any]:
        return {"bytes_per_step": round(self.bytes_per_step, 2), "steps": self.card.steps,
                "episodes": self.card.source.episodes}  # fmt: skip

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


@benchmark("dataset_build")
def dataset_build(settings: Settings) -> list[Case]:
    """Building each CartPole card from source, env steps included: our builder against
    Minari's DataCollector (same policies, seeds and epsilon)."""
    kinds = ("random", "medium") if settings.quick else ("random", "medium", "expert",
                                                         "medium-expert")  # fmt: skip
    ours, theirs = "rlbench build", "minari DataCollector"
    return [Case(
        env=f"rlbench/CartPole-{kind}-v0",
        variants=[Variant(ours, lambda kind=kind: _Build(kind, minari=False)),
                  Variant(theirs, lambda kind=kind: _Build(kind, minari=True))],
        comparisons=[Comparison(ours, theirs, goal=1 / 20)],
        work_per_round=1, rounds=2 if settings.quick else 5,
    ) for kind in kinds]  # fmt: skip


# -- sampling ---------------------------------------------------------------------------------


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


def _sample_file(episodes_count: int) -> tuple[Path, str]:
    """A dataset of ``episodes_count`` episodes, written once by each library (Minari's in its
    data path)."""
    import gymnasium as gym
    import minari
    from minari.data_collector import EpisodeBuffer

    from rlbench_suite.datasets.storage import write_episodes

    folder = Path(tempfile.mkdtemp(prefix="bench-sample-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    episodes = _episodes(episodes_count, seed=1)
    write_episodes(folder / "ours.hdf5", episodes)
    os.environ["MINARI_DATASETS_PATH"] = str(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        minari.create_dataset_from_buffers(
            "bench/sample-v0",
            [EpisodeBuffer(id=i, observations=e.observations, actions=e.actions,
                           rewards=e.rewards, terminations=e.terminations,
                           truncations=e.truncations) for i, e in enumerate(episodes)],
            observation_space=gym.spaces.Box(-np.inf, np.inf, (4,), np.float32),
            action_space=gym.spaces.Discrete(2), data_format="hdf5", jpeg_encoding=False,
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


# -- downloading ------------------------------------------------------------------------------


@cache
def _mirror(megabytes: int) -> tuple[Path, Any]:
    """A served folder holding one ``megabytes`` MB dataset file; ``(folder, its card)`` (the
    CartPole random card under an unused version, with that one file)."""
    from rlbench_suite.core.dataset_cards import DATA_FILE, DataFile

    folder = Path(tempfile.mkdtemp(prefix="bench-mirror-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    card = _card("random").model_copy(update={"id": "rlbench/CartPole-random-v999"})
    path = folder / card.id / DATA_FILE
    path.parent.mkdir(parents=True)
    data = np.random.default_rng(0).bytes(megabytes * MB)
    path.write_bytes(data)
    entry = DataFile(path=DATA_FILE, sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    return folder, card.model_copy(update={"files": [entry]})


def _serve(folder: Path) -> tuple[subprocess.Popen, str]:
    """``rlbench datasets serve folder`` on a free port, once it answers; (process, URL)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "rlbench_suite.cli", "datasets", "serve", str(folder),
         "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError("rlbench datasets serve did not start within 60 s")


class _Download:
    """Fetches the served file into a fresh folder per call; times the fetch alone."""

    def __init__(self, megabytes: int, bare: bool) -> None:
        self.folder, self.card = _mirror(megabytes)
        self.server, self.url = _serve(self.folder)
        self.bare = bare
        self.cache = Path(tempfile.mkdtemp(prefix="bench-download-"))

    def __call__(self, n: int) -> Timed:
        from rlbench_suite.datasets.remotes import download

        shutil.rmtree(self.cache, ignore_errors=True)
        self.cache.mkdir()
        file = self.card.files[0]
        start = time.perf_counter()
        if self.bare:
            digest = hashlib.sha256()
            url = f"{self.url}/{self.card.id}/{file.path}"
            with urllib.request.urlopen(url) as src, open(self.cache / "file", "wb") as dst:
                while piece := src.read(1 << 20):
                    dst.write(piece)
                    digest.update(piece)
            if digest.hexdigest() != file.sha256:
                raise RuntimeError("the bare download's SHA-256 differs")
        else:
            download(self.card, self.cache, [self.url])
        return Timed(file.size // MB, time.perf_counter() - start)

    def stats(self) -> dict[str, Any]:
        return {"file_mb": self.card.files[0].size / MB}

    def close(self) -> None:
        self.server.kill()
        self.server.wait()
        shutil.rmtree(self.cache, ignore_errors=True)


_KILLED_DOWNLOAD = """
import sys
from pathlib import Path
from rlbench_suite.core.dataset_cards import DatasetCard
from rlbench_suite.datasets import remotes
card = DatasetCard.model_validate_json(Path(sys.argv[1]).read_text())
remotes.download(card, Path(sys.argv[2]), [sys.argv[3]])
"""


class _Resume:
    """A download killed half-way, then resumed; times the resume and counts the bytes the
    server sent for it against the bytes that were missing."""

    def __init__(self, megabytes: int) -> None:
        from rlbench_suite.datasets.server import DatasetServer

        self.folder, self.card = _mirror(megabytes)
        self.server = DatasetServer(self.folder).start()
        self.work = Path(tempfile.mkdtemp(prefix="bench-resume-"))
        (self.work / "card.json").write_text(self.card.model_dump_json())
        self.missing = self.sent = 0

    def _kill_half_way(self, cache: Path) -> int:
        from rlbench_suite.datasets.cache import dataset_folder

        size = self.card.files[0].size
        part = dataset_folder(self.card, cache) / (self.card.files[0].path + ".part")
        card = str(self.work / "card.json")
        proc = subprocess.Popen([sys.executable, "-c", _KILLED_DOWNLOAD, card, str(cache),
                                 self.server.url], stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            while not (part.exists() and part.stat().st_size >= size // 2):
                if proc.poll() is not None:
                    raise RuntimeError(f"the download to kill ended before half-way: "
                                       f"{proc.communicate()[1][-500:]}")  # fmt: skip
                time.sleep(0.001)
        finally:
            proc.kill()
            proc.wait()
        return part.stat().st_size

    def _settled(self) -> int:
        sent = -1
        while sent != self.server.bytes_sent:  # the killed request's last piece is counted
            sent = self.server.bytes_sent
            time.sleep(0.2)
        return sent

    def __call__(self, n: int) -> Timed:
        from rlbench_suite.datasets.remotes import download

        cache = self.work / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        kept = self._kill_half_way(cache)
        before = self._settled()
        start = time.perf_counter()
        download(self.card, cache, [self.server.url])
        seconds = time.perf_counter() - start
        self.missing = self.card.files[0].size - kept
        self.sent = self._settled() - before
        units = max(1, round(self.missing / MB))  # whole MB; the time scaled to match
        return Timed(units, seconds * units / (self.missing / MB))

    def stats(self) -> dict[str, Any]:
        return {"missing_bytes": self.missing, "sent_bytes": self.sent,
                "resent_bytes": self.sent - self.missing}  # fmt: skip

    def close(self) -> None:
        self.server.stop()
        shutil.rmtree(self.work, ignore_errors=True)


@benchmark("dataset_download")
def dataset_download(settings: Settings) -> list[Case]:
    """A served 100 MB dataset file: our download (resumable, verified) against a bare GET
    with SHA-256, and a resume after a kill half-way."""
    size = 20 if settings.quick else 100
    ours, bare, resume = "rlbench download", "bare urllib GET + SHA-256", "rlbench resume"
    return [Case(
        env=f"{size} MB over loopback",
        variants=[Variant(ours, lambda: _Download(size, bare=False)),
                  Variant(bare, lambda: _Download(size, bare=True)),
                  Variant(resume, lambda: _Resume(size))],
        comparisons=[Comparison(ours, bare), Comparison(resume, ours)],
        work_per_round=1, rounds=2 if settings.quick else 7, unit="MB", clock="wall",
    )]  # fmt: skip
