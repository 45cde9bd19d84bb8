"""Many plays of one 2x2 game as one Gymnasium ``VectorEnv``, for parameter-sharing training.

:class:`MatrixGameVectorEnv` steps ``num_games`` games with one NumPy call. Each vector slot
is one agent of one game: slot ``2g`` is ``player_0`` of game ``g``, slot ``2g + 1`` its
``player_1`` (``num_envs = 2 * num_games``). Each slot observes from its own perspective,
exactly as :class:`~rlbench_suite.envs.multiagent.matrix.game.MatrixGameEnv` observes that
agent, so one policy can play both roles; rewards are the slot's payoffs. Both slots of a
game terminate together after ``rounds`` rounds. Autoreset follows Gymnasium's
``NEXT_STEP`` (default: the step after an end resets, ignoring its actions, with reward 0)
or ``SAME_STEP`` (the end's observation moves to ``info["final_obs"]``) modes.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from rlbench_suite.envs.multiagent.matrix.game import MatrixGameBatch, observation_space
from rlbench_suite.envs.multiagent.matrix.topology import Game
from rlbench_suite.envs.vector_info import same_step_final

MODES = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)


class MatrixGameVectorEnv(gym.vector.VectorEnv):
    """``num_games`` plays of one game; ``2 * num_games`` agent slots (see the module)."""

    def __init__(
        self,
        num_games: int = 1,
        game: str | int | Game = "prisoners_dilemma",
        rounds: int = 1,
        history: int = 1,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    ) -> None:
        mode = AutoresetMode(autoreset_mode)
        if mode not in MODES:
            raise ValueError(
                f"autoreset_mode must be one of {[m.value for m in MODES]}, got {mode}"
            )
        self.batch = MatrixGameBatch(game, rounds, history, num_games)
        self.num_games, self.num_envs = num_games, 2 * num_games
        self.metadata = {"autoreset_mode": mode}
        self.single_observation_space = observation_space(history)
        self.single_action_space = spaces.Discrete(2)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.pending = np.zeros(num_games, dtype=bool)

    def _obs(self) -> np.ndarray:
        return self.batch.observations().reshape(self.num_envs, -1)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start new plays in every game (the games have no randomness; ``seed`` seeds the
        action space)."""
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
        self.batch.reset()
        self.pending[:] = False
        return self._obs(), {}

    def _final(self, ended: np.ndarray) -> dict[str, Any]:
        """``SAME_STEP``'s info for the slots that ``ended``, before they are reset."""
        return same_step_final(self._obs(), ended)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One round in every game; ``actions`` holds one action per slot."""
        joint = np.asarray(actions).reshape(self.num_games, 2)
        live = ~self.pending
        rewards, done = self.batch.step(joint, live)
        self.batch.reset(self.pending)
        terminated = np.repeat(done, 2)
        info: dict[str, Any] = {}
        if self.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP:
            if done.any():
                info = self._final(terminated)
                self.batch.reset(done)
        else:
            self.pending = done
        return self._obs(), rewards.reshape(-1), terminated, np.zeros(self.num_envs, bool), info
