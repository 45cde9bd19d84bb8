"""Wordle's board as numbers for a learning agent (``rlbench/WordleFeatures-v0``).

The standard Wordle-RL design (Andrew Ho, "Solving Wordle with reinforcement learning",
2022, github.com/andrewkho/wordle-solver): the observation becomes a fixed vector of what the
feedback has said about each letter, and the policy scores every word of the list by its
letter-position one-hot (:func:`word_features`) dotted with a learned vector of the state
(``rlbench_suite.baselines.action_features``). Nothing here filters words by the feedback:
which words are still possible is for the agent to learn.

:func:`board_features` reads the board from the observation text (``1. crane -> G Y . . G``,
the layout :mod:`.env` writes), so the same vector is computed in training and in the
harness, which rebuilds this wrapper from the policy's recorded stack.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.envs.text.wordle.env import (
    BOARD_LINE,
    GREEN,
    MAX_GUESSES,
    WORD_LENGTH,
    YELLOW,
    load_words,
)
from rlbench_suite.wrappers.base import VersionedWrapper, register_wrapper
from rlbench_suite.wrappers.text import ForwardActionMasks

LETTERS = 26
_SLOTS = WORD_LENGTH * LETTERS
SECTIONS = (
    ("green", _SLOTS),  # letter c is at position i
    ("not_here", _SLOTS),  # letter c is not at position i (yellow or gray there, or absent)
    ("present", LETTERS),  # letter c is in the word (green or yellow somewhere)
    ("absent", LETTERS),  # letter c is not in the word (gray, and no green or yellow of it)
    ("tried", LETTERS),  # letter c was in a guess
    ("guesses_left", MAX_GUESSES + 1),  # one-hot of the guesses left, 0..6
)
"""The feature vector's parts in order, with their sizes."""
SIZE = sum(size for _, size in SECTIONS)
_STARTS = np.cumsum([0] + [size for _, size in SECTIONS[:-1]]).tolist()
OFFSETS: dict[str, int] = {name: start for (name, _), start in zip(SECTIONS, _STARTS, strict=True)}


def parse_board(observation: str) -> list[tuple[str, list[str]]]:
    """The guesses so far in ``observation``: each word with its five marks."""
    return [(word, marks.split()) for word, marks in BOARD_LINE.findall(str(observation))]


def _letter(c: str) -> int:
    return ord(c) - ord("a")


def board_features(observation: str) -> np.ndarray:
    """The float32 vector of :data:`SECTIONS` for the board in ``observation``."""
    x = np.zeros(SIZE, dtype=np.float32)
    board = parse_board(observation)
    green, not_here = OFFSETS["green"], OFFSETS["not_here"]
    for word, marks in board:
        hit = {c for c, m in zip(word, marks, strict=True) if m in (GREEN, YELLOW)}
        for i, (c, m) in enumerate(zip(word, marks, strict=True)):
            k = _letter(c)
            x[OFFSETS["tried"] + k] = 1.0
            if m == GREEN:
                x[green + i * LETTERS + k] = 1.0
                x[OFFSETS["present"] + k] = 1.0
            else:
                x[not_here + i * LETTERS + k] = 1.0
                if m == YELLOW:
                    x[OFFSETS["present"] + k] = 1.0
                elif c not in hit:
                    x[OFFSETS["absent"] + k] = 1.0
    absent = x[OFFSETS["absent"] : OFFSETS["absent"] + LETTERS]
    for i in range(WORD_LENGTH):  # an absent letter is at no position
        row = slice(not_here + i * LETTERS, not_here + (i + 1) * LETTERS)
        x[row] = np.maximum(x[row], absent)
    x[OFFSETS["guesses_left"] + max(0, MAX_GUESSES - len(board))] = 1.0
    return x


@functools.cache
def word_features() -> np.ndarray:
    """``(words, 5 * 26)`` float32: each word of the list as its letter-position one-hot."""
    words = load_words()
    out = np.zeros((len(words), _SLOTS), dtype=np.float32)
    for w, word in enumerate(words):
        for i, c in enumerate(word):
            out[w, i * LETTERS + _letter(c)] = 1.0
    return out


@register_wrapper("rlbench/WordleFeatures-v0")
class WordleFeatures(ForwardActionMasks, VersionedWrapper, gym.ObservationWrapper):
    """Wordle's text observation as :func:`board_features` (a ``Box`` of :data:`SIZE` floats).

    Goes above ``rlbench/AdmissibleActions-v1`` (whose ``action_masks()`` it passes on);
    with ``max_actions`` at least the list's length, action ``i`` guesses word ``i``, the row
    ``i`` of :func:`word_features`.
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (SIZE,), np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        return board_features(str(observation))


def revealed(features: np.ndarray) -> float:
    """How much of the secret a board's features reveal, 0..1: the places known green and the
    letters known to be in the word (at most five), counted half, over five."""
    greens = float(features[OFFSETS["green"] : OFFSETS["not_here"]].sum())
    present = min(float(features[OFFSETS["present"] : OFFSETS["absent"]].sum()), WORD_LENGTH)
    return (greens + 0.5 * present) / (1.5 * WORD_LENGTH)


@register_wrapper("rlbench/WordleShaping-v0")
class WordleShaping(ForwardActionMasks, VersionedWrapper, gym.Wrapper):
    """Potential-based reward shaping (Ng, Harada and Russell, 1999) for training on Wordle.

    Goes above :class:`WordleFeatures`. Each step's reward gains ``scale * (P(s') - P(s))``
    with ``P`` = :func:`revealed`: a guess is rewarded for what its feedback reveals, and the
    bonuses of an episode sum to at most ``scale``. Shaping of this form leaves the optimal
    policy unchanged; the harness scores episodes by the game's own statistics, below it.
    """

    def __init__(self, env: gym.Env, scale: float = 0.5) -> None:
        if not (np.isfinite(scale) and scale >= 0):
            raise ValueError(f"scale must be a finite number >= 0, got {scale!r}")
        gym.utils.RecordConstructorArgs.__init__(self, scale=scale)
        gym.Wrapper.__init__(self, env)
        self.scale, self.potential = float(scale), 0.0

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self.potential = revealed(obs)
        return obs, info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        potential, self.potential = self.potential, revealed(obs)
        reward = float(reward) + self.scale * (self.potential - potential)
        return obs, reward, terminated, truncated, info
