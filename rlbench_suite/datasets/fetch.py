"""One file's bytes from one remote (a folder, file://, http(s)://, s3:// through fsspec):
appended to a ``.part`` from its size on (HTTP ``Range`` when resuming), hashed as they arrive,
under the timeout and the low-speed rule; and what may be printed of a remote's failure.
:mod:`~rlbench_suite.datasets.remotes` builds downloads (fallback, verification, the cache) on
it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import math
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rlbench_suite.core.dataset_cards import PROTOCOLS, remote_userinfo, shown

CHUNK = 128 << 10
"""Bytes read, written, flushed, hashed and reported at a time (smaller than every dataset
file, so resume and progress work on them)."""
READ_BLOCK = 8 << 20
"""Bytes fsspec fetches per request (S3 range reads) and hashing reads of a kept ``.part``."""
MIN_RATE = 1 << 10
"""Bytes per second a remote must keep up over each timeout's span, or it is given up (a
trickle answers every read in time and would otherwise hold a download for hours)."""
TIMEOUT_ENV_VAR = "RLBENCH_DOWNLOAD_TIMEOUT"
DEFAULT_TIMEOUT_S = 30.0
ByteProgress = Callable[[str, int, int], None]
"""Called as ``(file path, bytes done, total bytes)`` while a file downloads."""


class TooSlowError(TimeoutError):
    """A remote that answers, but slower than :data:`MIN_RATE`."""


_HOST_PORT = re.compile(r"^[\w.-]+:\d{1,5}(/|$)")


def filesystem(url: str, timeout: float) -> tuple[Any, str]:
    """The fsspec file system and path of ``url`` (HTTP with ``timeout`` on connect and read)."""
    import fsspec

    options: dict[str, Any] = {}
    if url.startswith(("http://", "https://")):
        import aiohttp

        options["client_kwargs"] = {"timeout": aiohttp.ClientTimeout(
            total=None, sock_connect=timeout, sock_read=timeout)}  # fmt: skip
    return fsspec.core.url_to_fs(url, **options)


def download_timeout(timeout: float | None) -> float:
    """``timeout``, else :data:`TIMEOUT_ENV_VAR`'s seconds, else the default; a value or a
    variable that is not a positive finite number is refused by name (not blamed on a
    remote)."""
    if timeout is not None:
        if not 0 < timeout < math.inf:
            raise ValueError(f"--timeout {timeout!r}: expected a positive number of seconds "
                             f"(the default is {DEFAULT_TIMEOUT_S:g})")  # fmt: skip
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
    url, user, password = remote_userinfo(url)
    request = urllib.request.Request(url, headers=headers)
    if user is not None:  # http://user:password@host/: HTTP basic authentication, to this host
        pair = base64.b64encode(f"{user}:{password}".encode()).decode()  # only: a redirect
        request.add_unredirected_header("Authorization", f"Basic {pair}")  # drops it
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        raise HTTPStatusError(exc.code, str(exc.reason)) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        raise reason if isinstance(reason, OSError) else OSError(str(reason)) from None
    with response:
        if offset and response.status == 206:
            answered = response.headers.get("Content-Range", "")
            if not re.match(rf"bytes {offset}-", answered):
                raise OSError(f"asked for bytes {offset}- and got a range {answered!r}")
        skip = offset if offset and response.status != 206 else 0  # the Range was ignored
        pace = _Pace(timeout)
        while skip > 0:
            skipped = len(_read_chunk(response, min(CHUNK, skip), pace))
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
    fs, path = filesystem(url, timeout)
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
    timeout = download_timeout(timeout)
    with _stream(url, offset, timeout) as src:
        dst = None
        pace = _Pace(timeout)
        try:
            while offset < size:
                chunk = _read_chunk(src, min(CHUNK, size - offset), pace)
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


class _Pace:
    """The low-speed rule: over every ``timeout`` seconds a remote sends at least
    ``MIN_RATE * timeout`` bytes, or :class:`TooSlowError`."""

    def __init__(self, timeout: float) -> None:
        import time

        self.clock = time.monotonic
        self.timeout, self.since, self.got = timeout, self.clock(), 0

    def add(self, n: int) -> None:
        """``n`` more bytes arrived."""
        self.got += n
        elapsed = self.clock() - self.since
        if elapsed < self.timeout:
            return
        if self.got < MIN_RATE * self.timeout:
            raise TooSlowError(f"too slow: {self.got} bytes in {elapsed:.0f} s (under "
                               f"{MIN_RATE >> 10} KiB/s; --timeout sets the span)")  # fmt: skip
        self.since, self.got = self.clock(), 0


def _read_chunk(src: Any, n: int, pace: _Pace) -> bytes:
    """Up to ``n`` bytes of ``src`` (fewer only at its end), read as they arrive (``read1``
    where the stream has it), each read told to ``pace``."""
    read = getattr(src, "read1", None) or src.read
    pieces: list[bytes] = []
    got = 0
    while got < n:
        piece = read(n - got)
        if not piece:
            break
        pieces.append(piece)
        got += len(piece)
        pace.add(len(piece))
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def describe_error(exc: BaseException, url: str = "") -> str:
    """A one-line account of a remote's failure (HTTP status, 404, time-out, unknown protocol,
    missing credentials, or the exception's type and message), as it may be printed
    (:func:`shown`)."""
    return shown(_describe(exc, url))


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
    if isinstance(exc, TooSlowError):
        return str(exc)
    if isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__:
        return "no answer (timed out)"
    if isinstance(exc, EOFError):  # fetch_file's own: the file is shorter than the card's
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
