"""An information-gain expert for Wordle that reads only the observation text.

It parses the board (``1. crane -> G Y . . G``) from the observation, keeps the words of the
bundled list consistent with every line, and guesses the list word whose feedback pattern
splits those candidates with the most entropy (ties go to a word that could still be the
secret). Patterns for every (guess, secret) pair are computed once, vectorized with numpy.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from rlbench_suite.envs.text.wordle.env import BOARD_LINE, GREEN, WORD_LENGTH, YELLOW, load_words

_PATTERNS = 3**WORD_LENGTH


def encode(marks: str) -> int:
    """A feedback string (``G Y . . G``) as a base-3 code (green 2, yellow 1, absent 0)."""
    digits = {GREEN: 2, YELLOW: 1}
    return sum(digits.get(m, 0) * 3**i for i, m in enumerate(marks.split()))


def pattern_matrix(guesses: list[str], secrets: list[str]) -> np.ndarray:
    """``codes[g, s]``: the encoded feedback for ``guesses[g]`` against ``secrets[s]``."""
    g = np.array([[ord(c) for c in w] for w in guesses], dtype=np.int16)
    s = np.array([[ord(c) for c in w] for w in secrets], dtype=np.int16)
    eq = [[g[:, i, None] == s[None, :, j] for j in range(WORD_LENGTH)] for i in range(WORD_LENGTH)]
    green = [eq[i][i] for i in range(WORD_LENGTH)]
    codes = np.zeros((len(guesses), len(secrets)), dtype=np.int64)
    for i in range(WORD_LENGTH):
        # yellow while the secret's unmatched copies outnumber earlier unmatched guess copies
        in_secret = sum((eq[i][j] & ~green[j]).astype(np.int8) for j in range(WORD_LENGTH))
        earlier = sum(((g[:, k] == g[:, i])[:, None] & ~green[k]).astype(np.int8) for k in range(i))
        yellow = ~green[i] & (in_secret > earlier)
        codes += (2 * green[i] + yellow) * 3**i
    return codes


@functools.cache
def _codes() -> np.ndarray:
    words = list(load_words())
    return pattern_matrix(words, words)


def best_guess(candidates: np.ndarray) -> int:
    """The index of the word whose feedback over ``candidates`` has the most entropy."""
    codes = _codes()[:, candidates]
    offsets = np.arange(codes.shape[0])[:, None] * _PATTERNS
    counts = np.bincount((codes + offsets).ravel(), minlength=codes.shape[0] * _PATTERNS)
    p = counts.reshape(-1, _PATTERNS) / len(candidates)
    entropy = -(p * np.log2(np.where(p > 0, p, 1.0))).sum(axis=1)
    entropy[candidates] += 1e-9  # prefer a guess that could win
    return int(np.argmax(entropy))


@functools.cache
def opening() -> str:
    """The first guess (the same every game, so computed once)."""
    return load_words()[best_guess(np.arange(len(load_words())))]


class WordleSolver:
    """Keeps the consistent candidates and guesses the maximum-information word."""

    def __init__(self, observation_space: Any = None, action_space: Any = None, seed: Any = None):
        self.words = load_words()
        self._index = {w: i for i, w in enumerate(self.words)}

    def reset(self, seed: int | None = None) -> None:
        """Nothing to forget: every move is decided from the board in the observation."""

    def act(self, observation: str, info: dict[str, Any] | None = None) -> str:
        board = BOARD_LINE.findall(observation)
        if not board:
            return opening()
        codes = _codes()
        consistent = np.ones(len(self.words), dtype=bool)
        for word, marks in board:
            consistent &= codes[self._index[word]] == encode(marks)
        candidates = np.flatnonzero(consistent)
        if len(candidates) <= 2:  # guess a candidate outright (any word if none is left)
            return self.words[int(candidates[0])] if len(candidates) else opening()
        return self.words[best_guess(candidates)]
