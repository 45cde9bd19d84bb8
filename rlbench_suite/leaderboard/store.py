"""Accepting a Result: check it against the card it claims, then store it exactly once."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from rlbench_suite.core.protocol import canonical_hash
from rlbench_suite.core.result import Result as ResultDoc
from rlbench_suite.core.result import ResultError, result_from_data
from rlbench_suite.core.scoring import primary_values
from rlbench_suite.core.summary import summary_differences
from rlbench_suite.leaderboard.methods import creator, owned_by
from rlbench_suite.leaderboard.models import (
    Environment,
    Method,
    Result,
    Submission,
    VerificationJob,
    listed,
    utcnow,
)
from rlbench_suite.leaderboard.policy_record import wrapper_problems
from rlbench_suite.leaderboard.queries import env_card
from rlbench_suite.leaderboard.reconcile import first_rerun, reconcile
from rlbench_suite.leaderboard.scores import score_columns

SERVER_FIELDS = ("verification",)
"""Fields of a Result that the server sets, whatever the submitter sent."""
METHOD_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 _.+()/-]{0,99}$"


class RefusedResult(ValueError):
    """A Result the leaderboard does not accept; the message says what differs or is wrong."""


@dataclass(frozen=True)
class Stored:
    """The outcome of :func:`store_result`: the row, and whether it was new."""

    result: Result
    created: bool


def parse_result(data: Any) -> ResultDoc:
    """Validate ``data`` (a decoded JSON object) as a Result of the supported schema; the
    ``verification`` it claims is ignored (the server sets it)."""
    if isinstance(data, dict):
        data = {**data, "verification": "self-reported"}
    try:
        return result_from_data(data, "submitted result")
    except ResultError as exc:
        raise RefusedResult(str(exc)) from None


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def protocol_differences(claimed: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """Field-by-field differences between a result's protocol and the card's."""
    lines = []
    for key in sorted(set(claimed) | set(expected)):
        mine, theirs = claimed.get(key), expected.get(key)
        if mine == theirs:
            continue
        if key == "seeds" and isinstance(mine, list) and isinstance(theirs, list):
            lines.append(
                f"seeds: {len(mine)} from {min(mine)} vs the card's {len(theirs)} "
                f"from {min(theirs)}"
            )
        else:
            lines.append(f"{key}: {_short(mine)} vs the card's {_short(theirs)}")
    return lines


def check_against_card(doc: ResultDoc, env: Environment | None, known: list[str]) -> None:
    """Refuse ``doc`` unless its env is active and its spec and protocol are the card's."""
    if env is None or not env.active:
        close = difflib.get_close_matches(doc.env_id, known, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        state = "is no longer accepted" if env is not None else "is not on this leaderboard"
        raise RefusedResult(f"environment {doc.env_id!r} {state}{hint}")
    if doc.spec_hash != env.spec_hash:
        raise RefusedResult(
            f"spec_hash {doc.spec_hash[:12]}... differs from the card's {env.spec_hash[:12]}... "
            f"for {env.id}: the result was evaluated on another definition of the environment "
            "(entry point, arguments, step limit or wrappers); re-evaluate with this suite version"
        )
    if doc.protocol_hash != env.protocol_hash:
        differences = protocol_differences(doc.protocol.model_dump(mode="json"), env.protocol)
        raise RefusedResult(
            f"protocol_hash {doc.protocol_hash[:12]}... differs from the card's protocol "
            f"{env.protocol_hash[:12]}... for {env.id}: " + "; ".join(differences)
        )


def default_method_name(policy: dict[str, Any]) -> str:
    """The method a result belongs to when none is named: the zoo's ``zoo-<algo>`` for
    ``baseline:`` policies, else the policy's name without a trailing seed."""
    spec = str(policy.get("spec") or "")
    if policy.get("kind") == "baseline" and spec.count("/") >= 1:
        return "zoo-" + spec.split(":", 1)[-1].split("/")[1]
    name = str(policy.get("name") or policy.get("kind") or "unnamed")
    name = re.sub(r"[/_-]seed[-_]?\d+$", "", name)
    return re.sub(r"[^A-Za-z0-9 _.+()/-]", "_", name).strip(" _.+()/-")[:100] or "unnamed"


def check_method_name(name: str) -> str:
    """``name`` if it is an accepted method name, else a RefusedResult saying what is."""
    if not re.match(METHOD_NAME_PATTERN, name):
        raise RefusedResult(
            f"method name {name!r} is not accepted: 1-100 letters, digits, spaces and _.+()/-"
        )
    return name


def method_named(session: Session, name: str, **fields: Any) -> Method:
    """The method called ``name``, created (with ``fields``) if new; safe under concurrency."""
    check_method_name(name)
    method = session.scalar(select(Method).where(Method.name == name))
    if method is not None:
        return method
    try:
        with session.begin_nested():
            method = Method(name=name, **fields)
            session.add(method)
    except IntegrityError:  # created by a concurrent request
        method = session.scalar(select(Method).where(Method.name == name))
        assert method is not None
    return method


def check_artifact_owner(session: Session, env_id: str, artifact: str | None, method: str) -> None:
    """Refuse a policy artifact that already has results on ``env_id`` under another method:
    a policy is one run of one method (the rankings count each artifact once)."""
    if not artifact:
        return
    owner = session.execute(
        select(Method.name, Result.id)
        .join(Result, Result.method_id == Method.id)
        .where(Result.env_id == env_id, Result.artifact_sha256 == artifact, Method.name != method)
        .order_by(Result.id)
        .limit(1)
    ).first()
    if owner is not None:
        raise RefusedResult(
            f"policy artifact {artifact[:12]}... already has result {owner[1]} on {env_id} under "
            f"method {owner[0]!r}: a policy is ranked under one method; submit it as {owner[0]!r} "
            "(its self-reported results are then verified) or submit another policy"
        )
    pending = session.scalar(  # submitted under another method, its verification not failed
        select(Method.name)
        .join(Submission, Submission.method_id == Method.id)
        .join(VerificationJob, VerificationJob.submission_id == Submission.id)
        .where(
            Submission.env_id == env_id,
            Submission.artifact_sha256 == artifact,
            Method.name != method,
            VerificationJob.state != "failed",
        )
        .limit(1)
    )
    if pending is not None:
        raise RefusedResult(
            f"policy artifact {artifact[:12]}... is already submitted on {env_id} under method "
            f"{pending!r} (its verification is queued or done): a policy is ranked under one "
            f"method; submit it as {pending!r} or submit another policy"
        )


def check_may_add(
    session: Session, name: str, token_id: int | None, env_id: str, artifact: str | None
) -> None:
    """Refuse a token adding a run to a method it may not (``methods.owned_by``); anyone may
    submit an artifact the method already has on ``env_id`` (that verifies, adds no run)."""
    method = session.scalar(select(Method).where(Method.name == name))
    if method is None or owned_by(session, method, token_id):
        return
    if artifact:
        known = select(Result.id).where(
            Result.method_id == method.id,
            Result.env_id == env_id,
            Result.artifact_sha256 == artifact,
        )
        if session.scalar(known.limit(1)) is not None:
            return
    first = creator(session, method)
    made_by = "an import on the server" if first and first.kind == "import" else "another token"
    raise RefusedResult(
        f"method {name!r} was created by {made_by}: only the token that created a method adds "
        "runs to it; submit under a method name of your own (submitting a policy artifact the "
        "method already has, to verify it, is open to anyone)"
    )


def same_run(session: Session, doc: ResultDoc, method: str) -> Result | None:
    """A stored result of ``method`` that is ``doc``'s run again: the same env, protocol and
    episodes (returns, lengths, successes), and the same policy name or no artifact (a copy
    with another ``wall_time_s`` or provenance is not another run)."""
    mean = float(sum(doc.returns) / len(doc.returns))
    candidates = session.scalars(
        select(Result)
        .join(Method, Result.method_id == Method.id)
        .where(
            Method.name == method,
            Result.env_id == doc.env_id,
            Result.protocol_hash == doc.protocol_hash,
            Result.episodes == len(doc.returns),
            Result.return_mean == mean,
            listed(),  # a re-run kept as evidence is the server's run, never a submitted one
        )
    )
    name, artifact = str(doc.policy.get("name", ""))[:300], doc.policy.get("artifact_sha256")
    for row in candidates:
        data = row.document
        episodes = (data["returns"], data["lengths"], data["successes"])
        if episodes != (doc.returns, doc.lengths, doc.successes):
            continue
        if not artifact or row.policy_name == name:
            return row
    return None


def run_sha256(method_id: int, document: dict[str, Any]) -> str:
    """The identity of a self-reported run (a Result's JSON): its method, env, protocol,
    episodes, artifact, and policy name where it has an artifact. Equal keys are always the
    same run by :func:`same_run`, so the unique ``results.run_sha256`` never refuses a run
    that :func:`same_run` calls new; it stores a run posted by many requests at once once."""
    policy = document.get("policy") or {}
    artifact = policy.get("artifact_sha256")
    return canonical_hash(
        {
            "method": method_id,
            "env": document["env_id"],
            "protocol": document["protocol_hash"],
            "episodes": [document["returns"], document["lengths"], document["successes"]],
            "artifact": artifact,
            "policy": str(policy.get("name", ""))[:300] if artifact else None,
        }
    )


def document_hash(doc: ResultDoc) -> str:
    """The identity of a submitted result: its canonical JSON without server-set fields."""
    data = doc.model_dump(mode="json")
    for key in SERVER_FIELDS:
        data.pop(key, None)
    return canonical_hash(data)


def store_result(
    session: Session,
    doc: ResultDoc,
    *,
    method: Method,
    verification: str = "self-reported",
    submission: Submission | None = None,
    run_key: str | None = None,
) -> Stored:
    """Store ``doc`` (already checked) with the verification level the server decided.

    The same result (same canonical JSON), or the same run (``run_key``, a self-reported
    result's :func:`run_sha256`), is stored once: a second submission, even one at the same
    moment, returns the first row with ``created=False``.
    """
    digest = document_hash(doc)
    existing = session.scalar(select(Result).where(Result.document_sha256 == digest))
    if existing is not None:
        return Stored(existing, False)
    env = session.get(Environment, doc.env_id)
    assert env is not None
    values = primary_values(env.primary_metric, doc.returns, doc.successes)
    document = doc.model_copy(update={"verification": verification}).model_dump(mode="json")
    row = Result(
        document_sha256=digest,
        run_sha256=run_key,
        env_id=doc.env_id,
        spec_hash=doc.spec_hash,
        protocol_hash=doc.protocol_hash,
        artifact_sha256=doc.policy.get("artifact_sha256"),
        training_budget_steps=doc.training_budget_steps,
        verification=verification,
        verified_at=utcnow() if verification == "verified" else None,
        method_id=method.id,
        submission_id=submission.id if submission is not None else None,
        policy_name=str(doc.policy.get("name", ""))[:300],
        episodes=len(doc.returns),
        return_mean=float(sum(doc.returns) / len(doc.returns)),
        primary_mean=float(values.mean()),
        document=document,
        **score_columns(env_card(env), document),
    )
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:  # the same result or run stored by a concurrent request
        same = Result.document_sha256 == digest
        if run_key is not None:
            same = same | (Result.run_sha256 == run_key)
        existing = session.scalar(select(Result).where(same).order_by(Result.id).limit(1))
        if existing is None:
            raise
        return Stored(existing, False)
    return Stored(row, True)


def accept_result(
    session: Session,
    data: Any,
    *,
    method_name: str | None = None,
    kind: str = "result",
    token_id: int | None = None,
) -> Stored:
    """Validate ``data`` against its card and store it as a self-reported result; one whose
    policy artifact the server already re-ran is compared with that re-run at once
    (``reconcile``: verified if reproduced, else stored with the differences)."""
    doc = parse_result(data)
    problem = wrapper_problems(doc.policy.get("wrappers", []))
    if problem is not None:  # the same rule as a policy submission's metadata
        raise RefusedResult(f"invalid policy record: {problem}")
    env = session.get(Environment, doc.env_id)
    known = list(session.scalars(select(Environment.id).where(Environment.active)))
    check_against_card(doc, env, known)
    wrong = summary_differences(env_card(env), doc)
    if wrong:
        raise RefusedResult(
            "the result's figures do not match its own episodes: " + "; ".join(wrong[:5])
        )
    name = check_method_name(method_name or default_method_name(doc.policy))
    digest = document_hash(doc)
    existing = session.scalar(select(Result).where(Result.document_sha256 == digest))
    if existing is None:
        existing = same_run(session, doc, name)
    if existing is not None:  # the same result or run again: nothing new, no method created
        return Stored(existing, False)
    artifact = doc.policy.get("artifact_sha256")
    check_artifact_owner(session, doc.env_id, artifact, name)
    check_may_add(session, name, token_id, doc.env_id, artifact)
    method = method_named(session, name)
    submission = Submission(
        kind=kind,
        token_id=token_id,
        method_id=method.id,
        env_id=doc.env_id,
        artifact_sha256=None,
        metadata_={},
    )
    session.add(submission)
    session.flush()
    run_key = run_sha256(method.id, doc.model_dump(mode="json"))
    stored = store_result(session, doc, method=method, submission=submission, run_key=run_key)
    if not stored.created:  # a concurrent request stored the same result first
        session.delete(submission)
        return stored
    # a worker storing a re-run of this env at the same moment is not missed: the insert
    # above bumped (and holds) the env's ranking_generation row, as the worker's does, so
    # whichever transaction comes second sees the other's row
    rerun = first_rerun(session, stored.result)
    if rerun is not None:  # its artifact was re-run already: compared now, as by the worker
        reconcile(session, *rerun, [stored.result])
    return stored
