"""Headless rgb_array rendering through the standard stack (MuJoCo via EGL, pygame, PettingZoo)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rlbench_suite


@pytest.mark.parametrize(
    "env_id", ["rlbench/Hopper-v5", "rlbench/CartPole-v1", "rlbench/MiniGrid-Empty-5x5-v0"]
)
def test_rgb_array_frames_are_real_images(env_id):
    env = gym.make(env_id, render_mode="rgb_array")
    env.reset(seed=0)
    first = env.render()
    env.action_space.seed(0)
    for _ in range(10):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    later = env.render()
    env.close()
    assert first.dtype == np.uint8 and first.ndim == 3 and first.shape[2] == 3
    assert first.std() > 5  # not a blank frame
    assert first.shape == later.shape


def test_multiagent_rgb_array():
    env = rlbench_suite.make_multiagent(
        "rlbench/ConnectFour-v3", api="aec", render_mode="rgb_array"
    )
    env.reset(seed=0)
    frame = env.render()
    env.close()
    assert frame.ndim == 3 and frame.std() > 5
