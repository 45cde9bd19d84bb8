"""The :class:`Result` of an evaluation: per-episode data, aggregates, provenance (JSON)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rlbench_suite.core.protocol import EvalProtocol
from rlbench_suite.core.provenance import Provenance
from rlbench_suite.core.scoring import (
    check_metric,
    normalized_interval,
    normalized_score,
    primary_aggregate,
    primary_values,
    scored_by_success,
)

RESULT_SCHEMA_VERSION = 1


class ResultError(ValueError):
    """A result file is missing, not JSON, from another schema version, or malformed."""


FINITE = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
"""Every number of a Result is finite: NaN or infinity would poison every statistic over it."""
MAX_STEPS = 10**15
"""More steps than any run takes (and within a 64-bit database integer)."""
SHA256 = re.compile(r"^[0-9a-f]{64}$")


class IntervalEstimate(BaseModel):
    """A point estimate with a confidence interval and how the interval was computed."""

    model_config = FINITE

    point: float
    low: float
    high: float
    confidence: float = 0.95
    method: str
    reps: int | None = None
    random_state: int | None = None


class EpisodeRecord(BaseModel):
    """One finished episode (a line of the ``.episodes.jsonl`` file of a run)."""

    model_config = FINITE

    index: int = Field(ge=0)
    seed: int
    r: float = Field(description="the return")
    l: int = Field(ge=0, description="the length in steps")  # noqa: E741
    success: bool
    normalized_score: float | None = Field(
        None, description="the primary metric on the card's 0-100 scale, as scored in the episode"
    )


class Normalization(BaseModel):
    """Which references and scale a result's ``normalized_score`` is on, where that is not the
    environment card's own (an offline id: the dataset card's random and expert returns)."""

    model_config = FINITE

    references_from: str = Field(description="the card whose references normalize")
    metric: str
    random: float
    expert: float
    scale: str = Field(description="what 0 and 100 mean, and how it relates to other scales")


class Result(BaseModel):
    """A scored, reproducible evaluation of one policy on one environment (every number
    finite, counts within bounds)."""

    model_config = FINITE

    schema_version: Literal[1] = RESULT_SCHEMA_VERSION
    env_id: str
    spec_hash: str
    protocol: EvalProtocol
    protocol_hash: str
    policy: dict[str, Any] = Field(description="the policy's identity (PolicyIdentity)")
    seeds: list[int]
    returns: list[float]
    lengths: list[Annotated[int, Field(ge=0, le=MAX_STEPS)]]
    successes: list[bool]
    aggregates: dict[str, IntervalEstimate]
    normalized_score: IntervalEstimate | None = None
    normalization: Normalization | None = Field(
        None, description="set when the references are not the env card's (offline ids)"
    )
    training_budget_steps: int | None = Field(None, ge=0, le=MAX_STEPS)
    wall_time_s: float = Field(ge=0)
    backend: str
    workers: int = Field(ge=1, le=100_000)
    provenance: Provenance
    verification: Literal["self-reported", "verified"] = "self-reported"

    @model_validator(mode="after")
    def _consistent(self) -> Result:
        if self.protocol_hash != self.protocol.hash:
            raise ValueError("protocol_hash does not match the protocol it names")
        if self.env_id != self.protocol.env_id:
            raise ValueError(f"env_id {self.env_id!r} differs from the protocol's")
        if self.protocol.spec_hash is not None and self.spec_hash != self.protocol.spec_hash:
            raise ValueError("spec_hash differs from the protocol's spec_hash")
        sizes = {len(x) for x in (self.seeds, self.returns, self.lengths, self.successes)}
        if sizes != {self.protocol.episodes}:
            raise ValueError(
                f"seeds, returns, lengths and successes must each have the protocol's "
                f"{self.protocol.episodes} entries"
            )
        if self.seeds != self.protocol.seeds:
            raise ValueError("seeds differ from the protocol's seeds")
        artifact = self.policy.get("artifact_sha256")
        if artifact is not None and not (isinstance(artifact, str) and SHA256.match(artifact)):
            raise ValueError("policy.artifact_sha256 must be 64 lowercase hex digits (a SHA-256)")
        limit = self.protocol.max_episode_steps
        if limit is not None and max(self.lengths) > limit:
            raise ValueError(f"an episode is longer than the protocol's {limit} steps")
        mean = self.aggregates.get("return_mean")
        expected = sum(self.returns) / len(self.returns)
        if mean is None or abs(mean.point - expected) > 1e-6 * max(1.0, abs(expected)):
            raise ValueError("aggregates.return_mean does not match the per-episode returns")
        rate = self.aggregates.get("success_rate")
        if rate is None or abs(rate.point - sum(self.successes) / len(self.successes)) > 1e-9:
            raise ValueError("aggregates.success_rate does not match the per-episode successes")
        problem = self._normalization_problem()
        if problem is not None:
            raise ValueError(problem)
        return self

    def _normalization_problem(self) -> str | None:
        """Where the ``normalized_score`` disagrees with what the episodes give on the file's own
        ``normalization`` (its point: the mean of the episodes' primary values on that scale;
        its interval: the primary aggregate's, mapped through it); None when it agrees or the
        file names no references (then only its card has them: ``summary_differences``)."""
        norm, stored = self.normalization, self.normalized_score
        if norm is None or stored is None:
            return None
        references = (norm.random, norm.expert)
        try:
            metric = check_metric(norm.metric)
        except ValueError as exc:
            return f"normalization.metric: {exc}"
        try:
            values = normalized_score(primary_values(metric, self.returns, self.successes),
                                      *references)  # fmt: skip
        except ValueError as exc:
            return f"normalization.random and .expert: {exc}"
        name = primary_aggregate(metric)
        primary = self.aggregates[name]  # both primary aggregates are checked above
        low, high = normalized_interval(primary.low, primary.high, *references)
        on = f"the file's normalization (random {norm.random:.6g}, expert {norm.expert:.6g})"
        per_episode = "successes" if scored_by_success(metric) else "returns"
        expected = {
            "point": (float(values.mean()), f"the per-episode {per_episode} on {on}"),
            "low": (low, f"aggregates.{name}.low mapped through {on}"),
            "high": (high, f"aggregates.{name}.high mapped through {on}"),
        }
        for part, (value, source) in expected.items():
            if abs(getattr(stored, part) - value) > 1e-6 * max(1.0, abs(value)):
                return (f"normalized_score.{part} {getattr(stored, part):.6g} does not match "
                        f"{source}: expected {value:.6g}")  # fmt: skip
        return None

    def save(self, path: str | Path) -> Path:
        """Write the result as JSON, atomically (a temporary file renamed into place)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path


def load_result(path: str | Path) -> Result:
    """Read and validate a result file; :class:`ResultError` says what is wrong and where."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultError(f"{path}: no such result file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultError(f"{path}: not a JSON result file ({exc})") from None
    return result_from_data(data, str(path))


def result_from_data(data: Any, where: str = "result") -> Result:
    """Validate a decoded JSON result; :class:`ResultError` says what is wrong, after ``where``."""
    if not isinstance(data, dict):
        raise ResultError(f"{where}: a result is a JSON object, got {type(data).__name__}")
    version = data.get("schema_version")
    if version != RESULT_SCHEMA_VERSION:
        raise ResultError(
            f"{where}: result schema_version {version!r} is not supported; this rlbench-suite "
            f"reads version {RESULT_SCHEMA_VERSION}"
        )
    try:
        return Result.model_validate(data)
    except ValidationError as exc:
        raise ResultError(f"{where}: invalid result: {validation_problems(exc)}") from None


def validation_problems(error: ValidationError, most: int = 8, whole: str = "(result)") -> str:
    """A pydantic error as one line of ``field: message`` pairs (the first ``most``)."""
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or whole}: {e['msg']}" for e in error.errors()[:most]
    )
