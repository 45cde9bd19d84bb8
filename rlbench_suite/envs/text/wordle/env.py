"""Wordle: guess a seeded secret 5-letter word in 6 tries from per-letter feedback.

The secret and the accepted guesses both come from the bundled list
``data/wordle_words.txt`` beside this module (common English words; :func:`load_words`).
Reset's seed fixes the secret.

Observations (a ``Text`` space over :data:`~rlbench_suite.envs.text.text_io.CHARSET`, at most
:data:`MAX_OBSERVATION_LENGTH` characters) are lines: the rules, one line per guess so far
(``1. crane -> G Y . . G``: ``G`` right letter in the right place, ``Y`` in the word elsewhere,
``.`` not in the word, by the standard rules for repeated letters), ``Guesses left: 4`` and
``Reply: ...``, the game's answer to the last command.

Commands (at most :data:`~rlbench_suite.envs.text.text_io.MAX_COMMAND_LENGTH` characters,
case-insensitive) are a word from the list. Anything else (a word not in the list, wrong
length, non-letters) gets an in-game reply, zero reward, and does not use a guess; a longer
command raises ValueError naming the limit.

Rewards: +1 for the guess that finds the secret, 0 otherwise. The episode terminates on the
win or after :data:`MAX_GUESSES` valid guesses. ``info``: ``success`` (the secret was
found), ``guesses`` (valid guesses used), ``valid`` (the last command was a valid guess) and
``admissible_commands`` (the word list).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from pathlib import Path
from typing import Any

import gymnasium as gym

from rlbench_suite.envs.text.text_io import (
    MAX_COMMAND_LENGTH,
    clip_observation,
    read_command,
    text_space,
)

WORD_LENGTH, MAX_GUESSES = 5, 6
MAX_OBSERVATION_LENGTH = 512
"""Enough for the rules, six guess lines, the guesses left and the longest reply."""
GREEN, YELLOW, ABSENT = "G", "Y", "."
RULES = (
    f"Wordle: guess the secret {WORD_LENGTH}-letter word in {MAX_GUESSES} tries. "
    f"{GREEN} = right letter, right place; {YELLOW} = in the word, elsewhere; "
    f"{ABSENT} = not in the word."
)
_WORD = re.compile(f"[a-z]{{{WORD_LENGTH}}}")
BOARD_LINE = re.compile(r"^\d+\. ([a-z]{5}) -> ((?:[GY.] ){4}[GY.])$", re.MULTILINE)
"""One guess line of the observation (``1. crane -> G Y . . G``): the word and its marks."""


@functools.cache
def load_words() -> tuple[str, ...]:
    """The bundled word list (secrets and accepted guesses), in file order."""
    path = Path(__file__).parent / "data" / "wordle_words.txt"
    return tuple(line.strip() for line in path.read_text().splitlines() if line.strip())


def feedback(guess: str, secret: str) -> str:
    """Per-letter marks for ``guess`` against ``secret`` (standard Wordle rules).

    Greens first; then, left to right, a letter is yellow while the secret still has an
    unmatched copy of it, so repeated letters are marked at most as often as they occur.
    """
    marks = [GREEN if g == s else ABSENT for g, s in zip(guess, secret, strict=True)]
    unmatched = Counter(s for s, m in zip(secret, marks, strict=True) if m != GREEN)
    for i, letter in enumerate(guess):
        if marks[i] != GREEN and unmatched[letter] > 0:
            marks[i] = YELLOW
            unmatched[letter] -= 1
    return " ".join(marks)


class WordleEnv(gym.Env[str, str]):
    """Guess the secret word in six tries (see the module docstring)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self) -> None:
        self.words = load_words()
        self._known = frozenset(self.words)
        self.observation_space = text_space(MAX_OBSERVATION_LENGTH)
        self.action_space = text_space(MAX_COMMAND_LENGTH)
        self.secret = self.words[0]
        self.board: list[tuple[str, str]] = []

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.secret = self.words[int(self.np_random.integers(len(self.words)))]
        self.board = []
        return self._observe("Make your first guess."), self._info(valid=False)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        command = read_command(action).rstrip(".!")
        if self.won or len(self.board) >= MAX_GUESSES:
            return self._observe("The game is over."), 0.0, True, False, self._info(False)
        shown = command if len(command) <= 40 else command[:37] + "..."
        if not _WORD.fullmatch(command):
            reply = f"{shown!r} is not a {WORD_LENGTH}-letter word; guess one, like 'crane'."
            return self._observe(reply), 0.0, False, False, self._info(valid=False)
        if command not in self._known:
            reply = f"{shown!r} is not in the word list; try another word."
            return self._observe(reply), 0.0, False, False, self._info(valid=False)
        self.board.append((command, feedback(command, self.secret)))
        if self.won:
            reply = f"You found the word in {len(self.board)}!"
        elif len(self.board) >= MAX_GUESSES:
            reply = f"Out of guesses; the word was {self.secret!r}."
        else:
            reply = f"{command!r} scored {self.board[-1][1]}."
        done = self.won or len(self.board) >= MAX_GUESSES
        return self._observe(reply), float(self.won), done, False, self._info(valid=True)

    @property
    def won(self) -> bool:
        """Whether the last guess was the secret."""
        return bool(self.board) and self.board[-1][0] == self.secret

    def _observe(self, reply: str) -> str:
        lines = [RULES]
        lines += [f"{i}. {word} -> {marks}" for i, (word, marks) in enumerate(self.board, 1)]
        lines += [f"Guesses left: {MAX_GUESSES - len(self.board)}", f"Reply: {reply}"]
        return clip_observation("\n".join(lines), MAX_OBSERVATION_LENGTH)

    def _info(self, valid: bool) -> dict[str, Any]:
        return {
            "success": self.won,
            "guesses": len(self.board),
            "valid": valid,
            "admissible_commands": list(self.words),
        }
