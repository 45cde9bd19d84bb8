"""The command parser of TextAdventure and TextNav: verbs, synonyms, articles, noun phrases.

:func:`parse` turns a normalized command (see
:func:`~rlbench_suite.envs.text.text_io.read_command`) into a :class:`Parsed` verb with noun
phrases, or a reply saying what was not understood. Articles (the, a, an, some) are dropped
and a final full stop or exclamation mark is ignored. Accepted forms:

- moving: ``north``/``n``, ``south``/``s``, ``east``/``e``, ``west``/``w``, ``up``/``u``,
  ``down``/``d``, each alone or after go, walk, move, head, run or "go to the";
- ``look``/``l``; ``inventory``/``inv``/``i``; ``help``; ``wait``/``z``;
- ``examine``/``x``/``inspect``/``look at`` X;
- ``take``/``get``/``grab``/``pick up`` X (or ``pick X up``), optionally "from Y";
- ``drop``/``discard`` X, ``put down`` X, ``put X down``;
- ``put``/``place``/``insert``/``set`` X ``in``/``into``/``inside``/``on``/``onto`` Y;
- ``open`` X; ``close``/``shut`` X; ``unlock`` X [``with`` Y];
- ``combine``/``join`` X ``with``/``and``/``to`` Y; ``use`` X ``with``/``on``/``in`` Y (a key
  used on a lock unlocks it; otherwise the two are combined).

Noun phrases are resolved against what the player can see by the game
(:func:`resolve`): a phrase names every thing whose words include all of the phrase's words,
so "key" and "brass key" both name the brass key; a phrase that names several things gets an
in-game question ("Which do you mean, the brass key or the iron key?").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rlbench_suite.envs.text.adventure_world import Entity

DIRECTION_ALIASES = {
    **{d: d for d in ("north", "south", "east", "west", "up", "down")},
    **{d[0]: d for d in ("north", "south", "east", "west", "up", "down")},
}
ARTICLES = frozenset({"the", "a", "an", "some"})
MOVE_VERBS = frozenset({"go", "walk", "move", "head", "run"})
SIMPLE = {
    "look": "look", "l": "look", "inventory": "inventory", "inv": "inventory",
    "i": "inventory", "help": "help", "wait": "wait", "z": "wait",
}  # fmt: skip
ONE_OBJECT = {
    "examine": "examine", "x": "examine", "inspect": "examine", "take": "take", "get": "take",
    "grab": "take", "drop": "drop", "discard": "drop", "open": "open", "close": "close",
    "shut": "close", "unlock": "unlock",
}  # fmt: skip
PUT_VERBS = frozenset({"put", "place", "insert", "set"})
INTO = ("into", "inside", "onto", "in", "on", "upon")
COMBINE_VERBS = frozenset({"combine", "join", "use"})
WITH = ("with", "and", "to", "on", "in")
HELP = (
    "try: look, inventory, go north, take <thing>, drop <thing>, put <thing> in <thing>, "
    "open <thing>, close <thing>, unlock <thing> with <key>, combine <thing> with <thing>."
)


@dataclass(frozen=True)
class Parsed:
    """A verb and its noun phrases (``put``: the thing and the receptacle; ``go``: the
    direction)."""

    verb: str
    objects: tuple[str, ...] = ()


def _split(words: list[str], separators: Sequence[str]) -> tuple[str, str] | None:
    """The words before and after the first separator (both non-empty), or None."""
    for i, word in enumerate(words):
        if word in separators and 0 < i < len(words) - 1:
            return " ".join(words[:i]), " ".join(words[i + 1 :])
    return None


def parse(command: str) -> Parsed | str:
    """``command`` (normalized: lower case, single spaces) as a :class:`Parsed`, or a reply."""
    words = [w for w in command.rstrip(".!").split() if w not in ARTICLES]
    if not words:
        return "Say something: " + HELP
    verb, rest = words[0], words[1:]
    if verb in MOVE_VERBS and rest[:1] == ["to"]:
        rest = rest[1:]
    if verb in MOVE_VERBS and len(rest) == 1:
        verb, rest = rest[0], []
    if not rest and verb in DIRECTION_ALIASES:
        return Parsed("go", (DIRECTION_ALIASES[verb],))
    if not rest and verb in SIMPLE:
        return Parsed(SIMPLE[verb])
    if verb == "look" and rest[:1] == ["at"] and len(rest) > 1:
        return Parsed("examine", (" ".join(rest[1:]),))
    if verb == "pick" and rest[:1] == ["up"] and len(rest) > 1:
        verb, rest = "take", rest[1:]
    elif verb == "pick" and rest[-1:] == ["up"] and len(rest) > 1:
        verb, rest = "take", rest[:-1]
    elif verb == "put" and rest[:1] == ["down"] and len(rest) > 1:
        verb, rest = "drop", rest[1:]
    elif verb == "put" and rest[-1:] == ["down"] and len(rest) > 1:
        verb, rest = "drop", rest[:-1]
    if not rest:
        if verb in ONE_OBJECT or verb in PUT_VERBS or verb in COMBINE_VERBS:
            return f"What do you want to {verb}?"
        return f"I don't understand {_shown(command)}; {HELP}"
    verb = ONE_OBJECT.get(verb, verb)
    if verb == "take":
        pair = _split(rest, ("from", "off", "out"))
        return Parsed("take", (pair[0],) if pair else (" ".join(rest),))
    if verb == "unlock":
        pair = _split(rest, ("with", "using"))
        return Parsed("unlock", pair if pair else (" ".join(rest),))
    if verb in ONE_OBJECT.values():
        return Parsed(verb, (" ".join(rest),))
    if verb in PUT_VERBS:
        pair = _split(rest, INTO)
        return (
            Parsed("put", pair) if pair else f"Where do you want to {verb} it? Say: {verb} X in Y."
        )
    if verb in COMBINE_VERBS:
        pair = _split(rest, WITH)
        if pair is None:
            return f"{verb.capitalize()} it with what? Say: {verb} X with Y."
        return Parsed("use" if verb == "use" else "combine", pair)
    return f"I don't understand {_shown(command)}; {HELP}"


def _shown(command: str) -> str:
    return repr(command if len(command) <= 40 else command[:37] + "...")


def resolve(phrase: str, candidates: Sequence[Entity]) -> Entity | str:
    """The one thing in ``candidates`` that ``phrase`` names, or a reply (none, or which?)."""
    words = frozenset(w for w in phrase.split() if w not in ARTICLES)
    matches = [e for e in candidates if words and words <= e.words]
    exact = [e for e in matches if e.name == " ".join(phrase.split())]
    if len(exact) == 1 or len(matches) == 1:
        return (exact or matches)[0]
    if not matches:
        return f"You see no {_clip(phrase)} here."
    names = [f"the {e.name}" for e in matches]
    return f"Which do you mean, {', '.join(names[:-1])} or {names[-1]}?"


def _clip(phrase: str) -> str:
    return phrase if len(phrase) <= 40 else phrase[:37] + "..."
