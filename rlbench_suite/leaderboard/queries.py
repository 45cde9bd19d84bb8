"""Reading the database for the ranking and the pages: stored results as ranking
:class:`Run` records (``models.listed``: never the re-runs kept as a verification's evidence)."""

from __future__ import annotations

import functools
import json

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.leaderboard.models import Environment, Method, Result, Suite, listed
from rlbench_suite.leaderboard.ranking import Run


@functools.lru_cache(maxsize=1024)
def _card(card_json: str) -> EnvCard:
    return EnvCard.model_validate_json(card_json)


def env_card(env: Environment) -> EnvCard:
    """The card an environment row was synced from."""
    return _card(json.dumps(env.card, sort_keys=True))


RUN_COLUMNS = (
    Result.id,
    Result.env_id,
    Result.score,
    Result.episode_scores,
    Result.training_budget_steps,
    Result.verification,
    Result.artifact_sha256,
)
"""What a run is read from: the scores cached on the row (``leaderboard.scores``), never the
stored Result JSON."""


def _runs(session: Session, condition) -> list[Run]:
    query = (
        select(*RUN_COLUMNS, Method.name, Method.family)
        .join(Method, Result.method_id == Method.id)
        .where(condition, listed())
        .order_by(Result.id)
    )
    return [
        Run(
            result_id=result_id,
            env_id=env_id,
            method=method,
            score=score,
            episode_scores=tuple(episodes),
            family=family,
            budget_steps=budget,
            verification=verification,
            artifact=artifact,
        )
        for result_id, env_id, score, episodes, budget, verification, artifact, method, family in (
            session.execute(query)
        )
    ]


def env_runs(session: Session, env: Environment, protocol_hash: str | None = None) -> list[Run]:
    """The runs of ``env`` under ``protocol_hash`` (default: the card's current protocol)."""
    protocol_hash = protocol_hash or env.protocol_hash
    condition = (Result.env_id == env.id) & (Result.protocol_hash == protocol_hash)
    return _runs(session, condition)


def env_protocols(session: Session, env_id: str) -> list[tuple[str, int]]:
    """The protocol hashes of an environment's results, with how many each, most first."""
    query = (
        select(Result.protocol_hash, func.count())
        .where(Result.env_id == env_id, listed())
        .group_by(Result.protocol_hash)
        .order_by(func.count().desc())
    )
    return [(h, n) for h, n in session.execute(query)]


def suite_runs(session: Session, suite: Suite) -> tuple[list[Run], list[str], list[str]]:
    """The runs of a suite's normalized envs under their current protocols, the ids of those
    envs, and the ids of the envs left out (no normalized score yet)."""
    scored = [e for e in suite.envs if e.active and env_card(e).reference_values() is not None]
    unscored = [e.id for e in suite.envs if e.active and e not in scored]
    runs: list[Run] = []
    for env in scored:
        runs += env_runs(session, env)
    return runs, [e.id for e in scored], unscored


def method_runs(session: Session, method: Method) -> list[Run]:
    """Every run of a method, on any environment (current protocols only)."""
    ids = select(Result.env_id).where(Result.method_id == method.id).distinct()
    envs = {e.id: e for e in session.scalars(select(Environment).where(Environment.id.in_(ids)))}
    current = [
        (Result.env_id == e.id) & (Result.protocol_hash == e.protocol_hash) for e in envs.values()
    ]
    if not current:
        return []
    condition = (Result.method_id == method.id) & or_(*current)
    return _runs(session, condition)


def methods_with_results():
    """The methods that have at least one stored result, by name (a method whose only
    submission is still queued or failed verification is not listed)."""
    has_result = select(Result.id).where(Result.method_id == Method.id, listed()).exists()
    return select(Method).where(has_result).order_by(Method.name)
