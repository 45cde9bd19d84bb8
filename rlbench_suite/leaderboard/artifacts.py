"""Submitted ONNX policies: checked without running them, stored by SHA-256, queued to verify."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
)
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from rlbench_suite.core.result import MAX_STEPS, validation_problems
from rlbench_suite.leaderboard.models import (
    ApiToken,
    Environment,
    Method,
    PolicyArtifact,
    Submission,
    VerificationJob,
)
from rlbench_suite.leaderboard.policy_record import MAX_WRAPPERS, SubmittedWrapper
from rlbench_suite.leaderboard.store import (
    RefusedResult,
    check_artifact_owner,
    check_may_add,
    check_method_name,
    method_named,
)

MAX_SEED = 2**63 - 1
"""The largest training seed a submission may list (a 64-bit seed, as NumPy takes)."""

ACTIVE_STATES = ("queued", "running", "done")
"""The states of a job that a new submission of the same policy joins instead of queuing
another (a failed one is tried again)."""
WAITING_STATES = ("queued", "running")
"""The states of a job that count against a token's queue limit."""

STANDARD_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")
"""Operator sets the server runs; nodes of any other domain (custom operators) are refused."""


class PolicyMetadata(BaseModel):
    """What a policy submission says about itself (the ``metadata`` form field, JSON);
    ``wrappers``: the suite's wrappers it acts through, innermost first (its sidecar's)."""

    model_config = ConfigDict(extra="forbid")

    env_id: str = Field(max_length=200)
    method: str = Field(max_length=100)
    # the Result's own bounds, checked here so a submission is refused before it is run
    training_budget_steps: int | None = Field(None, ge=0, le=MAX_STEPS)
    # a batched run lists one reset seed per env (the zoo's QuadHover: 2,048)
    train_seeds: list[Annotated[int, Field(ge=0, le=MAX_SEED)]] = Field(
        default_factory=list, max_length=10_000
    )
    description: str | None = Field(None, max_length=5000)
    wrappers: list[SubmittedWrapper] = Field(default_factory=list, max_length=MAX_WRAPPERS)


def safe_filename(name: str | None) -> str:
    """A display name for an uploaded file: its last path part, in safe characters."""
    last = re.split(r"[\\/]", name or "")[-1]
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", last).lstrip(".")[:100]
    return cleaned or "policy.onnx"


def check_onnx(content: bytes) -> None:
    """Refuse bytes that are not an ONNX model of standard operators (never executed here)."""
    import onnx

    try:
        model = onnx.load_model_from_string(content)
        onnx.checker.check_model(model)
    except Exception as exc:  # onnx raises DecodeError, ValidationError, ... on bad files
        raise RefusedResult(f"policy is not a valid ONNX model ({type(exc).__name__})") from None
    custom = sorted(
        {
            f"{n.domain}::{n.op_type}"
            for g in _graphs(model.graph)
            for n in g.node
            if n.domain not in STANDARD_DOMAINS
        }
    )
    if custom:
        raise RefusedResult(
            f"custom ONNX operators are not accepted: {', '.join(custom[:5])}; the server runs "
            "only the standard operator sets (ai.onnx, ai.onnx.ml)"
        )
    domains = sorted({o.domain for o in model.opset_import} - set(STANDARD_DOMAINS))
    if domains:
        raise RefusedResult(f"custom ONNX operator sets are not accepted: {', '.join(domains)}")


def _graphs(graph: Any) -> list[Any]:
    """A graph and its subgraphs (If/Loop/Scan bodies)."""
    found = [graph]
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.g is not None and attribute.g.node:
                found += _graphs(attribute.g)
            for sub in attribute.graphs:
                found += _graphs(sub)
    return found


def parse_metadata(text: str) -> PolicyMetadata:
    """The submission's metadata, or a RefusedResult saying what is wrong."""
    try:
        return PolicyMetadata.model_validate_json(text)
    except ValidationError as exc:
        raise RefusedResult(
            f"invalid metadata: {validation_problems(exc, whole='metadata')}"
        ) from None


class QueueFull(RefusedResult):
    """A token has as many verification jobs waiting as it may; the message names the limit
    and the count."""


@dataclass(frozen=True)
class Queued:
    """The outcome of :func:`submit_policy`: the submission and its job, and whether they are
    new (False: the same policy's job on the same env and method, queued, running or done)."""

    submission: Submission
    job: VerificationJob
    created: bool


def _store_artifact(session: Session, digest: str, content: bytes, filename: str | None) -> None:
    """Store the artifact once (a concurrent request may store it first), then hold its row
    until the transaction ends: the submissions of one policy are looked at one at a time
    (PostgreSQL: the row's lock; SQLite: the database's single writer)."""
    if session.get(PolicyArtifact, digest) is None:
        try:
            with session.begin_nested():
                session.add(
                    PolicyArtifact(
                        sha256=digest,
                        size=len(content),
                        filename=safe_filename(filename),
                        content=content,
                    )
                )
        except IntegrityError:  # stored by a concurrent request
            pass
    session.execute(
        update(PolicyArtifact)
        .where(PolicyArtifact.sha256 == digest)
        .values(size=PolicyArtifact.size),
        execution_options={"synchronize_session": False},
    )


def active_job(
    session: Session, env_id: str, digest: str, method: str
) -> tuple[Submission, VerificationJob] | None:
    """The oldest job of this policy on ``env_id`` under ``method`` that is not failed."""
    found = session.execute(
        select(Submission, VerificationJob)
        .join(VerificationJob, VerificationJob.submission_id == Submission.id)
        .join(Method, Submission.method_id == Method.id)
        .where(
            Submission.env_id == env_id,
            Submission.artifact_sha256 == digest,
            Method.name == method,
            VerificationJob.state.in_(ACTIVE_STATES),
        )
        .order_by(VerificationJob.id)
        .limit(1)
    ).first()
    return None if found is None else (found[0], found[1])


def check_queue(session: Session, token_id: int, most: int) -> None:
    """Refuse a token's new job when ``most`` of its jobs wait (queued or running). The
    token's row is written first, so one token's submissions are counted one at a time."""
    session.execute(
        update(ApiToken).where(ApiToken.id == token_id).values(last_used_at=ApiToken.last_used_at),
        execution_options={"synchronize_session": False},
    )
    waiting = session.scalar(
        select(func.count())
        .select_from(VerificationJob)
        .join(Submission, VerificationJob.submission_id == Submission.id)
        .where(Submission.token_id == token_id, VerificationJob.state.in_(WAITING_STATES))
    )
    if waiting >= most:
        raise QueueFull(
            f"queue limit: at most {most} verification jobs queued or running per token, and "
            f"this token has {waiting}; submit again when some are done "
            "(GET /api/submissions/ID says a job's state)"
        )


def submit_policy(
    session: Session,
    content: bytes,
    filename: str | None,
    metadata: PolicyMetadata,
    token_id: int | None,
    max_queued: int | None = None,
) -> Queued:
    """Store an ONNX policy (once per SHA-256) and queue its verification as a row, unless
    the same policy already has a job on that env and method that is not failed (that job
    is returned). ``max_queued``: the most jobs the token may have waiting (:class:`QueueFull`)."""
    env = session.get(Environment, metadata.env_id)
    if env is None or not env.active:
        raise RefusedResult(f"environment {metadata.env_id!r} is not on this leaderboard")
    check_onnx(content)
    digest = hashlib.sha256(content).hexdigest()
    check_artifact_owner(session, env.id, digest, metadata.method)
    check_may_add(session, check_method_name(metadata.method), token_id, env.id, digest)
    _store_artifact(session, digest, content, filename)
    existing = active_job(session, env.id, digest, metadata.method)
    if existing is not None:
        return Queued(*existing, created=False)
    if max_queued is not None and token_id is not None:
        check_queue(session, token_id, max_queued)
    method = method_named(session, metadata.method)
    submission = Submission(
        kind="policy",
        token_id=token_id,
        method_id=method.id,
        env_id=env.id,
        artifact_sha256=digest,
        metadata_=metadata.model_dump(mode="json"),
    )
    session.add(submission)
    session.flush()
    job = VerificationJob(submission_id=submission.id)
    session.add(job)
    session.flush()
    return Queued(submission, job, created=True)


def queued_jobs(session: Session) -> list[VerificationJob]:
    """The jobs waiting for the worker, oldest first."""
    return list(
        session.scalars(
            select(VerificationJob)
            .where(VerificationJob.state == "queued")
            .order_by(VerificationJob.id)
        )
    )
