"""`rlbench check` over the whole catalog, and the checker catching real defects."""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from rlbench_suite.checks import DeterminismError, check_card, check_determinism
from rlbench_suite.core.catalog import cards


@pytest.mark.parametrize("env_id", sorted(cards()))
def test_every_card_passes_check(env_id):
    result = check_card(cards()[env_id], seed=0, steps=1000)
    assert result.ok, result.errors
    assert "determinism" in result.passed
    expected = {"check_env"} | ({"api_test"} if cards()[env_id].is_multiagent else set())
    assert expected <= set(result.passed)


class Drifting(gym.Env):
    """Uses the global `random` module instead of `np_random`: not reproducible under a seed."""

    def __init__(self):
        self.observation_space = spaces.Box(-np.inf, np.inf, (1,), np.float64)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1), {}

    def step(self, action):
        self.t += 1
        drift = random.random() if self.t > 40 else 0.0
        return np.array([drift]), 0.0, False, self.t >= 100, {}


class UnseededActions(gym.Env):
    """Deterministic dynamics, but its action space ignores seeding."""

    observation_space = spaces.Discrete(3)

    class _Space(spaces.Discrete):
        def seed(self, seed=None):
            return [seed]

        def sample(self, mask=None, probability=None):
            return random.randrange(3)

    action_space = _Space(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        return int(action), 0.0, False, False, {}


def test_determinism_check_catches_unseeded_randomness():
    with pytest.raises(DeterminismError, match="step 40"):
        check_determinism(Drifting, seed=0, steps=200)


def test_determinism_check_catches_unseeded_action_space():
    with pytest.raises(DeterminismError, match="sampled action"):
        check_determinism(UnseededActions, seed=0, steps=200)


def test_determinism_check_counts_episodes():
    episodes = check_determinism(lambda: gym.make("CartPole-v1"), seed=0, steps=1000)
    assert episodes > 10
