"""Whole GET responses of the read-only routes, kept in this process until the data changes.

The routes in :data:`CACHED_PREFIXES` render only environments, suites, methods and
results. Every change to those bumps an environment's ``ranking_generation``
(``leaderboard.models``), so the sum of the generations (read from the database at each
request, before the route reads anything) keys the cache: a response computed before a
change is never served after it, by this process or any other on the same database. A
route whose response depends on anything else (jobs, tokens, files) must stay off the list.

Concurrent requests share generation reads (:class:`SharedRead`): a request waits for a read
that starts after it arrived, so it still sees every change committed before it, while 50
clients cost one small query per query time instead of one thread hop and query each.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from rlbench_suite.leaderboard.export import STATIC_HEADER
from rlbench_suite.leaderboard.models import Environment

CACHED_PREFIXES = (
    "/envs/",
    "/suites/",
    "/plots/envs/",
    "/plots/suites/",
    "/api/envs",
    "/api/suites/",
    "/api/results",
    "/api/methods",
)
CAPACITY = 1024
MAX_BODY = 2 * 1024 * 1024
T = TypeVar("T")


class SharedRead(Generic[T]):
    """``read()`` (blocking, run in the thread pool) shared by concurrent awaiters: a caller
    gets the value of a read that started after it called, never an older one. While a read
    runs, every new caller joins the one next read, started when the running one ends."""

    def __init__(self, read: Callable[[], T]) -> None:
        self.read = read
        self.loop: asyncio.AbstractEventLoop | None = None
        self.running: asyncio.Future[T] | None = None
        self.queued: asyncio.Future[T] | None = None
        self.reads = 0

    def _start(self) -> asyncio.Future[T]:
        self.reads += 1
        task = asyncio.ensure_future(run_in_threadpool(self.read))
        self.running = task
        task.add_done_callback(self._finished)
        return task

    def _finished(self, _task: asyncio.Future[T]) -> None:
        queued, self.queued, self.running = self.queued, None, None
        if queued is not None:
            self._start().add_done_callback(lambda done: _settle(queued, done))

    async def __call__(self) -> T:
        loop = asyncio.get_running_loop()
        if loop is not self.loop:  # a new event loop (test clients): nothing carries over
            self.loop, self.running, self.queued = loop, None, None
        if self.running is None:
            return await asyncio.shield(self._start())
        if self.queued is None:
            self.queued = loop.create_future()
        return await asyncio.shield(self.queued)


def _settle(future: asyncio.Future[T], done: asyncio.Future[T]) -> None:
    if future.done():
        return
    if done.cancelled():
        future.cancel()
    elif done.exception() is not None:
        future.set_exception(done.exception())  # type: ignore[arg-type]
    else:
        future.set_result(done.result())


class ResponseCache:
    """ASGI middleware caching 200 responses of GETs to :data:`CACHED_PREFIXES`, keyed by
    path, query string, host, whether the static export asks (``export.STATIC_HEADER``) and
    the database's ranking generation."""

    def __init__(self, app: Any, factory: sessionmaker[Session], capacity: int = CAPACITY):
        self.app, self.factory, self.capacity = app, factory, capacity
        self.entries: OrderedDict[tuple, tuple[int, list, bytes]] = OrderedDict()
        self.lock = threading.Lock()
        self.hits = self.misses = 0
        self.shared_generation = SharedRead(self.generation)

    def generation(self) -> tuple[int, int]:
        """How many environments there are and the sum of their ranking generations."""
        query = select(func.count(), func.coalesce(func.sum(Environment.ranking_generation), 0))
        with self.factory() as session:
            count, total = session.execute(query).one()
        return int(count), int(total)

    def _cacheable(self, scope: dict) -> bool:
        return (
            scope["type"] == "http"
            and scope["method"] == "GET"
            and scope["path"].startswith(CACHED_PREFIXES)
        )

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if not self._cacheable(scope):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        host, static = headers.get(b"host", b""), headers.get(STATIC_HEADER.lower().encode())
        key = (scope["path"], scope["query_string"], host, static, await self.shared_generation())
        with self.lock:
            entry = self.entries.get(key)
            if entry is not None:
                self.entries.move_to_end(key)
                self.hits += 1
        if entry is not None:
            status, headers, body = entry
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        self.misses += 1
        start: dict = {}
        chunks: list[bytes] = []

        async def capture(message: dict) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    self._store(key, start, b"".join(chunks))
            await send(message)

        await self.app(scope, receive, capture)

    def _store(self, key: tuple, start: dict, body: bytes) -> None:
        if start.get("status") != 200 or len(body) > MAX_BODY:
            return
        with self.lock:
            self.entries[key] = (200, list(start.get("headers", [])), body)
            self.entries.move_to_end(key)
            while len(self.entries) > self.capacity:
                self.entries.popitem(last=False)
