"""An expert for TextAdventure (and TextNav) that reads only the observation and the
admissible commands, exploring TextWorld-style.

It parses the room, its exits (with their doors' states), what it sees, what it carries and
the quest's unmet subgoals, and keeps a map of the rooms it has walked between. Each step it
does the first of:

1. an admissible command that meets a subgoal (take, put, unlock, combine);
2. any admissible unlock, then any admissible open (locks and lids only ever help);
3. take a key, or an item a subgoal needs;
4. walk (breadth first over the known map) towards the room a subgoal needs: the room to
   visit, where a needed item was seen, where a receptacle to fill stands;
5. explore: the nearest room with an exit not yet taken, else the nearest room with a lock
   seen before the last key was picked up.

Keys are never used up, so opening everything it can and exploring everything it reaches
meets every subgoal of a solvable world. It is deterministic.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any

OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}
OPPOSITE |= {"up": "down", "down": "up"}
_ROOM = re.compile(r"^-= (.+) =-$", re.MULTILINE)
_SEE = re.compile(r"^You see: (.*)\.$", re.MULTILINE)
_EXITS = re.compile(r"^Exits: (.*)\.$", re.MULTILINE)
_EXIT = re.compile(r"(north|south|east|west|up|down)(?: \(([^,()]+), (\w+)\))?")
_ENTRY = re.compile(r"^(?:a|an) (.+?)(?: \((.*)\))?$")
_CARRY = re.compile(r"^You carry: (.*)\.$", re.MULTILINE)
_PENDING = re.compile(r"^\[ \] (.*)$", re.MULTILINE)
_NEW_EPISODE = re.compile(r"^Moves: 0\.$", re.MULTILINE)
_GOALS = {
    "take": re.compile(r"Find the (.+) and take it\."),
    "put": re.compile(r"Put the (.+?) (in|on) the (.+)\."),
    "unlock": re.compile(r"Unlock the (.+)\."),
    "combine": re.compile(r"Combine the (.+) with the (.+)\."),
    "visit": re.compile(r"Go to the (.+)\."),
}


def _names(text: str, separator: str) -> list[str]:
    """Things listed as "a x; an y (closed)" without articles and notes."""
    if text == "nothing":
        return []
    items = re.split(r", | and " if separator == "," else "; ", text)
    return [re.sub(r"^(a|an) | \(.*\)$", "", item) for item in items]


class TextAdventureExpert:
    """Explores, opens, unlocks and fetches until the quest is complete (see the module)."""

    def __init__(self, observation_space: Any = None, action_space: Any = None, seed: Any = None):
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Forget the world (also done on seeing a new episode's first observation)."""
        self.exits: dict[str, dict[str, str | None]] = {}
        self.doors: dict[tuple[str, str], str] = {}
        self.door_state: dict[str, str] = {}
        self.takeable: dict[str, str] = {}
        self.receptacles: dict[str, tuple[str, str]] = {}
        self.locks: dict[str, set[str]] = {}
        self.keys_seen: dict[str, int] = {}
        self.last: tuple[str, str] | None = None

    def act(self, observation: str, info: dict[str, Any] | None = None) -> str:
        if _NEW_EPISODE.search(observation):
            self.reset()
        admissible = list((info or {}).get("admissible_commands") or [])
        room_match = _ROOM.search(observation)
        if room_match is None:
            return "look"
        room = room_match.group(1)
        held = set(_names(_field(_CARRY, observation), ","))
        self._update(room, observation, admissible, held)
        goals = [self._goal(text) for text in _PENDING.findall(observation)]
        command = self._choose(room, admissible, held, [g for g in goals if g])
        self.last = (room, command[3:]) if command.startswith("go ") else None
        return command

    def _update(self, room: str, observation: str, admissible: list[str], held: set[str]) -> None:
        if self.last and self.last[0] != room:
            before, direction = self.last
            self.exits[before][direction] = room
            self.exits.setdefault(room, {})[OPPOSITE[direction]] = before
        exits = self.exits.setdefault(room, {})
        locks = self.locks[room] = set()
        for direction, door, state in _EXIT.findall(_field(_EXITS, observation)):
            exits.setdefault(direction, None)
            if door:
                self.doors[(room, direction)], self.door_state[door] = door, state
                if state == "locked":
                    locks.add(door)
        for entry in _field(_SEE, observation).split("; "):
            found = _ENTRY.match(entry)
            notes = (found.group(2) or "").split(", ") if found else ["in the"]
            if found and not any(n.startswith(("in the ", "on the ")) for n in notes):
                state = notes[0] if notes[0] in ("open", "closed", "locked") else "open"
                self.receptacles[found.group(1)] = (room, state)
                if state == "locked":
                    locks.add(found.group(1))
        for thing in [t for t, r in self.takeable.items() if r == room or t in held]:
            del self.takeable[thing]
        for command in admissible:
            if command.startswith("take "):
                self.takeable[command[5:]] = room
        self.keys_seen[room] = sum(name.endswith(" key") for name in held)

    @staticmethod
    def _goal(text: str) -> tuple[str, tuple[str, ...]] | None:
        for kind, pattern in _GOALS.items():
            found = pattern.fullmatch(text)
            if found:
                return kind, found.groups()
        return None

    def _choose(
        self, room: str, admissible: list[str], held: set[str], goals: list[tuple[str, tuple]]
    ) -> str:
        options = set(admissible)
        needed: set[str] = set()
        targets: list[str] = []
        for kind, args in goals:
            wanted = _goal_commands(kind, args, admissible)
            hit = next((c for c in wanted if c in options), None)
            if hit:
                return hit
            if kind == "visit":
                targets += [r for r in self.exits if r.lower() == args[0]]
            items = (
                [args[0]] if kind in ("take", "put") else list(args) if kind == "combine" else []
            )
            needed.update(items)
            targets += [self.takeable[i] for i in items if i not in held and i in self.takeable]
            if kind == "put" and args[0] in held and args[2] in self.receptacles:
                where, state = self.receptacles[args[2]]
                targets += [where] if state != "locked" else []
        for prefix in ("unlock ", "open "):
            hit = next((c for c in admissible if c.startswith(prefix)), None)
            if hit:
                return hit
        for command in admissible:
            if command.startswith("take ") and (command.endswith(" key") or command[5:] in needed):
                return command
        step = self._walk(room, [t for t in targets if t != room])
        if step:
            return step
        for direction, other in self.exits[room].items():
            if other is None and f"go {direction}" in options:
                return f"go {direction}"
        unexplored = [
            r
            for r, exits in self.exits.items()
            if any(o is None and self._passable(r, d) for d, o in exits.items())
        ]
        keys = sum(name.endswith(" key") for name in held)
        relock = [r for r, locks in self.locks.items() if locks and keys > self.keys_seen[r]]
        for group in (unexplored, relock):
            step = self._walk(room, [r for r in group if r != room])
            if step:
                return step
        return "look"

    def _passable(self, room: str, direction: str) -> bool:
        door = self.doors.get((room, direction))
        return door is None or self.door_state.get(door) != "locked"

    def _walk(self, room: str, targets: list[str]) -> str | None:
        """The first move of a shortest known path to the nearest of ``targets``, or None."""
        if not targets:
            return None
        first: dict[str, str | None] = {room: None}
        queue = deque([room])
        while queue:
            here = queue.popleft()
            if here in targets:
                return f"go {first[here]}"
            for direction, other in self.exits.get(here, {}).items():
                door = self.doors.get((here, direction))
                blocked = door is not None and self.door_state.get(door) != "open"
                if other is not None and other not in first and not blocked:
                    first[other] = first[here] or direction
                    queue.append(other)
        return None


def _goal_commands(kind: str, args: tuple[str, ...], admissible: list[str]) -> list[str]:
    """The commands that would meet a subgoal now."""
    if kind == "take":
        return [f"take {args[0]}"]
    if kind == "put":
        return [f"put {args[0]} {args[1]} {args[2]}"]
    if kind == "combine":
        return [f"combine {args[0]} with {args[1]}", f"combine {args[1]} with {args[0]}"]
    if kind == "unlock":
        return [c for c in admissible if c.startswith(f"unlock {args[0]} with ")]
    return []


def _field(pattern: re.Pattern[str], observation: str) -> str:
    found = pattern.search(observation)
    return found.group(1) if found else "nothing"


class TextNavExpert(TextAdventureExpert):
    """TextNav's expert: TextNav is a TextAdventure house without locks whose quest is one
    "Find the <object> and take it.", so it explores the house breadth first, opening
    containers, until it can take the target."""
