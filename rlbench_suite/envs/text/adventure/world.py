"""The world model of TextAdventure and TextNav: rooms, things, quests, and a solvability check.

A :class:`World` is a set of :class:`Room` objects joined by exits (``north``, ``south``,
``east``, ``west``; ``up``/``down`` are understood but unused by the generators), some of them
through a door, and :class:`Entity` things: portable items and keys, containers (openable,
maybe locked), supporters (things go on them) and doors (openable, maybe locked). A thing's
``location`` is a room's name, a container's or supporter's name, :data:`INVENTORY` or
:data:`GONE` (consumed by a combination, or not made yet). Locks open with one specific key.
Combining two held items of a recipe makes a third.

The quest is a list of :class:`Goal` subgoals, each worth one point the first time it is met:
take an item, put an item in or on a receptacle, unlock a door or container, combine two items,
or go to a room. :func:`solvable` checks, by a fixpoint over what can be reached and obtained,
that every subgoal can still be met.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

INVENTORY, GONE = "@inventory", "@gone"
ITEM, KEY, CONTAINER, SUPPORTER, DOOR = "item", "key", "container", "supporter", "door"
DIRECTIONS = ("north", "south", "east", "west", "up", "down")
OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}
OPPOSITE |= {"up": "down", "down": "up"}
TAKE, PUT, UNLOCK, COMBINE, VISIT = "take", "put", "unlock", "combine", "visit"


@dataclass
class Entity:
    """A thing in the world, named uniquely by its adjectives and noun ("brass key")."""

    name: str
    kind: str
    location: str = GONE
    closed: bool = False
    locked: bool = False
    key: str | None = None
    """The name of the key that unlocks it (None: it has no lock)."""

    @property
    def words(self) -> frozenset[str]:
        return frozenset(self.name.split())

    @property
    def portable(self) -> bool:
        return self.kind in (ITEM, KEY)

    @property
    def openable(self) -> bool:
        return self.kind in (CONTAINER, DOOR)

    @property
    def receptacle(self) -> bool:
        return self.kind in (CONTAINER, SUPPORTER)

    @property
    def preposition(self) -> str:
        return "on" if self.kind == SUPPORTER else "in"


@dataclass
class Room:
    """A room: its exits (direction -> room name) and the doors on some of them."""

    name: str
    exits: dict[str, str] = field(default_factory=dict)
    doors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Goal:
    """One subgoal of the quest; ``text`` is how the quest states it."""

    kind: str
    target: str
    other: str = ""
    text: str = ""


def goal_text(kind: str, target: str, other: str = "", preposition: str = "in") -> str:
    """How the quest states a subgoal (the expert parses these sentences back)."""
    if kind == TAKE:
        return f"Find the {target} and take it."
    if kind == PUT:
        return f"Put the {target} {preposition} the {other}."
    if kind == UNLOCK:
        return f"Unlock the {target}."
    if kind == COMBINE:
        return f"Combine the {target} with the {other}."
    return f"Go to the {target.lower()}."


@dataclass
class World:
    """Everything the game knows: the map, the things, the quest and the player's progress."""

    rooms: dict[str, Room]
    entities: dict[str, Entity]
    goals: list[Goal]
    recipes: dict[frozenset[str], str]
    start: str
    player: str = ""
    done: list[bool] = field(default_factory=list)
    pending: tuple[str, tuple[str, ...], int, tuple[str, ...]] | None = None
    """An open "Which do you mean?" question: the asking command's verb and noun phrases, the
    phrase asked about, and the names offered (the next command may answer it)."""

    def __post_init__(self) -> None:
        self.player = self.player or self.start
        self.done = self.done or [False] * len(self.goals)

    def contents(self, location: str) -> list[Entity]:
        """The things directly in or on ``location``, in creation order."""
        return [e for e in self.entities.values() if e.location == location]

    def inventory(self) -> list[Entity]:
        return self.contents(INVENTORY)

    def room_doors(self, room: str | None = None) -> list[Entity]:
        """The doors of ``room`` (default: the player's), in direction order."""
        doors = self.rooms[room or self.player].doors
        return [self.entities[doors[d]] for d in DIRECTIONS if d in doors]

    def visible_tree(self, location: str, depth: int = 0) -> Iterator[tuple[Entity, int]]:
        """The things seen at ``location``, depth first: on supporters and in open containers."""
        for entity in self.contents(location):
            yield entity, depth
            if entity.kind == SUPPORTER or (entity.kind == CONTAINER and not entity.closed):
                yield from self.visible_tree(entity.name, depth + 1)

    def scope(self) -> list[Entity]:
        """What the player can refer to: the room's visible things, the inventory, the doors."""
        room = [e for e, _ in self.visible_tree(self.player)]
        return room + self.inventory() + self.room_doors()

    def room_of(self, entity: Entity) -> str | None:
        """The room a thing is in (through its containers), or None (held, gone, a door)."""
        location, seen = entity.location, set()
        while location in self.entities and location not in seen:
            seen.add(location)
            location = self.entities[location].location
        return location if location in self.rooms else None

    def product(self, first: str, second: str) -> str | None:
        """What combining ``first`` with ``second`` makes, or None."""
        return self.recipes.get(frozenset((first, second)))

    def met(self, goal: Goal) -> bool:
        """Whether ``goal`` holds in the current state."""
        target = self.entities.get(goal.target)
        if goal.kind == TAKE:
            return target is not None and target.location == INVENTORY
        if goal.kind == PUT:
            return target is not None and target.location == goal.other
        if goal.kind == UNLOCK:
            return target is not None and not target.locked
        if goal.kind == COMBINE:
            made = self.product(goal.target, goal.other)
            return made is not None and self.entities[made].location != GONE
        return self.player == goal.target

    def update_goals(self) -> int:
        """Mark the goals met now; the number met for the first time (points gained)."""
        gained = 0
        for i, goal in enumerate(self.goals):
            if not self.done[i] and self.met(goal):
                self.done[i], gained = True, gained + 1
        return gained

    @property
    def score(self) -> int:
        return sum(self.done)

    @property
    def won(self) -> bool:
        return all(self.done)


def solvable(world: World) -> bool:
    """Whether every unmet goal can still be met from the current state.

    A fixpoint: rooms are reached through unlocked doors or doors whose key is obtainable;
    things are obtainable when their location is reached (through containers that are
    unlocked or have an obtainable key); a recipe's product when both parts are. Nothing in
    the game is lost except the parts of a combination, which no other goal uses.
    """
    rooms, obtainable = {world.player}, {e.name for e in world.inventory()}

    def opens(entity: Entity) -> bool:
        return not entity.locked or entity.key in obtainable

    def reached(location: str, hops: int = 0) -> bool:
        if location in world.rooms:
            return location in rooms
        entity = world.entities.get(location)
        if entity is None or not entity.receptacle or hops > len(world.entities):
            return False
        return opens(entity) and reached(entity.location, hops + 1)

    changed = True
    while changed:
        changed = False
        for entity in world.entities.values():
            if entity.portable and entity.name not in obtainable and reached(entity.location):
                obtainable.add(entity.name)
                changed = True
        for parts, made in world.recipes.items():
            if made not in obtainable and parts <= obtainable:
                obtainable.add(made)
                changed = True
        for room in list(rooms):
            for direction, other in world.rooms[room].exits.items():
                door = world.rooms[room].doors.get(direction)
                if other not in rooms and (door is None or opens(world.entities[door])):
                    rooms.add(other)
                    changed = True

    def can_meet(goal: Goal) -> bool:
        if goal.kind in (TAKE, COMBINE):
            made = world.product(goal.target, goal.other) if goal.kind == COMBINE else None
            return (made or goal.target) in obtainable
        if goal.kind == PUT:
            receptacle = world.entities[goal.other]
            return goal.target in obtainable and reached(receptacle.location) and opens(receptacle)
        if goal.kind == UNLOCK:
            target = world.entities[goal.target]
            where = [r for r in rooms if target.name in world.rooms[r].doors.values()]
            seen = bool(where) if target.kind == DOOR else reached(target.location)
            return seen and opens(target)
        return goal.target in rooms

    return all(done or can_meet(goal) for done, goal in zip(world.done, world.goals, strict=True))
