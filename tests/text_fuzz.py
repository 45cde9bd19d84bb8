"""Shared text-game test helpers: random commands on both sides of the length limit (for
Hypothesis), and random admissible play (for determinism)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import strategies as st

from rlbench_suite.envs.text.text_io import MAX_COMMAND_LENGTH


def commands(*extra: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Any unicode text (control characters included), ``extra`` strategies, and long strings
    on both sides of the limit (a short piece repeated, which is cheap to generate)."""
    long = st.tuples(st.text(max_size=16), st.integers(1, 40)).map(lambda p: p[0] * p[1])
    return st.one_of(st.text(), *extra, long)


def step_fuzzed(env: Any, text: str, rewards: tuple[float, ...]) -> None:
    """Send ``text``: within the limit nothing may raise and the outcome must be valid;
    beyond it, the ValueError must name the limit. Resets ``env`` when an episode ends."""
    if len(text) > MAX_COMMAND_LENGTH:
        with pytest.raises(ValueError, match=f"at most {MAX_COMMAND_LENGTH} characters"):
            env.step(text)
        return
    obs, reward, terminated, truncated, _ = env.step(text)
    assert env.observation_space.contains(obs) and reward in rewards
    if terminated or truncated:
        env.reset()


def admissible_trajectory(env_id: str, seed: int, steps: int = 1000, rng_seed: int = 0) -> list:
    """``steps`` steps of random admissible commands on a fresh ``gym.make(env_id)`` reset
    with ``seed`` (reset again, unseeded, whenever an episode ends): every step's outcome."""
    env = gym.make(env_id)
    rng, out = np.random.default_rng(rng_seed), []
    _, info = env.reset(seed=seed)
    for _ in range(steps):
        options = info["admissible_commands"] or ["look"]
        step = env.step(options[int(rng.integers(len(options)))])
        info = step[-1]
        out.append(step)
        if step[2] or step[3]:
            _, info = env.reset()
    env.close()
    return out
