"""Download and publish datasets through fsspec remotes: a folder, file://, http(s)://, s3://.

A remote is a base URL; dataset ``ns/Name-vN``'s file ``data/main_data.hdf5`` is at
``<remote>/ns/Name-vN/data/main_data.hdf5`` (the cache's own layout, so a cache folder served
with ``rlbench datasets serve`` is a remote). A download:

- holds a file lock per dataset, so two processes downloading it end with one correct copy;
- writes each file to ``<file>.part`` in :data:`CHUNK` pieces (each flushed, and reported to
  the progress callback) and resumes from its size; over HTTP one streaming GET per file
  (``Range: bytes=<offset>-`` when resuming; a server that ignores the range is read past the
  kept bytes), elsewhere through fsspec; a remote that fails drops the bytes it added (the
  ``.part`` is cut back to where that remote started), and a resumed file whose checksum is
  wrong is fetched again from byte 0 from the same remote (the kept bytes set aside, and put
  back when that copy is wrong too: the remote, not they, was at fault);
- hashes each piece as it is written (a resumed ``.part`` is hashed from disk first), so the
  check needs no second read of the file;
- falls back to the next remote on any failure (404, 5xx, timeout, a transfer slower than
  :data:`~rlbench_suite.datasets.fetch.MIN_RATE` over the timeout, wrong checksum), and when
  every remote fails, raises a :class:`DownloadError` listing each remote and its answer
  (control characters of a remote's answer shown as ``?``, a URL's password as ``***``);
- creates folders only when bytes arrive, and removes an empty ``.part`` and empty folders
  when nothing could be fetched;
- checks every file's SHA-256 against the card before moving it into the cache (atomically);
  a mismatch names the file, the expected and the actual hash, and nothing enters the cache.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlbench_suite.core.dataset_cards import DataFile, DatasetCard, check_remote, shown
from rlbench_suite.datasets.cache import (
    VERIFIED_FILE,
    check_file,
    dataset_folder,
    expected_files,
    folder_lock,
    is_cached,
    lock_path,
    part_path,
)
from rlbench_suite.datasets.fetch import (  # noqa: F401  (CHUNK, ByteProgress: the API's)
    CHUNK,
    DEFAULT_TIMEOUT_S,
    ByteProgress,
    describe_error,
    download_timeout,
    fetch_file,
    filesystem,
)
from rlbench_suite.datasets.hints import build_hint, datasets_command


class DownloadError(OSError):
    """No remote delivered a correct copy; the message lists each remote and its answer."""


class ChecksumError(ValueError):
    """A downloaded file's SHA-256 differs from the card's."""


def file_url(remote: str, card: DatasetCard, file: DataFile) -> str:
    """The URL of ``file`` of ``card`` on ``remote``."""
    return f"{remote.rstrip('/')}/{card.id}/{file.path}"


def _cut_back(part: Path, size: int) -> None:
    """Drop the bytes of ``part`` past ``size`` (remove it when ``size`` is 0)."""
    if not part.exists():
        return
    if size == 0:
        part.unlink()
    elif part.stat().st_size > size:
        with open(part, "r+b") as handle:
            handle.truncate(size)


def remove_empty_folders(folder: Path, stop: Path) -> None:
    """Remove ``folder`` and its parents while they are empty, up to (not including) ``stop``."""
    folder, stop = Path(folder), Path(stop)
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()
        except OSError:  # not empty, or gone
            return
        folder = folder.parent


def _fetch_verified(card: DatasetCard, file: DataFile, target: Path, remotes: list[str],
                    timeout: float | None, progress: ByteProgress | None,
                    notice: Callable[[str], None] | None = None) -> Path:  # fmt: skip
    """``target.part`` holding ``file`` with its SHA-256 checked, from the first remote that
    delivers it (``notice`` is told of each one that failed before another is tried); a
    :class:`DownloadError` listing each remote's answer otherwise."""
    part = part_path(target)
    answers: list[str] = []
    for number, remote in enumerate(remotes):
        if answers and notice is not None:
            notice(f"{answers[-1]}; trying the next remote ({number + 1} of {len(remotes)})")
        url = file_url(remote, card, file)
        start = part.stat().st_size if part.exists() else 0
        kept = part.with_name(f"{target.name}.kept.part")  # the kept bytes, while retried
        kept.unlink(missing_ok=True)  # one a killed process left: its .part is the newer
        again = ""
        try:
            for attempt in range(2):  # the second: from byte 0 after a resumed mismatch
                try:
                    actual = fetch_file(url, part, file.size, timeout, progress, file.path)
                except Exception as exc:  # every failure falls back to the next remote
                    _cut_back(part, start if attempt == 0 else 0)  # drop this remote's bytes
                    answers.append(f"{shown(url)}: {again}{describe_error(exc, url)}")
                    break
                if actual == file.sha256:
                    kept.unlink(missing_ok=True)
                    return part
                if attempt == 0 and 0 < start <= file.size:  # the kept bytes or the remote
                    _cut_back(part, start)  # is wrong: again from byte 0, the bytes aside
                    if start < file.size:  # (a whole kept file is wrong by itself: dropped)
                        os.replace(part, kept)
                    else:
                        part.unlink()
                    again = (f"checksum mismatch after resuming {target.name} from byte {start} "
                             "(the bytes kept from an earlier download), and from byte 0: ")
                    start = 0
                    continue
                part.unlink()
                stay = "; the bytes kept before stay" if kept.exists() else ""
                answers.append(f"{shown(url)}: {again}checksum mismatch for {file.path}: "
                               f"expected {file.sha256}, got {actual} (refused, nothing entered "
                               f"the cache{stay})")
                break
        finally:
            if kept.exists():  # this remote's whole file was wrong too: the kept bytes stay
                os.replace(kept, part)
    if part.exists() and part.stat().st_size == 0:
        part.unlink()
    tried = "; ".join(answers) if answers else (
        "the card lists no remotes: no public mirror exists yet")  # the caller says what to do
    raise DownloadError(f"{card.id}: no remote delivered {file.path} ({tried})")


def dataset_lock(card: DatasetCard, root: Path | None = None) -> Any:
    """The file lock of ``card``'s dataset in the cache (a sibling ``.<Name-vN>.lock``)."""
    return folder_lock(dataset_folder(card, root))


def download(
    card: DatasetCard, root: Path | None = None, remotes: list[str] | None = None,
    timeout: float | None = None, progress: ByteProgress | None = None,
    notice: Callable[[str], None] | None = None,
) -> Path:  # fmt: skip
    """Download ``card``'s dataset into the cache (see the module doc); its folder.
    ``notice`` (a line) is told when a remote failed and the next is tried."""
    if not card.built:
        raise DownloadError(f"{card.id}: the card records no files to download; build it with "
                            f"`rlbench datasets build {card.id}`")  # fmt: skip
    timeout = download_timeout(timeout)  # a bad RLBENCH_DOWNLOAD_TIMEOUT: refused, no remote tried
    sources = [check_remote(r) for r in (remotes if remotes is not None else card.remotes)]
    folder = dataset_folder(card, root)
    for f in card.files:  # a local fault, not a remote's: said before any is tried
        for path in (folder / f.path, part_path(folder / f.path)):
            if path.is_dir():
                raise ValueError(f"{path} is a folder where {card.id}'s file {f.path} belongs; "
                                 f"remove it ({datasets_command(f'delete {card.id}', root)}) and "
                                 "download again")  # fmt: skip
    with dataset_lock(card, root):  # (nothing is made before the remotes are checked)
        if is_cached(card, root) and all(
            check_file(folder / f.path, f.size, f.sha256) is None
            for f in expected_files(card, root)
        ):
            return folder
        try:
            parts = [
                (folder / f.path,
                 _fetch_verified(card, f, folder / f.path, sources, timeout, progress, notice))
                for f in card.files
                if check_file(folder / f.path, f.size, f.sha256) is not None
            ]  # fmt: skip
        except BaseException:
            for f in card.files:  # no empty leftovers (a partly fetched .part is kept)
                remove_empty_folders((folder / f.path).parent, folder.parent)
            raise
        for target, part in parts:
            os.replace(part, target)
        (folder / VERIFIED_FILE).unlink(missing_ok=True)  # the card's own bytes now
    return folder


def lock_held_elsewhere(card: DatasetCard, root: Path | None = None) -> str | None:
    """The path of ``card``'s dataset lock if another process holds it now (downloading it),
    else None (nothing is created: no cache folder, no lock, means no one holds it)."""
    from filelock import FileLock, Timeout

    lock = lock_path(dataset_folder(card, root))
    if not lock.is_file():  # never locked (filelock leaves the file after a release)
        return None
    probe = FileLock(str(lock))
    try:
        probe.acquire(timeout=0)
    except Timeout:
        return str(lock)
    except OSError:  # an unwritable cache: no one downloads into it
        return None
    probe.release()
    return None


def resume_hint(card: DatasetCard, root: Path | None = None) -> str | None:
    """How to resume ``card``'s interrupted download (its ``.part`` bytes kept), or None when
    none is: the same download, with ``--remote`` when the card lists no remote. While another
    process downloads it, that its bytes are that download's."""
    folder = dataset_folder(card, root)
    if not any(part_path(folder / f.path).is_file() for f in card.files):
        return None
    other = lock_held_elsewhere(card, root)
    if other is not None:
        return f"another process is downloading it now (lock {other}): wait for it"
    kept, total = kept_bytes(card, root)
    how = datasets_command(f"download {card.id}", root)
    if not card.remotes:
        how = (f"{datasets_command(f'download {card.id} --remote URL', root)} (the remote it "
               "came from: the card lists none)")  # fmt: skip
    return f"a download was interrupted ({kept} of {total} bytes kept); resume it with {how}"


def kept_bytes(card: DatasetCard, root: Path | None = None) -> tuple[int, int]:
    """(bytes of ``card``'s files in the cache, whole or ``.part``, total bytes of the files)."""
    folder = dataset_folder(card, root)
    kept = 0
    for f in card.files:
        for path in (folder / f.path, part_path(folder / f.path)):
            if path.is_file():
                kept += min(path.stat().st_size, f.size)
                break
    return kept, sum(f.size for f in card.files)


def publish(card: DatasetCard, to: str, root: Path | None = None) -> list[str]:
    """Copy ``card``'s cached files (verified first) to the remote ``to``; the URLs written.
    Each file is uploaded under a temporary name and then renamed, so a reader never sees a
    partial file under the final name."""
    check_remote(to)
    if to.startswith(("http://", "https://")):
        raise ValueError(f"cannot publish to {shown(repr(to))}: HTTP remotes are read-only; "
                         "publish to a folder, file:// or s3:// URL and serve it (`rlbench "
                         "datasets serve`)")  # fmt: skip
    folder = dataset_folder(card, root)
    for file in card.files:
        problem = check_file(folder / file.path, file.size, file.sha256)
        if problem is not None:
            fix = ("download or build it first" if problem == "missing" else
                   f"nothing was published; replace it with {build_hint(card, root)}")
            raise ValueError(f"{folder / file.path}: {problem}; {fix}")
    written = []
    for file in card.files:
        url = file_url(to, card, file)
        fs, path = filesystem(url, DEFAULT_TIMEOUT_S)  # never HTTP (refused above)
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        temporary = f"{path}.{uuid.uuid4().hex[:12]}.part"  # readers never see a partial file
        fs.put_file(str(folder / file.path), temporary)
        try:
            fs.mv(temporary, path)
        except BaseException:
            with contextlib.suppress(Exception):
                fs.rm(temporary)
            raise
        written.append(url)
    return written
