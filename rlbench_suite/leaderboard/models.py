"""The leaderboard's tables (SQLAlchemy 2 declarative models).

Environments and suites mirror the cards (synced at start); methods, submissions, results,
policy artifacts, API tokens and verification jobs are the leaderboard's own. A result's
whole Result JSON is stored in ``Result.document``; the columns beside it are copies of the
fields the site filters and sorts by, indexed, and the run's scores under its card
(``leaderboard.scores``), so rankings never parse the JSON. Every change to results, methods
or environments bumps the environments' ``ranking_generation`` (the session events at the
end), which keys the rankings cached in ``leaderboard.ranking_cache``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    ColumnElement,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    event,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import (
    DeclarativeBase,
    Mapped,
    ORMExecuteState,
    Session,
    mapped_column,
    relationship,
)

VERIFICATION_LEVELS = ("self-reported", "verified")
MAX_ROW_ID = 2**31 - 1
"""The largest id an ``Integer`` primary key holds (PostgreSQL's ``integer``); larger ids
and offsets name nothing and are refused before they reach the database."""
JOB_STATES = ("queued", "running", "done", "failed")


def utcnow() -> dt.datetime:
    """Now, in UTC (timezone-aware)."""
    return dt.datetime.now(dt.UTC)


class Base(DeclarativeBase):
    """The leaderboard's metadata (alembic's target)."""

    type_annotation_map = {dict[str, Any]: JSON, dt.datetime: DateTime(timezone=True)}


suite_envs = Table(
    "suite_envs",
    Base.metadata,
    Column("suite", String(100), ForeignKey("suites.name", ondelete="CASCADE"), primary_key=True),
    Column(
        "env_id", String(200), ForeignKey("environments.id", ondelete="CASCADE"), primary_key=True
    ),
)


class Environment(Base):
    """One card, as synced at start: what pages show and what submissions are checked against."""

    __tablename__ = "environments"

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    family: Mapped[str] = mapped_column(String(40))
    primary_metric: Mapped[str] = mapped_column(String(40))
    description: Mapped[str] = mapped_column(Text)
    card: Mapped[dict[str, Any]] = mapped_column(JSON)
    spec_hash: Mapped[str] = mapped_column(String(64))
    protocol_hash: Mapped[str] = mapped_column(String(64))
    protocol: Mapped[dict[str, Any]] = mapped_column(JSON)
    random_score: Mapped[float | None] = mapped_column(Float)
    expert_score: Mapped[float | None] = mapped_column(Float)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    ranking_generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    synced_at: Mapped[dt.datetime] = mapped_column(default=utcnow)

    suites: Mapped[list[Suite]] = relationship(secondary=suite_envs, back_populates="envs")


class Suite(Base):
    """A suite named by cards' ``suites`` lists."""

    __tablename__ = "suites"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    envs: Mapped[list[Environment]] = relationship(
        secondary=suite_envs, back_populates="suites", order_by=Environment.id
    )


class Method(Base):
    """A method (algorithm and its authors) that results belong to."""

    __tablename__ = "methods"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    family: Mapped[str | None] = mapped_column(String(40), index=True)
    authors: Mapped[str | None] = mapped_column(String(500))
    paper_url: Mapped[str | None] = mapped_column(String(500))
    code_url: Mapped[str | None] = mapped_column(String(500))
    description: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class ApiToken(Base):
    """An API token: only its SHA-256 is kept; a revoked token is refused."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[dt.datetime | None] = mapped_column()
    last_used_at: Mapped[dt.datetime | None] = mapped_column()


class PolicyArtifact(Base):
    """A submitted ONNX policy, content-addressed by the SHA-256 of its bytes."""

    __tablename__ = "policy_artifacts"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(Integer)
    filename: Mapped[str] = mapped_column(String(200))
    content: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class Submission(Base):
    """One accepted POST: a Result, or an ONNX policy to verify, by a token."""

    __tablename__ = "submissions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))  # "result" | "policy" | "import"
    token_id: Mapped[int | None] = mapped_column(ForeignKey("api_tokens.id"))
    method_id: Mapped[int] = mapped_column(ForeignKey("methods.id"))
    env_id: Mapped[str] = mapped_column(ForeignKey("environments.id"))
    artifact_sha256: Mapped[str | None] = mapped_column(ForeignKey("policy_artifacts.sha256"))
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)

    method: Mapped[Method] = relationship()


class Result(Base):
    """A stored Result: the JSON whole, and the fields it is ranked and filtered by."""

    __tablename__ = "results"
    __table_args__ = (Index("ix_results_env_protocol", "env_id", "protocol_hash"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    document_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    # the run's identity (``store.run_sha256``) on self-reported rows: one row per run even
    # when many requests post it at once; NULL on the worker's re-runs
    run_sha256: Mapped[str | None] = mapped_column(String(64), unique=True, index=True)
    env_id: Mapped[str] = mapped_column(ForeignKey("environments.id"), index=True)
    spec_hash: Mapped[str] = mapped_column(String(64))
    protocol_hash: Mapped[str] = mapped_column(String(64), index=True)
    artifact_sha256: Mapped[str | None] = mapped_column(String(64), index=True)
    training_budget_steps: Mapped[int | None] = mapped_column(Integer, index=True)
    verification: Mapped[str] = mapped_column(String(20), index=True)
    method_id: Mapped[int] = mapped_column(ForeignKey("methods.id"), index=True)
    submission_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id"))
    policy_name: Mapped[str] = mapped_column(String(300))
    episodes: Mapped[int] = mapped_column(Integer)
    return_mean: Mapped[float] = mapped_column(Float)
    primary_mean: Mapped[float] = mapped_column(Float)
    score: Mapped[float | None] = mapped_column(Float)
    episode_scores: Mapped[list[float] | None] = mapped_column(JSON, deferred=True)
    budget_class: Mapped[str | None] = mapped_column(String(20), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow, index=True)
    # when it became verified: stored verified (a re-run), or reproduced by the server's
    # re-run (``reconcile``); None while self-reported. Lists of verified results go by it.
    verified_at: Mapped[dt.datetime | None] = mapped_column(index=True)
    document: Mapped[dict[str, Any]] = mapped_column(JSON)
    # on the server's re-run of a policy artifact that reproduced a self-reported result: that
    # result's id. The re-run is then the verification's evidence (its page, its command), not
    # a second row: the site lists, counts and ranks the verified self-reported row (``listed``).
    # No foreign-key constraint: SQLite could add or drop one only by copying the table, which
    # its foreign keys refuse; ``importer.supersede``, the one place results are deleted, unlinks
    verifies_result_id: Mapped[int | None] = mapped_column(Integer, index=True)

    method: Mapped[Method] = relationship()


def listed() -> ColumnElement[bool]:
    """The results the site lists, counts and ranks: every one but the server's re-runs kept
    as the evidence of a self-reported result they verified (``Result.verifies_result_id``)."""
    return Result.verifies_result_id.is_(None)


class VerificationJob(Base):
    """A queued re-evaluation of a submitted policy: a row, so the queue survives restarts."""

    __tablename__ = "verification_jobs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id"), index=True)
    state: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    result_id: Mapped[int | None] = mapped_column(ForeignKey("results.id"))
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    started_at: Mapped[dt.datetime | None] = mapped_column()
    # the worker that claimed the job, and when it last said it is still running it: a job
    # is queued again only when its heartbeat is stale (``worker.requeue_stale``)
    claimed_by: Mapped[str | None] = mapped_column(String(100))
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column()
    finished_at: Mapped[dt.datetime | None] = mapped_column()


class RateHit(Base):
    """One accepted submission, by token: the rate limit counts these (shared by every server
    process on the database)."""

    __tablename__ = "rate_hits"
    __table_args__ = (Index("ix_rate_hits_token_at", "token_id", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"))
    at: Mapped[float] = mapped_column(Float)  # seconds since the epoch


# -- keeping cached rankings honest ---------------------------------------------------------

_ALL = "*"


def _touched_envs(session: Session) -> set[str]:
    """The environments whose rankings this flush changes (``_ALL``: every one)."""
    touched: set[str] = set()
    for obj in (*session.new, *session.dirty, *session.deleted):
        if isinstance(obj, Result):
            touched.add(obj.env_id)
        elif isinstance(obj, Method):  # pages list every method's family
            touched.add(_ALL)
        elif isinstance(obj, Environment) and obj not in session.new:
            touched.add(obj.id)
    return touched


def bump_generations(connection: Connection, env_ids: set[str]) -> None:
    """Invalidate the cached rankings of ``env_ids`` (``"*"`` among them: of every env)."""
    table = Environment.__table__
    statement = table.update().values(ranking_generation=table.c.ranking_generation + 1)
    if _ALL not in env_ids:
        statement = statement.where(table.c.id.in_(sorted(env_ids)))
    connection.execute(statement)


@event.listens_for(Session, "after_flush")
def _after_flush(session: Session, _context: Any) -> None:
    touched = _touched_envs(session)
    if touched:
        bump_generations(session.connection(), touched)


@event.listens_for(Session, "do_orm_execute")
def _bulk_statements(state: ORMExecuteState) -> None:
    """ORM-enabled UPDATE/DELETE statements on results or methods bypass the flush."""
    mapper = state.bind_mapper
    bulk = state.is_update or state.is_delete
    if bulk and mapper is not None and mapper.class_ in (Result, Method):
        bump_generations(state.session.connection(), {_ALL})
