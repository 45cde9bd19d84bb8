"""One policy per agent of a multi-agent environment: :class:`JointPolicy`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rlbench_suite.core.seeds import agent_seed
from rlbench_suite.policies.core import Policy, PolicyIdentity, as_policy, identity_of


class JointPolicy:
    """One policy per agent of a multi-agent environment.

    ``act(observations, infos)`` maps a Parallel env's per-agent dicts to a dict of actions
    (for the agents present in ``observations``); ``for_agent(agent)`` gives the policy of one
    agent (for AEC loops). ``reset(seed)`` resets each distinct policy once, with
    :func:`~rlbench_suite.policies.agent_seed` of ``seed`` and its (first) agent, so agents
    draw independent streams.
    """

    def __init__(self, policies: Mapping[str, Policy | Callable[..., Any]]) -> None:
        if not policies:
            raise ValueError("a JointPolicy needs at least one agent -> policy entry")
        self.policies: dict[str, Policy] = {a: as_policy(p) for a, p in policies.items()}
        identities = {a: identity_of(p) for a, p in self.policies.items()}
        self.identity = PolicyIdentity(
            name="joint(" + ", ".join(f"{a}={i.name}" for a, i in identities.items()) + ")",
            kind="joint",
            train_seeds=sorted({s for i in identities.values() for s in i.train_seeds}),
            tuning_seeds=sorted({s for i in identities.values() for s in i.tuning_seeds}),
            extra={"agents": {a: i.model_dump(mode="json") for a, i in identities.items()}},
        )

    def for_agent(self, agent: str) -> Policy:
        try:
            return self.policies[agent]
        except KeyError:
            raise KeyError(
                f"no policy for agent {agent!r}; agents: {list(self.policies)}"
            ) from None

    def reset(self, seed: int | None = None) -> None:
        done: set[int] = set()
        for agent, policy in self.policies.items():
            if id(policy) not in done:
                done.add(id(policy))
                policy.reset(None if seed is None else agent_seed(seed, agent))

    def act(
        self, observations: Mapping[str, Any], infos: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        infos = infos or {}
        return {
            agent: self.for_agent(agent).act(obs, infos.get(agent) or {})
            for agent, obs in observations.items()
        }
