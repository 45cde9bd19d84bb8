"""Verification: queued ONNX submissions re-evaluated by the harness in a limited process.

Jobs are rows (``verification_jobs``): a job is claimed by switching it from ``queued`` to
``running`` in one UPDATE, so two workers never take the same one, and a job left
``running`` by a worker that died is queued again by :func:`requeue_stale`, so the queue
survives restarts. Each job runs ``worker_eval`` in a child process under CPU-time
(RLIMIT_CPU), memory (RLIMIT_AS) and wall-time limits; its Result is checked against the
card like any submission and stored as ``verified``.
"""

from __future__ import annotations

import datetime as dt
import json
import resource
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from rlbench_suite.core.result import Result as ResultDoc
from rlbench_suite.leaderboard.models import (
    Environment,
    PolicyArtifact,
    Result,
    Submission,
    VerificationJob,
    utcnow,
)
from rlbench_suite.leaderboard.store import (
    RefusedResult,
    check_against_card,
    parse_result,
    store_result,
)
from rlbench_suite.leaderboard.worker_limits import WorkerLimits

MAX_ATTEMPTS = 3
MEMORY_SIGNS = (
    "MemoryError",
    "bad_alloc",
    "Failed to allocate",
    "failed to map segment",
    "Cannot allocate memory",
)
"""What a child stopped by RLIMIT_AS says on stderr (Python, C++, the dynamic loader)."""


def claim_next(factory: sessionmaker[Session]) -> int | None:
    """Take the oldest queued job (queued -> running); None when there is none."""
    while True:
        with factory.begin() as session:
            job_id = session.scalar(
                select(VerificationJob.id)
                .where(VerificationJob.state == "queued")
                .order_by(VerificationJob.id)
                .limit(1)
            )
            if job_id is None:
                return None
            taken = session.execute(
                update(VerificationJob)
                .where(VerificationJob.id == job_id, VerificationJob.state == "queued")
                .values(state="running", started_at=utcnow(), attempts=VerificationJob.attempts + 1)
            )
            if taken.rowcount == 1:
                return job_id
        # another worker took it between the two statements: look again


def requeue_stale(factory: sessionmaker[Session], older_than: dt.timedelta) -> int:
    """Queue again the jobs left running longer than ``older_than`` (their worker died);
    a job that has used up its attempts fails instead. Return how many were queued."""
    cutoff = utcnow() - older_than
    with factory.begin() as session:
        stale = session.scalars(
            select(VerificationJob).where(
                VerificationJob.state == "running", VerificationJob.started_at < cutoff
            )
        )
        queued = 0
        for job in stale:
            if job.attempts >= MAX_ATTEMPTS:
                job.state, job.error = "failed", f"worker lost {job.attempts} times"
                job.finished_at = utcnow()
            else:
                job.state, queued = "queued", queued + 1
        return queued


def _limit(limits: WorkerLimits):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))

    return apply


def _failure(code: int, stderr: str, limits: WorkerLimits) -> str:
    if code in (-signal.SIGXCPU, -signal.SIGKILL) or "SIGXCPU" in stderr:
        return f"stopped: CPU-time limit of {limits.cpu_s} s exceeded"
    if any(sign in stderr for sign in MEMORY_SIGNS):
        return f"stopped: memory limit of {limits.memory_gb:g} GiB exceeded"
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return f"evaluation failed (exit {code}): {lines[-1][:500] if lines else 'no message'}"


def evaluate_submission(
    content: bytes, env_id: str, metadata: dict, limits: WorkerLimits
) -> tuple[dict | None, str | None]:
    """Run the child on ``content``; the Result JSON, or why there is none."""
    with tempfile.TemporaryDirectory(prefix="rlbench-verify-") as folder:
        policy = Path(folder) / "policy.onnx"
        policy.write_bytes(content)
        sidecar = {
            "schema_version": 1,
            "name": metadata.get("method"),
            "env_id": env_id,
            "train_seeds": metadata.get("train_seeds", []),
            "training_budget_steps": metadata.get("training_budget_steps"),
            "wrappers": metadata.get("wrappers", []),  # the suite's own, checked on submission
        }
        policy.with_name("policy.onnx.meta.json").write_text(json.dumps(sidecar))
        out = Path(folder) / "result.json"
        command = [
            sys.executable,
            "-m",
            "rlbench_suite.leaderboard.worker_eval",
            str(policy),
            env_id,
            str(out),
        ]
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                cwd=folder,
                timeout=limits.wall_s,
                preexec_fn=_limit(limits),
            )
        except subprocess.TimeoutExpired:
            return None, f"stopped: wall-time limit of {limits.wall_s:g} s exceeded"
        if done.returncode != 0 or not out.is_file():
            return None, _failure(done.returncode, done.stderr, limits)
        return json.loads(out.read_text()), None


def eval_command(env_id: str, artifact_sha256: str) -> list[str]:
    """The command that re-runs a verification: ``rlbench eval`` of the policy artifact
    (saved under its SHA-256) on the card's protocol, on one worker as the server ran it."""
    return ["rlbench", "eval", env_id, "--policy", f"onnx:{artifact_sha256}.onnx", "--workers", "1"]


def confirm_self_reported(session: Session, verified: ResultDoc) -> dict[str, list[str]]:
    """Mark as verified the self-reported results of the same policy artifact, environment
    and protocol whose episodes the re-evaluation reproduced exactly (as ``rlbench
    reproduce`` compares); return the differences of those it did not, by result id."""
    from rlbench_suite.evaluation.reproduce import compare_runs

    artifact = verified.policy.get("artifact_sha256")
    if not artifact:
        return {}
    rows = session.scalars(
        select(Result).where(
            Result.env_id == verified.env_id,
            Result.protocol_hash == verified.protocol_hash,
            Result.artifact_sha256 == artifact,
            Result.verification == "self-reported",
        )
    )
    disagreements = {}
    for row in rows:
        claimed = ResultDoc.model_validate(row.document)
        differences = compare_runs(claimed, verified, policy_keys=("artifact_sha256",))
        if differences:
            disagreements[str(row.id)] = differences[:5]
        else:
            row.verification = "verified"
            row.document = {**row.document, "verification": "verified"}
    return disagreements


def run_job(factory: sessionmaker[Session], job_id: int, limits: WorkerLimits) -> str:
    """Verify one claimed job; return its final state (``done`` or ``failed``)."""
    with factory() as session:
        job = session.get(VerificationJob, job_id)
        submission = session.get(Submission, job.submission_id)
        artifact = session.get(PolicyArtifact, submission.artifact_sha256)
        content, env_id, metadata = artifact.content, submission.env_id, submission.metadata_
    data, error = evaluate_submission(content, env_id, metadata, limits)
    if data is not None:  # the child's command names its temporary files: say the user's
        data["provenance"]["command"] = eval_command(env_id, submission.artifact_sha256)
    with factory.begin() as session:
        job = session.get(VerificationJob, job_id)
        submission = session.get(Submission, job.submission_id)
        if data is not None:
            try:
                doc = parse_result(data)
                known = list(session.scalars(select(Environment.id)))
                check_against_card(doc, session.get(Environment, env_id), known)
                stored = store_result(
                    session,
                    doc,
                    method=submission.method,
                    verification="verified",
                    submission=submission,
                )
                job.result_id = stored.result.id
                disagreements = confirm_self_reported(session, doc)
                if disagreements:
                    submission.metadata_ = {**submission.metadata_, "disagreements": disagreements}
            except RefusedResult as exc:
                error = f"the re-evaluation's result was refused: {exc}"
        job.state = "failed" if error else "done"
        job.error = error
        job.finished_at = utcnow()
        return job.state


def run_pending(
    factory: sessionmaker[Session], limits: WorkerLimits | None = None, most: int | None = None
) -> list[tuple[int, str]]:
    """Verify queued jobs until none is left (or ``most`` were run): (job id, state) each."""
    limits = limits or WorkerLimits()
    requeue_stale(factory, dt.timedelta(seconds=2 * limits.wall_s))
    ran = []
    while most is None or len(ran) < most:
        job_id = claim_next(factory)
        if job_id is None:
            break
        try:
            ran.append((job_id, run_job(factory, job_id, limits)))
        except BaseException:  # stopped mid-job (SIGTERM, Ctrl-C): the job goes back to the queue
            release(factory, job_id)
            raise
    return ran


def release(factory: sessionmaker[Session], job_id: int) -> None:
    """Put a claimed job back in the queue (its attempt still counts)."""
    with factory.begin() as session:
        session.execute(
            update(VerificationJob)
            .where(VerificationJob.id == job_id, VerificationJob.state == "running")
            .values(state="queued", started_at=None)
        )
