"""Serve a folder over HTTP with Range requests (``rlbench datasets serve DIR``): any machine
that holds datasets (a cache folder, a published folder) can be a mirror.

Python's ``http.server`` serves files but ignores ``Range``; :class:`RangeRequestHandler`
answers a single ``bytes=a-b`` (or ``a-``, ``-n``) range with ``206 Partial Content`` and the
rest as the standard handler does (an invalid ``Range`` is ignored: 200 with the whole file).
It serves only regular files inside the folder: no directory listings, nothing whose resolved
path (a symlink) is outside the folder or is a ``.part`` or ``.lock`` file, and no path the
file system cannot take (a NUL byte, a name too long, a symlink loop): 404 for all. It counts
the bytes it sends (:attr:`DatasetServer.bytes_sent`). Bodies go out through ``sendfile`` (no
copy through Python), exactly as long as the ``Content-Length`` announced (a file that grows
meanwhile is cut there). A connection silent for :attr:`RangeRequestHandler.timeout` seconds
is closed, and past :attr:`DatasetServer.max_connections` at once a new one is answered 503:
idle clients cannot hold every thread and file descriptor. :func:`byte_range` and
:func:`refused` are the rules, shared with the leaderboard site, which serves the cache the
same way.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")
PAST_ANY_FILE = 1 << 63
"""A position of more than 19 digits stands for this, never parsed (Python refuses ints of
over 4,300 digits, and a long one costs time)."""


def _position(digits: str) -> int:
    return int(digits) if len(digits) <= 19 else PAST_ANY_FILE


class RangeNotSatisfiable(ValueError):
    """A ``Range`` that starts past the end of the file (answered with 416)."""


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The inclusive byte range ``(start, end)`` a ``Range`` header asks of a ``size``-byte
    file: a single ``bytes=a-b``, ``a-`` or ``-n``. None for no or an invalid header (the whole
    file: RFC 9110 14.2 says an invalid Range is ignored, and a range whose end comes before
    its start is invalid); :class:`RangeNotSatisfiable` for a range past the end or the last
    0 bytes."""
    match = RANGE_RE.match(header.strip()) if header is not None else None
    if match is None or match.groups() == ("", ""):
        return None
    first, last = match.groups()
    if first == "":  # the last n bytes
        start, end = max(0, size - _position(last)), size - 1
        if _position(last) == 0:
            start = size  # unsatisfiable (RFC 9110 14.1.3)
    elif last and _position(last) < _position(first):
        return None  # invalid: ignored
    else:
        start = _position(first)
        end = min(_position(last), size - 1) if last else size - 1
    if start >= size or start > end:
        raise RangeNotSatisfiable(f"bytes {header!r} of a {size}-byte file")
    return start, end


def refused(root: Path, path: Path) -> bool:
    """Whether ``path`` may not be served from the folder ``root``: outside it once resolved
    (``..`` or a symlink out of it), a folder, missing, a download's ``.part`` or a ``.lock``
    file (by its name or its target's), or a path the file system refuses (a NUL byte, an
    unencodable name, a name too long, a symlink loop)."""
    try:
        resolved = path.resolve()
        return (not resolved.is_relative_to(Path(root).resolve()) or path.is_dir()
                or not path.is_file()
                or any(p.name.endswith((".part", ".lock")) for p in (path, resolved)))  # fmt: skip
    except (OSError, ValueError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return True


class RangeRequestHandler(SimpleHTTPRequestHandler):
    """Files of a folder, with single byte ranges; quiet unless the server is verbose."""

    server: DatasetServer
    timeout = 30
    """Seconds a connection may stay silent (a request not sent, a body not read)."""

    def log_message(self, format: str, *args: Any) -> None:
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)

    def list_directory(self, path: Any) -> Any:  # no directory listings
        self.send_error(HTTPStatus.NOT_FOUND, "File not found")
        return None

    def send_head(self) -> Any:
        self._remaining = None
        path = Path(self.translate_path(self.path))
        if refused(Path(self.directory), path):
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        size = path.stat().st_size
        try:
            wanted = byte_range(self.headers.get("Range"), size)
        except RangeNotSatisfiable:
            self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if wanted is None:  # no or an invalid Range: the whole file
            return super().send_head()
        start, end = wanted
        handle = open(path, "rb")  # noqa: SIM115 (closed by do_GET/do_HEAD)
        handle.seek(start)
        self.send_response(HTTPStatus.PARTIAL_CONTENT)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        self._remaining = end - start + 1
        return handle

    def send_header(self, keyword: str, value: str) -> None:
        if keyword.lower() == "content-length":  # the body sent is exactly this long
            self._remaining = int(value)
        super().send_header(keyword, value)

    def end_headers(self) -> None:
        self.send_header("Accept-Ranges", "bytes")
        super().end_headers()

    send_block = 4 << 20
    """Bytes handed to ``sendfile`` (and counted) at a time."""

    def copyfile(self, source: Any, outputfile: Any) -> None:
        """The body: ``source`` from its position on, as many bytes as the ``Content-Length``
        announced, sent by the kernel (``sendfile``) in pieces of :attr:`send_block` bytes,
        each counted."""
        position = source.tell()
        remaining = getattr(self, "_remaining", None)
        end = position + remaining if remaining is not None else os.fstat(source.fileno()).st_size
        self._remaining = None
        while position < end:
            sent = self.send_piece(source, position, min(self.send_block, end - position))
            if not sent:  # the file got shorter while it was sent
                break
            position += sent
            self.server.count(sent)

    def send_piece(self, source: Any, offset: int, count: int) -> int:
        """Send ``count`` bytes of ``source`` from ``offset``; the bytes sent."""
        return self.connection.sendfile(source, offset, count)


class DatasetServer(ThreadingHTTPServer):
    """A threading HTTP server of one folder that counts the bytes of file bodies it sends."""

    daemon_threads = True
    request_queue_size = 128  # the listen backlog: a burst is accepted, then capped
    max_connections = 256
    """Connections served at once; one more is answered 503 and closed."""

    def __init__(self, folder: Path, host: str = "127.0.0.1", port: int = 0,
                 verbose: bool = False, handler: type = RangeRequestHandler) -> None:  # fmt: skip
        if not Path(folder).is_dir():
            raise FileNotFoundError(f"cannot serve {folder}: not a folder")
        handler = functools.partial(handler, directory=os.fspath(folder))
        super().__init__((host, port), handler)
        self.verbose = verbose
        self.bytes_sent = 0
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.max_connections)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve ``request`` in a thread of its own while a slot is free; else 503."""
        if not self._slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\n"
                                b"Content-Length: 0\r\nConnection: close\r\n\r\n")
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (Ctrl-C, a killed download) or stayed silent past the
        timeout is quiet, not a traceback."""
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)

    def count(self, n: int) -> None:
        with self._lock:
            self.bytes_sent += n

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> DatasetServer:
        """Serve in a daemon thread; returns self (stop with :meth:`stop`)."""
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

