"""Play one agent of a PettingZoo game as a single-agent Gymnasium environment.

:class:`MultiAgentToSingleAgent` controls one agent of an AEC or Parallel PettingZoo
environment and plays every other agent with a :class:`~rlbench_suite.policies.Policy`
(seeded random policies by default). PettingZoo classic ``{"observation",
"action_mask"}`` observations are unwrapped: the mask goes into ``info["action_mask"]``
(see :mod:`rlbench_suite.wrappers.masks`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

import gymnasium as gym
import numpy as np

from rlbench_suite.policies import Policy, RandomPolicy, as_policy
from rlbench_suite.wrappers.masks import (
    get_action_mask,
    scalar_discrete_observation,
    split_masked_observation,
    unmasked_observation_space,
    validate_action,
)

Opponents = Mapping[Any, Policy | Callable[..., Any]] | Policy | Callable[..., Any] | None


def _is_parallel(env: Any) -> bool:
    """True for a PettingZoo ParallelEnv, False for an AECEnv; TypeError for anything else."""
    from pettingzoo import AECEnv, ParallelEnv

    if isinstance(env, ParallelEnv):
        return True
    if isinstance(env, AECEnv):
        return False
    raise TypeError(f"expected a PettingZoo AECEnv or ParallelEnv, got {type(env)!r}")


class MultiAgentToSingleAgent(gym.Env):
    """A single-agent view of a PettingZoo environment (AEC or Parallel).

    Args:
        env: the PettingZoo environment (``AECEnv`` or ``ParallelEnv``); it is owned
            (closed by :meth:`close`).
        agent: the controlled agent, default ``env.possible_agents[0]``.
        opponents: policies for the other agents: a dict ``agent -> Policy | callable``
            (agents left out play randomly), one policy (or callable) for all of them, or
            ``None`` for a seeded :class:`~rlbench_suite.policies.RandomPolicy` each.
        on_illegal: what a masked-out (illegal) action of the controlled agent does:
            ``"env"`` (default) plays it, so the game's own rule applies (PettingZoo's
            classic games end the game and the mover loses, -1); ``"raise"`` refuses it
            with a ``ValueError`` naming the legal actions. Actions outside the action
            space are always refused with a ``ValueError``.

    Rewards are the controlled agent's rewards summed over all PettingZoo steps since its
    previous action (its own move and the opponents' replies), i.e. what ``last()`` reports
    as the cumulative reward in the AEC API. An episode ends when the controlled agent is
    terminated or truncated, even if the game is over on an opponent's turn; if the game
    ends without flagging it, the episode is reported as truncated; flagged both terminated
    and truncated, it is reported as terminated only. Opponents moving first
    at reset play before :meth:`reset` returns. ``reset(seed=s)`` seeds the PettingZoo env
    with ``s`` and the k-th distinct opponent policy with ``s + 1 + k``; ``reset()`` without
    a seed continues their random streams, so one seed fixes a whole run of episodes.
    """

    wrapper_name: ClassVar[str] = "rlbench/MultiAgentToSingleAgent-v0"

    def __init__(
        self,
        env: Any,
        agent: Any = None,
        opponents: Opponents = None,
        on_illegal: Literal["env", "raise"] = "env",
    ) -> None:
        if on_illegal not in ("env", "raise"):
            raise ValueError(f"on_illegal must be 'env' or 'raise', got {on_illegal!r}")
        self.on_illegal = on_illegal
        self.env = env
        self.is_parallel = _is_parallel(env)
        possible = list(env.possible_agents)
        self.agent = possible[0] if agent is None else agent
        if self.agent not in possible:
            raise ValueError(f"unknown agent {self.agent!r}; possible agents: {possible}")
        self.opponents = self._make_opponents(possible, opponents)

        raw_space = env.observation_space(self.agent)
        self.observation_space = unmasked_observation_space(raw_space)
        self.action_space = env.action_space(self.agent)
        self.render_mode = getattr(env, "render_mode", None)
        self.metadata = {**getattr(env, "metadata", {}), "render_modes": self._render_modes()}

        self._obs: Any = None
        self._info: dict[str, Any] = {}
        self._mask: np.ndarray | None = None
        self._pending_reward = 0.0
        self._done = True  # no episode running until reset()
        self._parallel_obs: dict[Any, Any] = {}
        self._parallel_infos: dict[Any, dict[str, Any]] = {}

    def _render_modes(self) -> list[str]:
        modes = getattr(self.env, "metadata", {}).get("render_modes", [])
        return list(modes)

    def _make_opponents(self, possible: list[Any], opponents: Opponents) -> dict[Any, Policy]:
        """One policy per other agent (policies may be shared between agents)."""
        others = [a for a in possible if a != self.agent]
        if isinstance(opponents, Mapping):
            unknown = [a for a in opponents if a not in others]
            if unknown:
                raise ValueError(
                    f"opponents given for {unknown}, which are not opponents of "
                    f"{self.agent!r}; opponents are: {others}"
                )
            given = {a: as_policy(p) for a, p in opponents.items()}
        elif opponents is None:
            given = {}
        else:
            shared = as_policy(opponents)
            given = dict.fromkeys(others, shared)
        return {
            a: given[a] if a in given else RandomPolicy(copy.deepcopy(self.env.action_space(a)))
            for a in others
        }

    def _reset_opponents(self, seed: int | None) -> None:
        unique: dict[int, Policy] = {}
        for policy in self.opponents.values():
            unique.setdefault(id(policy), policy)
        for k, policy in enumerate(unique.values()):
            policy.reset(None if seed is None else seed + 1 + k)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the game (and the opponents), play opponents that move first."""
        super().reset(seed=seed)
        self._reset_opponents(seed)
        self._pending_reward = 0.0
        self._done = False
        if self.is_parallel:
            obs, infos = self.env.reset(seed=seed, options=options)
            self._parallel_obs, self._parallel_infos = dict(obs), dict(infos)
            self._set_current(obs.get(self.agent), infos.get(self.agent, {}))
        else:
            self.env.reset(seed=seed, options=options)
            self._play_aec_opponents()
            self._set_current(self.env.observe(self.agent), self.env.infos.get(self.agent, {}))
        return self._obs, self._info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Apply the controlled agent's action, then let the opponents move.

        Raises ``ValueError`` (naming the legal actions) for an action outside the action
        space, and for a masked-out one with ``on_illegal="raise"``; numpy scalars and 0-d
        arrays are accepted.
        """
        if self._done:
            raise RuntimeError("step() called without a running episode; call reset() first")
        action = validate_action(
            action, self.action_space, self._mask, refuse_masked=self.on_illegal == "raise"
        )
        if self.is_parallel:
            return self._step_parallel(action)
        return self._step_aec(action)

    # -- AEC -------------------------------------------------------------------------------

    def _aec_step(self, action: Any) -> None:
        self.env.step(action)
        self._pending_reward += float(self.env.rewards.get(self.agent, 0.0))

    def _aec_agent_done(self) -> bool:
        env = self.env
        if self.agent not in env.agents:
            return True
        return bool(env.terminations[self.agent] or env.truncations[self.agent])

    def _play_aec_opponents(self) -> None:
        """Step the other agents until it is the controlled agent's turn or it is done."""
        env = self.env
        while env.agents and not self._aec_agent_done() and env.agent_selection != self.agent:
            current = env.agent_selection
            obs, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                self._aec_step(None)
                continue
            obs, info = split_masked_observation(obs, dict(info))
            self._aec_step(self.opponents[current].act(obs, info))

    def _step_aec(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self._aec_step(action)
        self._play_aec_opponents()
        env = self.env
        terminated = bool(env.terminations.get(self.agent, False))
        truncated = bool(env.truncations.get(self.agent, False))
        if self.agent in env.agents:
            self._set_current(env.observe(self.agent), env.infos.get(self.agent, {}))
        elif not (terminated or truncated):
            truncated = True
        return self._finish_step(terminated, truncated)

    # -- Parallel ----------------------------------------------------------------------------

    def _step_parallel(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        env = self.env
        actions = {self.agent: action}
        for other in env.agents:
            if other != self.agent and other in self._parallel_obs:
                obs, info = split_masked_observation(
                    self._parallel_obs[other], dict(self._parallel_infos.get(other, {}))
                )
                actions[other] = self.opponents[other].act(obs, info)
        obs, rewards, terminations, truncations, infos = env.step(actions)
        self._parallel_obs, self._parallel_infos = dict(obs), dict(infos)
        self._pending_reward += float(rewards.get(self.agent, 0.0))
        terminated = bool(terminations.get(self.agent, False))
        truncated = bool(truncations.get(self.agent, False))
        if self.agent in obs:
            self._set_current(obs[self.agent], infos.get(self.agent, {}))
        if self.agent not in env.agents and not (terminated or truncated):
            truncated = True
        return self._finish_step(terminated, truncated)

    # -- common ------------------------------------------------------------------------------

    def _set_current(self, obs: Any, info: dict[str, Any]) -> None:
        obs, self._info = split_masked_observation(obs, dict(info))
        self._obs = scalar_discrete_observation(obs, self.observation_space)
        self._mask = get_action_mask(self._obs, self._info)

    def _finish_step(
        self, terminated: bool, truncated: bool
    ) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        reward, self._pending_reward = self._pending_reward, 0.0
        self._done = terminated or truncated
        # a game that is over is a terminal state, even if the env also flags truncation
        # (PettingZoo's TerminateIllegalWrapper sets both)
        truncated = truncated and not terminated
        return self._obs, reward, terminated, truncated, dict(self._info)

    def render(self) -> Any:
        """Render the PettingZoo environment."""
        return self.env.render()

    def close(self) -> None:
        """Close the PettingZoo environment."""
        self.env.close()
        super().close()
