"""Running an evaluation: in this process, on a local process pool, or on Ray.

Episodes are divided statically (round-robin by index) across workers, each worker builds
its own environment and policy, and every episode is seeded by its own seed, so the
per-episode results are identical whatever the backend and worker count. Each finished
episode is appended to the run's episode log at once, so an interrupted run resumes where
it stopped.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.offline_cards import refuse_joint_data, resolve_card
from rlbench_suite.core.protocol import EvalProtocol
from rlbench_suite.core.provenance import collect
from rlbench_suite.core.result import EpisodeRecord, Result
from rlbench_suite.core.summary import summarize
from rlbench_suite.evaluation.episodes import play_episode
from rlbench_suite.evaluation.local_pool import run_local_pool
from rlbench_suite.evaluation.protocols import current_protocol, default_protocol
from rlbench_suite.evaluation.store import EpisodeLog
from rlbench_suite.evaluation.workers import (
    EvaluationError,
    OnEpisode,
    PolicySource,
    prepare,
    split_statically,
)
from rlbench_suite.policies import Policy

Backend = Literal["local", "ray"]
BACKENDS = ("local", "ray")

__all__ = ["BACKENDS", "Backend", "EvaluationError", "evaluate", "split_statically"]


def policy_identity(policy: Policy, source: PolicySource) -> dict[str, Any]:
    """The policy's identity as a JSON-able dict (its ``identity`` if it has one)."""
    identity = getattr(policy, "identity", None)
    if identity is not None:
        return (
            identity.model_dump(mode="json") if hasattr(identity, "model_dump") else dict(identity)
        )
    return {
        "name": source if isinstance(source, str) else type(policy).__name__,
        "kind": "callable",
    }


def evaluate(
    env: str | EnvCard,
    policy: PolicySource,
    protocol: EvalProtocol | None = None,
    *,
    workers: int | None = None,
    backend: Backend = "local",
    address: str | None = None,
    out: str | Path | None = None,
    resume: bool = False,
    on_episode: OnEpisode | None = None,
    on_start: Callable[[], None] | None = None,
) -> Result:
    """Evaluate ``policy`` on ``env`` (a card or its id) under ``protocol`` (default: the card's).

    ``workers`` defaults to all cores. With ``out``, finished episodes go to
    ``<out>.episodes.jsonl`` as they finish and the result to ``out``; ``resume=True``
    continues such a log. Evaluation seeds that overlap the policy's recorded training or
    tuning seeds are refused (:class:`~rlbench_suite.core.protocol.SeedOverlapError`).
    ``on_start`` is called once the policy, the protocol and the log are accepted, before any
    episode (a progress bar starts there: a refused evaluation shows none).
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; accepted: {', '.join(BACKENDS)}")
    card = resolve_card(env)
    refuse_joint_data(card, "the evaluation harness")
    protocol = current_protocol(card, protocol or default_protocol(card))
    workers = max(1, workers or os.cpu_count() or 1)
    started = dt.datetime.now(dt.UTC)
    clock = time.perf_counter()

    # builds the policy, and plays the episodes if in-process
    environment, prepared = prepare(card, policy, protocol.deterministic)
    try:
        identity = policy_identity(prepared, policy)
        protocol.check_disjoint(
            identity.get("train_seeds") or [], identity.get("tuning_seeds") or []
        )
        # the references too: the episodes' normalized scores must all be on one scale
        header = {"env_id": card.id, "spec_hash": protocol.spec_hash,
                  "protocol_hash": protocol.hash, "policy": identity,
                  "references": card.reference_values()}  # fmt: skip
        log = EpisodeLog(episode_log_path(out), header, resume=resume) if out is not None else None
        done: dict[int, EpisodeRecord] = dict(log.done) if log else {}

        def record(episode: EpisodeRecord) -> None:
            if log is not None:
                log.append(episode)
            done[episode.index] = episode
            if on_episode is not None:
                on_episode(episode)

        if on_start is not None:
            on_start()
        if on_episode is not None:
            for episode in done.values():
                on_episode(episode)
        pending = [(i, s) for i, s in enumerate(protocol.seeds) if i not in done]
        options = dict(protocol.reset_options)
        if backend == "local" and (workers <= 1 or len(pending) <= 1):
            for index, seed in pending:
                record(play_episode(environment, prepared, seed, index, options))
        elif backend == "local":
            run_local_pool(card, policy, protocol.deterministic, pending, workers, record,
                           options)  # fmt: skip
        else:
            from rlbench_suite.evaluation.ray_runner import run_ray

            run_ray(card, policy, protocol.deterministic, pending, workers, record, address,
                    options)  # fmt: skip
    finally:
        environment.close()

    episodes = [done[i] for i in range(protocol.episodes)]
    provenance = collect(started=started).model_copy(update={"finished": dt.datetime.now(dt.UTC)})
    result = Result(
        env_id=card.id,
        spec_hash=protocol.spec_hash,
        protocol=protocol,
        protocol_hash=protocol.hash,
        policy=identity,
        seeds=[e.seed for e in episodes],
        returns=[e.r for e in episodes],
        lengths=[e.l for e in episodes],
        successes=[e.success for e in episodes],
        training_budget_steps=identity.get("training_budget_steps"),
        wall_time_s=round(time.perf_counter() - clock, 3),
        backend=backend,
        workers=workers,
        provenance=provenance,
        **summarize(card, episodes),
    )
    if out is not None:
        result.save(out)
    return result


def episode_log_path(out: str | Path) -> Path:
    """Where the episodes of an evaluation writing ``out`` are logged as they finish."""
    out = Path(out)
    return out.with_name(out.name + ".episodes.jsonl")
