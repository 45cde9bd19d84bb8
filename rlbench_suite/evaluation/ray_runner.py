"""The Ray backend: the same static division of episodes, on Ray actors.

Each worker is a Ray actor that builds its own environment and policy and plays its
statically assigned episodes in order; results stream back one episode at a time, so the
episode log (and ``--resume``) works exactly as with the local pool.
"""

from __future__ import annotations

from typing import Any

from rlbench_suite.core.result import EpisodeRecord
from rlbench_suite.evaluation.workers import (
    EvaluationError,
    OnEpisode,
    PolicySource,
    split_statically,
)


class _EpisodeActor:
    """Holds one environment and policy; plays episodes on request."""

    def __init__(
        self, card: Any, source: Any, deterministic: bool, reset_options: dict | None
    ) -> None:
        import rlbench_suite  # noqa: F401  (registers the ids in the actor's process)
        from rlbench_suite.evaluation.workers import prepare, single_threaded_torch

        self.env, self.policy = prepare(card, source, deterministic)
        self.reset_options = reset_options
        single_threaded_torch()

    def play(self, index: int, seed: int) -> dict[str, Any]:
        from rlbench_suite.evaluation.episodes import play_episode

        return play_episode(self.env, self.policy, seed, index, self.reset_options).model_dump()


def run_ray(
    card: Any, source: PolicySource, deterministic: bool,
    pending: list[tuple[int, int]], workers: int, on_episode: OnEpisode,
    address: str | None = None, reset_options: dict[str, Any] | None = None,
) -> None:  # fmt: skip
    """Play the pending episodes on ``workers`` Ray actors (a local Ray if no ``address``)."""
    try:
        import ray
    except ImportError:
        raise ImportError(
            "the Ray backend needs ray: pip install 'rlbench-suite[distributed]'"
        ) from None
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        # every actor holds a CPU until its episodes are done: never ask for more than exist
        free = int(ray.available_resources().get("CPU", 1))
        chunks = split_statically(pending, max(1, min(workers, free)))
        actor_class = ray.remote(num_cpus=1)(_EpisodeActor)
        actors = [actor_class.remote(card, source, deterministic, reset_options) for _ in chunks]
        # each actor's episodes are queued in order on that actor: a static division
        owner, remaining = {}, {}
        for actor, chunk in zip(actors, chunks, strict=True):
            remaining[actor] = len(chunk)
            for index, seed in chunk:
                owner[actor.play.remote(index, seed)] = actor
        waiting = list(owner)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            try:
                record = ray.get(ready[0])
            except ray.exceptions.RayError as exc:
                raise EvaluationError(f"an evaluation actor failed: {exc}") from None
            on_episode(EpisodeRecord.model_validate(record))
            actor = owner[ready[0]]
            remaining[actor] -= 1
            if not remaining[actor]:
                ray.kill(actor)  # free its CPU
    finally:
        if started_here:
            ray.shutdown()
