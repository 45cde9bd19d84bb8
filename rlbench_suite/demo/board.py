"""The demo's leaderboard: the embedded database, the zoo imported, the demo's Results
stored, their ONNX policies verified by the server's own worker, and the ranking rows.

Everything goes through the leaderboard's own code (``startup``, ``importer``, ``store``,
``artifacts``, ``worker``, ``views``), so what the demo prints is what the site shows.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.result import Result as ResultDoc
from rlbench_suite.leaderboard.artifacts import PolicyMetadata, submit_policy
from rlbench_suite.leaderboard.importer import ImportReport, import_files, result_files
from rlbench_suite.leaderboard.models import Method, Result, Submission, VerificationJob, listed
from rlbench_suite.leaderboard.ranking import budget_class
from rlbench_suite.leaderboard.reconcile import unlink_and_delete
from rlbench_suite.leaderboard.startup import prepare_database
from rlbench_suite.leaderboard.store import accept_result, default_method_name, method_named
from rlbench_suite.leaderboard.views import Filters, env_ranking
from rlbench_suite.leaderboard.worker import WorkerLimits, run_pending
from rlbench_suite.policies.core import load_metadata
from rlbench_suite.resources import content_dir

SEEDS_LIMIT = next(m.max_length for m in PolicyMetadata.model_fields["train_seeds"].metadata
                   if hasattr(m, "max_length"))  # fmt: skip
"""How many training seeds a policy submission may list (the server's own limit)."""


def open_board(url: str) -> sessionmaker[Session]:
    """The database at ``url``, migrated to the newest schema, the suite's cards synced."""
    from rlbench_suite.leaderboard.catalog_sync import board_cards
    from rlbench_suite.registry import spec_hash

    return prepare_database(url, board_cards(), spec_hash)


def has_board(url: str) -> bool:
    """Whether the database at ``url`` holds a leaderboard already (an earlier demo's)."""
    from sqlalchemy import inspect

    from rlbench_suite.leaderboard.db import make_engine

    engine = make_engine(url)
    try:
        return inspect(engine).has_table(Result.__tablename__)
    finally:
        engine.dispose()


def import_zoo(factory: sessionmaker[Session]) -> ImportReport:
    """The zoo's committed Results (``baselines/results``), as ``rlbench leaderboard import``."""
    return import_files(factory, result_files([content_dir("baselines") / "results"]))


@dataclass(frozen=True)
class Stored:
    """A demo Result in the database: its row id, its method, whether it was new."""

    result_id: int
    method: str
    created: bool


def zoo_method(card: EnvCard, algo: str) -> str | None:
    """The method the zoo's committed results of ``algo`` on ``card`` are stored under (None
    when the card has no such shipped baseline)."""
    trained = next((t for t in card.trained if t.algo == algo), None)
    return (
        None if trained is None else default_method_name({"kind": "baseline", "spec": trained.name})
    )


@dataclass(frozen=True)
class NewMethod:
    """A method the demo names itself, with its description; ``replace``: the method holds
    one policy, so storing a result of another policy replaces the method's results on that
    env (:func:`replace_other_policies`) and the description is brought up to date."""

    name: str
    description: str
    replace: bool = False


def store(factory: sessionmaker[Session], result: ResultDoc,
          method: NewMethod | None = None) -> Stored:  # fmt: skip
    """Check ``result`` against its card and store it (self-reported), as a submission would:
    under ``method``, or the method its policy names (``zoo-<algo>`` for the zoo's)."""
    data = json.loads(result.model_dump_json())
    with factory.begin() as session:
        if method is not None:
            row = method_named(session, method.name, description=method.description)
            if method.replace:
                row.description = method.description
        stored = accept_result(session, data, method_name=method and method.name, kind="result")
        if method is not None and method.replace:
            replace_other_policies(session, stored.result)
        name = session.get(Method, stored.result.method_id).name
        return Stored(stored.result.id, name, stored.created)


def replace_other_policies(session: Session, kept: Result) -> int:
    """Delete the results of ``kept``'s method on its env made by other policy artifacts (an
    earlier demo's policy and the server's verifications of it), and fail the queued
    verifications of those artifacts under the method; how many results were deleted."""
    others = (Result.env_id == kept.env_id, Result.method_id == kept.method_id,
              Result.artifact_sha256.is_distinct_from(kept.artifact_sha256))  # fmt: skip
    old = list(session.scalars(select(Result).where(*others)))
    unlink_and_delete(session, old)
    queued = (
        select(VerificationJob)
        .join(Submission, VerificationJob.submission_id == Submission.id)
        .where(Submission.env_id == kept.env_id, Submission.method_id == kept.method_id,
               Submission.artifact_sha256.is_distinct_from(kept.artifact_sha256),
               VerificationJob.state == "queued")
    )  # fmt: skip
    for job in session.scalars(queued):
        job.state, job.error = "failed", "replaced by a newer demo policy before it was verified"
    return len(old)


def verification(factory: sessionmaker[Session], result_id: int) -> str:
    """The verification level of a stored result now."""
    with factory() as session:
        return session.get(Result, result_id).verification


def queue_verification(factory: sessionmaker[Session], stored: Stored, policy: Path) -> int | None:
    """Submit ``policy`` (the ONNX that produced the stored result) for verification, as
    ``rlbench submit --policy`` does; the job id, or None when the result is verified already.
    A policy whose verification failed before is not queued again (that job's id)."""
    content = policy.read_bytes()
    digest = hashlib.sha256(content).hexdigest()
    with factory.begin() as session:
        row = session.get(Result, stored.result_id)
        if row.verification == "verified":
            return None
        failed = session.scalar(
            select(VerificationJob.id)
            .join(Submission, VerificationJob.submission_id == Submission.id)
            .where(Submission.artifact_sha256 == digest, Submission.env_id == row.env_id,
                   VerificationJob.state == "failed")
            .order_by(VerificationJob.id.desc()).limit(1)
        )  # fmt: skip
        if failed is not None:
            return failed
        sidecar = load_metadata(policy)
        seeds = sidecar.train_seeds if sidecar else []
        metadata = PolicyMetadata(
            env_id=row.env_id,
            method=stored.method,
            training_budget_steps=sidecar.training_budget_steps if sidecar else None,
            # the server takes at most SEEDS_LIMIT (a batched run trains on thousands)
            train_seeds=seeds if len(seeds) <= SEEDS_LIMIT else [],
            wrappers=[w.model_dump() for w in sidecar.wrappers] if sidecar else [],
        )
        job = submit_policy(session, content, policy.name, metadata, None).job
        return job.id


def job_outcome(factory: sessionmaker[Session], job_id: int) -> tuple[str, str | None]:
    """A verification job's state and, when it failed or disagreed, why."""
    with factory() as session:
        job = session.get(VerificationJob, job_id)
        submission = session.get(Submission, job.submission_id)
        disagreements = (submission.metadata_ or {}).get("disagreements")
        why = job.error or (f"re-evaluation differs: {disagreements}" if disagreements else None)
        return job.state, why


class Verifier:
    """The server's verification worker, running the queued jobs in a background thread (each
    job a limited child process) while the demo goes on."""

    def __init__(self, factory: sessionmaker[Session], limits: WorkerLimits | None = None):
        self.factory, self.limits = factory, limits or WorkerLimits()
        self.ran: list[tuple[int, str]] = []
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Verifier:
        self._thread = threading.Thread(target=self._run, daemon=True, name="demo-verifier")
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self.ran += run_pending(self.factory, self.limits)
        except Exception as exc:  # reported by finish()
            self.error = exc

    def finish(self) -> list[tuple[int, str]]:
        """Wait for the background jobs, then run any queued since; every (job, state)."""
        if self._thread is not None:
            self._thread.join()
        if self.error is not None:
            raise self.error
        self.ran += run_pending(self.factory, self.limits)
        return self.ran


@dataclass(frozen=True)
class Ranked:
    """The leaderboard's row of a stored result's method on its environment."""

    iqm: dict | None
    """point, low, high (None where the card has no normalized score and no runs)."""
    runs: int
    verified_runs: int
    interval_over: str
    scale: str


def ranked(factory: sessionmaker[Session], result_id: int) -> Ranked | None:
    """The ranking row (as the site shows it) of the method and budget class of a result."""
    with factory() as session:
        row = session.get(Result, result_id)
        method, env_id = row.method.name, row.env_id
        budget = budget_class(row.training_budget_steps)
    return ranked_method(factory, env_id, method, budget)


def ranked_method(factory: sessionmaker[Session], env_id: str, method: str,
                  budget: str | None = None) -> Ranked | None:  # fmt: skip
    """The ranking row (as the site shows it) of ``method`` on ``env_id``: in the budget
    class ``budget``, or its first (best) row."""
    with factory() as session:
        table = env_ranking(session, env_id, Filters())
    for entry in table["rows"]:
        if entry["method"] == method and budget in (None, entry["budget_class"]):
            return Ranked(entry["iqm"], entry["runs"], entry["verified_runs"],
                          entry["interval_over"], table["scale"])  # fmt: skip
    return None


def counts(factory: sessionmaker[Session]) -> tuple[int, int]:
    """(results, verified results) in the database."""
    with factory() as session:
        levels = list(session.scalars(select(Result.verification).where(listed())))
    return len(levels), levels.count("verified")
