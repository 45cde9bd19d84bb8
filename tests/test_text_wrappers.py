"""The text wrappers: admissible-command actions with masks, hashed features, diffs."""

from __future__ import annotations

import functools
import warnings

import gymnasium as gym
import numpy as np
import pytest

import rlbench_suite  # noqa: F401  (registers the ids)
from rlbench_suite.core.catalog import select_cards
from rlbench_suite.wrappers import (
    AdmissibleActions,
    AdmissibleActionsV0,
    DiffHistory,
    HashedBagOfWords,
)
from rlbench_suite.wrappers.text import stable_hash
from tests.conftest import run_python
from tests.toy_envs import ToyTextCounter

TEXT_IDS = [card.id for card in select_cards(family="text")]


class SentCommands(gym.Wrapper):
    """Records every command that reaches the game."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.sent: list = []

    def step(self, action):
        self.sent.append(action)
        return self.env.step(action)


@pytest.mark.parametrize(
    "make",
    [AdmissibleActionsV0, functools.partial(AdmissibleActions, inadmissible="raise")],
    ids=["v0", "v1-raise"],
)
def test_admissible_actions_send_the_listed_commands_with_a_mask(make):
    env = make(ToyTextCounter(), max_actions=4)
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


def test_an_unlisted_index_is_a_noop_turn_the_game_never_sees():
    game = SentCommands(ToyTextCounter())
    env = AdmissibleActions(game, max_actions=4)
    assert env.spec is None and env.max_turns is None  # no time limit below: none here
    env.reset(seed=0)
    obs, *_, info = env.step(0)  # "up"
    assert obs == "count 1\ngoal 3" and game.sent == ["up"]
    again = env.step(3)  # only "up" and "down" are listed
    assert again[:4] == (obs, -0.01, False, False)
    assert again[4] == {**info, "inadmissible_action": 3}
    assert game.sent == ["up"] and env.unwrapped.count == 1
    assert "inadmissible_action" not in env.step(1)[4] and game.sent == ["up", "down"]
    with pytest.raises(ValueError, match="inadmissible must be one of noop, raise"):
        AdmissibleActions(ToyTextCounter(), inadmissible="ignore")
    with pytest.raises(ValueError, match="penalty must be a finite number >= 0"):
        AdmissibleActions(ToyTextCounter(), penalty=-1.0)


def test_noop_turns_count_toward_the_time_limit():
    env = AdmissibleActions(gym.make("rlbench/TextMaze-v0"), penalty=0.5)
    assert env.max_turns == gym.spec("rlbench/TextMaze-v0").max_episode_steps == 100
    env.reset(seed=0)
    steps = [env.step(31) for _ in range(100)]
    flags = [step[2:4] for step in steps]
    assert flags[:99] == [(False, False)] * 99 and flags[99] == (False, True)
    # the game's own statistics end the episode, so the harness can count it
    assert steps[99][4]["rlbench_episode"] == {"r": 0.0, "l": 0, "success": False,
                                               "normalized_score": 0.0}  # fmt: skip
    assert "rlbench_episode" not in steps[98][4]
    short = AdmissibleActions(ToyTextCounter(), max_turns=2)
    short.reset(seed=0)
    assert short.step(0)[3] is False and short.step(5)[3] is True


def test_spec_rebuilds_each_version_with_its_arguments():
    env = AdmissibleActions(gym.make("rlbench/TextMaze-v0"), max_actions=8, penalty=0.1)
    last = env.spec.additional_wrappers[-1]
    assert last.name == "rlbench/AdmissibleActions-v1"
    assert last.kwargs == {"max_actions": 8, "inadmissible": "noop", "penalty": 0.1,
                           "max_turns": None}  # fmt: skip
    rebuilt = gym.make(env.spec)
    assert isinstance(rebuilt, AdmissibleActions) and rebuilt.penalty == 0.1
    old = AdmissibleActionsV0(gym.make("rlbench/TextMaze-v0"), max_actions=8)
    assert old.spec.additional_wrappers[-1].name == "rlbench/AdmissibleActions-v0"
    rebuilt = gym.make(gym.envs.registration.EnvSpec.from_json(old.spec.to_json()))
    assert type(rebuilt) is AdmissibleActionsV0
    rebuilt.reset(seed=0)
    with pytest.raises(ValueError, match="is not admissible now"):
        rebuilt.step(7)


def test_action_masks_reach_through_the_wrapper_stack_and_vec_envs():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.monitor import Monitor

    admissible = AdmissibleActions(gym.make("rlbench/TextNav-v0"))
    stack = DiffHistory(admissible)
    hashed = HashedBagOfWords(stack)
    hashed.reset(seed=0)
    expected = admissible.action_masks()
    assert expected.dtype == bool and 0 < expected.sum() < 32
    for env in (stack, hashed, Monitor(gym.wrappers.TimeLimit(hashed, 10))):
        assert is_masking_supported(env)
        assert np.array_equal(get_action_masks(env), expected)
    assert np.array_equal(hashed.action_masks(), expected)
    plain = HashedBagOfWords(ToyTextCounter())
    assert not hasattr(plain, "action_masks") and not is_masking_supported(plain)
    vec = make_vec_env(lambda: HashedBagOfWords(AdmissibleActions(ToyTextCounter(), 4)), 2)
    vec.reset()
    assert is_masking_supported(vec)
    assert get_action_masks(vec).tolist() == [[True, False, False, False]] * 2


@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_sb3_check_env_passes_on_every_wrapped_text_game(env_id):
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_checker import check_env

    env = HashedBagOfWords(AdmissibleActions(gym.make(env_id)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # e.g. the unbounded Box of counts
        check_env(env)


def test_plain_ppo_trains_on_a_wrapped_text_game():
    torch = pytest.importorskip("torch")
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    torch.set_num_threads(1)
    env = HashedBagOfWords(AdmissibleActions(gym.make("rlbench/TextAdventureEasy-v0")), dim=256)
    model = PPO("MlpPolicy", env, n_steps=500, batch_size=100, n_epochs=2, seed=0, verbose=0)
    model.learn(2_000)
    assert model.num_timesteps >= 2_000 and len(model.ep_info_buffer) > 0
    obs, _ = env.reset(seed=1)
    action, _ = model.predict(obs, deterministic=True)
    assert env.action_space.contains(action)
    env.step(action)  # whatever index it picks, the wrapped game takes it


@pytest.mark.parametrize("algo", ["A2C", "DQN"])
def test_other_unmasked_sb3_algorithms_run_on_a_wrapped_text_game(algo):
    torch = pytest.importorskip("torch")
    sb3 = pytest.importorskip("stable_baselines3")

    torch.set_num_threads(1)
    env = HashedBagOfWords(AdmissibleActions(gym.make("rlbench/TextMaze-v0")), dim=128)
    kwargs = {"learning_starts": 64} if algo == "DQN" else {}
    model = getattr(sb3, algo)("MlpPolicy", env, seed=0, verbose=0, **kwargs)
    model.learn(256)
    assert model.num_timesteps >= 256
