"""Self-reported results against the server's re-run of their policy artifact: one rule, used
when a re-run is stored (``worker.run_job``) and when a self-reported result of an artifact
that was already re-run arrives (``store.accept_result``).

A self-reported result whose episodes the re-run reproduced exactly (as ``rlbench
reproduce`` compares them: ``evaluation.reproduce.compare_runs``) becomes ``verified``; the
differences of one that was not reproduced are kept on the re-run's policy submission
(``metadata["disagreements"]``, by result id), where the result's page finds them.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from rlbench_suite.core.result import Result as ResultDoc
from rlbench_suite.leaderboard.models import Result, Submission, VerificationJob

MAX_SHOWN = 5
"""The most differences kept per result."""


def self_reported(session: Session, rerun: Result) -> list[Result]:
    """The self-reported results of ``rerun``'s artifact on its env and protocol."""
    return list(
        session.scalars(
            select(Result).where(
                Result.env_id == rerun.env_id,
                Result.protocol_hash == rerun.protocol_hash,
                Result.artifact_sha256 == rerun.artifact_sha256,
                Result.verification == "self-reported",
            )
        )
    )


def first_rerun(session: Session, row: Result) -> tuple[Result, Submission] | None:
    """The oldest re-run the server stored of ``row``'s artifact on its env and protocol, and
    the policy submission it verified; None where there is none (or no artifact)."""
    if not row.artifact_sha256:
        return None
    found = session.execute(
        select(Result, Submission)
        .join(VerificationJob, VerificationJob.result_id == Result.id)
        .join(Submission, VerificationJob.submission_id == Submission.id)
        .where(
            Result.env_id == row.env_id,
            Result.protocol_hash == row.protocol_hash,
            Result.artifact_sha256 == row.artifact_sha256,
            Result.verification == "verified",
            Result.id != row.id,
        )
        .order_by(Result.id)
        .limit(1)
    ).first()
    return None if found is None else (found[0], found[1])


def reconcile(
    session: Session, rerun: Result, submission: Submission, claimed: Iterable[Result]
) -> dict[str, list[str]]:
    """Compare each of ``claimed`` (self-reported rows of ``rerun``'s artifact) with the
    re-run: mark verified those it reproduced, add the differences of the others to
    ``submission``'s; return those differences by result id."""
    from rlbench_suite.evaluation.reproduce import compare_runs

    verified = ResultDoc.model_validate(rerun.document)
    found: dict[str, list[str]] = {}
    for row in claimed:
        claim = ResultDoc.model_validate(row.document)
        differences = compare_runs(claim, verified, policy_keys=("artifact_sha256",))
        if differences:
            found[str(row.id)] = differences[:MAX_SHOWN]
        else:
            row.verification = "verified"
            row.document = {**row.document, "verification": "verified"}
    if found:
        known = submission.metadata_.get("disagreements", {})
        submission.metadata_ = {**submission.metadata_, "disagreements": {**known, **found}}
    return found
