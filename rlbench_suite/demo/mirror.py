"""The demo's dataset round trip: fill a mirror folder, serve it over HTTP on 127.0.0.1, and
download the dataset from it into a fresh cache through the real download path.

The mirror folder is a cache (``<mirror>/<ns>/<Name-vN>/data/...``), filled from the user's
cache when the dataset is there and verified, else built from its card
(:func:`rlbench_suite.datasets.builder.build`, checked against the card's content hash). The
download (:func:`rlbench_suite.datasets.remotes.download`) checks every file's SHA-256 and
:func:`rlbench_suite.datasets.cache.verify` reads the episodes back.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rlbench_suite.core.dataset_cards import DataFile, DatasetCard
from rlbench_suite.datasets.builder import build
from rlbench_suite.datasets.cache import dataset_folder, expected_files, is_cached, verify
from rlbench_suite.datasets.remotes import ByteProgress, download
from rlbench_suite.datasets.server import DatasetServer


@dataclass(frozen=True)
class Filled:
    """How the mirror got the dataset, and the card whose file hashes it serves."""

    card: DatasetCard
    how: str
    note: str | None = None
    """Set when this machine's bytes differ from the card's (another h5py or HDF5)."""


@dataclass(frozen=True)
class Downloaded:
    """The dataset in the fresh cache: its folder, files, where it came from, bytes served."""

    folder: Path
    files: list[DataFile]
    url: str
    bytes_served: int


def _filled(card: DatasetCard, how: str, files: list[DataFile]) -> Filled:
    """``card`` as the mirror serves it: with ``files`` where they differ from the card's
    (same content hash, other bytes)."""
    if sorted(files, key=lambda f: f.path) == sorted(card.files, key=lambda f: f.path):
        return Filled(card, how)
    note = ("this machine writes other bytes for the same content (another h5py or HDF5; the "
            "content hash matches the card's): the mirror serves, and the download checks, "
            "this copy's SHA-256")  # fmt: skip
    return Filled(card.model_copy(update={"files": files}), how, note)


def fill_mirror(card: DatasetCard, mirror: Path, cache: Path | None = None,
                progress: Callable[[int, int], None] | None = None) -> Filled:  # fmt: skip
    """Put ``card``'s dataset in the mirror folder ``mirror``: copied from ``cache`` (default:
    the user's) when it is there and verified, else built from the card."""
    target = dataset_folder(card, mirror)
    if is_cached(card, cache) and not verify(card, cache, content=False):
        source = dataset_folder(card, cache)
        shutil.rmtree(target, ignore_errors=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, target)
        return _filled(card, f"copied from the cache ({source})", expected_files(card, cache))
    out = build(card, target, progress, expect_content=card.content_sha256)
    return _filled(card, f"built from its card ({out.episodes} episodes, {out.steps} steps)",
                   out.files)  # fmt: skip


def download_from_mirror(card: DatasetCard, mirror: Path, fresh: Path,
                         progress: ByteProgress | None = None) -> Downloaded:  # fmt: skip
    """Serve ``mirror`` on a free port of 127.0.0.1 and download ``card`` from it into the
    emptied cache folder ``fresh``; verified (every file's SHA-256 and the content hash)."""
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir(parents=True)
    server = DatasetServer(mirror, "127.0.0.1", 0).start()
    try:
        folder = download(card, fresh, [server.url], progress=progress)
    finally:
        server.stop()
    problems = verify(card, fresh)
    if problems:
        raise ValueError(f"{card.id}: the downloaded copy does not verify: "
                         + "; ".join(map(str, problems)))  # fmt: skip
    return Downloaded(folder, list(card.files), server.url, server.bytes_sent)


def keep_in_cache(card: DatasetCard, fresh: Path, cache: Path) -> Path | None:
    """Copy the verified download in ``fresh`` into the user's ``cache`` when it is not there
    yet (so the leaderboard site serves it and ``gym.make(<offline id>)`` reads it); its folder
    there, or None when the cache already held it. The copy lands whole or not at all."""
    if is_cached(card, cache):
        return None
    target = dataset_folder(card, cache)
    tmp = target.with_name(target.name + ".demo-tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(dataset_folder(card, fresh), tmp)
    shutil.rmtree(target, ignore_errors=True)  # an unverified leftover
    tmp.rename(target)
    return target
