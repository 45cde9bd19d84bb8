"""Fuzzing text games: random commands on both sides of the length limit (for Hypothesis)."""

from __future__ import annotations

from typing import Any

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
