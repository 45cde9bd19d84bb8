"""Mirror the cards into the ``environments`` and ``suites`` tables (run at every start)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.protocol import EvalProtocol
from rlbench_suite.leaderboard.models import Environment, Suite, utcnow
from rlbench_suite.leaderboard.scores import rescore_env

SpecHash = Callable[[EnvCard], str]
"""The hash of a card's registered Gymnasium spec (``rlbench_suite.registry.spec_hash``),
handed in by the caller so the leaderboard does not import the registry."""


def board_cards() -> list[EnvCard]:
    """The cards a leaderboard holds: the catalog's and the offline ids' (they rank too)."""
    from rlbench_suite.core.catalog import cards
    from rlbench_suite.core.offline_cards import offline_env_cards

    return [*cards().values(), *offline_env_cards()]


def _row_values(card: EnvCard, spec_hash: str) -> dict:
    protocol = EvalProtocol.for_card(card, spec_hash)
    references = card.reference_values()
    return {
        "family": card.family,
        "primary_metric": card.primary_metric,
        "description": card.description,
        "card": card.model_dump(mode="json"),
        "spec_hash": spec_hash,
        "protocol_hash": protocol.hash,
        "protocol": protocol.model_dump(mode="json"),
        "random_score": references[0] if references else None,
        "expert_score": references[1] if references else None,
        "active": True,
        "synced_at": utcnow(),
    }


def sync_catalog(session: Session, cards: Iterable[EnvCard], spec_hash: SpecHash) -> int:
    """Insert or update one row per card and the suites they name; return the card count.

    Environments no longer among ``cards`` stay (their results still show) but are marked
    inactive, so no new result is accepted for them.
    """
    cards = list(cards)
    existing = {env.id: env for env in session.scalars(select(Environment))}
    suites = {suite.name: suite for suite in session.scalars(select(Suite))}
    for env in existing.values():
        env.active = False
    for card in cards:
        values = _row_values(card, spec_hash(card))
        env = existing.get(card.id)
        if env is None:
            env = Environment(id=card.id, **values)
            session.add(env)
            existing[card.id] = env
        else:
            rescore = env.card != values["card"]
            for key, value in values.items():
                setattr(env, key, value)
            if rescore:  # references or scoring rules may have changed
                rescore_env(session, env.id, card)
        members = []
        for name in card.suites:
            if name not in suites:
                suites[name] = Suite(name=name)
                session.add(suites[name])
            members.append(suites[name])
        env.suites = members
    session.flush()
    return len(cards)
