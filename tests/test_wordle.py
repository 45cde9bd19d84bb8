"""Wordle: the word list, feedback rules, game flow, seeding, the expert, and fuzzed input."""

from __future__ import annotations

import random
import re

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlbench_suite  # noqa: F401  (registers the ids)
from rlbench_suite.cli.text_figures_command import play_text_episode
from rlbench_suite.envs.text.wordle.env import MAX_GUESSES, WordleEnv, feedback, load_words
from rlbench_suite.envs.text.wordle.experts import WordleSolver, encode, pattern_matrix
from tests.text_fuzz import commands, step_fuzzed


def test_word_list_is_clean():
    words = load_words()
    assert len(words) >= 400 and len(set(words)) == len(words)
    assert all(re.fullmatch("[a-z]{5}", w) for w in words)


@pytest.mark.parametrize(
    "guess, secret, marks",
    [
        ("crane", "crane", "G G G G G"),
        ("crane", "react", "Y Y G . Y"),
        ("speed", "abide", ". . Y . Y"),  # one e in the secret: only the first e scores
        ("speed", "erase", "Y . Y Y ."),
        ("geese", "eerie", ". G Y . G"),
        ("eerie", "geese", "Y G . . G"),
        ("llama", "allay", "Y G Y . Y"),
        ("sheep", "steep", "G . G G G"),  # greens take the repeated letter before yellows
        ("abbey", "babes", "Y Y G G ."),
    ],
)
def test_feedback_handles_repeated_letters(guess, secret, marks):
    assert feedback(guess, secret) == marks
    assert pattern_matrix([guess], [secret])[0, 0] == encode(marks)


def test_vectorized_patterns_match_the_rules():
    words, rnd = list(load_words()), random.Random(0)
    guesses, secrets = rnd.sample(words, 60), rnd.sample(words, 60)
    codes = pattern_matrix(guesses, secrets)
    for i, g in enumerate(guesses):
        for j, s in enumerate(secrets):
            assert codes[i, j] == encode(feedback(g, s))


def _env_with_secret(secret: str) -> WordleEnv:
    env = WordleEnv()
    env.reset(seed=0)
    env.secret = secret
    return env


def test_a_win_ends_the_game_with_reward_one():
    env = _env_with_secret("crane")
    obs, reward, terminated, _, info = env.step("Grape")
    assert (reward, terminated, info["guesses"], info["valid"]) == (0.0, False, 1, True)
    assert "1. grape -> . G G . G" in obs and "Guesses left: 5" in obs
    obs, reward, terminated, _, info = env.step("crane")
    assert (reward, terminated, info["success"]) == (1.0, True, True)
    assert "Reply: You found the word in 2!" in obs


def test_six_wrong_guesses_lose():
    env = _env_with_secret("crane")
    for n, word in enumerate(["about", "below", "chair", "dream", "eagle", "fight"], 1):
        obs, reward, terminated, _, info = env.step(word)
        assert reward == 0.0 and terminated == (n == MAX_GUESSES) and not info["success"]
    assert "the word was 'crane'" in obs and "Guesses left: 0" in obs
    obs, reward, terminated, _, _ = env.step("crane")  # stepping on after the end
    assert (reward, terminated) == (0.0, True) and "The game is over." in obs


@pytest.mark.parametrize(
    "command, reply",
    [
        ("zzzzz", "is not in the word list"),
        ("qwert", "is not in the word list"),
        ("cat", "is not a 5-letter word"),
        ("crane pilot", "is not a 5-letter word"),
        ("cr4ne", "is not a 5-letter word"),
        ("", "is not a 5-letter word"),
        ("\x00\x07\u2603", "is not a 5-letter word"),
    ],
)
def test_invalid_commands_get_a_reply_and_use_no_guess(command, reply):
    env = _env_with_secret("crane")
    obs, reward, terminated, truncated, info = env.step(command)
    assert reply in obs and "Guesses left: 6" in obs
    assert (reward, terminated, truncated, info["guesses"], info["valid"]) == (
        0.0,
        False,
        False,
        0,
        False,
    )
    assert env.observation_space.contains(obs)


def test_reset_is_seeded():
    a, b = WordleEnv(), WordleEnv()
    assert a.reset(seed=3) == b.reset(seed=3) and a.secret == b.secret
    secrets = set()
    for seed in range(30):
        a.reset(seed=seed)
        secrets.add(a.secret)
    assert len(secrets) > 20
    a.reset(seed=7)
    b.reset(seed=7)
    assert a.step("crane") == b.step("crane")


def test_solver_wins_within_six_guesses():
    env = gym.make("rlbench/Wordle-v0")
    assert env.spec.max_episode_steps == 30
    solver = WordleSolver(env.observation_space, env.action_space)
    finals = [play_text_episode(env, solver, seed)[0] for seed in range(100)]
    wins = sum(info["success"] for info in finals)
    guesses = [info["guesses"] for info in finals]
    assert wins >= 95 and max(guesses) <= MAX_GUESSES
    assert np.mean(guesses) < 4.0


_FUZZ = WordleEnv()
_FUZZ.reset(seed=0)
_WORDS = st.sampled_from(load_words())


@settings(max_examples=10_000, deadline=None)
@given(commands(_WORDS))  # valid guesses too, so that games are won, lost and reset
def test_fuzzed_commands_never_raise_within_the_limit(text):
    step_fuzzed(_FUZZ, text, rewards=(0.0, 1.0))
