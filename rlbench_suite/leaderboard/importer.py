"""``rlbench leaderboard import``: Result files (e.g. the zoo's) into the database."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from rlbench_suite.core.baseline_files import resolve_baseline
from rlbench_suite.leaderboard.artifacts import PolicyMetadata, submit_policy
from rlbench_suite.leaderboard.models import Result, Submission, VerificationJob
from rlbench_suite.leaderboard.reconcile import unlink_and_delete
from rlbench_suite.leaderboard.store import (
    RefusedResult,
    accept_result,
    default_method_name,
    method_named,
)

ZOO_FAMILIES = {
    "ppo": "policy-gradient",
    "a2c": "policy-gradient",
    "trpo": "policy-gradient",
    "fast_ppo": "policy-gradient",
    "maskable_ppo": "policy-gradient",
    "recurrent_ppo": "policy-gradient",
    "shared_ppo": "policy-gradient",
    "self_play": "policy-gradient",
    "sac": "off-policy actor-critic",
    "td3": "off-policy actor-critic",
    "ddpg": "off-policy actor-critic",
    "tqc": "off-policy actor-critic",
    "dqn": "value-based",
    "qrdqn": "value-based",
    "bc": "offline",
    "iql": "offline",
    "td3bc": "offline",
    "cql": "offline",
}
"""Algorithm family of the zoo's algorithms, for the ranking's family filter."""
SINGLE_FILE = {
    "fast_ppo": "the suite's single-file PPO for the batched backends",
    "bc": "the suite's single-file behaviour cloning (CORL's shape)",
    "iql": "the suite's single-file IQL (CORL's shape)",
    "td3bc": "the suite's single-file TD3+BC (CORL's shape)",
    "cql": "the suite's single-file CQL (CORL's shape)",
}
"""The zoo's algorithms that are not Stable-Baselines3 (or sb3-contrib) ones."""


@dataclass
class ImportReport:
    """What an import did, file by file (``queued``: the files whose shipped ONNX policy was
    queued for verification)."""

    added: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    queued: list[str] = field(default_factory=list)
    superseded: int = 0


def result_files(paths: Iterable[Path]) -> list[Path]:
    """The files named, and every ``result.json``/``*.json`` Result under folders named."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(path.rglob("result.json")) or sorted(path.rglob("*.json"))
        else:
            files.append(path)
    return files


def _zoo_method_fields(policy: dict) -> dict:
    if policy.get("kind") != "baseline":
        return {}
    algo = default_method_name(policy).removeprefix("zoo-")
    return {
        "family": ZOO_FAMILIES.get(algo),
        "authors": "rlbench-suite zoo",
        "description": f"The suite's reference {algo} baseline "
        f"({SINGLE_FILE.get(algo, 'Stable-Baselines3 or sb3-contrib')}, with the zoo's "
        "hyperparameters in baselines/hyperparams), one result per training seed.",
    }


def shipped_policy(policy: dict) -> Path | None:
    """The ONNX file a ``baseline:`` result was evaluated with, where it is shipped and is
    the same file (its SHA-256 is the result's ``artifact_sha256``); None otherwise."""
    if policy.get("kind") != "baseline" or not policy.get("artifact_sha256"):
        return None
    try:
        path = resolve_baseline(str(policy.get("spec", "")).removeprefix("baseline:"))
    except (ValueError, FileNotFoundError, LookupError):
        return None
    if path.suffix != ".onnx":
        return None
    same = hashlib.sha256(path.read_bytes()).hexdigest() == policy["artifact_sha256"]
    return path if same else None


def queue_verification(session: Session, row: Result, onnx: Path) -> bool:
    """Queue the server's re-evaluation of a stored result's shipped ONNX policy, as its
    method's submission (the worker then marks the result verified if it reproduces it);
    False where that artifact already has a job on this env."""
    artifact = row.artifact_sha256
    already = session.scalar(
        select(VerificationJob.id)
        .join(Submission, VerificationJob.submission_id == Submission.id)
        .where(Submission.env_id == row.env_id, Submission.artifact_sha256 == artifact)
        .limit(1)
    )
    if already is not None:
        return False
    sidecar = onnx.with_name(onnx.name + ".meta.json")
    meta = json.loads(sidecar.read_text(encoding="utf-8")) if sidecar.is_file() else {}
    metadata = PolicyMetadata(
        env_id=row.env_id,
        method=row.method.name,
        training_budget_steps=row.training_budget_steps,
        train_seeds=meta.get("train_seeds", []),
        wrappers=meta.get("wrappers", []),
    )
    submit_policy(session, onnx.read_bytes(), onnx.name, metadata, token_id=None)
    return True


def supersede(session: Session, row: Result) -> int:
    """Delete the results an imported ``row`` replaces (a zoo seed trained again): those its
    method imported earlier on its env under its policy name, and the results of their
    policy artifacts under that method (their verifications); how many were deleted."""
    imported = (
        select(Result)
        .join(Submission, Result.submission_id == Submission.id)
        .where(
            Result.env_id == row.env_id,
            Result.method_id == row.method_id,
            Result.policy_name == row.policy_name,
            Result.id != row.id,
            Submission.kind == "import",
        )
    )
    old = list(session.scalars(imported))
    artifacts = {r.artifact_sha256 for r in old if r.artifact_sha256} - {row.artifact_sha256}
    if artifacts:
        seen = [row.id, *(r.id for r in old)]
        old += session.scalars(
            select(Result).where(
                Result.env_id == row.env_id,
                Result.method_id == row.method_id,
                Result.artifact_sha256.in_(artifacts),
                Result.id.not_in(seen),
            )
        )
    return unlink_and_delete(session, old)


def import_files(
    factory: sessionmaker[Session],
    files: Iterable[Path],
    method: str | None = None,
    verify: bool = False,
    replace: bool = False,
) -> ImportReport:
    """Import each file in its own transaction; a refused file does not stop the others.
    ``verify``: also queue the verification of each result's shipped ONNX policy;
    ``replace``: a new result deletes those it supersedes (:func:`supersede`), as seeding
    the zoo does, so a retrained seed is not ranked twice."""
    report = ImportReport()
    for path in files:
        name = str(path)
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            report.refused.append((name, f"not a readable JSON file ({exc})"))
            continue
        try:
            with factory.begin() as session:
                if method is None and isinstance(data, dict):
                    policy = data.get("policy") if isinstance(data.get("policy"), dict) else {}
                    method_named(session, default_method_name(policy), **_zoo_method_fields(policy))
                stored = accept_result(session, data, method_name=method, kind="import")
                if replace and stored.created:
                    report.superseded += supersede(session, stored.result)
                onnx = shipped_policy(stored.result.document["policy"]) if verify else None
                unverified = onnx is not None and stored.result.verification != "verified"
                if unverified and queue_verification(session, stored.result, onnx):
                    report.queued.append(name)
        except RefusedResult as exc:
            report.refused.append((name, str(exc)))
            continue
        (report.added if stored.created else report.existing).append(name)
    return report
