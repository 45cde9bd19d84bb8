"""Verification: queued ONNX submissions re-evaluated by the harness in a limited process.

Jobs are rows (``verification_jobs``): a job is claimed by switching it from ``queued`` to
``running`` in one UPDATE that names its worker (``claimed_by``), so two workers never take
the same one. While it runs, the worker's heartbeat thread stamps ``heartbeat_at`` every
:data:`HEARTBEAT_S` seconds; a job whose heartbeat is older than :data:`STALE_AFTER` (its
worker died) is queued again by :func:`requeue_stale`, so the queue survives restarts, and a
worker whose heartbeat finds its job taken over stops the evaluation at once, and one that
finishes a job it no longer owns stores nothing (each logs why). Each job runs
``worker_eval`` in a child process under CPU-time (RLIMIT_CPU), memory (RLIMIT_AS) and
wall-time limits; its Result is checked against the card like any submission and stored as
``verified``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import func, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from rlbench_suite.leaderboard.models import (
    Environment,
    PolicyArtifact,
    Submission,
    VerificationJob,
    utcnow,
)
from rlbench_suite.leaderboard.reconcile import reconcile, self_reported
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
HEARTBEAT_S = 10.0
"""How often a worker stamps the job it runs (``heartbeat_at``)."""
STALE_AFTER = dt.timedelta(seconds=60)
"""A running job whose heartbeat is older than this lost its worker and is queued again."""
LOST = "lost"
"""What :func:`run_job` returns for a job that another worker took over meanwhile."""
TAKEN_OVER = "stopped: the job was taken over by another worker"
POLL_S = 0.25
"""How often the worker looks whether its child finished, ran out of wall time or lost its job."""
log = logging.getLogger(__name__)


def worker_id() -> str:
    """A name for one worker: its host and process, and a random part (a new one per call)."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _running(job_id: int, owner: str):
    return (
        (VerificationJob.id == job_id)
        & (VerificationJob.state == "running")
        & (VerificationJob.claimed_by == owner)
    )


def claim_next(factory: sessionmaker[Session], owner: str) -> int | None:
    """Take the oldest queued job for worker ``owner`` (queued -> running); None when there
    is none."""
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
                .values(
                    state="running",
                    claimed_by=owner,
                    started_at=utcnow(),
                    heartbeat_at=utcnow(),
                    attempts=VerificationJob.attempts + 1,
                )
            )
            if taken.rowcount == 1:
                return job_id
        # another worker took it between the two statements: look again


def beat(factory: sessionmaker[Session], job_id: int, owner: str) -> bool:
    """Stamp ``owner``'s running job as alive; False when it is no longer ``owner``'s."""
    with factory.begin() as session:
        stamped = session.execute(
            update(VerificationJob).where(_running(job_id, owner)).values(heartbeat_at=utcnow())
        )
        return stamped.rowcount == 1


@contextlib.contextmanager
def heartbeat(
    factory: sessionmaker[Session], job_id: int, owner: str, every_s: float = HEARTBEAT_S
) -> Iterator[threading.Event]:
    """Stamp the job every ``every_s`` seconds, in a thread, while the block runs; yields an
    event set once a beat finds the job no longer ``owner``'s (taken over)."""
    stop, lost = threading.Event(), threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            try:
                if not beat(factory, job_id, owner):
                    log.warning("verification job %d was taken from worker %s", job_id, owner)
                    lost.set()
                    return
            except SQLAlchemyError as exc:  # the database is busy or away: beat again later
                log.warning("heartbeat of verification job %d failed: %s", job_id, exc)

    thread = threading.Thread(target=loop, name=f"heartbeat-{job_id}", daemon=True)
    thread.start()
    try:
        yield lost
    finally:
        stop.set()
        thread.join()


def requeue_stale(factory: sessionmaker[Session], stale_after: dt.timedelta = STALE_AFTER) -> int:
    """Queue again the running jobs whose heartbeat (their start, before the first) is older
    than ``stale_after``: their worker died, however long a live worker's job may run. A job
    that has used up its attempts fails instead. Return how many were queued."""
    last_seen = func.coalesce(VerificationJob.heartbeat_at, VerificationJob.started_at)
    stale = (VerificationJob.state == "running") & (last_seen < utcnow() - stale_after)
    freed = {"claimed_by": None, "heartbeat_at": None}
    with factory.begin() as session:  # each UPDATE re-checks its rows: a job that finished
        session.execute(  # meanwhile is left alone
            update(VerificationJob)
            .where(stale, VerificationJob.attempts >= MAX_ATTEMPTS)
            .values(
                state="failed",
                error=f"worker lost {MAX_ATTEMPTS} times",  # claims stop at MAX_ATTEMPTS
                finished_at=utcnow(),
                **freed,
            ),
            execution_options={"synchronize_session": False},
        )
        queued = session.execute(
            update(VerificationJob).where(stale).values(state="queued", **freed),
            execution_options={"synchronize_session": False},
        )
        return queued.rowcount


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


def _wait(child: subprocess.Popen, wall_s: float, lost: threading.Event | None) -> str | None:
    """Wait for ``child``; kill it past ``wall_s`` or once ``lost`` is set: why, or None."""
    deadline = time.monotonic() + wall_s
    while True:
        try:
            child.wait(timeout=max(0.0, min(POLL_S, deadline - time.monotonic())))
            return None
        except subprocess.TimeoutExpired:
            if lost is not None and lost.is_set():
                stopped = TAKEN_OVER
            elif time.monotonic() >= deadline:
                stopped = f"stopped: wall-time limit of {wall_s:g} s exceeded"
            else:
                continue
        child.kill()
        child.wait()
        return stopped


def evaluate_submission(
    content: bytes,
    env_id: str,
    metadata: dict,
    limits: WorkerLimits,
    lost: threading.Event | None = None,
) -> tuple[dict | None, str | None]:
    """Run the child on ``content``; the Result JSON, or why there is none. The child is
    stopped early once ``lost`` is set (the job was taken over: its result would be thrown
    away)."""
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
        errors = Path(folder) / "stderr.txt"  # a file: a pipe nobody reads would fill up
        with (
            errors.open("w") as stderr,
            subprocess.Popen(
                command,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                cwd=folder,
                preexec_fn=_limit(limits),
            ) as child,
        ):
            try:
                stopped = _wait(child, limits.wall_s, lost)
            except BaseException:  # the worker is stopped (SIGTERM, Ctrl-C): so is its child
                child.kill()
                raise
        if stopped:
            return None, stopped
        if child.returncode != 0 or not out.is_file():
            return None, _failure(child.returncode, errors.read_text(errors="replace"), limits)
        return json.loads(out.read_text()), None


def eval_command(env_id: str, artifact_sha256: str) -> list[str]:
    """The command that re-runs a verification: ``rlbench eval`` of the policy artifact
    (saved under its SHA-256) on the card's protocol, on one worker as the server ran it."""
    return ["rlbench", "eval", env_id, "--policy", f"onnx:{artifact_sha256}.onnx", "--workers", "1"]


def run_job(
    factory: sessionmaker[Session],
    job_id: int,
    limits: WorkerLimits,
    owner: str,
    heartbeat_s: float = HEARTBEAT_S,
) -> str:
    """Verify one job ``owner`` claimed; return its final state (``done`` or ``failed``), or
    :data:`LOST` (nothing stored) when the job stopped being ``owner``'s meanwhile."""
    with factory() as session:
        job = session.get(VerificationJob, job_id)
        submission = session.get(Submission, job.submission_id)
        artifact = session.get(PolicyArtifact, submission.artifact_sha256)
        content, env_id, metadata = artifact.content, submission.env_id, submission.metadata_
    with heartbeat(factory, job_id, owner, heartbeat_s) as lost:
        data, error = evaluate_submission(content, env_id, metadata, limits, lost)
    if lost.is_set():
        log.warning(
            "verification job %d is no longer worker %s's (its heartbeat went stale, so it was "
            "queued again for another worker): its evaluation was stopped early, nothing stored",
            job_id,
            owner,
        )
        return LOST
    if data is not None:  # the child's command names its temporary files: say the user's
        data["provenance"]["command"] = eval_command(env_id, submission.artifact_sha256)
    with factory.begin() as session:
        # the transaction's first write: it waits for (and then sees) a concurrent requeue
        owned = session.execute(
            update(VerificationJob).where(_running(job_id, owner)).values(finished_at=utcnow()),
            execution_options={"synchronize_session": False},
        )
        if owned.rowcount != 1:
            log.warning(
                "verification job %d is no longer worker %s's (its heartbeat went stale, so "
                "it was queued again for another worker): its re-evaluation is not stored",
                job_id,
                owner,
            )
            return LOST
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
                rerun = stored.result
                reconcile(session, rerun, submission, self_reported(session, rerun))
            except RefusedResult as exc:
                error = f"the re-evaluation's result was refused: {exc}"
        job.state = "failed" if error else "done"
        job.error = error
        return job.state


def run_pending(
    factory: sessionmaker[Session],
    limits: WorkerLimits | None = None,
    most: int | None = None,
    owner: str | None = None,
    heartbeat_s: float = HEARTBEAT_S,
) -> list[tuple[int, str]]:
    """Verify queued jobs until none is left (or ``most`` were run) as worker ``owner``
    (default: a new :func:`worker_id`): (job id, state) each."""
    limits, owner = limits or WorkerLimits(), owner or worker_id()
    requeue_stale(factory)
    ran = []
    while most is None or len(ran) < most:
        job_id = claim_next(factory, owner)
        if job_id is None:
            break
        try:
            ran.append((job_id, run_job(factory, job_id, limits, owner, heartbeat_s)))
        except BaseException:  # stopped mid-job (SIGTERM, Ctrl-C): the job goes back to the queue
            release(factory, job_id, owner)
            raise
    return ran


def release(factory: sessionmaker[Session], job_id: int, owner: str) -> None:
    """Put a job ``owner`` claimed back in the queue (its attempt still counts)."""
    with factory.begin() as session:
        session.execute(
            update(VerificationJob)
            .where(_running(job_id, owner))
            .values(state="queued", started_at=None, claimed_by=None, heartbeat_at=None)
        )
