"""Information-gain experts for the question games (TwentyQuestions, GuessMyCity).

They read only the observation: every history line (``3. is it an animal? -> Yes.``) is parsed
with the game's own oracle, and the entities that would have given every recorded answer are
the candidates. The expert then asks the canonical question whose answer over the candidates
has the most entropy, or guesses the first candidate when guessing is worth as much (one or
two candidates left, or nothing splits them) or when only one question is left.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from rlbench_suite.envs.text.questions import guess_my_city, twenty_questions
from rlbench_suite.envs.text.questions.oracle import MAX_QUESTIONS, KnowledgeBase, answer_entropy

_TURN = re.compile(r"^\d+\. (.*) -> (.*)$", re.MULTILINE)
_LEFT = re.compile(r"^Questions left: (\d+)$", re.MULTILINE)


def candidates(kb: KnowledgeBase, observation: str) -> np.ndarray:
    """A mask of the entities consistent with every answer in ``observation``'s history
    (a line that would leave none, such as a clipped question, is skipped)."""
    mask = np.ones(len(kb.entities), dtype=bool)
    for question, answer in _TURN.findall(observation):
        narrowed = mask & kb.consistent(kb.parse(question), answer)
        if narrowed.any():
            mask = narrowed
    return mask


def best_command(kb: KnowledgeBase, mask: np.ndarray, questions_left: int) -> str:
    """The most informative canonical question over ``mask``, or a guess."""
    indices = np.flatnonzero(mask)
    guess = f"Guess: {kb.entities[int(indices[0])].name}"
    n = len(indices)
    if n == 1 or questions_left <= 1:
        return guess
    entropy = answer_entropy(kb, mask)
    best = int(np.argmax(entropy))
    p = 1.0 / n
    guess_entropy = -(p * np.log2(p) + (1 - p) * np.log2(1 - p))
    if entropy[best] <= guess_entropy + 1e-9:  # a guess tells as much and may win now
        return guess
    return kb.questions[kb.canonical[best]].text


class _OracleExpert:
    kb: KnowledgeBase

    def __init__(self, observation_space: Any = None, action_space: Any = None, seed: Any = None):
        pass

    def reset(self, seed: int | None = None) -> None:
        """Nothing to forget: every move is decided from the history in the observation."""

    def act(self, observation: str, info: dict[str, Any] | None = None) -> str:
        left = _LEFT.search(observation)
        questions_left = int(left.group(1)) if left else MAX_QUESTIONS
        return best_command(self.kb, candidates(self.kb, observation), questions_left)


class TwentyQuestionsExpert(_OracleExpert):
    """The information-gain expert for ``rlbench/TwentyQuestions-v0``."""

    def __init__(self, observation_space: Any = None, action_space: Any = None, seed: Any = None):
        self.kb = twenty_questions.load_kb()


class GuessMyCityExpert(_OracleExpert):
    """The information-gain expert for ``rlbench/GuessMyCity-v0``."""

    def __init__(self, observation_space: Any = None, action_space: Any = None, seed: Any = None):
        self.kb = guess_my_city.load_kb()
