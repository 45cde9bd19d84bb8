"""Parameter-sharing PPO for cooperative multi-agent cards: ``rlbench train ID --algo shared_ppo``.

One SB3 PPO policy acts for every learning agent of every game. The training env is a
Gymnasium ``VectorEnv`` with one slot per (game, agent), handed to SB3 through
:class:`~rlbench_suite.wrappers.sb3.VectorEnvToSB3`:

- the card's batched backend (``make_batched(id, n_envs)``, e.g. CoopNav) where it has one
  and the entry names no ``partners``;
- else ``n_envs`` copies of the PettingZoo Parallel game through
  :class:`~rlbench_suite.wrappers.pz_vector.ParallelEnvToVectorEnv`.

``partners`` (a hyperparameter entry key, ``agent -> [--policy strings]``) takes agents out of
the learner's hands: they are played by fixed policies, game ``g`` using the ``g % k``-th
spec of the list (so a list of training partners is spread over the games). Everything else
(self-play copies) is the shared policy. PredatorPrey's prey is scripted this way; Kitchen's
second cook is one of the training partners.

The trained policy is single-agent shaped (one observation in, one action out), so it is
exported, curved and scored by the same code as ``rlbench train``: on the card's Gymnasium
view, i.e. as the card's ``agent`` beside the card's ``opponents``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from pettingzoo import ParallelEnv

from rlbench_suite import make_batched, make_multiagent
from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.seeds import policy_seed
from rlbench_suite.policies import Policy, make_policy
from rlbench_suite.wrappers.base import apply_wrappers
from rlbench_suite.wrappers.masks import split_masked_observation


class FixedPartners(ParallelEnv):
    """A PettingZoo Parallel game with some agents played by fixed policies.

    ``partners`` maps agent -> :class:`~rlbench_suite.policies.Policy`; the remaining agents
    (``possible_agents``) are the learners. ``reset(seed=s)`` resets the game with ``s`` and
    the k-th partner with ``policy_seed(s) + k``.
    """

    def __init__(self, env: Any, partners: Mapping[str, Policy]) -> None:
        unknown = sorted(set(partners) - set(env.possible_agents))
        if unknown:
            raise ValueError(
                f"partners given for {unknown}, not agents of the game: {env.possible_agents}"
            )
        self.env = env
        self.partners = dict(partners)
        self.possible_agents = [a for a in env.possible_agents if a not in self.partners]
        if not self.possible_agents:
            raise ValueError("every agent is a fixed partner: nothing is left to learn")
        self.metadata = getattr(env, "metadata", {})
        self.render_mode = getattr(env, "render_mode", None)
        self._obs: dict[str, Any] = {}
        self._infos: dict[str, Any] = {}

    @property
    def agents(self) -> list[str]:  # type: ignore[override]
        return [a for a in self.env.agents if a not in self.partners]

    def observation_space(self, agent: str) -> Any:
        return self.env.observation_space(agent)

    def action_space(self, agent: str) -> Any:
        return self.env.action_space(agent)

    def _learners(self, *dicts: dict[str, Any]) -> tuple[dict[str, Any], ...]:
        return tuple({a: v for a, v in d.items() if a not in self.partners} for d in dicts)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        obs, infos = self.env.reset(seed=seed, options=options)
        for k, policy in enumerate(self.partners.values()):
            policy.reset(None if seed is None else policy_seed(seed) + k)
        self._obs, self._infos = dict(obs), dict(infos)
        return self._learners(obs, infos)  # type: ignore[return-value]

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        joint = dict(actions)
        for agent, policy in self.partners.items():
            if agent in self.env.agents and agent in self._obs:
                obs, info = split_masked_observation(
                    self._obs[agent], dict(self._infos.get(agent, {}))
                )
                joint[agent] = policy.act(obs, info)
        obs, rewards, terms, truncs, infos = self.env.step(joint)
        self._obs, self._infos = dict(obs), dict(infos)
        return self._learners(obs, rewards, terms, truncs, infos)  # type: ignore[return-value]

    def close(self) -> None:
        self.env.close()


def _partner_specs(partners: Mapping[str, str | Sequence[str]]) -> dict[str, list[str]]:
    return {a: [s] if isinstance(s, str) else list(s) for a, s in partners.items()}


def plays_batched(card: EnvCard, partners: Any, game_wrappers: Sequence[Any]) -> bool:
    """Whether :func:`shared_vector_env` runs the card's batched backend: it has one, and no
    partners or game wrappers ask for the Parallel game."""
    return bool(card.batched_entry_point) and not partners and not game_wrappers


def shared_vector_env(
    card: EnvCard,
    n_games: int,
    partners: Mapping[str, str | Sequence[str]] | None = None,
    game_wrappers: Sequence[Any] = (),
    **vector_kwargs: Any,
) -> Any:
    """``n_games`` games of ``card`` as one Gymnasium VectorEnv, one slot per learning agent.

    The batched backend where the card has one and no ``partners`` or ``game_wrappers`` are
    named; otherwise the Parallel game, wrapped in ``game_wrappers`` (versioned wrapper
    references, innermost first; training-only reward changes) and then
    :class:`FixedPartners`, through ``ParallelEnvToVectorEnv``. ``vector_kwargs`` (e.g.
    ``autoreset_mode``) go to the vector env.
    """
    from rlbench_suite.wrappers.pz_vector import ParallelEnvToVectorEnv

    if not card.is_multiagent:
        raise ValueError(
            f"{card.id} is single-agent; parameter sharing needs a multi-agent card "
            "(train it with --algo ppo)"
        )
    if plays_batched(card, partners, game_wrappers):
        return make_batched(card.id, n_games, **vector_kwargs)
    specs = _partner_specs(partners or {})
    games = itertools.count()

    def game() -> Any:
        g = next(games)
        env = apply_wrappers(make_multiagent(card.id, "parallel"), list(game_wrappers))
        if not specs:
            return env
        chosen = {a: make_policy(s[g % len(s)], env, agent=a) for a, s in specs.items()}
        return FixedPartners(env, chosen)

    return ParallelEnvToVectorEnv(game, n_games, **vector_kwargs)
