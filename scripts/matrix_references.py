"""Exact reference scores of the matrix-game cards, computed instead of measured.

Every card whose environment is ``MatrixGameEnv`` (the 144 ordinal games and the named
classics) is scored for its agent against a uniformly random opponent. Its references are
then the expected episode returns, in closed form
(:func:`rlbench_suite.envs.multiagent.matrix.solve.uniform_opponent_references`): uniformly
random play, and the pure best response to the uniform opponent (the card's expert). They
are written as ``method = "exact"`` (no episodes or seeds) with the standard deviation of the
episode return. Where the best response earns no more than random play (49 games), the card
has no normalized score.

    python scripts/matrix_references.py            # rewrite the references of every such card
    python scripts/matrix_references.py --check    # exit 1 if a card differs from the values
"""

from __future__ import annotations

import datetime as dt
import sys

from rlbench_suite import __version__
from rlbench_suite.core.cards import EnvCard, RefScore
from rlbench_suite.core.catalog import card_paths, cards
from rlbench_suite.envs.multiagent.matrix.solve import uniform_opponent_references
from rlbench_suite.refscores import write_reference

ENTRY_POINT = "rlbench_suite.envs.multiagent.matrix.game:MatrixGameEnv"
COMMAND = "python scripts/matrix_references.py"


def matrix_cards() -> list[EnvCard]:
    """The cards scored against a uniformly random opponent in a matrix game."""
    return [c for c in cards().values() if c.entry_point == ENTRY_POINT and c.opponents is None]


def exact_references(card: EnvCard) -> dict[str, RefScore]:
    """The card's exact random and expert references (the expert keeps its policy string)."""
    player = int(card.agent.removeprefix("player_")) if card.agent else 0
    values = uniform_opponent_references(card.kwargs["game"], card.kwargs.get("rounds", 1), player)
    expert = card.reference.expert
    policy = {"random": "random", "expert": expert.policy if expert else "best response"}
    return {
        kind: RefScore(value=round(mean, 9), std=round(std, 9), policy=policy[kind],
                       method="exact", suite_version=__version__, measured=dt.date.today(),
                       command=COMMAND)
        for kind, (mean, std) in values.items()
    }


def main(argv: list[str]) -> int:
    check = "--check" in argv
    differing = []
    for card in matrix_cards():
        for kind, score in exact_references(card).items():
            recorded = getattr(card.reference, kind)
            same = recorded is not None and recorded.method == "exact" and (
                abs(recorded.value - score.value) < 1e-9
            )  # fmt: skip
            if same:
                continue
            differing.append(f"{card.id} {kind}")
            if not check:
                write_reference(card_paths()[card.id], kind, score)
    verb = "differ from" if check else "rewritten with"
    print(f"{len(differing)} references {verb} the exact values ({len(matrix_cards())} cards)")
    return 1 if check and differing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
