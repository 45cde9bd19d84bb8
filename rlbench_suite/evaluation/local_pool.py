"""The local backend's process pool: the statically divided episodes on spawned workers.

Each worker builds its own environment and policy, plays its episodes in order and streams
every finished episode back at once, so the caller's episode log (and ``--resume``) sees
episodes as they finish.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
import queue as queue_module
import traceback
from typing import Any

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.result import EpisodeRecord
from rlbench_suite.evaluation.workers import (
    EvaluationError,
    OnEpisode,
    PolicySource,
    run_episodes,
    split_statically,
)
from rlbench_suite.policies import POLICY_SPECS_TEXT


def _pool_worker(
    card: EnvCard, source: Any, deterministic: bool, assignments: list, results: Any,
    reset_options: dict[str, Any] | None = None,
) -> None:  # fmt: skip
    """Process-pool worker: stream ``("episode", record)``, then ``("done", None)``."""
    try:
        run_episodes(
            card, source, deterministic, assignments,
            lambda record: results.put(("episode", record.model_dump())), reset_options,
        )  # fmt: skip
        results.put(("done", None))
    except BaseException as exc:  # reported to the parent, which stops the run
        results.put(("error", (f"{type(exc).__name__}: {exc}", traceback.format_exc())))


def run_local_pool(
    card: EnvCard, source: PolicySource, deterministic: bool,
    pending: list[tuple[int, int]], workers: int, on_episode: OnEpisode,
    reset_options: dict[str, Any] | None = None,
) -> None:  # fmt: skip
    """Run the pending episodes on ``workers`` spawned processes, streaming results back.

    The card goes to the workers (which register it if their own import did not); its
    entry-point module is preloaded by the fork server.
    """
    if workers <= 1 or len(pending) <= 1:
        run_episodes(card, source, deterministic, pending, on_episode, reset_options)
        return
    _check_picklable(source)
    context = _worker_context(card.entry_point.split(":")[0])
    results = context.Queue()
    processes = [
        context.Process(
            target=_pool_worker,
            args=(card, source, deterministic, chunk, results, reset_options),
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


def _worker_context(entry_module: str) -> mp.context.BaseContext:
    """Workers fork from a clean server process that has imported the suite (and the
    environment's module) already: fast to start, and free of the parent's threads (torch)
    and simulator state. Like any spawned process, they re-import a script's ``__main__``,
    so scripts calling :func:`~rlbench_suite.evaluation.evaluate` with several workers need
    the usual ``if __name__ == "__main__":`` guard."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    context = mp.get_context("forkserver")
    context.set_forkserver_preload(
        ["rlbench_suite", "rlbench_suite.evaluation.local_pool", entry_module]
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
            f"policy spec ({POLICY_SPECS_TEXT}) or workers=1"
        ) from None
