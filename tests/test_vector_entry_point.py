"""Cards with a native vector env: VectorEpisodeStatistics and the registry's vector path."""

from __future__ import annotations

import textwrap

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import TimeLimit

from rlbench_suite.wrappers.stats import STATS_KEY, EpisodeStatistics
from rlbench_suite.wrappers.vector import VectorEpisodeStatistics
from tests.conftest import REPO, run_python
from tests.toy_envs import ToyWalk, ToyWalkVector

SCORING = {"success": {"kind": "info", "key": "success"}, "metric": "success_rate",
           "random_score": 0.2, "expert_score": 0.7}  # fmt: skip


def _ended(info: dict, mode: AutoresetMode) -> tuple[dict, np.ndarray] | None:
    source = info.get("final_info", {}) if mode == AutoresetMode.SAME_STEP else info
    if STATS_KEY not in source and STATS_KEY not in info:
        return None
    if STATS_KEY in info:  # vector-level statistics are always on top
        return info[STATS_KEY], info[f"_{STATS_KEY}"]
    return source[STATS_KEY], source[f"_{STATS_KEY}"]


def _episodes(vec: gym.vector.VectorEnv, mode: AutoresetMode, steps: int) -> list[tuple]:
    """(sub-env, r, l, success, normalized) for every episode that ends, in order."""
    vec.reset(seed=5)
    rng = np.random.default_rng(0)
    out = []
    for _ in range(steps):
        actions = rng.uniform(-2, 2, size=(vec.num_envs, 1)).astype(np.float32)
        _, _, terminated, truncated, info = vec.step(actions)
        ended = _ended(info, mode)
        if ended is not None:
            stats, mask = ended
            for i in np.flatnonzero(mask):
                out.append((int(i), round(float(stats["r"][i]), 9), int(stats["l"][i]),
                            bool(stats["success"][i]),
                            round(float(stats["normalized_score"][i]), 9)))  # fmt: skip
        if mode == AutoresetMode.DISABLED and (terminated | truncated).any():
            vec.reset(options={"reset_mask": terminated | truncated})
    return out


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_vector_statistics_equal_the_single_env_statistics(mode):
    def single() -> gym.Env:
        return EpisodeStatistics(TimeLimit(ToyWalk(max_episode_steps=1000), 12), **SCORING)

    sync = SyncVectorEnv([single] * 3, autoreset_mode=mode)
    native = VectorEpisodeStatistics(ToyWalkVector(3, 12, autoreset_mode=mode), **SCORING)
    expected = _episodes(sync, mode, 150)
    assert len(expected) >= 20
    assert {e[3] for e in expected} == {True, False}  # both outcomes occur
    assert {e[2] for e in expected} >= {12}  # truncations too
    assert _episodes(native, mode, 150) == expected


CARD = """
id = "rlbench/ToyWalk-v0"
family = "classic"
api = "gymnasium"
entry_point = "tests.toy_envs:ToyWalk"
vector_entry_point = "tests.toy_envs:ToyWalkVector"
max_episode_steps = 12
primary_metric = "success_rate"
description = "A noisy one-dimensional walk used to test native vector environments."

[success]
kind = "info"

[[wrappers]]
name = "rlbench/RescaleActionToUnit-v0"
"""


def test_card_with_vector_entry_point(content_copy):
    (content_copy / "envs" / "classic" / "ToyWalk-v0.toml").write_text(CARD)
    script = textwrap.dedent(
        """
        import gymnasium as gym, numpy as np, rlbench_suite
        from gymnasium.vector import AutoresetMode
        env = gym.make("rlbench/ToyWalk-v0")
        names = [w.name for w in env.spec.additional_wrappers]
        assert names == ["rlbench/EpisodeStatistics-v0", "rlbench/RescaleActionToUnit-v0"], names
        assert env.spec.max_episode_steps == 12 and env.action_space.high[0] == 1.0
        again = gym.make(env.spec)
        assert again.spec == env.spec and str(again) == str(env), (str(again), str(env))
        env.reset(seed=0)
        for t in range(12):
            *_, terminated, truncated, info = env.step(np.zeros(1, np.float32))
            if terminated or truncated:
                break
        assert info["rlbench_episode"]["l"] == t + 1
        vec = gym.make_vec("rlbench/ToyWalk-v0", num_envs=4)
        assert type(vec.unwrapped).__name__ == "ToyWalkVector", vec
        assert "VectorEpisodeStatistics" in str(vec) and vec.action_space.high.max() == 1.0
        same_step = AutoresetMode.SAME_STEP
        same = gym.make_vec("rlbench/ToyWalk-v0", num_envs=4, autoreset_mode=same_step)
        assert same.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
        vec.reset(seed=1)
        ends = 0
        for _ in range(40):
            *_, info = vec.step(np.zeros((4, 1), np.float32))
            ends += int(info.get("_rlbench_episode", np.zeros(4, bool)).sum())
        assert ends >= 8, ends
        sync = gym.make_vec("rlbench/ToyWalk-v0", num_envs=4, vectorization_mode="sync")
        assert type(sync).__name__ == "SyncVectorEnv"
        print("OK")
        """
    )
    proc = run_python(
        script, env={"RLBENCH_CONTENT_ROOT": str(content_copy), "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK"


def test_vector_entry_point_card_without_vector_forms_is_refused(content_copy):
    card = CARD.replace("rlbench/RescaleActionToUnit-v0", "rlbench/ActionMaskInInfo-v0")
    (content_copy / "envs" / "classic" / "ToyWalk-v0.toml").write_text(card)
    proc = run_python(
        "import gymnasium as gym, rlbench_suite\n"
        "gym.make_vec('rlbench/ToyWalk-v0', num_envs=2)\n",
        env={"RLBENCH_CONTENT_ROOT": str(content_copy), "PYTHONPATH": str(REPO)}, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "have no vector form" in proc.stderr and "vectorization_mode='sync'" in proc.stderr
