"""Connecting to the leaderboard's database: SQLite (embedded, WAL mode) or PostgreSQL."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.orm import Session, sessionmaker

SQLITE_FILE = "leaderboard.sqlite"
ACCEPTED_URLS = "sqlite:///PATH or postgresql://USER@HOST:PORT/DB (psycopg 3; postgres:// too)"
POSTGRES_SCHEMES = ("postgresql", "postgres")  # postgres://: Heroku's and libpq's spelling


class DatabaseURLError(ValueError):
    """A database URL the leaderboard cannot use."""


def sqlite_url(folder: Path) -> str:
    """The URL of the embedded database file in ``folder`` (the folder is created)."""
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / SQLITE_FILE}"


def normalize_url(url: str) -> str:
    """``url`` with PostgreSQL (``postgresql://`` or ``postgres://``, any driver named) pointed
    at psycopg 3; a ValueError for other databases."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseURLError(f"not a database URL: {url!r}; accepted: {ACCEPTED_URLS}") from None
    backend = parsed.get_backend_name()
    if backend in POSTGRES_SCHEMES:
        return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    if backend != "sqlite":
        raise DatabaseURLError(f"unsupported database {backend!r}; accepted: {ACCEPTED_URLS}")
    return url


def shown_url(url: str) -> str:
    """``url`` with any password hidden (for messages)."""
    return make_url(url).render_as_string(hide_password=True)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite connections run in WAL mode with a busy timeout."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        path = make_url(url).database
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # more connections than the server's worker threads (40), so none waits for the pool
    return create_engine(url, pool_pre_ping=True, pool_size=20, max_overflow=30)


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions bound to ``engine`` that keep loaded rows usable after commit."""
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session that commits when the block ends and rolls back on an exception."""
    with factory.begin() as session:
        yield session


T = TypeVar("T")
RETRIED_SQLSTATES = {"40001": "serialization failure", "40P01": "deadlock"}
"""PostgreSQL errors after which a whole transaction may simply run again."""
RETRIES = 4
log = logging.getLogger(__name__)


def retried(work: Callable[[], T], retries: int = RETRIES) -> T:
    """``work()`` (one whole transaction, opened and committed inside it), run again after a
    short random pause when PostgreSQL aborted it for a serialization failure or a deadlock
    (:data:`RETRIED_SQLSTATES`), at most ``retries`` more times; other errors go up."""
    for attempt in range(retries + 1):
        try:
            return work()
        except DBAPIError as exc:
            reason = RETRIED_SQLSTATES.get(getattr(exc.orig, "sqlstate", None) or "")
            if reason is None or attempt == retries:
                raise
            log.warning("transaction aborted (%s): running it again (%d)", reason, attempt + 1)
            time.sleep(random.uniform(0, 0.05 * 2**attempt))
    raise AssertionError("unreachable")
