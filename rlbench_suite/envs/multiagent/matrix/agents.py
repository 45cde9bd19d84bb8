"""Scripted players of the 2x2 matrix games (:mod:`rlbench_suite.envs.multiagent.matrix.game`).

The observation does not say which game is played, so the game-aware policies take it as
``game=`` (and the seat as ``player=``, 0 for ``player_0``). For the cards' references,
which ``make_policy("module:...")`` builds without arguments, each named game has a
subclass fixing its game: ``<Game>BestResponse`` best-responds to a uniformly random
opponent, the Gymnasium view's ``player_1`` (the cards' expert reference).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from rlbench_suite.envs.multiagent.matrix.game import JOINT_ACTIONS, opponent_last_action
from rlbench_suite.envs.multiagent.matrix.solve import best_response, nash_equilibria
from rlbench_suite.envs.multiagent.matrix.topology import Game, get_game


class _GamePolicy:
    """A policy that knows its game (``game=``, else the class's ``game``) and seat."""

    game: ClassVar[str | int | Game] = "prisoners_dilemma"

    def __init__(
        self, game: str | int | Game | None = None, player: int = 0, seed: int | None = None
    ) -> None:
        if player not in (0, 1):
            raise ValueError(f"player must be 0 (player_0) or 1 (player_1), got {player!r}")
        self.resolved = get_game(self.game if game is None else game)
        self.player = player
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)


class NashPolicy(_GamePolicy):
    """Plays its side of a Nash equilibrium of the game every round (``equilibrium`` indexes
    :func:`~rlbench_suite.envs.multiagent.matrix.solve.nash_equilibria`), sampling seeded."""

    def __init__(
        self,
        game: str | int | Game | None = None,
        player: int = 0,
        equilibrium: int = 0,
        seed: int | None = None,
    ) -> None:
        super().__init__(game, player, seed)
        equilibria = nash_equilibria(self.resolved)
        if not 0 <= equilibrium < len(equilibria):
            raise ValueError(
                f"{self.resolved.name} has {len(equilibria)} listed equilibria {equilibria}; "
                f"equilibrium must be in 0..{len(equilibria) - 1}, got {equilibrium!r}"
            )
        self.p_zero = equilibria[equilibrium][player]

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        return int(self.rng.random() >= self.p_zero)


class BestResponsePolicy(_GamePolicy):
    """Always the pure best response to an opponent playing action 0 with ``opponent``
    probability (default 0.5: a uniformly random opponent)."""

    def __init__(
        self,
        game: str | int | Game | None = None,
        player: int = 0,
        opponent: float = 0.5,
        seed: int | None = None,
    ) -> None:
        super().__init__(game, player, seed)
        self.action = best_response(self.resolved, player, opponent)

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        return self.action


class BestResponseToUniform:
    """The pure best response to a uniformly random opponent in whatever game ``info`` names.

    Reads ``info["game"]`` and ``info["player"]`` (set by ``MatrixGameEnv``), so one class
    serves every game: the expert reference of the 144 ordinal-game cards.
    """

    def __init__(self, observation_space: Any = None) -> None:
        self._cache: dict[tuple[str, int], int] = {}

    def reset(self, seed: int | None = None) -> None:
        """Deterministic: nothing to reset."""

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        if "game" not in info:
            raise ValueError("BestResponseToUniform needs info['game'] (a MatrixGameEnv info)")
        key = (info["game"], int(info.get("player", 0)))
        if key not in self._cache:
            self._cache[key] = best_response(get_game(key[0]), key[1], 0.5)
        return self._cache[key]


class TitForTat:
    """Repeated games: ``first`` in the first round, then the opponent's previous action
    (read from the observation's most recent joint action, which needs ``history >= 1``)."""

    def __init__(self, observation_space: Any = None, first: int = 0) -> None:
        if observation_space is not None and observation_space.shape[0] <= JOINT_ACTIONS:
            raise ValueError(
                "TitForTat reads the last joint action from the observation: make the game "
                f"with history >= 1 (observation shape {observation_space.shape})"
            )
        if first not in (0, 1):
            raise ValueError(f"first must be action 0 or 1, got {first!r}")
        self.first = first

    def reset(self, seed: int | None = None) -> None:
        """Tit for tat is deterministic and reads its memory from the observation."""

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        last = opponent_last_action(observation)
        return self.first if last is None else last


class PrisonersDilemmaBestResponse(BestResponsePolicy):
    """Always defect."""

    game = "prisoners_dilemma"


class StagHuntBestResponse(BestResponsePolicy):
    """Always hunt hare (2.5 against a random partner, stag 2)."""

    game = "stag_hunt"


class ChickenBestResponse(BestResponsePolicy):
    """Always swerve (-0.5 against a random driver, straight -4.5)."""

    game = "chicken"


class BattleOfTheSexesBestResponse(BestResponsePolicy):
    """Always go to one's own favourite event X (2 against a random partner, Y 1)."""

    game = "battle_of_the_sexes"


class MatchingPenniesNash(NashPolicy):
    """Heads or tails with probability 1/2 (nothing beats a random opponent in expectation)."""

    game = "matching_pennies"
