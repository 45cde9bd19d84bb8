"""Wordle's learning stack: the board featurizer (rlbench/WordleFeatures-v0) and the policy
that scores words by their letter-place features, exported to ONNX."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rlbench_suite  # noqa: F401  (registers the ids)
from rlbench_suite.core.cards import WrapperRef
from rlbench_suite.envs.text.wordle.env import load_words
from rlbench_suite.envs.text.wordle.features import (
    LETTERS,
    OFFSETS,
    SIZE,
    board_features,
    word_features,
)
from rlbench_suite.wrappers import apply_wrappers

WORDLE_STACK = [
    WrapperRef(name="rlbench/AdmissibleActions-v1", kwargs={"max_actions": len(load_words())}),
    WrapperRef(name="rlbench/WordleFeatures-v0"),
]


def _on(vector: np.ndarray, section: str, letter: str, place: int | None = None) -> bool:
    index = OFFSETS[section] + (place or 0) * LETTERS + ord(letter) - ord("a")
    return bool(vector[index])


def test_a_known_board_is_encoded_letter_by_letter():
    text = "Wordle: rules.\n1. crane -> G Y . . G\nGuesses left: 5\nReply: 'crane' scored."
    x = board_features(text)
    assert x.shape == (SIZE,) and x.dtype == np.float32
    assert _on(x, "green", "c", 0) and _on(x, "green", "e", 4)
    assert int(x[OFFSETS["green"] : OFFSETS["not_here"]].sum()) == 2
    assert _on(x, "not_here", "r", 1) and not _on(x, "not_here", "r", 0)
    assert _on(x, "present", "r") and _on(x, "present", "c") and not _on(x, "present", "a")
    for letter in "an":  # gray letters are absent, so at no place
        assert _on(x, "absent", letter)
        assert all(_on(x, "not_here", letter, i) for i in range(5))
    tried = x[OFFSETS["tried"] : OFFSETS["tried"] + LETTERS]
    assert sorted(chr(ord("a") + i) for i in np.flatnonzero(tried)) == list("acenr")
    left = x[OFFSETS["guesses_left"] :]
    assert left.tolist() == [0, 0, 0, 0, 0, 1, 0]


def test_a_gray_copy_of_a_green_letter_is_not_absent():
    x = board_features("1. eerie -> G . . . .\nGuesses left: 5")
    assert _on(x, "green", "e", 0) and _on(x, "present", "e") and not _on(x, "absent", "e")
    assert _on(x, "not_here", "e", 1) and _on(x, "not_here", "e", 4)
    assert not _on(x, "not_here", "e", 0)
    assert _on(x, "absent", "r") and _on(x, "absent", "i")


def test_an_empty_board_has_only_six_guesses_left():
    x = board_features("Wordle: rules.\nGuesses left: 6\nReply: Make your first guess.")
    assert np.flatnonzero(x).tolist() == [OFFSETS["guesses_left"] + 6]


def test_word_features_are_each_words_letter_places():
    words, features = load_words(), word_features()
    assert features.shape == (len(words), 5 * LETTERS)
    assert (features.sum(axis=1) == 5).all()
    w = 17
    places = [i // LETTERS for i in np.flatnonzero(features[w])]
    letters = [chr(ord("a") + i % LETTERS) for i in np.flatnonzero(features[w])]
    assert places == [0, 1, 2, 3, 4] and "".join(letters) == words[w]


def test_the_wrapper_reads_the_env_s_own_board():
    raw = gym.make("rlbench/Wordle-v0")
    env = apply_wrappers(gym.make("rlbench/Wordle-v0"), WORDLE_STACK)
    obs, info = env.reset(seed=3)
    text, _ = raw.reset(seed=3)
    assert env.observation_space.contains(obs) and info["action_mask"].all()
    assert env.action_masks().shape == (len(load_words()),)
    for index in (5, 40, 300):
        obs, *_ = env.step(index)
        text, *_ = raw.step(load_words()[index])
        assert np.array_equal(obs, board_features(text))
    assert int(obs[OFFSETS["guesses_left"] + 3]) == 1


@pytest.fixture(scope="module")
def wordle_model():
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from rlbench_suite.baselines.action_features import ActionFeaturesPolicy

    env = apply_wrappers(gym.make("rlbench/Wordle-v0"), WORDLE_STACK)
    kwargs = {"action_features": "rlbench_suite.envs.text.wordle.features:word_features",
              "net_arch": [32]}  # fmt: skip
    model = sb3_contrib.MaskablePPO(ActionFeaturesPolicy, env, n_steps=64, batch_size=32,
                                    policy_kwargs=kwargs, seed=0, device="cpu")  # fmt: skip
    return model.learn(128), env


def _torch_logits(model, obs: np.ndarray) -> np.ndarray:
    import torch

    with torch.no_grad():
        t = torch.as_tensor(obs[None])
        latent = model.policy.mlp_extractor.forward_actor(model.policy.extract_features(t))
        return model.policy.action_net(latent).numpy()[0]


def test_word_logits_are_the_state_vector_dotted_with_each_word(wordle_model):
    import torch

    model, env = wordle_model
    obs, _ = env.reset(seed=1)
    obs, *_ = env.step(0)
    head = model.policy.action_net
    with torch.no_grad():
        t = torch.as_tensor(obs[None])
        state = head.project(model.policy.mlp_extractor.forward_actor(t))[0].numpy()
        bias = head.bias.numpy()
    assert np.allclose(_torch_logits(model, obs), word_features() @ state + bias, atol=1e-5)


def test_onnx_export_acts_like_the_torch_policy(wordle_model, tmp_path):
    pytest.importorskip("onnxruntime")
    from rlbench_suite.policies import OnnxPolicy, export_sb3_to_onnx

    model, env = wordle_model
    policy = OnnxPolicy(export_sb3_to_onnx(model, tmp_path / "policy.onnx"))
    obs, info = env.reset(seed=11)
    done, steps = False, 0
    while not done:
        (logits,) = policy.session.run(["logits"], {"obs": obs[None]})
        assert np.allclose(logits[0], _torch_logits(model, obs), atol=1e-4)
        action = policy.act(obs, info)
        assert action == int(model.predict(obs, deterministic=True,
                                           action_masks=env.action_masks())[0])  # fmt: skip
        obs, _, terminated, truncated, info = env.step(action)
        done, steps = terminated or truncated, steps + 1
    assert steps >= 1


def test_the_policy_survives_save_and_load(wordle_model, tmp_path):
    sb3_contrib = pytest.importorskip("sb3_contrib")
    model, env = wordle_model
    model.save(tmp_path / "model.zip")
    loaded = sb3_contrib.MaskablePPO.load(tmp_path / "model.zip", device="cpu")
    obs, _ = env.reset(seed=2)
    assert np.allclose(_torch_logits(loaded, obs), _torch_logits(model, obs))


def test_bad_action_features_are_refused_with_what_is_accepted():
    from rlbench_suite.baselines.action_features import load_features

    with pytest.raises(ValueError, match="must be 'module:function'"):
        load_features("word_features")
    with pytest.raises(ValueError, match="cannot be loaded"):
        load_features("rlbench_suite.envs.text.wordle.features:no_such_function")


def test_shaping_rewards_what_each_guess_reveals_and_leaves_the_score_alone():
    from rlbench_suite.envs.text.wordle.features import revealed

    stack = [*WORDLE_STACK, WrapperRef(name="rlbench/WordleShaping-v0", kwargs={"scale": 2.0})]
    shaped = apply_wrappers(gym.make("rlbench/Wordle-v0"), stack)
    plain = apply_wrappers(gym.make("rlbench/Wordle-v0"), WORDLE_STACK)
    obs, _ = shaped.reset(seed=4)
    plain.reset(seed=4)
    secret = load_words().index(shaped.unwrapped.secret)
    before = revealed(obs)
    for action in (0, 100, secret):
        obs, reward, terminated, _, info = shaped.step(action)
        _, plain_reward, *_ = plain.step(action)
        assert reward == pytest.approx(plain_reward + 2.0 * (revealed(obs) - before))
        before = revealed(obs)
    assert terminated and info["success"]
    assert obs[OFFSETS["green"] : OFFSETS["not_here"]].sum() == 5 and revealed(obs) > 0.8
    assert info["rlbench_episode"]["r"] == 1.0  # the game's own statistics, unshaped
    with pytest.raises(ValueError, match="scale must be a finite number >= 0"):
        apply_wrappers(gym.make("rlbench/Wordle-v0"),
                       [*stack[:-1], WrapperRef(name="rlbench/WordleShaping-v0",
                                                kwargs={"scale": -1.0})])  # fmt: skip
