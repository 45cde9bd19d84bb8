"""Bring a leaderboard database up: migrate it to the newest schema, sync the cards."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.orm import Session, sessionmaker

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.leaderboard.catalog_sync import SpecHash, sync_catalog
from rlbench_suite.leaderboard.db import make_engine, session_factory
from rlbench_suite.leaderboard.migrate import upgrade


def prepare_database(
    url: str, cards: Iterable[EnvCard] | None = None, spec_hash: SpecHash | None = None
) -> sessionmaker[Session]:
    """Migrate the database at ``url`` and, given ``cards`` and ``spec_hash``, sync them."""
    engine = make_engine(url)
    upgrade(engine)
    factory = session_factory(engine)
    if cards is not None:
        if spec_hash is None:
            raise ValueError("syncing cards needs their spec_hash function")
        with factory.begin() as session:
            sync_catalog(session, cards, spec_hash)
    return factory
