"""Evaluating one policy on every card of a suite, and aggregating across environments."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.catalog import get_card, select_cards
from rlbench_suite.core.metrics import interval_estimates
from rlbench_suite.core.result import IntervalEstimate, Result, ResultError, load_result
from rlbench_suite.core.summary import BOOTSTRAP_REPS, BOOTSTRAP_SEED, normalized_values
from rlbench_suite.evaluation.protocols import default_protocol


class SuiteSummary(BaseModel):
    """The aggregate of a suite run: normalized-score estimates over the scored envs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    suite: str
    policy: str
    results: dict[str, str]  # env id -> result file
    scored: list[str]  # envs with both reference scores, in the aggregate
    unscored: list[str]  # envs without an expert reference yet, left out of it
    aggregates: dict[str, IntervalEstimate]


def suite_cards(suite: str) -> list[EnvCard]:
    """The cards of ``suite``; an unknown suite is a ValueError listing the known ones."""
    cards = select_cards(suite=suite)
    if not cards:
        known = sorted({s for c in select_cards() for s in c.suites})
        raise ValueError(f"unknown suite {suite!r}; accepted: {', '.join(known)}")
    return cards


def normalized_matrix(results: list[Result]) -> tuple[np.ndarray, list[str], list[str]]:
    """Per-episode normalized scores as ``(episodes, envs)`` for the envs that have both
    references, and the lists of scored and unscored env ids."""
    columns, scored, unscored = [], [], []
    for result in results:
        card = get_card(result.env_id)
        values = normalized_values(card, result.returns, result.successes)
        if values is None:
            unscored.append(card.id)
            continue
        columns.append(values)
        scored.append(card.id)
    sizes = {len(c) for c in columns}
    if len(sizes) > 1:
        raise ValueError("suite results have different episode counts; use one --episodes")
    matrix = np.stack(columns, axis=1) if columns else np.zeros((0, 0))
    return matrix, scored, unscored


def run_suite(
    suite: str, policy: str, out_dir: Path, *, episodes: int | None = None,
    workers: int | None = None, backend: str = "local", resume: bool = False,
    on_env: Callable[[EnvCard], Any] | None = None,
) -> tuple[list[Result], SuiteSummary]:  # fmt: skip
    """Evaluate ``policy`` on each card of ``suite`` (one result file per env in
    ``out_dir``) and write ``out_dir/summary.json``. With ``resume``, finished env results
    of the same protocol are kept and an interrupted env continues from its episode log."""
    from rlbench_suite.evaluation.runner import evaluate

    results = []
    files = {}
    for card in suite_cards(suite):
        protocol = default_protocol(card.id, episodes=episodes)
        path = out_dir / f"{card.name}.json"
        result = _finished(path, protocol.hash, _identity(card, policy)) if resume else None
        if result is None:
            if on_env is not None:
                on_env(card)
            result = evaluate(card.id, policy, protocol, workers=workers, backend=backend,  # type: ignore[arg-type]
                              out=path, resume=resume)  # fmt: skip
        results.append(result)
        files[card.id] = str(path)
    summary = summarize_suite(suite, policy, results, files)
    (out_dir / "summary.json").write_text(summary.model_dump_json(indent=2) + "\n")
    return results, summary


def _identity(card: EnvCard, policy: str) -> dict[str, Any]:
    """The identity the policy has now (its artifact may have changed since a result)."""
    import gymnasium as gym

    from rlbench_suite.policies import make_policy

    env = gym.make(card.id)
    try:
        return make_policy(policy, env=env).identity.model_dump(mode="json")
    finally:
        env.close()


def _finished(path: Path, protocol_hash: str, identity: dict[str, Any]) -> Result | None:
    """A result at ``path`` of the same protocol and the same policy (spec and artifact)."""
    try:
        result = load_result(path)
    except ResultError:
        return None
    same_policy = all(result.policy.get(k) == identity.get(k) for k in ("spec", "artifact_sha256"))
    return result if result.protocol_hash == protocol_hash and same_policy else None


def summarize_suite(
    suite: str, policy: str, results: list[Result], files: dict[str, str]
) -> SuiteSummary:
    """Mean, median, IQM and optimality gap of normalized scores, stratified bootstrap."""
    matrix, scored, unscored = normalized_matrix(results)
    aggregates = {}
    if scored:
        estimates = interval_estimates(matrix, reps=BOOTSTRAP_REPS, random_state=BOOTSTRAP_SEED)
        aggregates = {k: IntervalEstimate(**v.as_dict()) for k, v in estimates.items()}
    return SuiteSummary(suite=suite, policy=policy, results=files, scored=scored,
                        unscored=unscored, aggregates=aggregates)  # fmt: skip
