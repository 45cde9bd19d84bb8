"""PettingZoo Parallel environments as Gymnasium vector environments (parameter sharing).

:class:`ParallelEnvToVectorEnv` runs ``num_envs`` copies of a PettingZoo ``ParallelEnv``
and exposes every (copy, agent) pair as one slot of a Gymnasium ``VectorEnv``, so one
single-agent learner can train a policy shared by all agents.

Agents that leave before their sub-environment ends ("black death"): a slot reports its
agent's ``terminated``/``truncated`` on the step the agent leaves (an agent that vanishes
from ``env.agents`` without a flag is reported as truncated). From then until the whole
sub-environment ends, the slot returns a zero observation, reward 0, both flags False and
``info["active"] == False``, and its actions are ignored. Learners should drop those
transitions (``info["active"]``) or accept them as padding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from rlbench_suite.wrappers.masks import (
    ACTION_MASK_KEY,
    scalar_discrete_observation,
    split_masked_observation,
    unmasked_observation_space,
)
from rlbench_suite.wrappers.stats import STATS_KEY

# (observation, reward, terminated, truncated, info) of one slot
SlotStep = tuple[Any, float, bool, bool, dict[str, Any]]


def shared_agent_spaces(env: Any, agents: Sequence[Any]) -> tuple[gym.Space, gym.Space]:
    """The observation and action space shared by all ``agents``; ValueError if they differ."""
    first = agents[0]
    obs_space, act_space = env.observation_space(first), env.action_space(first)
    for agent in agents[1:]:
        for kind, ref, space in (
            ("observation", obs_space, env.observation_space(agent)),
            ("action", act_space, env.action_space(agent)),
        ):
            if space != ref:
                raise ValueError(
                    f"parameter sharing needs identical spaces for all agents, but the {kind} "
                    f"space of {first!r} is {ref} and that of {agent!r} is {space}"
                )
    return obs_space, act_space


def _autoreset_mode(mode: str | AutoresetMode) -> AutoresetMode:
    """``mode`` as an AutoresetMode; names ("same_step") and values ("SameStep") both work."""
    for lookup in (AutoresetMode, lambda m: AutoresetMode[str(m).upper()]):
        try:
            return lookup(mode)
        except (KeyError, ValueError):
            pass
    accepted = [m.name for m in AutoresetMode]
    raise ValueError(f"unknown autoreset_mode {mode!r}; accepted: {accepted} (AutoresetMode)")


def _same(a: Any, b: Any) -> bool:
    return a is b or (np.shape(a) == np.shape(b) and bool(np.all(a == b)))


class ParallelEnvToVectorEnv(VectorEnv):
    """``num_envs`` copies of a PettingZoo ParallelEnv as one Gymnasium VectorEnv.

    Slots are ordered env-major, then by ``possible_agents``; :attr:`agent_slots` lists
    ``(env_index, agent)`` per slot and ``self.num_envs`` is the number of slots. All
    agents must share their spaces. Classic ``{"observation", "action_mask"}`` observations
    are unwrapped and masks batched into ``info["action_mask"]`` (``(num_slots, n)`` int8,
    presence in ``info["_action_mask"]``; slots without a mask get all ones). A
    sub-environment's episode ends when ``env.agents`` is empty or all its agents left;
    ``autoreset_mode`` then behaves as in ``SyncVectorEnv``, per sub-environment. In
    ``DISABLED`` mode reset ended sub-environments with
    ``reset(options={"reset_mask": vec.ended_slots})``. When a slot's episode ends,
    ``info["rlbench_episode"] = {"r", "l"}`` (:data:`~rlbench_suite.wrappers.stats.STATS_KEY`,
    presence in ``info["_rlbench_episode"]``) gives its return and length, leaving
    ``"episode"`` to Gymnasium's ``RecordEpisodeStatistics``.

    ``reset(seed=s)`` seeds sub-environment ``i`` with ``s + i``. As in Gymnasium, a list
    holds one seed per slot (``num_envs`` entries); a sub-environment takes the seed of its
    slots, which must agree (e.g. ``[s0, s0, s1, s1]`` for two agents).
    """

    wrapper_name: ClassVar[str] = "rlbench/ParallelEnvToVectorEnv-v0"

    def __init__(
        self,
        env_fn: Callable[[], Any],
        num_envs: int = 1,
        *,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    ) -> None:
        from pettingzoo import ParallelEnv

        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.envs = [env_fn() for _ in range(num_envs)]
        if not isinstance(self.envs[0], ParallelEnv):
            raise TypeError(f"env_fn must return a PettingZoo ParallelEnv, got {self.envs[0]!r}")
        self.possible_agents = list(self.envs[0].possible_agents)
        obs_space, act_space = shared_agent_spaces(self.envs[0], self.possible_agents)

        self.num_sub_envs = num_envs
        self.agent_slots = [(i, a) for i in range(num_envs) for a in self.possible_agents]
        self.num_envs = len(self.agent_slots)
        self.autoreset_mode = _autoreset_mode(autoreset_mode)
        self.metadata = {**self.envs[0].metadata, "autoreset_mode": self.autoreset_mode}
        self.render_mode = getattr(self.envs[0], "render_mode", None)

        self.single_observation_space = unmasked_observation_space(obs_space)
        self.single_action_space = act_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(act_space, self.num_envs)
        zeros = create_empty_array(self.single_observation_space, n=1, fn=np.zeros)
        self._zero_obs = next(iter(iterate(batch_space(self.single_observation_space, 1), zeros)))

        n = self.num_envs
        self._obs: list[Any] = [self._zero_obs] * n
        self._active = np.zeros(n, dtype=np.bool_)
        self._env_done = np.zeros(num_envs, dtype=np.bool_)
        self._returns = np.zeros(n, dtype=np.float64)
        self._lengths = np.zeros(n, dtype=np.int64)
        self._episode_end = np.zeros(n, dtype=np.bool_)
        self._episode_return = np.zeros(n, dtype=np.float64)
        self._episode_length = np.zeros(n, dtype=np.int64)

    # -- slots ---------------------------------------------------------------------------

    def _slots(self, i: int) -> range:
        k = len(self.possible_agents)
        return range(i * k, (i + 1) * k)

    @property
    def ended_slots(self) -> np.ndarray:
        """Per slot: its sub-environment's episode has ended and awaits a reset."""
        return np.repeat(self._env_done, len(self.possible_agents))

    # -- reset ---------------------------------------------------------------------------

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all sub-environments, or those selected by ``options["reset_mask"]``."""
        super().reset(seed=seed if isinstance(seed, int | np.integer) else None)
        seeds = self._sub_env_seeds(seed)
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        to_reset = self._sub_envs_to_reset(mask)
        infos: dict[str, Any] = {}
        for i in np.flatnonzero(to_reset):
            for s, (obs, info) in zip(
                self._slots(i), self._reset_sub_env(i, seeds[i], options), strict=True
            ):
                self._obs[s] = obs
                infos = self._add_info(infos, info, s)
        return self._batch_obs(self._obs), self._finish_infos(infos)

    def _sub_env_seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_sub_envs
        if isinstance(seed, int | np.integer):
            return [int(seed) + i for i in range(self.num_sub_envs)]
        seed = list(seed)
        if len(seed) != self.num_envs:
            raise ValueError(
                f"a list of seeds needs one seed per slot ({self.num_envs} slots: "
                f"{self.num_sub_envs} sub-environments x {len(self.possible_agents)} agents), "
                f"got {len(seed)}; or pass one int (sub-environment i gets seed + i)"
            )
        out = []
        for i in range(self.num_sub_envs):
            mine = [seed[s] for s in self._slots(i)]
            if any(m != mine[0] for m in mine[1:]):
                raise ValueError(
                    f"slots {list(self._slots(i))} share sub-environment {i} and so one seed, "
                    f"but got {mine}; repeat each sub-environment's seed for its slots"
                )
            out.append(None if mine[0] is None else int(mine[0]))
        return out

    def _sub_envs_to_reset(self, mask: Any) -> np.ndarray:
        if mask is None:
            return np.ones(self.num_sub_envs, dtype=np.bool_)
        if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_:
            raise TypeError(f"options['reset_mask'] must be a numpy bool array, got {mask!r}")
        if mask.shape != (self.num_envs,):
            raise ValueError(
                f"options['reset_mask'] must have shape ({self.num_envs},) (one entry per "
                f"slot), got {mask.shape}"
            )
        if not mask.any():
            raise ValueError("options['reset_mask'] must select at least one slot")
        per_env = mask.reshape(self.num_sub_envs, len(self.possible_agents))
        split = np.flatnonzero(per_env.any(axis=1) & ~per_env.all(axis=1))
        if split.size:
            detail = "; ".join(
                f"sub-env {i}: slots {list(self._slots(i))}, mask {per_env[i].tolist()}"
                for i in split
            )
            raise ValueError(
                "options['reset_mask'] must select all slots of a sub-environment or none "
                f"(a sub-environment is reset as a whole); it splits {detail}. "
                "Use vec.ended_slots for the slots whose sub-environment has ended."
            )
        return per_env.all(axis=1)

    def _reset_sub_env(
        self, i: int, seed: int | None, options: dict[str, Any]
    ) -> list[tuple[Any, dict[str, Any]]]:
        obs, infos = self.envs[i].reset(seed=seed, options=options or None)
        self._env_done[i] = False
        out = []
        for s in self._slots(i):
            agent = self.agent_slots[s][1]
            self._returns[s], self._lengths[s] = 0.0, 0
            self._active[s] = agent in obs
            if self._active[s]:
                o, info = self._split(obs[agent], infos.get(agent, {}))
                out.append((o, {**info, "active": True}))
            else:
                out.append((self._zero_obs, {"active": False}))
        return out

    # -- step ----------------------------------------------------------------------------

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Step every sub-environment with the slots' actions (see the class docstring)."""
        actions = list(iterate(self.action_space, actions))
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=np.bool_)
        truncated = np.zeros(self.num_envs, dtype=np.bool_)
        infos: dict[str, Any] = {}
        self._episode_end = np.zeros(self.num_envs, dtype=np.bool_)
        for i in range(self.num_sub_envs):
            slots = self._slots(i)
            if self._env_done[i]:
                results = self._autoreset_next_step(i)
            else:
                results = self._step_sub_env(i, [actions[s] for s in slots])
                if self._env_done[i] and self.autoreset_mode == AutoresetMode.SAME_STEP:
                    results = self._autoreset_same_step(i, results)
            for s, (obs, reward, term, trunc, info) in zip(slots, results, strict=True):
                self._obs[s], rewards[s], terminated[s], truncated[s] = obs, reward, term, trunc
                infos = self._add_info(infos, info, s)
        if self._episode_end.any():
            end = self._episode_end
            infos[STATS_KEY] = {
                "r": np.where(end, self._episode_return, 0.0),
                "l": np.where(end, self._episode_length, 0),
            }
            infos[f"_{STATS_KEY}"] = end
        return self._batch_obs(self._obs), rewards, terminated, truncated, self._finish_infos(infos)

    def _step_sub_env(self, i: int, slot_actions: list[Any]) -> list[SlotStep]:
        env = self.envs[i]
        slots = self._slots(i)
        joint = {
            self.agent_slots[s][1]: action
            for s, action in zip(slots, slot_actions, strict=True)
            if self._active[s]
        }
        obs, rewards, terminations, truncations, infos = env.step(joint)
        results: list[SlotStep] = []
        for s in slots:
            agent = self.agent_slots[s][1]
            if not self._active[s]:
                results.append((self._zero_obs, 0.0, False, False, {"active": False}))
                continue
            term = bool(terminations.get(agent, False))
            trunc = bool(truncations.get(agent, False))
            trunc = trunc or (not term and agent not in env.agents)
            o = obs.get(agent, self._zero_obs)
            o, info = self._split(o, infos.get(agent, {}))
            reward = float(rewards.get(agent, 0.0))
            self._record(s, reward, ended=term or trunc)
            results.append((o, reward, term, trunc, {**info, "active": True}))
        self._env_done[i] = not env.agents or not self._active[slots.start : slots.stop].any()
        if self.autoreset_mode == AutoresetMode.SAME_STEP and not self._env_done[i]:
            results = [self._same_step_leave(r) for r in results]
        return results

    def _record(self, s: int, reward: float, ended: bool) -> None:
        """Episode statistics of slot ``s``; an ending episode is reported in info[STATS_KEY]."""
        self._returns[s] += reward
        self._lengths[s] += 1
        self._active[s] = not ended
        if ended:
            self._episode_end[s] = True
            self._episode_return[s], self._episode_length[s] = self._returns[s], self._lengths[s]

    def _autoreset_next_step(self, i: int) -> list[SlotStep]:
        """NEXT_STEP: the step after sub-env ``i`` ended resets it (reward 0, flags False)."""
        if self.autoreset_mode != AutoresetMode.NEXT_STEP:
            raise RuntimeError(
                f"sub-environment {i} (slots {list(self._slots(i))}) has ended; in "
                f"{self.autoreset_mode} mode reset it first with "
                "reset(options={'reset_mask': vec.ended_slots})"
            )
        return [(o, 0.0, False, False, info) for o, info in self._reset_sub_env(i, None, {})]

    def _same_step_leave(self, result: SlotStep) -> SlotStep:
        """SAME_STEP: an agent leaving a running sub-env shows its last obs in final_obs."""
        obs, reward, term, trunc, info = result
        if not (term or trunc):
            return result
        final = {"final_obs": obs, "final_info": info}
        return self._zero_obs, reward, term, trunc, {**final, "active": False}

    def _autoreset_same_step(self, i: int, results: list[SlotStep]) -> list[SlotStep]:
        """SAME_STEP: reset ended sub-env ``i`` now; ending slots' data goes to final_*."""
        out: list[SlotStep] = []
        for (obs, reward, term, trunc, info), (new_obs, new_info) in zip(
            results, self._reset_sub_env(i, None, {}), strict=True
        ):
            if term or trunc:
                new_info = {"final_obs": obs, "final_info": info, **new_info}
            out.append((new_obs, reward, term, trunc, new_info))
        return out

    # -- batching ------------------------------------------------------------------------

    def _split(self, obs: Any, info: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        obs, info = split_masked_observation(obs, dict(info))
        return scalar_discrete_observation(obs, self.single_observation_space), info

    def _batch_obs(self, obs: list[Any]) -> Any:
        out = create_empty_array(self.single_observation_space, n=self.num_envs, fn=np.zeros)
        return concatenate(self.single_observation_space, obs, out)

    def _finish_infos(self, infos: dict[str, Any]) -> dict[str, Any]:
        if ACTION_MASK_KEY in infos:
            infos[ACTION_MASK_KEY][~infos[f"_{ACTION_MASK_KEY}"]] = 1
        return infos

    # -- the rest of the VectorEnv API ---------------------------------------------------

    def render(self) -> tuple[Any, ...]:
        """One frame per sub-environment."""
        return tuple(env.render() for env in self.envs)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call (or read) ``name`` once per sub-environment; the result is repeated per slot."""
        results = []
        for env in self.envs:
            attr = getattr(env, name)
            results.append(attr(*args, **kwargs) if callable(attr) else attr)
        return tuple(results[i] for i, _ in self.agent_slots)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of each slot's sub-environment."""
        return tuple(getattr(self.envs[i], name) for i, _ in self.agent_slots)

    def set_attr(self, name: str, values: Any) -> None:
        """Set ``name`` on the sub-environments: one value, or one per slot (equal per env)."""
        if not isinstance(values, list | tuple):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(
                f"set_attr needs one value per slot ({self.num_envs}), got {len(values)}"
            )
        for i, env in enumerate(self.envs):
            mine = [values[s] for s in self._slots(i)]
            if not all(_same(v, mine[0]) for v in mine[1:]):
                raise ValueError(f"slots {list(self._slots(i))} share sub-env {i}; got {mine}")
            setattr(env, name, mine[0])

    def close_extras(self, **kwargs: Any) -> None:
        """Close every sub-environment."""
        for env in self.envs:
            env.close()
