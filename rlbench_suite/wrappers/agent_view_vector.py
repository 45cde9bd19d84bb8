"""One agent's view of a multi-agent batched backend, its partners played in batches.

:class:`AgentViewVectorEnv` turns a card's batched backend (one vector slot per agent of
each game: slot ``g * N + i`` is agent ``i`` of game ``g``, as
:class:`~rlbench_suite.envs.multiagent.coop_nav.vector.CoopNavVectorEnv` lays them out) into
a single-agent vector env of ``num_games`` slots: the card's ``agent`` is the learner, and
every other agent is played by a memoryless scripted policy that acts on a whole batch of
observations at once (:class:`BatchedPartner`). Each game is the card's Gymnasium view
(``gym.make(card.id)``: the agent beside the card's opponents) played many times in one
NumPy call, so a trainer can take millions of steps in minutes; game ``g`` reset with
``seed + g`` plays exactly as that view reset with ``seed + g``.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import batch_space


@runtime_checkable
class BatchedPartner(Protocol):
    """A memoryless, deterministic policy that acts for many agents at once."""

    def act_batch(self, observations: np.ndarray) -> np.ndarray:
        """One action per row of ``observations``."""
        ...


def batched_partner(policy: Any) -> BatchedPartner | None:
    """``policy`` (or the object a ``module:`` policy wraps) if it acts in batches, else None."""
    for candidate in (policy, getattr(policy, "policy", None)):
        if isinstance(candidate, BatchedPartner):
            return candidate
    return None


class AgentViewVectorEnv(gym.vector.VectorEnv):
    """Agent ``agent_index`` of every game of ``batched`` (``num_agents`` slots a game),
    the other agents played by ``partner``; autoreset as ``batched``'s."""

    def __init__(
        self,
        batched: gym.vector.VectorEnv,
        num_agents: int,
        agent_index: int,
        partner: BatchedPartner,
    ) -> None:
        if batched.num_envs % num_agents:
            raise ValueError(f"{batched.num_envs} slots are not whole games of {num_agents} agents")
        if not 0 <= agent_index < num_agents:
            raise ValueError(f"agent_index must be in 0..{num_agents - 1}, got {agent_index}")
        self.batched, self.partner, self.num_agents = batched, partner, num_agents
        self.num_envs = batched.num_envs // num_agents
        slots = np.arange(batched.num_envs).reshape(self.num_envs, num_agents)
        self.mine = slots[:, agent_index]
        self.theirs = np.delete(slots, agent_index, axis=1).reshape(-1)
        self.metadata = dict(batched.metadata)
        self.single_observation_space = batched.single_observation_space
        self.single_action_space = batched.single_action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._obs: np.ndarray | None = None

    def _view(self, value: Any) -> Any:
        """The learner's slots of a per-slot array (recursively through info dicts)."""
        if isinstance(value, dict):
            return {key: self._view(item) for key, item in value.items()}
        if isinstance(value, np.ndarray) and value.shape[:1] == (self.batched.num_envs,):
            return value[self.mine]
        return value

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset the games (game ``g`` with ``seed + g``, or one seed per game); a
        ``reset_mask`` has one flag per game."""
        if options and "reset_mask" in options:
            mask = np.repeat(np.asarray(options["reset_mask"], dtype=bool), self.num_agents)
            options = {**options, "reset_mask": mask}
        self._obs, info = self.batched.reset(seed=seed, options=options)
        return self._obs[self.mine], self._view(info)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if self._obs is None:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions)
        joint = np.empty((self.batched.num_envs, *actions.shape[1:]), dtype=actions.dtype)
        joint[self.mine] = actions
        joint[self.theirs] = self.partner.act_batch(self._obs[self.theirs])
        self._obs, reward, terminated, truncated, info = self.batched.step(joint)
        return (self._obs[self.mine], reward[self.mine], terminated[self.mine],
                truncated[self.mine], self._view(info))  # fmt: skip

    def close(self, **kwargs: Any) -> None:
        self.batched.close(**kwargs)
