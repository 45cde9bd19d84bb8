"""2x2 matrix games as a PettingZoo Parallel environment: one-shot or repeated, observed history.

Two agents, ``player_0`` (rows) and ``player_1`` (columns), each choose action 0 or 1 every
round and receive their payoffs from the game (see
:mod:`~rlbench_suite.envs.multiagent.matrix.topology`: a named game, or any of the 144
ordinal games by name or index). After ``rounds`` rounds both agents *terminate*: the
horizon is part of the game and observed (the round fraction), so it is a terminal state,
not a time limit.

Observation of each agent (float32, shape ``4 * history + 1``), from its own perspective:
the last ``history`` joint actions, most recent first, each one-hot over ``2 * own + other``
(zeros before there are that many rounds), then the fraction of rounds still to play
(1 at the start, 0 at the end): :func:`joint_action_slot` and :data:`ROUNDS_LEFT` name the
layout. Both agents thus share one observation space (parameter sharing works), and
:func:`opponent_last_action` reads the opponent's last action back once a round has been
played.

:class:`MatrixGameBatch` is the NumPy core stepping many games at once; the environment is
its one-game case and :class:`~rlbench_suite.envs.multiagent.matrix.vector.MatrixGameVectorEnv`
its batched one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from rlbench_suite.envs.multiagent.matrix.topology import Game, get_game

AGENTS = ("player_0", "player_1")


def check_int(name: str, value: Any, low: int) -> int:
    """``value`` if it is an integer >= ``low``; a ValueError naming the accepted range if not."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


JOINT_ACTIONS = 4  # one-hot slots per past round: 2 * own action + other's action
ROUNDS_LEFT = -1  # the last value: the fraction of rounds still to play


def joint_action_slot(rounds_ago: int, own: Any, other: Any) -> Any:
    """The index of the one-hot of joint action ``(own, other)`` played ``rounds_ago`` + 1
    rounds ago (0: the most recent round)."""
    return JOINT_ACTIONS * rounds_ago + 2 * own + other


def opponent_last_action(observation: Any) -> int | None:
    """The opponent's action in the most recent round, or None before any (the observation
    must have ``history >= 1``)."""
    last = np.asarray(observation)[:JOINT_ACTIONS]
    return int(np.argmax(last)) % 2 if last.any() else None


def observation_space(history: int) -> spaces.Box:
    """The observation space of one agent."""
    return spaces.Box(0.0, 1.0, (JOINT_ACTIONS * history + 1,), np.float32)


class MatrixGameBatch:
    """``num_games`` repeated plays of one 2x2 game, stepped together in NumPy."""

    def __init__(self, game: str | int | Game, rounds: int, history: int, num_games: int) -> None:
        self.game = get_game(game)
        self.rounds = check_int("rounds", rounds, 1)
        self.history = check_int("history", history, 0)
        self.num_games = check_int("num_games", num_games, 1)
        self.payoffs = self.game.matrix.transpose(1, 2, 0).astype(np.float32)  # (row, col, player)
        # past joint actions, most recent first; -1 before they happened
        self.past = np.full((num_games, self.history, 2), -1, dtype=np.int64)
        self.played = np.zeros(num_games, dtype=np.int64)

    def reset(self, indices: np.ndarray | slice = slice(None)) -> None:
        """Start new plays in games ``indices``."""
        self.past[indices] = -1
        self.played[indices] = 0

    def step(self, actions: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Play one round in the ``live`` games with ``actions`` of shape (num_games, 2).

        Returns the rewards (num_games, 2), zero where not live, and which games ended.
        """
        actions = np.asarray(actions)
        if actions.shape != (self.num_games, 2) or not np.isin(actions, (0, 1)).all():
            raise ValueError(f"actions must be 0 or 1, one per agent, got {actions.tolist()!r}")
        rewards = self.payoffs[actions[:, 0], actions[:, 1]] * live[:, None]
        if self.history:
            shifted = np.concatenate([actions[:, None, :], self.past[:, :-1]], axis=1)
            self.past = np.where(live[:, None, None], shifted, self.past)
        self.played += live
        return rewards, live & (self.played >= self.rounds)

    def observations(self) -> np.ndarray:
        """Each agent's observation from its own perspective, shape (num_games, 2, 4h + 1)."""
        n, h = self.num_games, self.history
        obs = np.zeros((n, 2, JOINT_ACTIONS * h + 1), dtype=np.float32)
        seen = self.past[..., 0] >= 0
        games, steps = np.nonzero(seen)
        for player in (0, 1):
            own, other = self.past[games, steps, player], self.past[games, steps, 1 - player]
            obs[games, player, joint_action_slot(steps, own, other)] = 1.0
        obs[:, :, ROUNDS_LEFT] = (1.0 - self.played / self.rounds)[:, None]
        return obs


class MatrixGameEnv(ParallelEnv):
    """A 2x2 matrix game for ``player_0`` (rows) and ``player_1`` (columns).

    Args:
        game: a named game (``"prisoners_dilemma"``, ``"stag_hunt"``, ``"chicken"``,
            ``"battle_of_the_sexes"``, ``"matching_pennies"``), an ordinal game
            (``"g000"``..``"g143"``, ``"<classic>_ordinal"``, or its index 0..143), or a ``Game``.
        rounds: rounds per episode (1: one-shot).
        history: how many past joint actions each observation shows.
    """

    metadata = {"name": "matrix_game_v0", "is_parallelizable": True, "render_modes": []}

    def __init__(
        self,
        game: str | int | Game = "prisoners_dilemma",
        rounds: int = 1,
        history: int = 1,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None:
            raise ValueError(f"matrix games have no render modes, got render_mode={render_mode!r}")
        self.render_mode = render_mode
        self.batch = MatrixGameBatch(game, rounds, history, 1)
        self.game = self.batch.game
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self._observation_spaces = {a: observation_space(self.batch.history) for a in AGENTS}
        self._action_spaces = {a: spaces.Discrete(2) for a in AGENTS}

    @property
    def action_names(self) -> tuple[str, str]:
        """What actions 0 and 1 mean in this game (``("cooperate", "defect")``; an ordinal
        game's are ``("0", "1")``)."""
        return self.game.actions

    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._action_spaces[agent]

    def _observations(self) -> dict[str, np.ndarray]:
        obs = self.batch.observations()[0]
        return {agent: obs[i] for i, agent in enumerate(AGENTS)}

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """Start a new play (the game has no randomness; ``seed`` seeds the action spaces)."""
        if seed is not None:
            for i, agent in enumerate(AGENTS):
                self.action_space(agent).seed(seed + i)
        self.batch.reset()
        self.agents = list(AGENTS)
        return self._observations(), self._infos()

    def _infos(self) -> dict[str, dict[str, Any]]:
        """Which game is played, and in which seat (for game-aware policies)."""
        return {agent: {"game": self.game.name, "player": i} for i, agent in enumerate(AGENTS)}

    def step(self, actions: dict[str, Any]) -> tuple[dict[str, Any], ...]:
        if not self.agents:
            raise RuntimeError("the episode is over; call reset() before step()")
        missing = [a for a in AGENTS if a not in actions]
        if missing:
            raise ValueError(f"actions are needed for both agents; missing {missing}")
        joint = np.array([[actions[a] for a in AGENTS]])
        rewards, done = self.batch.step(joint, np.ones(1, dtype=bool))
        obs = self._observations()
        self.agents = [] if done[0] else list(AGENTS)
        return (
            obs,
            {agent: float(rewards[0, i]) for i, agent in enumerate(AGENTS)},
            {agent: bool(done[0]) for agent in AGENTS},
            {agent: False for agent in AGENTS},
            self._infos(),
        )

    def close(self) -> None:
        """Nothing to release."""
