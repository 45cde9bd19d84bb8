"""The local dataset cache: where a dataset lives, whether it is complete, verify and delete.

A dataset ``ns/Name-vN`` lives in ``<cache>/ns/Name-vN/`` with the files its card lists
(``data/main_data.hdf5``, ``data/metadata.json``); ``<cache>`` is ``RLBENCH_DATA_DIR/datasets``
(else the platform's user data dir), which is also a Minari data path.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from rlbench_suite.core.dataset_cards import DATA_FILE, DatasetCard
from rlbench_suite.datasets.storage import DatasetFileError, content_hash, read_episodes
from rlbench_suite.paths import datasets_dir
from rlbench_suite.policies.core import file_sha256


def cache_root(root: Path | None = None) -> Path:
    """The dataset cache folder (``root`` if given)."""
    return Path(root) if root is not None else datasets_dir()


def dataset_folder(card: DatasetCard, root: Path | None = None) -> Path:
    """The folder of ``card``'s dataset in the cache."""
    return cache_root(root).joinpath(*card.id.split("/"))


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a cached dataset: the file and what is wrong."""

    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def check_file(path: Path, size: int, sha256: str) -> str | None:
    """Why ``path`` is not the expected file (missing, wrong size, wrong SHA-256), or None."""
    if not path.is_file():
        return "missing"
    actual_size = path.stat().st_size
    if actual_size != size:
        return f"size {actual_size} bytes, expected {size} (truncated or replaced)"
    actual = file_sha256(path)
    if actual != sha256:
        return f"SHA-256 mismatch: expected {sha256}, got {actual}"
    return None


def verify(card: DatasetCard, root: Path | None = None, content: bool = True) -> list[Problem]:
    """Re-hash ``card``'s cached files against the card; the problems found (empty: all good).

    With ``content`` the episodes are read back too and their content hash compared.
    """
    if not card.built:
        raise ValueError(f"{card.id}: the card records no build (no files or content hash); "
                         f"build it with `rlbench datasets build {card.id} --write`")  # fmt: skip
    folder = dataset_folder(card, root)
    problems = [
        Problem(folder / f.path, why)
        for f in card.files
        if (why := check_file(folder / f.path, f.size, f.sha256)) is not None
    ]
    data = folder / DATA_FILE
    if content and not any(p.path == data for p in problems):
        try:
            actual = content_hash(read_episodes(data))
        except DatasetFileError as exc:
            problems.append(Problem(data, str(exc).removeprefix(f"{data}: ")))
        else:
            if actual != card.content_sha256:
                problems.append(Problem(data, f"content hash mismatch: expected "
                                              f"{card.content_sha256}, got {actual}"))  # fmt: skip
    return problems


def is_cached(card: DatasetCard, root: Path | None = None) -> bool:
    """Whether every file of ``card`` is in the cache with its size (a quick check, no hash)."""
    folder = dataset_folder(card, root)
    return card.built and all(
        (folder / f.path).is_file() and (folder / f.path).stat().st_size == f.size
        for f in card.files
    )


def delete(card: DatasetCard, root: Path | None = None) -> bool:
    """Remove ``card``'s dataset from the cache; whether there was anything to remove."""
    folder = dataset_folder(card, root)
    if not folder.exists():
        return False
    shutil.rmtree(folder)
    return True
