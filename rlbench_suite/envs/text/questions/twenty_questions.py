"""Twenty Questions (LMRL-Gym's task): find the secret object by asking yes/no questions.

The secret is drawn by reset's seed from the bundled knowledge base
``data/twenty_questions_kb.json`` (:func:`load_kb`): everyday objects, animals, plants, foods and
drinks, each with the yes/no features true of it ("Is it an animal?", "Does it have wheels?",
"Is it made mostly of metal?", ...). A rule-based oracle (:mod:`.oracle`) answers: each feature
has a canonical question and keyword patterns, so paraphrases ("does it have 4 legs", "can you
eat it", "is it natural") are answered too. A question that says more than an attribute asks
("is it a sports car") is declined, as are comparisons with things other than the knowledge
base's references (a person, a car, a shoebox or breadbox) and questions about what it does not
model (temperature, other materials, categories such as "appliance"), each with a reply saying
what it can answer.
"Is it a NOUN?" naming no known thing is a wrong guess ("Is it a tomato?" -> "No.").

Observations (a ``Text`` space, at most :data:`~rlbench_suite.envs.text.questions.oracle.
MAX_OBSERVATION_LENGTH` characters) are lines: the rules, one line per question so far
(``3. is it an animal? -> Yes.``), ``Questions left: 17`` and ``Reply: ...``.

Commands (at most 256 characters, case-insensitive; articles and punctuation ignored) are
yes/no questions and guesses ("Is it a dog?", "guess dog", "dog", "Guess: dog"; synonyms such
as "puppy" count). Every command with a letter or digit uses one of the 20 questions: wrong
guesses, and questions the oracle declines (not understood, compound, negated), which get an
explanatory reply and zero reward. A command without letters or digits uses none; a longer
command raises ValueError naming the limit.

Rewards: +1 for guessing the secret (terminated, a win), 0 otherwise; the game is lost
(terminated) after the 20th question. ``info``: ``success``, ``score`` (1 if won), ``max_score``
(1), ``questions`` (used), ``valid`` (the last command was a guess or an answered question) and
``admissible_commands`` (the canonical questions that still split the objects consistent with
the answers, sorted, then ``Guess: NAME`` for up to 20 of those objects, sorted).
"""

from __future__ import annotations

import functools
from typing import Any

from rlbench_suite.envs.text.questions.oracle import (
    MAX_QUESTIONS,
    Entity,
    KnowledgeBase,
    Question,
    QuestionGameEnv,
    read_knowledge_base,
)

KB_FILE = "twenty_questions_kb.json"
FORBIDDEN = Question(
    "forbidden",
    "name",
    "What is it?",
    ("what is it", "what it is", "what & name", "which object", "which thing", "what object"),
    reply="I won't tell you; guess it, like 'Is it a dog?'.",
)


def kb_data() -> dict[str, Any]:
    """The knowledge base file's contents."""
    return read_knowledge_base(KB_FILE)


@functools.cache
def load_kb() -> KnowledgeBase:
    """The oracle's knowledge base: one yes/no question per attribute, in file order."""
    data = kb_data()
    questions = [
        Question(
            "yes_no",
            a["key"],
            a["question"],
            tuple(a["patterns"]),
            tuple(a.get("inverse_patterns", ())),
            words=tuple(a.get("words", ())),
        )
        for a in data["attributes"]
    ]
    declined = [
        Question("forbidden", d["key"], d["question"], tuple(d["patterns"]), reply=d["reply"])
        for d in data["declined"]
    ]
    known = {q.key for q in questions}
    entities = []
    for o in data["objects"]:
        unknown = set(o["yes"]) - known
        if unknown:
            raise ValueError(f"{KB_FILE}: {o['name']!r} has unknown attributes {sorted(unknown)}")
        entities.append(Entity(o["name"], tuple(o["synonyms"]), frozenset(o["yes"])))
    return KnowledgeBase(
        entities, [*questions, *declined, FORBIDDEN], [q.key for q in questions], noun_guesses=True
    )


class TwentyQuestionsEnv(QuestionGameEnv):
    """Find the secret object in 20 yes/no questions (see the module docstring)."""

    rules = (
        f"Twenty Questions: I am thinking of an everyday object, animal, plant, food or drink. "
        f"Ask yes/no questions (like 'Is it an animal?') or guess (like 'Is it a dog?'); "
        f"you have {MAX_QUESTIONS} questions, guesses included."
    )
    opening = "I have something in mind. Ask your first question."
    example_question = "Is it an animal?"
    example_guess = "Is it a dog?"

    @classmethod
    def load_kb(cls) -> KnowledgeBase:
        return load_kb()
