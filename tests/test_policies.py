"""Policy adapters and policy seeding."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from rlbench_suite.policies import CallablePolicy, Policy, RandomPolicy, as_policy, policy_seed


def test_as_policy_adapts_callables_by_arity():
    assert as_policy(lambda obs: obs + 1).act(1, {}) == 2
    assert as_policy(lambda obs, info: info["k"]).act(1, {"k": 3}) == 3
    assert as_policy(lambda *args: len(args)).act(1, {}) == 2
    policy = RandomPolicy(spaces.Discrete(3), seed=0)
    assert as_policy(policy) is policy and isinstance(policy, Policy)
    assert isinstance(as_policy(print), CallablePolicy)


def test_random_policy_respects_the_mask_and_its_seed():
    policy = RandomPolicy(spaces.Discrete(5), seed=1)
    mask = np.array([0, 1, 0, 1, 0], np.int8)
    first = [policy.act(None, {"action_mask": mask}) for _ in range(50)]
    assert set(first) == {1, 3}
    policy.reset(1)
    assert [policy.act(None, {"action_mask": mask}) for _ in range(50)] == first


def test_policy_seed_gives_a_stream_independent_of_the_env_seed():
    env_rng = np.random.default_rng(7)  # what env.reset(seed=7) seeds
    same = spaces.Discrete(1000, seed=7)
    other = spaces.Discrete(1000, seed=policy_seed(7))
    env_draws = env_rng.integers(1000, size=20)
    assert [int(same.sample()) for _ in range(20)] == list(env_draws)  # the trap
    assert [int(other.sample()) for _ in range(20)] != list(env_draws)
    assert policy_seed(7) == policy_seed(7) != policy_seed(8)
