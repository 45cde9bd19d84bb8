"""The text wrappers: admissible-command actions with masks, hashed features, diffs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rlbench_suite.wrappers import AdmissibleActions, DiffHistory, HashedBagOfWords
from rlbench_suite.wrappers.text import stable_hash
from tests.conftest import run_python
from tests.toy_envs import ToyTextCounter


def test_admissible_actions_send_the_listed_commands_with_a_mask():
    env = AdmissibleActions(ToyTextCounter(), max_actions=4)
    _, info = env.reset(seed=0)
    assert info["action_mask"].tolist() == [1, 0, 0, 0] and env.action_space.n == 4
    _, _, _, _, info = env.step(0)  # "up"
    assert info["action_mask"].tolist() == [1, 1, 0, 0]
    assert env.action_masks().tolist() == [True, True, False, False]
    _, _, _, _, info = env.step(1)  # "down"
    assert env.unwrapped.count == 0
    with pytest.raises(ValueError, match="action 1 is not admissible now: 1 commands"):
        env.step(1)


def test_hashed_bag_of_words_is_stable_across_processes():
    env = HashedBagOfWords(ToyTextCounter(), dim=64)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (64,) and obs.dtype == np.float32 and obs.sum() == 4 + 3  # words, pairs
    assert obs[stable_hash("count") % 64] >= 1 and obs[stable_hash("count 0") % 64] >= 1
    code = "from rlbench_suite.wrappers.text import stable_hash; print(stable_hash('count 0'))"
    done = run_python(code, env={"PYTHONHASHSEED": "123"})
    assert int(done.stdout) == stable_hash("count 0")


def test_diff_history_shows_only_changed_lines():
    env = DiffHistory(ToyTextCounter())
    obs, _ = env.reset(seed=0)
    assert obs == "count 0\ngoal 3"
    obs, *_ = env.step("up")
    assert obs == "- count 0\n+ count 1"
    obs, *_ = env.step("sideways")
    assert obs == "(no change)" and env.observation_space.contains(obs)
    with pytest.raises(TypeError, match="needs a Text observation space"):
        DiffHistory(gym.make("CartPole-v1"))


def test_maskable_ppo_trains_through_the_text_wrappers():
    pytest.importorskip("sb3_contrib")
    import torch
    from sb3_contrib import MaskablePPO

    torch.set_num_threads(1)
    env = HashedBagOfWords(AdmissibleActions(ToyTextCounter(), max_actions=2), dim=32)
    env = gym.wrappers.TimeLimit(env, 20)
    model = MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, seed=0, verbose=0)
    model.learn(512)
    obs, info = env.reset(seed=1)
    action, _ = model.predict(obs, action_masks=info["action_mask"].astype(bool))
    assert int(action) in (0,)  # only "up" is admissible at count 0
