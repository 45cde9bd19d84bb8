"""The rule-based oracle behind the question games (TwentyQuestions, GuessMyCity).

A :class:`KnowledgeBase` holds entities (the possible secrets, with synonyms) and questions:
yes/no questions about a feature (an entity has it or not), open questions answered with a
value ("What continent is it on?" -> "Europe."), and forbidden questions declined with a fixed
reply ("Which country is it in?"). Every question has a canonical phrasing and patterns.

Matching (:meth:`KnowledgeBase.parse`) works on normalized words (:func:`words`: case, accents,
punctuation, the articles and a plural ``s`` ignored). A pattern is a phrase that must occur as
consecutive words, or phrases joined by ``&`` that must all occur ("what & continent"). When
several patterns match, one whose words contain another's wins ("wild animal" over "animal");
two questions left matching are a compound question, declined. In order, a command is:

- ``empty``: no letters or digits (uses no question);
- ``guess``: an entity's name or synonym, alone or after a guess phrase ("is it", "guess",
  "my guess is", ...); an explicit guess ("guess ...") of something unknown is a wrong guess;
- ``compound``: two names joined by "or" ("is it a cat or a dog");
- ``negated``: contains "not", "never" or "n't" (declined: ask without the negation);
- a question whose patterns match (``yes_no``, ``open``, ``fixed``, ``forbidden``),
  ``compound``, or ``unknown``.

A matched question is answered only if the command says nothing more (:mod:`.oracle_parse`):
every word must be in the question's vocabulary (its canonical text, its patterns and its extra
``words``) or a filler of the question frame ("is", "it", "does", "have", "usually", ...);
otherwise the command asks something else ("is it a sports car", "is it a state capital") and
is ``unknown`` (its ``key`` lists the words not understood). A comparison ("than") must be
covered by a pattern ("bigger than a car"); otherwise it is the knowledge base's ``compare``
question (declined, naming the comparisons it answers) if it has one. When nothing is
understood, two fallbacks: a guess with a modifier ("is it a red apple": colour and size words
before a name) and, where the knowledge base allows (``noun_guesses``), "is it a/an NOUN" with
one or two unknown words ("is it a tomato") is a wrong guess.

:meth:`KnowledgeBase.answer` gives the short answer an entity implies ("Yes.", "No.", a value,
or a fixed note for the declined kinds); a candidate is consistent with a history when it
implies every recorded answer. :class:`QuestionGameEnv` is the game both envs play over their
knowledge base (20 questions, observations, rewards and ``info``; see
:mod:`rlbench_suite.envs.text.questions.twenty_questions`).
"""

from __future__ import annotations

import abc
import functools
import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.envs.text.questions import oracle_parse as op
from rlbench_suite.envs.text.text_io import (
    MAX_COMMAND_LENGTH,
    clip_observation,
    read_command,
    text_space,
)

ARTICLES = frozenset({"a", "an", "the", "please", "your", "its", "their"})
GUESS_PREFIXES = (
    "is it", "it is", "is this", "is that", "is your object", "is object",
    "is your city", "is city", "is thing", "is answer", "could it be", "can it be",
    "might it be", "are you thinking of", "are you thinking about", "you are thinking of",
    "i think it is", "i think", "i guess it is", "i guess",
)  # fmt: skip
EXPLICIT_GUESS_PREFIXES = ("my guess is", "my guess", "final guess", "final answer", "guess")
NEGATION = re.compile(r"\b(not|never|no longer)\b|n['\u2019]t\b")
GUESS_ANSWERS = ("Yes!", "No.")
DECLINED = {
    "empty": "(no question)",
    "negated": "(not answered: negation)",
    "compound": "(not answered: more than one question)",
    "unknown": "(not understood)",
}
DATA = Path(__file__).parent / "data"
"""The question games' knowledge bases (JSON), shipped beside this module."""


def read_knowledge_base(file_name: str) -> dict[str, Any]:
    """The contents of the knowledge-base file ``file_name`` in :data:`DATA`."""
    return json.loads((DATA / file_name).read_text())


NO_STEM = frozenset({"americas"})
"""Words whose final ``s`` is not a plural to cut ("the Americas" is not "America")."""


def _stem(word: str) -> str:
    if word in NO_STEM:
        return word
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def words(text: str) -> tuple[str, ...]:
    """``text`` as matching words: lower case, accents dropped, punctuation as spaces, articles
    dropped, a plural ``s`` cut ("The Wheels!" -> ``("wheel",)``)."""
    plain = unicodedata.normalize("NFKD", text.lower())
    plain = "".join(c for c in plain if not unicodedata.combining(c))
    plain = re.sub(r"[^a-z0-9]+", " ", plain.replace("'", ""))
    return tuple(_stem(w) for w in plain.split() if w not in ARTICLES)


def _find(haystack: tuple[str, ...], needle: tuple[str, ...]) -> int:
    n = len(needle)
    for i in range(len(haystack) - n + 1):
        if haystack[i : i + n] == needle:
            return i
    return -1


@dataclass(frozen=True)
class Question:
    """A question the oracle recognises: ``kind`` is ``yes_no``, ``open``, ``fixed`` (the same
    answer, ``reply``, for every entity) or ``forbidden`` (declined with ``reply``)."""

    kind: str
    key: str
    text: str
    patterns: tuple[str, ...]
    inverse_patterns: tuple[str, ...] = ()
    reply: str = ""
    """A fixed question's answer, or a forbidden question's reply."""
    words: tuple[str, ...] = ()
    """Words its paraphrases may use besides those of its text and patterns."""


@dataclass(frozen=True)
class Entity:
    """A possible secret: its name, synonyms, yes/no features and open-question values."""

    name: str
    synonyms: tuple[str, ...] = ()
    features: frozenset[str] = frozenset()
    values: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Parsed:
    """What a command was understood as (see the module docstring for ``kind``)."""

    kind: str
    key: str = ""
    inverse: bool = False

    @property
    def valid(self) -> bool:
        """Whether the oracle answers it (a guess or a recognised, allowed question)."""
        return self.kind in ("guess", "yes_no", "open", "fixed")


@dataclass(frozen=True)
class _Pattern:
    parts: tuple[tuple[str, ...], ...]
    question: Question
    inverse: bool


class KnowledgeBase:
    """Entities and questions, and the parser and answers built on them."""

    def __init__(
        self,
        entities: list[Entity],
        questions: list[Question],
        canonical: list[str],
        *,
        filler: tuple[str, ...] = (),
        guess_prefixes: tuple[str, ...] = GUESS_PREFIXES,
        noun_guesses: bool = False,
    ) -> None:
        """``filler``: the game's own filler words (see :mod:`.oracle_parse`);
        ``noun_guesses``: "is it a/an NOUN" is a guess even if NOUN is unknown."""
        self.entities = tuple(entities)
        self.questions = {q.key: q for q in questions}
        self.filler = frozenset(words(" ".join((op.FILLER_WORDS, *filler))))
        self.modifiers = frozenset(words(op.MODIFIER_WORDS))
        self.guess_prefixes = tuple(words(p) for p in (*EXPLICIT_GUESS_PREFIXES, *guess_prefixes))
        self.n_explicit = len(EXPLICIT_GUESS_PREFIXES)
        self.noun_guesses = noun_guesses
        self.vocabulary = {
            q.key: frozenset(
                words(
                    " ".join((q.text, *q.patterns, *q.inverse_patterns, *q.words)).replace("&", " ")
                )
            )
            for q in questions
        }
        self.index = {e.name: i for i, e in enumerate(self.entities)}
        self.names: dict[tuple[str, ...], str] = {}
        for e in self.entities:
            for alias in (e.name, *e.synonyms):
                self.names.setdefault(words(alias), e.name)
        self.patterns = [
            _Pattern(tuple(words(part) for part in p.split("&")), q, inverse)
            for q in questions
            for inverse, group in ((False, q.patterns), (True, q.inverse_patterns))
            for p in group
        ]
        # canonical questions: those listed whose text parses back to them (in the given order)
        self.canonical = tuple(
            k for k in canonical if self.parse(self.questions[k].text) == Parsed(self._kind(k), k)
        )
        self.answers = np.array(
            [[self.code(e, self.parse(self.questions[k].text)) for e in self.entities]
             for k in self.canonical],
            dtype=np.int32,
        ).reshape(len(self.canonical), len(self.entities))  # fmt: skip

    def _kind(self, key: str) -> str:
        return self.questions[key].kind

    @functools.lru_cache(maxsize=4096)  # noqa: B019  (a KnowledgeBase lives as long as the process)
    def parse(self, command: str) -> Parsed:
        """What ``command`` asks (see the module docstring)."""
        tokens = words(command)
        if not tokens:
            return Parsed("empty")
        explicit, rests = False, [tokens]
        for i, head in enumerate(self.guess_prefixes):
            if tokens[: len(head)] == head and len(tokens) > len(head):
                rest = tokens[len(head) :]
                if rest in self.names:
                    return Parsed("guess", self.names[rest])
                explicit, rests = explicit or i < self.n_explicit, [*rests, rest]
        if tokens in self.names:
            return Parsed("guess", self.names[tokens])
        if any(len(op.alternatives(r)) > 1 and self._named(op.alternatives(r)) for r in rests):
            return Parsed("compound")  # "is it a cat or a dog"
        if NEGATION.search(command.lower()):
            return Parsed("negated")
        if explicit:
            return Parsed("guess", "")  # an explicit guess of something unknown: wrong
        parsed = self._match(tokens)
        if parsed.kind != "unknown":
            return parsed
        for rest in rests:  # a guess with a modifier: "is it a red apple"
            name = self.names.get(op.without_modifiers(rest, self.modifiers))
            if name:
                return Parsed("guess", name)
        noun = op.noun_guess(command) if self.noun_guesses and not parsed.key else None
        if noun and not set(words(" ".join(noun))) & self.filler:
            return Parsed("guess", " ".join(noun))  # "is it a tomato": a wrong guess
        return parsed

    def _named(self, parts: list[tuple[str, ...]]) -> bool:
        return sum(op.without_modifiers(p, self.modifiers) in self.names for p in parts) > 1

    def _match(self, tokens: tuple[str, ...]) -> Parsed:
        present = set(tokens)
        found: list[tuple[frozenset[int], Question, bool]] = []
        for pattern in self.patterns:
            spans: set[int] = set()
            for part in pattern.parts:
                start = _find(tokens, part) if present.issuperset(part) else -1
                if start < 0:
                    break
                spans.update(range(start, start + len(part)))
            else:
                found.append((frozenset(spans), pattern.question, pattern.inverse))
        best = [
            (span, q, inverse)
            for span, q, inverse in found
            if not any(span < other for other, _, _ in found)
        ]
        covered = set().union(*(span for span, _, _ in best))
        if any(w == op.COMPARISON and i not in covered for i, w in enumerate(tokens)):
            # "is it bigger than a cat": only the comparisons with patterns are answered
            return (
                Parsed("forbidden", "compare")
                if "compare" in self.questions
                else Parsed("unknown", op.COMPARISON)
            )
        kept = {(q.key, inverse) for _, q, inverse in best}
        if not kept:
            return Parsed("unknown")
        if len(kept) > 1:
            return Parsed("compound")
        ((key, inverse),) = kept
        kind = self._kind(key)
        if kind != "forbidden":
            extra = op.uncovered(tokens, self.vocabulary[key], self.filler)
            if extra:  # "is it a sports car": more than the matched question asks
                return Parsed("unknown", " ".join(extra))
        return Parsed(kind, key, inverse)

    def answer(self, entity: Entity, parsed: Parsed) -> str:
        """The short answer to ``parsed`` when ``entity`` is the secret."""
        if parsed.kind == "guess":
            return GUESS_ANSWERS[0] if parsed.key == entity.name else GUESS_ANSWERS[1]
        if parsed.kind == "yes_no":
            return "Yes." if (parsed.key in entity.features) != parsed.inverse else "No."
        if parsed.kind == "open":
            return entity.values[parsed.key]
        if parsed.kind == "fixed":
            return self.questions[parsed.key].reply
        if parsed.kind == "forbidden":
            return "(not answered)"
        return DECLINED[parsed.kind]

    def code(self, entity: Entity, parsed: Parsed) -> int:
        """:meth:`answer` as a small integer (for vectorized consistency checks)."""
        return _answer_codes.setdefault(self.answer(entity, parsed), len(_answer_codes))

    def consistent(self, parsed: Parsed, answer: str) -> np.ndarray:
        """A mask of the entities that would give ``answer`` to ``parsed``."""
        return np.array([self.answer(e, parsed) == answer for e in self.entities], dtype=bool)


_answer_codes: dict[str, int] = {}


def informative(kb: KnowledgeBase, mask: np.ndarray) -> np.ndarray:
    """A mask over ``kb.canonical``: the questions whose answers still differ in ``mask``."""
    answers = kb.answers[:, mask]
    if answers.shape[1] == 0:
        return np.zeros(len(kb.canonical), dtype=bool)
    return (answers != answers[:, :1]).any(axis=1)


def answer_entropy(kb: KnowledgeBase, mask: np.ndarray) -> np.ndarray:
    """Entropy (bits) of each canonical question's answer over the entities in ``mask``."""
    answers = kb.answers[:, mask]
    n = answers.shape[1]
    entropy = np.zeros(len(kb.canonical))
    for i, row in enumerate(answers):
        _, counts = np.unique(row, return_counts=True)
        p = counts / n
        entropy[i] = float(-(p * np.log2(p)).sum())
    return entropy


MAX_QUESTIONS = 20
"""Questions per game, guesses and unanswered questions included (every turn counts)."""
MAX_OBSERVATION_LENGTH = 4096
"""Enough for the rules, 20 history lines of at most 150 characters and the longest reply."""
MAX_GUESSES_LISTED = 20
_SHOWN = 80


def _shown(command: str) -> str:
    return command if len(command) <= _SHOWN else command[: _SHOWN - 3] + "..."


class QuestionGameEnv(gym.Env[str, str], abc.ABC):
    """A question game over a knowledge base: subclasses give :meth:`load_kb` and the texts."""

    metadata: dict[str, Any] = {"render_modes": []}
    rules = ""
    opening = ""
    example_question = ""
    example_guess = ""

    def __init__(self) -> None:
        self.kb = self.load_kb()
        self.observation_space = text_space(MAX_OBSERVATION_LENGTH)
        self.action_space = text_space(MAX_COMMAND_LENGTH)
        self.secret = self.kb.entities[0]
        self.history: list[tuple[str, str]] = []
        self.mask = np.ones(len(self.kb.entities), dtype=bool)
        self.won = False

    @classmethod
    @abc.abstractmethod
    def load_kb(cls) -> KnowledgeBase:
        """The game's knowledge base."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.secret = self.kb.entities[int(self.np_random.integers(len(self.kb.entities)))]
        self.history, self.won = [], False
        self.mask = np.ones(len(self.kb.entities), dtype=bool)
        return self._observe(self.opening), self._info(valid=False)

    @property
    def over(self) -> bool:
        """Whether the game is won or out of questions."""
        return self.won or len(self.history) >= MAX_QUESTIONS

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        command = read_command(action)
        if self.over:
            return self._observe("The game is over."), 0.0, True, False, self._info(False)
        parsed = self.kb.parse(command)
        if parsed.kind == "empty":
            reply = f"Ask a question, like {self.example_question!r}, or guess, like "
            reply += f"{self.example_guess!r}. (No question used.)"
            return self._observe(reply), 0.0, False, False, self._info(False)
        short = self.kb.answer(self.secret, parsed)
        self.mask &= self.kb.consistent(parsed, short)
        self.history.append((_shown(command), short))
        self.won = parsed.kind == "guess" and parsed.key == self.secret.name
        reply = self._reply(parsed, short)
        if not self.won and self.over:
            reply += f" That was the last question; the answer was {self.secret.name}."
        return self._observe(reply), float(self.won), self.over, False, self._info(parsed.valid)

    def _reply(self, parsed: Parsed, short: str) -> str:
        if parsed.kind == "guess":
            if self.won:
                n, name = len(self.history), self.secret.name
                return f"Yes! The answer is {name}. You got it in {n} question{'s' * (n > 1)}."
            return f"No, the answer is not {parsed.key}." if parsed.key else "No, that is not it."
        if parsed.kind in ("yes_no", "open", "fixed"):
            return short
        if parsed.kind == "forbidden":
            return self.kb.questions[parsed.key].reply
        if parsed.kind == "negated":
            return f"Please ask without a negation, like {self.example_question!r}."
        if parsed.kind == "compound":
            return "Please ask about one thing at a time."
        if parsed.key:
            return (
                f"I can't answer that as asked (I don't follow {parsed.key!r} there); ask a "
                f"yes/no question like {self.example_question!r}, or guess, like "
                f"{self.example_guess!r}."
            )
        return (
            f"I can't answer that; ask a yes/no question like {self.example_question!r}, "
            f"or guess, like {self.example_guess!r}."
        )

    def _observe(self, reply: str) -> str:
        head = [self.rules]
        tail = [f"Questions left: {MAX_QUESTIONS - len(self.history)}", f"Reply: {reply}"]
        turns = [f"{i}. {q} -> {a}" for i, (q, a) in enumerate(self.history, 1)]
        budget = MAX_OBSERVATION_LENGTH - sum(len(line) + 1 for line in head + tail) - 40
        while turns and sum(len(t) + 1 for t in turns) > budget:  # keep the latest turns
            turns = turns[1:]
            head = [self.rules, "(earlier questions omitted)"]
        return clip_observation("\n".join(head + turns + tail), MAX_OBSERVATION_LENGTH)

    def admissible_commands(self) -> list[str]:
        """The canonical questions that still tell the candidates apart, then guesses of up to
        :data:`MAX_GUESSES_LISTED` candidates consistent with every answer (both sorted)."""
        useful = informative(self.kb, self.mask)
        questions = sorted(
            self.kb.questions[k].text
            for k, keep in zip(self.kb.canonical, useful, strict=True)
            if keep
        )
        names = sorted(self.kb.entities[i].name for i in np.flatnonzero(self.mask))
        return questions + [f"Guess: {name}" for name in names[:MAX_GUESSES_LISTED]]

    def _info(self, valid: bool) -> dict[str, Any]:
        return {
            "success": self.won,
            "score": int(self.won),
            "max_score": 1,
            "questions": len(self.history),
            "valid": valid,
            "admissible_commands": self.admissible_commands(),
        }
