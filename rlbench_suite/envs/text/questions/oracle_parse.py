"""Word lists and checks the question-game oracle (:mod:`.oracle`) uses to tell a question it
can answer from one that merely contains a known word.

The rule: a command matched to a question is answered only when each of its words is

- in the question's vocabulary: the words of its canonical text, of its patterns (inverse ones
  included) and of its extra ``words`` (so "can it fit in your pocket" is the shoebox question,
  whose patterns include "fit in hand"), or
- a :data:`FILLER_WORDS` word of the question frame: pronouns, auxiliary verbs, prepositions, hedges
  ("is", "it", "does", "have", "you", "usually", "in", ...), plus the knowledge base's own
  fillers (the city game's "city", "town", "country").

Any other word is a qualifier or a second noun that changes the question ("is it a *sports*
car", "is it a vehicle with *pedals*", "is it a *state* capital", "*what* is the capital"), so
the oracle declines rather than answer a different question. Words are normalized first
(:func:`~rlbench_suite.envs.text.questions.oracle.words`: lower case, articles dropped, plural ``s``
cut); the lists here are plain words, normalized the same way by the oracle.
"""

from __future__ import annotations

import re

FILLER_WORDS = """
    is are was were be been being am it this that these those there here
    do does did done can could would will should shall may might must
    have has had having get got you i we they them he she one someone anyone people
    something anything thing object item stuff
    of in on at to for with by from into inside as like about and also too
    usually normally typically generally often always sometimes mostly mainly commonly
    primarily ever really very actually just still much
    kind sort type form some any able member
    considered called classified known regarded described
    find found use used using need require contain include
    tell me if whether question ok okay so well then now
"""
"""Question-frame words that never change what is asked (whitespace-separated)."""

MODIFIER_WORDS = """
    red green yellow blue black white brown pink purple grey gray
    big small large little tiny huge giant baby young old new fresh ripe cute real normal
    regular ordinary typical common
"""
"""Adjectives that may precede a guessed name without changing it ("is it a red apple")."""

COMPARISON = "than"
"""A comparison must be covered by a pattern ("bigger than a car"), or it is declined."""

NOUN_GUESS = re.compile(
    r"^\s*(?:is it|is this|is that|could it be|can it be|might it be)\s+(?:a|an)\s+"
    r"([a-z]+(?:[ -][a-z]+)?)\s*[?.!]*\s*$"
)
"""``is it a/an NOUN``, a noun of one or two words: a guess, even of something unknown."""


def uncovered(
    tokens: tuple[str, ...], vocabulary: frozenset[str], filler: frozenset[str]
) -> tuple[str, ...]:
    """The words of ``tokens`` neither in ``vocabulary`` nor filler (in order, once each)."""
    out: list[str] = []
    for w in tokens:
        if w not in vocabulary and w not in filler and w not in out:
            out.append(w)
    return tuple(out)


def without_modifiers(rest: tuple[str, ...], modifiers: frozenset[str]) -> tuple[str, ...]:
    """``rest`` without the leading :data:`MODIFIER_WORDS` ("red apple" -> "apple")."""
    i = 0
    while i < len(rest) - 1 and rest[i] in modifiers:
        i += 1
    return rest[i:]


def alternatives(rest: tuple[str, ...]) -> list[tuple[str, ...]]:
    """``rest`` split on "or" ("cat or dog" -> ["cat", "dog"]); empty parts dropped."""
    parts: list[tuple[str, ...]] = [()]
    for w in rest:
        if w == "or":
            parts.append(())
        else:
            parts[-1] += (w,)
    return [p for p in parts if p]


def noun_guess(command: str) -> tuple[str, ...] | None:
    """The noun's words if ``command`` is "is it a/an NOUN", else None."""
    match = NOUN_GUESS.match(command.lower())
    return tuple(match.group(1).replace("-", " ").split()) if match else None
