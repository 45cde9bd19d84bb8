"""Running an evaluation: in this process, on a local process pool, or on Ray.

Episodes are divided statically (round-robin by index) across workers, each worker builds
its own environment and policy, and every episode is seeded by its own seed, so the
per-episode results are identical whatever the backend and worker count. Each finished
episode is appended to the run's episode log at once, so an interrupted run resumes where
it stopped.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing as mp
import os
import pickle
import queue as queue_module
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym

from rlbench_suite.catalog import get_card
from rlbench_suite.evaluation.episodes import play_episode
from rlbench_suite.evaluation.protocol import EvalProtocol, default_protocol, env_spec_hash
from rlbench_suite.evaluation.provenance import collect
from rlbench_suite.evaluation.result import EpisodeRecord, Result
from rlbench_suite.evaluation.store import EpisodeLog
from rlbench_suite.evaluation.summary import summarize
from rlbench_suite.policies import Policy, as_policy

Backend = Literal["local", "ray"]


class EvaluationError(ValueError):
    """An evaluation could not run (a worker failed, the protocol does not fit the env)."""


PolicySource = str | Policy | Callable[..., Any]
OnEpisode = Callable[[EpisodeRecord], None]


def build_policy(source: PolicySource, env: gym.Env, deterministic: bool) -> Policy:
    """A policy from a spec string (``random``, ``sb3:PATH``, ...) or a policy object."""
    if isinstance(source, str):
        from rlbench_suite.policies import make_policy

        return make_policy(source, env=env, deterministic=deterministic)
    return as_policy(source)


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


def run_episodes(
    env_id: str,
    source: PolicySource,
    deterministic: bool,
    assignments: list[tuple[int, int]],
    on_episode: OnEpisode,
    reset_options: dict[str, Any] | None = None,
) -> None:
    """Play ``(index, seed)`` episodes in order in this process, reporting each."""
    env = gym.make(env_id)
    try:
        policy = build_policy(source, env, deterministic)
        parent = mp.parent_process()
        if parent is not None:  # a worker: keep to one core
            _single_threaded_torch()
        for index, seed in assignments:
            if parent is not None and not parent.is_alive():
                return  # the run was stopped: do not go on alone
            on_episode(play_episode(env, policy, seed, index, reset_options))
    finally:
        env.close()


def _pool_worker(
    env_id: str, source: Any, deterministic: bool, assignments: list, results: Any,
    reset_options: dict[str, Any] | None = None,
) -> None:  # fmt: skip
    """Process-pool worker: stream ``("episode", record)``, then ``("done", None)``."""
    try:
        run_episodes(
            env_id, source, deterministic, assignments,
            lambda record: results.put(("episode", record.model_dump())), reset_options,
        )  # fmt: skip
        results.put(("done", None))
    except BaseException as exc:  # reported to the parent, which stops the run
        results.put(("error", (f"{type(exc).__name__}: {exc}", traceback.format_exc())))


def _single_threaded_torch() -> None:
    """One torch thread per worker (as fast for small MLPs, and workers share the cores);
    torch is not imported for policies that do not use it."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def split_statically(pending: list[tuple[int, int]], workers: int) -> list[list[tuple[int, int]]]:
    """Round-robin division of the pending episodes: worker k gets every k-th one."""
    return [chunk for chunk in (pending[k::workers] for k in range(workers)) if chunk]


def run_local_pool(
    env_id: str, source: PolicySource, deterministic: bool,
    pending: list[tuple[int, int]], workers: int, on_episode: OnEpisode,
    reset_options: dict[str, Any] | None = None,
) -> None:  # fmt: skip
    """Run the pending episodes on ``workers`` spawned processes, streaming results back."""
    if workers <= 1 or len(pending) <= 1:
        run_episodes(env_id, source, deterministic, pending, on_episode, reset_options)
        return
    _check_picklable(source)
    context = _worker_context(env_id)
    results = context.Queue()
    processes = [
        context.Process(
            target=_pool_worker,
            args=(env_id, source, deterministic, chunk, results, reset_options),
            daemon=True,
        )
        for chunk in split_statically(pending, workers)
    ]
    for process in processes:
        process.start()
    running = len(processes)
    try:
        while running:
            try:
                kind, payload = results.get(timeout=5)
            except queue_module.Empty:
                if not any(p.is_alive() for p in processes):
                    raise RuntimeError("evaluation workers died without reporting") from None
                continue
            if kind == "episode":
                on_episode(EpisodeRecord.model_validate(payload))
            elif kind == "done":
                running -= 1
            else:
                message, trace = payload
                error = EvaluationError(f"an evaluation worker failed: {message}")
                error.add_note(trace)
                raise error
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
            process.join(timeout=10)


def _worker_context(env_id: str) -> mp.context.BaseContext:
    """Workers fork from a clean server process that has imported the suite (and the first
    environment's module) already: fast to start, and free of the parent's threads (torch)
    and simulator state. Like any spawned process, they re-import a script's ``__main__``,
    so scripts calling :func:`evaluate` with several workers need the usual
    ``if __name__ == "__main__":`` guard."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    context = mp.get_context("forkserver")
    entry_point = get_card(env_id).entry_point.split(":")[0]
    context.set_forkserver_preload(
        ["rlbench_suite", "rlbench_suite.evaluation.runner", entry_point]
    )
    return context


def _check_picklable(source: PolicySource) -> None:
    if isinstance(source, str):
        return
    try:
        pickle.dumps(source)
    except Exception as exc:
        raise ValueError(
            f"a policy object must be picklable to run on several workers ({exc}); pass a "
            "policy spec (random, sb3:PATH, onnx:PATH, module:attr, baseline:NAME) or workers=1"
        ) from None


def evaluate(
    env_id: str,
    policy: PolicySource,
    protocol: EvalProtocol | None = None,
    *,
    workers: int | None = None,
    backend: Backend = "local",
    address: str | None = None,
    out: str | Path | None = None,
    resume: bool = False,
    on_episode: OnEpisode | None = None,
) -> Result:
    """Evaluate ``policy`` on ``env_id`` under ``protocol`` (default: the card's).

    ``workers`` defaults to all cores. With ``out``, finished episodes go to
    ``<out>.episodes.jsonl`` as they finish and the result to ``out``; ``resume=True``
    continues such a log. Evaluation seeds that overlap the policy's recorded training or
    tuning seeds are refused (:class:`~rlbench_suite.evaluation.protocol.SeedOverlapError`).
    """
    card = get_card(env_id)
    protocol = protocol or default_protocol(card.id)
    if protocol.env_id != card.id:
        raise ValueError(f"the protocol is for {protocol.env_id}, not {card.id}")
    registered = default_protocol(card.id)
    if (protocol.wrappers, protocol.max_episode_steps) != (
        registered.wrappers,
        registered.max_episode_steps,
    ):
        raise EvaluationError(
            f"the protocol's wrapper stack or step limit differs from {card.id}'s registered "
            "ones; the harness evaluates the registered environment, so only the episodes, "
            "seeds, determinism and reset options of a protocol can be changed"
        )
    workers = max(1, workers or os.cpu_count() or 1)
    started = dt.datetime.now(dt.UTC)
    clock = time.perf_counter()

    env = gym.make(card.id)  # builds the policy, and plays the episodes if in-process
    try:
        prepared = build_policy(policy, env, protocol.deterministic)
        identity = policy_identity(prepared, policy)
        protocol.check_disjoint(
            identity.get("train_seeds") or [], identity.get("tuning_seeds") or []
        )
        spec_hash = env_spec_hash(card.id)
        header = {"env_id": card.id, "spec_hash": spec_hash, "protocol_hash": protocol.hash,
                  "policy": identity}  # fmt: skip
        log = EpisodeLog(_log_path(out), header, resume=resume) if out is not None else None
        done: dict[int, EpisodeRecord] = dict(log.done) if log else {}

        def record(episode: EpisodeRecord) -> None:
            if log is not None:
                log.append(episode)
            done[episode.index] = episode
            if on_episode is not None:
                on_episode(episode)

        if on_episode is not None:
            for episode in done.values():
                on_episode(episode)
        pending = [(i, s) for i, s in enumerate(protocol.seeds) if i not in done]
        options = dict(protocol.reset_options)
        if backend not in ("local", "ray"):
            raise ValueError(f"unknown backend {backend!r}; accepted: local, ray")
        if backend == "local" and (workers <= 1 or len(pending) <= 1):
            for index, seed in pending:
                record(play_episode(env, prepared, seed, index, options))
        elif backend == "local":
            run_local_pool(card.id, policy, protocol.deterministic, pending, workers, record,
                           options)  # fmt: skip
        else:
            from rlbench_suite.evaluation.ray_runner import run_ray

            run_ray(card.id, policy, protocol.deterministic, pending, workers, record, address,
                    options)  # fmt: skip
    finally:
        env.close()

    episodes = [done[i] for i in range(protocol.episodes)]
    provenance = collect(started=started).model_copy(update={"finished": dt.datetime.now(dt.UTC)})
    result = Result(
        env_id=card.id,
        spec_hash=spec_hash,
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


def _log_path(out: str | Path) -> Path:
    out = Path(out)
    return out.with_name(out.name + ".episodes.jsonl")
