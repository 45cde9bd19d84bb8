"""The local dataset cache: where a dataset lives, whether it is complete, verify and delete.

A dataset ``ns/Name-vN`` lives in ``<cache>/ns/Name-vN/`` with the files its card lists
(``data/main_data.hdf5``, ``data/metadata.json``); ``<cache>`` is ``RLBENCH_DATA_DIR/datasets``
(else the platform's user data dir), which is also a Minari data path.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlbench_suite.core.dataset_cards import DATA_FILE, DataFile, DatasetCard
from rlbench_suite.datasets.storage import (
    REPAIR,
    DatasetFileError,
    content_hash,
    read_episodes,
)
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


VERIFIED_FILE = "verified.json"
"""A dataset folder's record of a local verification: a build whose content hash matched the
card's but whose file bytes differ (another h5py or HDF5): the content hash and the local
files' sizes and SHA-256, accepted in place of the card's file hashes."""


def lock_path(folder: Path) -> Path:
    """Where the file lock of the dataset folder ``folder`` lives: a sibling ``.<Name-vN>.lock``."""
    folder = Path(folder)
    return folder.parent / f".{folder.name}.lock"


def folder_lock(folder: Path) -> Any:
    """The file lock of the dataset folder ``folder`` (:func:`lock_path`)."""
    from filelock import FileLock

    Path(folder).parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(lock_path(folder)))


def write_verified(folder: Path, content_sha256: str, files: list[DataFile]) -> None:
    """Record that ``folder``'s ``files`` hold the content ``content_sha256`` (checked)."""
    record = {"content_sha256": content_sha256,
              "files": [f.model_dump() for f in files]}  # fmt: skip
    (Path(folder) / VERIFIED_FILE).write_text(json.dumps(record, indent=1) + "\n")


def expected_files(card: DatasetCard, root: Path | None = None) -> list[DataFile]:
    """The files ``card``'s cached copy must hold: the card's, or those of a local
    verification (:data:`VERIFIED_FILE`) of the card's content hash."""
    record = dataset_folder(card, root) / VERIFIED_FILE
    if card.content_sha256 is not None and record.is_file():
        try:
            data = json.loads(record.read_text())
            if data.get("content_sha256") == card.content_sha256:
                files = [DataFile.model_validate(f) for f in data["files"]]
                if sorted(f.path for f in files) == sorted(f.path for f in card.files):
                    return files
        except (ValueError, KeyError, TypeError):
            pass
    return list(card.files)


def check_file(path: Path, size: int, sha256: str) -> str | None:
    """Why ``path`` is not the expected file (missing, a folder, unreadable, wrong size, wrong
    SHA-256), or None."""
    if path.is_dir():
        return "a folder, not the file (remove it)"
    if not path.is_file():
        return "missing"
    if not os.access(path, os.R_OK):
        return "not readable (permission denied)"
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
        for f in expected_files(card, root)
        if (why := check_file(folder / f.path, f.size, f.sha256)) is not None
    ]
    data = folder / DATA_FILE
    if content and [p.path for p in problems] == [data] and problems[0].message != "missing":
        why = adopt_same_content(card, root)  # the card's data in other bytes: ok, recorded
        if why is None:
            return []
        problems[0] = Problem(data, f"{problems[0].message}; {why}")
        return problems
    if content and not any(p.path == data for p in problems):
        try:
            actual = content_hash(read_episodes(data))
        except DatasetFileError as exc:
            why = _unreadable(exc, data)
            problems.append(Problem(data, why))
        else:
            if actual != card.content_sha256:
                problems.append(Problem(data, f"content hash mismatch: expected "
                                              f"{card.content_sha256}, got {actual}"))  # fmt: skip
    return problems


def adopt_same_content(card: DatasetCard, root: Path | None = None) -> str | None:
    """Accept ``card``'s cached copy whose data file is not the card's bytes but holds the
    card's data (a file written by an earlier version of the suite's writer, or by another
    h5py): every other file is the card's, byte for byte, and the episodes read back have the
    card's content hash. It is then recorded as a local verification (:data:`VERIFIED_FILE`),
    which later checks use in place of the card's file hashes, and None is returned; else why
    not (a missing, truncated, corrupt or changed file: nothing is recorded)."""
    folder = dataset_folder(card, root)
    if not card.built:
        return "the card records no build"
    for f in card.files:
        why = check_file(folder / f.path, f.size, f.sha256)
        if why is not None and (f.path != DATA_FILE or why == "missing"):
            return f"{f.path}: {why}"
    try:
        actual = content_hash(read_episodes(folder / DATA_FILE))
    except DatasetFileError as exc:
        return _unreadable(exc, folder / DATA_FILE)
    if actual != card.content_sha256:
        return (f"its episodes are not the card's: content hash {actual}, expected "
                f"{card.content_sha256}")  # fmt: skip
    files = [DataFile(path=f.path, sha256=file_sha256(folder / f.path),
                      size=(folder / f.path).stat().st_size) for f in card.files]  # fmt: skip
    with folder_lock(folder):
        write_verified(folder, actual, files)
    return None


def _unreadable(exc: DatasetFileError, path: Path) -> str:
    """Why the reader refused ``path``, without its name and its advice to run verify (the
    caller is verify, or names the file itself)."""
    return str(exc).removeprefix(f"{path}: ").removesuffix(f"; {REPAIR}")


def is_cached(card: DatasetCard, root: Path | None = None) -> bool:
    """Whether every file of ``card`` is in the cache with its size (a quick check, no hash)."""
    folder = dataset_folder(card, root)
    return card.built and all(
        (folder / f.path).is_file() and (folder / f.path).stat().st_size == f.size
        for f in expected_files(card, root)
    )


def part_path(target: Path) -> Path:
    """Where a download of ``target`` keeps its bytes until they are verified (``X.part``)."""
    return target.with_name(target.name + ".part")


def is_partly_cached(card: DatasetCard, root: Path | None = None) -> bool:
    """Whether any file of ``card`` (whole or ``.part``) is in the cache."""
    folder = dataset_folder(card, root)
    return any((folder / f.path).exists() or part_path(folder / f.path).exists()
               for f in card.files)  # fmt: skip  (a folder in a file's place: verify names it)


def delete(card: DatasetCard, root: Path | None = None) -> bool:
    """Remove ``card``'s dataset from the cache (holding its lock, then removing the lock
    file); whether there was anything to remove. A lock file without a folder (a failed
    download's) is :func:`remove_stale_lock`'s."""
    folder = dataset_folder(card, root)
    if not folder.exists():
        return False
    folders = [folder.parent, folder, *(p for p in folder.rglob("*") if p.is_dir())]
    for place in folders:  # else rmtree would remove part of it, then fail
        if not os.access(place, os.W_OK | os.X_OK):
            raise PermissionError(f"cannot delete {card.id}: {place} is not writable (permission "
                                  "denied); nothing was removed")  # fmt: skip
    lock = folder_lock(folder)
    with lock:
        try:
            shutil.rmtree(folder)
        except OSError as exc:  # (an immutable file, even for root): said, never "deleted"
            left = sum(1 for p in folder.rglob("*") if p.is_file())
            raise PermissionError(f"cannot delete all of {card.id}: {exc}; {left} files are "
                                  f"left in {folder}") from None  # fmt: skip
    Path(lock.lock_file).unlink(missing_ok=True)
    return True


def remove_stale_lock(card: DatasetCard, root: Path | None = None) -> bool | None:
    """Remove the lock file of ``card``'s dataset when no process holds it (a download that
    failed leaves it); True if removed, False if there is none, None if a process holds it
    (a download going on: left alone)."""
    from filelock import Timeout

    folder = dataset_folder(card, root)
    if not lock_path(folder).exists():
        return False
    lock = folder_lock(folder)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    try:
        lock_path(folder).unlink(missing_ok=True)  # held: no download starts in between
    finally:
        lock.release()
    return True
