"""SB3 trains on the suite's own vector envs through VectorEnvToSB3."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import rlbench_suite  # noqa: F401  (registers the ids)
from tests.conftest import REPO, learn_ppo

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


def docs_block(path: str, needle: str) -> str:
    """The ```python block of ``docs/<path>`` that contains ``needle``."""
    text = (REPO / "docs" / path).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    found = [block for block in blocks if needle in block]
    assert len(found) == 1, f"expected one python block with {needle!r} in docs/{path}"
    return found[0]


def test_the_documented_quadhover_ppo_example_runs():
    torch = pytest.importorskip("torch")
    code = docs_block("wrappers.md", "VectorEnvToSB3(venv)")
    code, replaced = re.subn(r"^TOTAL_STEPS = [\d_]+$", "TOTAL_STEPS = 1_024", code, flags=re.M)
    assert replaced == 1 and "autoreset_mode=AutoresetMode.SAME_STEP" in code
    torch.set_num_threads(1)
    namespace: dict = {}
    exec(compile(code, "docs/wrappers.md", "exec"), namespace)
    model = namespace["model"]
    assert model.num_timesteps >= 1_024 and model.get_env().num_envs == 32


def test_a_next_step_vector_env_gets_an_error_saying_how_to_ask_for_same_step():
    from rlbench_suite.wrappers.sb3 import VectorEnvToSB3

    batched = gym.make_vec(
        "rlbench/QuadHover-v0", num_envs=2, vectorization_mode="vector_entry_point"
    )
    with pytest.raises(ValueError) as error:
        VectorEnvToSB3(batched)
    message = str(error.value)
    assert "QuadHoverVectorEnv is in NEXT_STEP mode" in message
    assert (
        'gym.make_vec("rlbench/QuadHover-v0", num_envs, vectorization_mode="vector_entry_point", '
        "autoreset_mode=AutoresetMode.SAME_STEP)" in message
    )
    copies = gym.make_vec("rlbench/CartPole-v1", num_envs=2, vectorization_mode="sync")
    with pytest.raises(ValueError, match="SyncVectorEnv is in NEXT_STEP mode") as error:
        VectorEnvToSB3(copies)
    assert 'vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP}' in str(error.value)
