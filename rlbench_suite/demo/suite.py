"""The demo's quick suite: one or two cards per family among those with a committed baseline.

Chosen at run time from what the zoo committed (``baselines/results``), so the suite grows
with the zoo: every card with a ``[[trained]]`` baseline whose lowest training seed has a
committed ``result.json`` is a candidate, and per family the candidates whose committed
evaluation took the least wall time are taken.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from pathlib import Path

from rlbench_suite.baselines.zoo import results_dir
from rlbench_suite.core.cards import EnvCard, Family
from rlbench_suite.core.catalog import cards
from rlbench_suite.core.result import load_result

FAMILIES: tuple[str, ...] = typing.get_args(Family)


@dataclass(frozen=True)
class Pick:
    """A card of the quick suite and the shipped baseline evaluated on it."""

    card: EnvCard
    policy: str
    """``baseline:<env-name>/<algo>`` (it resolves to the lowest training seed's ONNX)."""
    committed: Path
    """That seed's committed result, whose evaluation wall time ranks the candidates."""
    cost_s: float
    algo: str = ""
    seed: int = 0

    @property
    def label(self) -> str:
        """What the summary table calls the baseline: its algorithm and seed (the env has
        its own column)."""
        return f"{self.algo} seed {self.seed}"


def committed_baselines() -> list[Pick]:
    """Every card with a committed trained baseline (its first, best one), in catalog order."""
    found = []
    for card in cards().values():
        for trained in card.trained:
            committed = results_dir(card, trained.algo, min(trained.seeds)) / "result.json"
            if committed.is_file():
                cost = load_result(committed).wall_time_s
                found.append(Pick(card, trained.name, committed, float(cost), trained.algo,
                                  min(trained.seeds)))  # fmt: skip
                break
    return found


def quick_suite(per_family: int = 2, candidates: list[Pick] | None = None) -> list[Pick]:
    """Up to ``per_family`` picks per family, the quickest to evaluate first, families in
    the order of :data:`~rlbench_suite.core.cards.Family`."""
    if per_family < 1:
        raise ValueError(f"per_family must be at least 1, got {per_family}")
    picks = committed_baselines() if candidates is None else candidates
    chosen = []
    for family in FAMILIES:
        mine = sorted((p for p in picks if p.card.family == family),
                      key=lambda p: (p.cost_s, p.card.id))  # fmt: skip
        chosen += mine[:per_family]
    return chosen
