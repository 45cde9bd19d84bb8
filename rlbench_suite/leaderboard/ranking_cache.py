"""Rankings computed once per change of the data they rank, kept in this process.

A cached value is keyed by what it ranks and by the ``ranking_generation`` of the
environments it covers, read from the database at each request. Every flush that changes
a result, a method or an environment bumps those generations (``leaderboard.models``), so
a value computed before a change is never served after it, in this process or in any other
process on the same database. Values are shared between requests: callers must not mutate
them.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from rlbench_suite.leaderboard.models import Environment

T = TypeVar("T")
CAPACITY = 512
"""How many rankings one database keeps (least recently used first out)."""


class RankingCache:
    """A bounded, thread-safe LRU map from keys to computed rankings."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self.values: OrderedDict[Hashable, Any] = OrderedDict()
        self.lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: Hashable) -> tuple[bool, Any]:
        with self.lock:
            if key in self.values:
                self.values.move_to_end(key)
                self.hits += 1
                return True, self.values[key]
            self.misses += 1
            return False, None

    def put(self, key: Hashable, value: Any) -> None:
        with self.lock:
            self.values[key] = value
            self.values.move_to_end(key)
            while len(self.values) > self.capacity:
                self.values.popitem(last=False)


_CACHES: weakref.WeakKeyDictionary[Engine, RankingCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def cache_for(session: Session) -> RankingCache:
    """The cache of the database ``session`` is bound to."""
    engine = session.get_bind()
    engine = getattr(engine, "engine", engine)  # a Connection: its Engine
    with _CACHES_LOCK:
        cache = _CACHES.get(engine)
        if cache is None:
            cache = _CACHES[engine] = RankingCache()
        return cache


def generations(session: Session, env_ids: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """The current ranking generation of each of ``env_ids``."""
    query = select(Environment.id, Environment.ranking_generation).where(
        Environment.id.in_(sorted(set(env_ids)))
    )
    return tuple(sorted((env_id, gen) for env_id, gen in session.execute(query)))


def cached(session: Session, key: Hashable, env_ids: Sequence[str], compute: Callable[[], T]) -> T:
    """``compute()``'s value for ``key`` over ``env_ids``, computed again only after one of
    those environments' data changed. The generations are read before ``compute`` reads the
    data, so a change committed in between can only make the value newer than its key."""
    full_key = (key, generations(session, env_ids))
    cache = cache_for(session)
    found, value = cache.get(full_key)
    if found:
        return value
    value = compute()
    cache.put(full_key, value)
    return value
