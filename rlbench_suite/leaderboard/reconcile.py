"""Self-reported results against the server's re-run of their policy artifact: one rule, used
when a re-run is stored (``worker.run_job``) and when a self-reported result of an artifact
that was already re-run arrives (``store.accept_result``).

A self-reported result whose episodes the re-run reproduced exactly (as ``rlbench
reproduce`` compares them: ``evaluation.reproduce.compare_runs``; :data:`TOLERANCE`) becomes
``verified``, and the re-run is linked to it (``Result.verifies_result_id``): one listed row
per agreeing verification, the re-run kept as its evidence (:func:`evidence`). The
differences of one that was not reproduced are kept on the re-run's policy submission
(``metadata["disagreements"]``, by result id), where the result's page finds them; both rows
stay listed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import ValidationError
from sqlalchemy import Select, select, update
from sqlalchemy.orm import Session

from rlbench_suite.core.result import Result as ResultDoc
from rlbench_suite.leaderboard.models import Result, Submission, VerificationJob, utcnow

MAX_SHOWN = 5
"""The most differences kept per result."""
TOLERANCE = (
    "exact: the protocol fixes the seed of every episode, so the return, length and success "
    "of each must equal those of the re-run (as rlbench reproduce compares runs)"
)
"""How closely a self-reported result must agree with the server's re-run to be verified."""


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
        try:
            claim = ResultDoc.model_validate(row.document)
        except ValidationError as exc:  # stored under an earlier version's looser checks
            found[str(row.id)] = [f"the stored result no longer validates: {_first_error(exc)}"]
            continue
        differences = compare_runs(claim, verified, policy_keys=("artifact_sha256",))
        if differences:
            found[str(row.id)] = differences[:MAX_SHOWN]
        else:
            row.verification = "verified"
            row.verified_at = utcnow()
            row.document = {**row.document, "verification": "verified"}
            if rerun.verifies_result_id is None and rerun.id != row.id:
                rerun.verifies_result_id = row.id  # the re-run is now this row's evidence
    if found:
        known = submission.metadata_.get("disagreements", {})
        submission.metadata_ = {**submission.metadata_, "disagreements": {**known, **found}}
    return found


def _first_error(exc: ValidationError) -> str:
    """A validation error's first problem, with where it is."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "(result)"
    return f"{where}: {error['msg']}"


def reruns() -> Select:
    """The ids of the server's re-runs (the results of verification jobs)."""
    return select(VerificationJob.result_id).where(VerificationJob.result_id.is_not(None))


def is_rerun(session: Session, row: Result) -> bool:
    """Whether ``row`` is the server's re-run of a submitted policy (a job's result)."""
    job = select(VerificationJob.id).where(VerificationJob.result_id == row.id).limit(1)
    return session.scalar(job) is not None


@dataclass(frozen=True)
class Evidence:
    """What verified a self-reported result: the server's re-run of its policy artifact."""

    rerun_id: int
    score: float | None
    claimed_score: float | None
    command: list[str]
    verified_at: dt.datetime
    tolerance: str = TOLERANCE

    @property
    def difference(self) -> float | None:
        """The re-run's score minus the self-reported one (on the card's scale)."""
        if self.score is None or self.claimed_score is None:
            return None
        return self.score - self.claimed_score


def evidence(session: Session, row: Result) -> Evidence | None:
    """The server's re-run that verified ``row``, a self-reported result (None for one not
    verified, or for a re-run itself): its score, command, and when it verified ``row``
    (``Result.verified_at``: when :func:`reconcile` compared them)."""
    if row.verification != "verified" or is_rerun(session, row):
        return None
    found = first_rerun(session, row)
    if found is None:
        return None
    rerun = found[0]
    return Evidence(
        rerun_id=rerun.id,
        score=rerun.score,
        claimed_score=row.score,
        command=list(rerun.document["provenance"]["command"]),
        verified_at=_aware(row.verified_at or max(row.created_at, rerun.created_at)),
    )


def _aware(moment: dt.datetime) -> dt.datetime:
    """``moment`` in UTC (SQLite gives back naive datetimes)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def unlink_and_delete(session: Session, rows: Iterable[Result]) -> int:
    """Delete ``rows`` and every link to them (jobs' results, re-runs' verified rows: a re-run
    whose verified row goes is listed again); how many were deleted."""
    rows = list(rows)
    ids = [r.id for r in rows]
    if not ids:
        return 0
    session.execute(
        update(VerificationJob).where(VerificationJob.result_id.in_(ids)).values(result_id=None)
    )
    session.execute(
        update(Result).where(Result.verifies_result_id.in_(ids)).values(verifies_result_id=None)
    )
    for row in rows:
        session.delete(row)
    return len(rows)
