"""Guess My City (LMRL-Gym's task): find the secret city by asking questions about it.

The secret is drawn by reset's seed from the bundled knowledge base ``data/guess_my_city_kb.json``
(:func:`load_kb`): world cities with their country (and so continent and EU membership), whether
they are the national capital, on the coast, in the southern hemisphere, their main languages,
the main rivers through them, and whether they have hosted the Summer Olympics. The rule-based
oracle (:mod:`.oracle`) answers:

- yes/no questions: "Is it in Europe?", "Is it in France?", "Is it a national capital?", "Is it
  on the coast?", "Is it in the southern hemisphere?", "Has it hosted the Summer Olympics?",
  "Is it in the European Union?", "Do they speak French?", "Is it on the Danube?", and (not
  among the canonical questions) "Is it in the Americas?", "Is it on a river?", "Is it in the
  western hemisphere?" (west of Greenwich), "Is it in Antarctica?" (always "No.");
- open questions, answered with a value: "What continent is it on?" -> "Europe.", "What
  language do they speak?" -> "French and Dutch.", "What river is it on?" -> "The Seine.",
  "Which hemisphere is it in?" -> "The northern hemisphere.";
- not the country or the name ("Which country is it in?" is declined, as LMRL-Gym's oracle
  never names the city), nor regions other than continents ("Is it in the Middle East?"), nor
  "Is it in America?" (the United States or the Americas?), ports or landlockedness (it knows
  only whether the city is on a sea or ocean). A question that says more than a known one asks
  ("Is it a state capital?", "What is the capital?") is declined, not answered as another.

Guesses: "Is it Paris?", "guess paris", "Guess: Paris", "paris", or a synonym ("nyc", "st
petersburg", "bombay"). Observations, the 20-question budget, rewards and ``info`` are those of
:mod:`rlbench_suite.envs.text.questions.twenty_questions` (the same engine, another knowledge base).
"""

from __future__ import annotations

import functools
from typing import Any

from rlbench_suite.envs.text.questions import oracle
from rlbench_suite.envs.text.questions.oracle import (
    MAX_QUESTIONS,
    Entity,
    KnowledgeBase,
    Question,
    QuestionGameEnv,
    read_knowledge_base,
    words,
)

KB_FILE = "guess_my_city_kb.json"
LANGUAGE_CUES = ("speak", "spoken", "speaking", "language", "tongue", "speaker", "talk")
LANGUAGE_WORDS = ("main", "official", "primary", "native", "local", "first", "there", "people")
NO_RIVER = "It isn't known for a river."
FILLER = ("city", "town", "place", "located", "situated", "country", "nation")
"""The city game's own filler words ("is it a European city")."""
GUESS_PREFIXES = ("is it in", *oracle.GUESS_PREFIXES)
""""Is it in Singapore?" names a city-state: a guess."""


def kb_data() -> dict[str, Any]:
    """The knowledge base file's contents."""
    return read_knowledge_base(KB_FILE)


def _listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _questions(data: dict[str, Any]) -> list[Question]:
    questions = [
        Question(
            q["kind"],
            q["key"],
            q["question"],
            tuple(q["patterns"]),
            reply=q.get("reply", ""),
            words=tuple(q.get("words", ())),
        )
        for q in data["questions"]
    ]
    for name, patterns in data["continents"].items():
        questions.append(
            Question("yes_no", f"continent={name}", f"Is it in {name}?", tuple(patterns))
        )
    country_words = set()
    for name, country in data["countries"].items():
        the = "the " if name.startswith(("United", "Czech", "Netherlands", "Philippines")) else ""
        text = f"Is it in {the}{name}?"
        questions.append(Question("yes_no", f"country={name}", text, tuple(country["patterns"])))
        country_words.update(words(p) for p in country["patterns"])
    for name, named_by in data["languages"].items():
        patterns = [f"{cue} & {w}" for w in named_by for cue in LANGUAGE_CUES]
        patterns += [w for w in named_by if words(w) not in country_words]
        text = f"Do they speak {name}?"
        questions.append(
            Question("yes_no", f"language={name}", text, tuple(patterns), words=LANGUAGE_WORDS)
        )
    for name, extra in data["rivers"].items():
        base = name.removesuffix(" River").lower()
        patterns = (f"{base} river", f"river {base}", *extra)
        text = (
            f"Is it on the {name}?"
            if extra or name.endswith(" River")
            else f"Is it on the {name} River?"
        )
        questions.append(Question("yes_no", f"river={name}", text, patterns))
    return questions


def _entity(city: dict[str, Any], countries: dict[str, Any]) -> Entity:
    country = countries[city["country"]]
    features = {f"continent={country['continent']}", f"country={city['country']}"}
    features |= {f"language={lang}" for lang in city["languages"]}
    features |= {f"river={river}" for river in city["rivers"]}
    features |= {key for key in ("capital", "coastal", "olympics") if city[key]}
    features |= {"eu"} if country["eu"] else set()
    features |= {"americas"} if country["continent"].endswith("America") else set()
    features |= {"on_river"} if city["rivers"] else set()
    features.add("southern" if city["south"] else "northern")
    features.add("western" if city["west"] else "eastern")
    rivers = " and ".join(f"the {r}" for r in city["rivers"])
    values = {
        "continent": f"{country['continent']}.",
        "languages": f"{_listing(city['languages'])}.",
        "rivers": f"{rivers[0].upper()}{rivers[1:]}." if rivers else NO_RIVER,
        "hemisphere": f"The {'southern' if city['south'] else 'northern'} hemisphere.",
    }
    return Entity(city["name"], tuple(city["synonyms"]), frozenset(features), values)


@functools.cache
def load_kb() -> KnowledgeBase:
    """The oracle's knowledge base. Canonical questions: the open ones, the yes/no ones of the
    file, continents, hemispheres and countries (languages and rivers are asked openly)."""
    data = kb_data()
    questions = _questions(data)
    entities = [_entity(city, data["countries"]) for city in data["cities"]]
    extra = {q["key"] for q in data["questions"] if not q.get("canonical", True)}
    canonical = [
        q.key
        for q in questions
        if q.kind == "open"
        or (
            q.kind == "yes_no"
            and not q.key.startswith(("language=", "river="))
            and q.key not in extra
        )
    ]
    return KnowledgeBase(
        entities, questions, canonical, filler=FILLER, guess_prefixes=GUESS_PREFIXES
    )


class GuessMyCityEnv(QuestionGameEnv):
    """Find the secret city in 20 questions (see the module docstring)."""

    rules = (
        "Guess My City: I am thinking of a city. Ask yes/no questions ('Is it in Europe?', "
        "'Is it a national capital?'), open ones ('What continent is it on?', 'What language "
        "do they speak?', 'What river is it on?'), or guess ('Is it Paris?'); I won't name the "
        f"country. You have {MAX_QUESTIONS} questions, guesses included."
    )
    opening = "I have a city in mind. Ask your first question."
    example_question = "Is it in Europe?"
    example_guess = "Is it Paris?"

    @classmethod
    def load_kb(cls) -> KnowledgeBase:
        return load_kb()
