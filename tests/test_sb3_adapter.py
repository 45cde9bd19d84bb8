"""SB3 trains on the suite's own vector envs through VectorEnvToSB3."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import rlbench_suite  # noqa: F401  (registers the ids)
from tests.conftest import learn_ppo

pytest.importorskip("stable_baselines3")


def cartpole_same_step() -> gym.vector.VectorEnv:
    return gym.make_vec(
        "rlbench/CartPole-v1",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
    )


def test_ppo_on_make_vec_same_step_reports_episode_stats():
    vec = cartpole_same_step()
    model = learn_ppo(vec, 2000)
    assert model.num_timesteps >= 2000
    episodes = list(model.ep_info_buffer)
    assert len(episodes) >= 10
    # CartPole pays 1 per step, so every reported return equals its length
    assert all(ep["r"] == ep["l"] and 1 <= ep["l"] <= 500 for ep in episodes)


def test_terminal_observation_is_the_last_real_one():
    from rlbench_suite.wrappers.sb3 import VectorEnvToSB3

    vec = cartpole_same_step()
    env = VectorEnvToSB3(vec)
    env.seed(3)
    obs = env.reset()
    for _ in range(300):
        obs, _, dones, infos = env.step(np.array([0, 0]))  # always push left: falls fast
        if dones.any():
            i = int(np.flatnonzero(dones)[0])
            terminal = infos[i]["terminal_observation"]
            assert abs(terminal[2]) > 0.2 or abs(terminal[0]) > 2.4  # the pole really fell
            assert abs(obs[i][2]) < 0.06  # obs is already the next episode's first one
            assert infos[i]["episode"]["l"] > 0 and infos[i]["TimeLimit.truncated"] is False
            return
    pytest.fail("no episode ended")
