"""The command parser of TextAdventure and TextNav: verbs, synonyms, articles, noun phrases.

:func:`parse` turns a normalized command (see
:func:`~rlbench_suite.envs.text.text_io.read_command`) into a :class:`Parsed` verb with noun
phrases, or a reply saying what was not understood. Articles (the, a, an, some) are dropped
and a final full stop, exclamation or question mark is ignored. Accepted forms:

- moving: ``north``/``n``, ``south``/``s``, ``east``/``e``, ``west``/``w``, ``up``/``u``,
  ``down``/``d``, each alone or after go, walk, move, head, run, enter or "go to the";
- going to a room by name: ``go to the kitchen`` (or go/walk/move/head/run/enter and the
  room's name): one step, into an adjacent room through an open exit;
- ``look``/``l``/``look around``; ``inventory``/``inv``/``i``; ``help``; ``wait``/``z``;
- ``examine``/``x``/``inspect``/``look at`` X;
- ``take``/``get``/``grab``/``pick up`` X (or ``pick X up``), optionally "from"/"off"/"out of"
  Y (X must then be in or on Y);
- ``drop``/``discard`` X, ``put down`` X, ``put X down``;
- ``put``/``place``/``insert``/``set`` X ``in``/``into``/``inside``/``on``/``onto`` Y;
- ``open`` X; ``close``/``shut`` X; ``unlock`` X [``with`` Y];
- ``combine``/``join`` X ``with``/``and``/``to`` Y; ``use`` X ``with``/``on``/``in`` Y (a key
  used on a lock unlocks it; otherwise the two are combined).

Noun phrases are resolved against what the player can see by the game
(:func:`resolve`): a phrase names every thing whose words include all of the phrase's words,
so "key" and "brass key" both name the brass key. When a phrase names several things but only
one of them makes sense for the verb (the one key not yet held, for ``take key``; a held key,
for ``unlock X with key``), that one is meant; otherwise the game asks ("Which do you mean,
the brass key or the iron key?") and the next command may answer it with the thing's name or
any of its words ("brass", "the brass key"), which completes the question's command; any
other command drops the question.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rlbench_suite.envs.text.adventure.world import Entity

DIRECTION_ALIASES = {
    **{d: d for d in ("north", "south", "east", "west", "up", "down")},
    **{d[0]: d for d in ("north", "south", "east", "west", "up", "down")},
}
ARTICLES = frozenset({"the", "a", "an", "some"})
MOVE_VERBS = frozenset({"go", "walk", "move", "head", "run", "enter"})
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
    "try: look, inventory, go north, go to <room>, take <thing>, drop <thing>, "
    "put <thing> in <thing>, open <thing>, close <thing>, unlock <thing> with <key>, "
    "combine <thing> with <thing>."
)


@dataclass(frozen=True)
class Parsed:
    """A verb and its noun phrases (``put``: the thing and the receptacle; ``take``: the thing
    and maybe its holder; ``go``: the direction; ``goto``: a room's name)."""

    verb: str
    objects: tuple[str, ...] = ()


def _split(words: list[str], separators: Sequence[str]) -> tuple[str, str] | None:
    """The words before and after the first separator (both non-empty), or None."""
    for i, word in enumerate(words):
        if word in separators and 0 < i < len(words) - 1:
            return " ".join(words[:i]), " ".join(words[i + 1 :])
    return None


def words_of(command: str) -> list[str]:
    """The words of ``command`` without articles and a final full stop, "!" or "?"."""
    return [w for w in command.rstrip(".!? ").split() if w not in ARTICLES]


def parse(command: str) -> Parsed | str:
    """``command`` (normalized: lower case, single spaces) as a :class:`Parsed`, or a reply."""
    words = words_of(command)
    if not words:
        return "Say something: " + HELP
    verb, rest = words[0], words[1:]
    if verb in MOVE_VERBS and rest[:1] == ["to"]:
        rest = rest[1:]
    if verb in MOVE_VERBS and len(rest) == 1 and rest[0] in DIRECTION_ALIASES:
        verb, rest = rest[0], []
    if not rest and verb in DIRECTION_ALIASES:
        return Parsed("go", (DIRECTION_ALIASES[verb],))
    if verb in MOVE_VERBS:
        return Parsed("goto", (" ".join(rest),)) if rest else "Where do you want to go?"
    if verb == "look" and rest == ["around"]:
        rest = []
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
            return f"What do you want to {ONE_OBJECT.get(verb, verb)}?"
        return f"I don't understand {_shown(command)}; {HELP}"
    verb = ONE_OBJECT.get(verb, verb)
    if verb == "take":
        pair = _split(rest, ("from", "off", "out"))
        if pair and pair[1].startswith("of "):
            pair = (pair[0], pair[1][3:])  # take X out of Y, take X off of Y
        return Parsed("take", pair if pair else (" ".join(rest),))
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


def resolve(
    phrase: str, candidates: Sequence[Entity], sensible: Callable[[Entity], bool] | None = None
) -> Entity | list[Entity] | str:
    """The one thing in ``candidates`` that ``phrase`` names; the things to ask about when it
    names several (only those that are ``sensible``, when there are any: one is then the
    answer); or a reply when it names none."""
    words = frozenset(w for w in phrase.split() if w not in ARTICLES)
    matches = [e for e in candidates if words and words <= e.words]
    exact = [e for e in matches if e.name == " ".join(phrase.split())]
    if len(exact) == 1 or len(matches) == 1:
        return (exact or matches)[0]
    if not matches:
        return f"You see no {_clip(phrase)} here."
    fitting = [e for e in matches if sensible(e)] if sensible else []
    if len(fitting) == 1:
        return fitting[0]
    return fitting or matches


def question(names: Sequence[str]) -> str:
    """ "Which do you mean, the a, the b or the c?" """
    listed = [f"the {name}" for name in names]
    return f"Which do you mean, {', '.join(listed[:-1])} or {listed[-1]}?"


def answer(command: str, names: Sequence[str]) -> list[str]:
    """The ``names`` that ``command`` picks as a reply to :func:`question` (a name, or some of
    its words: "brass", "the brass key", "the brass one"); none when it is another command."""
    words = frozenset(words_of(command)) - {"one"}
    return [n for n in names if words and words <= frozenset(n.lower().split())]


def _clip(phrase: str) -> str:
    return phrase if len(phrase) <= 40 else phrase[:37] + "..."
