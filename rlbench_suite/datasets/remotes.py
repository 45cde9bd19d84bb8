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
  wrong is fetched again from byte 0 from the same remote (the kept ``.part`` was stale);
- hashes each piece as it is written (a resumed ``.part`` is hashed from disk first), so the
  check needs no second read of the file;
- falls back to the next remote on any failure (404, 5xx, timeout, wrong checksum), and when
  every remote fails, raises a :class:`DownloadError` listing each remote and its answer;
- creates folders only when bytes arrive, and removes an empty ``.part`` and empty folders
  when nothing could be fetched;
- checks every file's SHA-256 against the card before moving it into the cache (atomically);
  a mismatch names the file, the expected and the actual hash, and nothing enters the cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rlbench_suite.core.dataset_cards import PROTOCOLS, DataFile, DatasetCard, check_remote
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

CHUNK = 128 << 10
"""Bytes read, written, flushed, hashed and reported at a time (smaller than every dataset
file, so resume and progress work on them)."""
READ_BLOCK = 8 << 20
"""Bytes fsspec fetches per request (S3 range reads) and hashing reads of a kept ``.part``."""
TIMEOUT_ENV_VAR = "RLBENCH_DOWNLOAD_TIMEOUT"
DEFAULT_TIMEOUT_S = 30.0
ByteProgress = Callable[[str, int, int], None]
"""Called as ``(file path, bytes done, total bytes)`` while a file downloads."""


class DownloadError(OSError):
    """No remote delivered a correct copy; the message lists each remote and its answer."""


class ChecksumError(ValueError):
    """A downloaded file's SHA-256 differs from the card's."""


_HOST_PORT = re.compile(r"^[\w.-]+:\d{1,5}(/|$)")


def file_url(remote: str, card: DatasetCard, file: DataFile) -> str:
    """The URL of ``file`` of ``card`` on ``remote``."""
    return f"{remote.rstrip('/')}/{card.id}/{file.path}"


def _filesystem(url: str, timeout: float) -> tuple[Any, str]:
    import fsspec

    options: dict[str, Any] = {}
    if url.startswith(("http://", "https://")):
        import aiohttp

        options["client_kwargs"] = {"timeout": aiohttp.ClientTimeout(
            total=None, sock_connect=timeout, sock_read=timeout)}  # fmt: skip
    return fsspec.core.url_to_fs(url, **options)


def download_timeout(timeout: float | None) -> float:
    """``timeout``, else :data:`TIMEOUT_ENV_VAR`'s seconds, else the default; a variable that
    is not a positive number is refused by name (not blamed on a remote)."""
    if timeout is not None:
        return timeout
    raw = os.environ.get(TIMEOUT_ENV_VAR)
    if raw is None:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise ValueError(f"{TIMEOUT_ENV_VAR}={raw!r}: expected a positive number of seconds "
                         f"(the default is {DEFAULT_TIMEOUT_S:g})")  # fmt: skip
    return value


class HTTPStatusError(OSError):
    """An HTTP answer other than 200 or 206; ``status`` and ``message`` as aiohttp has them."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status} {message}")
        self.status, self.message = status, message


@contextlib.contextmanager
def _http_stream(url: str, offset: int, timeout: float) -> Iterator[Any]:
    """``url``'s body from byte ``offset`` on: one GET (with a Range header when ``offset``)."""
    import urllib.error
    import urllib.request

    headers = {"Range": f"bytes={offset}-"} if offset else {}
    try:
        response = urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                          timeout=timeout)  # fmt: skip
    except urllib.error.HTTPError as exc:
        raise HTTPStatusError(exc.code, str(exc.reason)) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        raise reason if isinstance(reason, OSError) else OSError(str(reason)) from None
    with response:
        skip = offset if offset and response.status != 206 else 0  # the Range was ignored
        while skip > 0:
            skipped = len(response.read(min(CHUNK, skip)))
            if not skipped:
                break
            skip -= skipped
        yield response


@contextlib.contextmanager
def _stream(url: str, offset: int, timeout: float) -> Iterator[Any]:
    """A readable of ``url``'s bytes from ``offset`` on (HTTP streamed, others via fsspec)."""
    if url.startswith(("http://", "https://")):
        with _http_stream(url, offset, timeout) as response:
            yield response
        return
    fs, path = _filesystem(url, timeout)
    with fs.open(path, "rb", block_size=READ_BLOCK) as src:
        src.seek(offset)
        yield src


def _hash_prefix(part: Path, length: int) -> Any:
    """A SHA-256 object fed the first ``length`` bytes of ``part``."""
    digest = hashlib.sha256()
    with open(part, "rb") as handle:
        while length > 0:
            piece = handle.read(min(READ_BLOCK, length))
            if not piece:
                break
            digest.update(piece)
            length -= len(piece)
    return digest


def fetch_file(url: str, part: Path, size: int, timeout: float | None = None,
               progress: ByteProgress | None = None, label: str = "") -> str:  # fmt: skip
    """Append ``url``'s bytes to ``part`` from ``part``'s size on, up to ``size`` bytes; the
    SHA-256 of the whole ``part`` (hex). The folder of ``part`` is made only once the first
    bytes arrived."""
    offset = part.stat().st_size if part.exists() else 0
    if offset > size:  # a stale partial file of another version: start again
        part.unlink()
        offset = 0
    digest = _hash_prefix(part, offset) if offset else hashlib.sha256()
    if progress is not None:
        progress(label, offset, size)
    if offset == size:
        return digest.hexdigest()
    with _stream(url, offset, download_timeout(timeout)) as src:
        dst = None
        try:
            while offset < size:
                chunk = src.read(min(CHUNK, size - offset))
                if not chunk:
                    raise EOFError(f"the remote file ends at {offset} bytes, expected {size}")
                if dst is None:
                    part.parent.mkdir(parents=True, exist_ok=True)
                    dst = open(part, "ab")  # noqa: SIM115 (closed below)
                dst.write(chunk)
                dst.flush()
                digest.update(chunk)
                offset += len(chunk)
                if progress is not None:
                    progress(label, offset, size)
        finally:
            if dst is not None:
                dst.close()
    return digest.hexdigest()


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


def describe_error(exc: BaseException, url: str = "") -> str:
    """A one-line account of a remote's failure (HTTP status, 404, time-out, unknown protocol,
    missing credentials, or the exception's type and message)."""
    return _describe(exc, url)


def _describe(exc: BaseException, url: str = "") -> str:
    if "Protocol not known" in str(exc) or "Protocol not known" in repr(exc.args):
        return f"{exc} (a remote is {PROTOCOLS})"
    if "credentials" in str(exc).lower():
        return f"{type(exc).__name__}: {exc} (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
    status = getattr(exc, "status", None)
    if status is not None:
        return f"HTTP {status} {getattr(exc, 'message', '')}".strip()
    if isinstance(exc, FileNotFoundError):
        if url.startswith(("http://", "https://")):
            return "not found (404)"
        if _HOST_PORT.match(url):  # 127.0.0.1:8000/...: a folder of that name, not a server
            return "not found (read as a folder: a server's URL needs http:// or https://)"
        return "not found"
    if isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__:
        return "no answer (timed out)"
    if isinstance(exc, EOFError):  # fetch_file's own: the file is shorter than the card's
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


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
        stale = ""
        for attempt in range(2):  # the second: again from byte 0 after a resumed mismatch
            try:
                actual = fetch_file(url, part, file.size, timeout, progress, file.path)
            except Exception as exc:  # every failure falls back to the next remote
                _cut_back(part, start if attempt == 0 else 0)  # drop this remote's bytes
                answers.append(f"{url}: {stale}{_describe(exc, url)}")
                break
            if actual == file.sha256:
                return part
            part.unlink()
            if attempt == 0 and 0 < start <= file.size:
                stale = (f"checksum mismatch after resuming a stale {part.name} of {start} "
                         "bytes (kept from an earlier download), then from byte 0: ")
                start = 0
                continue
            answers.append(f"{url}: {stale}checksum mismatch for {file.path}: expected "
                           f"{file.sha256}, got {actual} (refused, nothing entered the cache)")
            break
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
    how = f"`rlbench datasets download {card.id}`"
    if not card.remotes:
        how = (f"`rlbench datasets download {card.id} --remote URL` (the remote it came from: "
               "the card lists none)")  # fmt: skip
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
        raise ValueError(f"cannot publish to {to!r}: HTTP remotes are read-only; publish to a "
                         "folder, file:// or s3:// URL and serve it (`rlbench datasets serve`)")
    folder = dataset_folder(card, root)
    for file in card.files:
        problem = check_file(folder / file.path, file.size, file.sha256)
        if problem is not None:
            fix = ("download or build it first" if problem == "missing" else
                   f"nothing was published; replace it with `rlbench datasets download {card.id} "
                   "--build`")  # fmt: skip
            raise ValueError(f"{folder / file.path}: {problem}; {fix}")
    written = []
    for file in card.files:
        url = file_url(to, card, file)
        fs, path = _filesystem(url, DEFAULT_TIMEOUT_S)  # never HTTP (refused above)
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
