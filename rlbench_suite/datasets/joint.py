"""Joint multi-agent episodes: every agent's observation, action and reward per step.

A PettingZoo Parallel env (from :func:`~rlbench_suite.registry.make_multiagent`) is played with
one policy spec for every agent (a :class:`~rlbench_suite.policies.JointPolicy` of it), seeded
as :func:`~rlbench_suite.datasets.builder.play` seeds a single-agent episode: ``reset(seed)``,
the policies with :func:`~rlbench_suite.core.seeds.policy_seed` of it (each agent then its own
stream), and epsilon-random actions from the episode's epsilon stream, one draw per agent and
step in agent order. The :class:`~rlbench_suite.datasets.storage.Episode` holds
``observations``, ``actions`` and ``rewards`` as ``{agent: array}``; ``terminations`` and
``truncations`` are the team's (every agent's episode ends on the same step in the envs this
serves; an env where agents leave early is refused).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.seeds import policy_seed
from rlbench_suite.datasets.lockstep import EPSILON_STREAM
from rlbench_suite.datasets.storage import Episode


def joint_policy(env: Any, spec: str) -> Any:
    """``spec`` (a ``--policy`` string) made once per agent of the Parallel env ``env``: a
    :class:`~rlbench_suite.policies.JointPolicy`."""
    from rlbench_suite.policies import JointPolicy, make_policy

    return JointPolicy({a: make_policy(spec, env, agent=a) for a in env.possible_agents})


def joint_play(env: Any, policy: Any, seed: int, epsilon: float = 0.0) -> Episode:
    """One seeded joint episode of ``policy`` on the Parallel env ``env`` (each agent's action
    replaced by a uniform sample of its action space with probability ``epsilon``)."""
    observations, infos = env.reset(seed=seed)
    agents = list(env.possible_agents)
    policy.reset(policy_seed(seed))
    stream = np.random.default_rng(np.random.SeedSequence([seed, EPSILON_STREAM]))
    spaces = {a: copy.deepcopy(env.action_space(a)) for a in agents}
    if epsilon > 0:
        for agent in agents:
            spaces[agent].seed(int(stream.integers(2**31)))
    obs: dict[str, list] = {a: [observations[a]] for a in agents}
    acts: dict[str, list] = {a: [] for a in agents}
    rews: dict[str, list] = {a: [] for a in agents}
    terminations, truncations = [], []
    while True:
        actions = policy.act(observations, infos)
        if epsilon > 0:
            for agent in agents:
                if stream.random() < epsilon:
                    actions[agent] = spaces[agent].sample()
        observations, rewards, terminated, truncated, infos = env.step(actions)
        if set(observations) != set(agents) and env.agents:
            gone = sorted(set(agents) - set(observations))
            raise ValueError(f"{env}: agents {gone} left before the others; joint data needs "
                             "every agent every step")  # fmt: skip
        for agent in agents:
            obs[agent].append(observations[agent])
            acts[agent].append(actions[agent])
            rews[agent].append(rewards[agent])
        terminations.append(all(terminated[a] for a in agents))
        truncations.append(all(truncated[a] for a in agents))
        if not env.agents or terminations[-1] or truncations[-1]:
            break
    return Episode(
        observations={a: _stack(obs[a], env.observation_space(a)) for a in agents},
        actions={a: _stack(acts[a], env.action_space(a)) for a in agents},
        rewards={a: np.asarray(rews[a], dtype=np.float64) for a in agents},
        terminations=np.asarray(terminations, dtype=bool),
        truncations=np.asarray(truncations, dtype=bool),
        seed=seed,
    )


def _stack(values: list[Any], space: Any) -> np.ndarray:
    return np.asarray(values, dtype=space.dtype)


def is_joint(env_id: str) -> bool:
    """Whether ``env_id``'s datasets are joint (its card's API is PettingZoo Parallel)."""
    return get_card(env_id).api == "pettingzoo-parallel"


def make_joint_env(env_id: str) -> Any:
    """The Parallel env of ``env_id``, with the card's kwargs."""
    from rlbench_suite.registry import make_multiagent

    return make_multiagent(env_id, "parallel")


def joint_spaces(env: Any) -> tuple[gym.spaces.Dict, gym.spaces.Dict]:
    """``(observation space, action space)`` of joint data: a Dict over the agents."""
    agents = env.possible_agents
    return (gym.spaces.Dict({a: env.observation_space(a) for a in agents}),
            gym.spaces.Dict({a: env.action_space(a) for a in agents}))  # fmt: skip


def joint_rollouts(env_id: str, blocks: list[tuple[str, list[int], float]]) -> Iterator[Episode]:
    """The joint episodes of ``blocks`` (policy spec, reset seeds, epsilon), in order."""
    env = make_joint_env(env_id)
    try:
        for spec, seeds, epsilon in blocks:
            policy = joint_policy(env, spec)
            for seed in seeds:
                yield joint_play(env, policy, seed, epsilon)
    finally:
        env.close()
