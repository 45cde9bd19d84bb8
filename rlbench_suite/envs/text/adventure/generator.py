"""Seeded generation of solvable TextAdventure and TextNav worlds.

Rooms are laid out on a grid as a random tree grown from the start room: each new room
attaches to a free side of an existing one, through an open passage, a closed door, or a
locked door. Worlds are solvable by construction: every lock (a locked door, or a locked
container) gets an *order*, higher than that of every place that exists before it, and its
key is hidden in a place of lower order (a room, a supporter, a container, or a new locked
container of order between the two, whose key is hidden the same way: nested keys). Rooms
behind a locked door, and the inside of a locked container, take the lock's order. Opening the
locks in order therefore always works, and :func:`~.world.solvable` re-checks every
world (a failing draw is regenerated from the same generator, so it stays seeded).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rlbench_suite.envs.text.adventure.world import (
    COMBINE,
    CONTAINER,
    DOOR,
    GONE,
    ITEM,
    KEY,
    OPPOSITE,
    PUT,
    SUPPORTER,
    TAKE,
    UNLOCK,
    VISIT,
    Entity,
    Goal,
    Room,
    World,
    goal_text,
    solvable,
)

ROOM_NAMES = (
    "Kitchen", "Hallway", "Cellar", "Library", "Attic", "Pantry", "Study", "Bedroom",
    "Garden", "Workshop", "Parlour", "Gallery", "Armoury", "Chapel", "Conservatory",
    "Scullery",
)  # fmt: skip
HOUSE_ROOMS = (
    "Kitchen", "Bedroom", "Bathroom", "Hallway", "Living Room", "Dining Room", "Office",
    "Laundry Room", "Guest Room", "Garage", "Playroom", "Closet",
)  # fmt: skip
KEY_WORDS = ("brass", "iron", "silver", "golden", "copper", "bronze", "rusty", "steel", "bone")
DOOR_WORDS = ("oak", "pine", "maple", "birch", "cedar", "walnut", "red", "blue", "green", "white")
CONTAINERS = (
    "wooden chest", "metal box", "old cupboard", "wicker basket", "large crate",
    "leather trunk", "glass cabinet", "small safe", "tin box", "tall wardrobe",
)  # fmt: skip
SUPPORTERS = ("wooden table", "stone bench", "dusty shelf", "long counter", "writing desk")
ITEMS = (
    "red apple", "old book", "gold coin", "wax candle", "blue cup", "straw hat", "paper map",
    "sealed letter", "silver ring", "wool scarf", "clay pot", "small bell", "toy soldier",
    "pocket watch", "rubber duck",
)  # fmt: skip
RECIPES = (
    ("battery", "flashlight", "working flashlight"),
    ("blade", "wooden handle", "kitchen knife"),
    ("cork", "glass bottle", "sealed bottle"),
    ("gem", "crown", "jeweled crown"),
    ("bowstring", "bow", "strung bow"),
)
DIRECTION_STEPS = {"north": (0, 1), "south": (0, -1), "east": (1, 0), "west": (-1, 0)}


@dataclass(frozen=True)
class Difficulty:
    """What a generated world holds; ranges are inclusive (low, high)."""

    rooms: tuple[int, int]
    locked_doors: tuple[int, int] = (0, 0)
    locked_containers: tuple[int, int] = (0, 0)
    """Extra locked containers, each hiding a door's key (nesting) or a quest item."""
    containers: tuple[int, int] = (1, 2)
    """Unlocked containers, each closed with probability 0.7 (else open)."""
    supporters: tuple[int, int] = (1, 1)
    distractors: tuple[int, int] = (1, 2)
    goals: tuple[int, int] = (1, 2)
    unlock_goals: int = 0
    combine: bool = False
    door_chance: float = 0.0
    """The chance that an unlocked passage has a (closed) door."""
    goal_kinds: tuple[str, ...] = (TAKE, PUT, VISIT)
    room_names: tuple[str, ...] = ROOM_NAMES


DIFFICULTIES: dict[str, Difficulty] = {
    "easy": Difficulty(rooms=(2, 3)),
    "medium": Difficulty(
        rooms=(4, 6),
        locked_doors=(1, 1),
        locked_containers=(0, 1),
        containers=(2, 3),
        supporters=(1, 2),
        distractors=(2, 3),
        goals=(3, 4),
        unlock_goals=1,
        door_chance=0.2,
    ),
    "hard": Difficulty(
        rooms=(8, 10),
        locked_doors=(2, 3),
        locked_containers=(1, 2),
        containers=(3, 4),
        supporters=(2, 3),
        distractors=(3, 4),
        goals=(5, 7),
        unlock_goals=2,
        combine=True,
        door_chance=0.25,
    ),
}
HOUSE = Difficulty(
    rooms=(5, 8),
    containers=(2, 4),
    supporters=(2, 3),
    distractors=(3, 5),
    goals=(1, 1),
    goal_kinds=(TAKE,),
    room_names=HOUSE_ROOMS,
)
"""TextNav's houses: no locks, one goal (find the target and take it)."""


class _Builder:
    """One draw of a world from ``rng`` (see the module docstring for the construction)."""

    def __init__(self, rng: np.random.Generator, spec: Difficulty) -> None:
        self.rng, self.spec = rng, spec
        self.rooms: dict[str, Room] = {}
        self.entities: dict[str, Entity] = {}
        self.order: dict[str, float] = {}
        """The order of every place (room or receptacle): what must be unlocked to reach it."""
        self.locks: list[tuple[Entity, float]] = []
        self.recipes: dict[frozenset[str], str] = {}
        self.pools = {
            "key": [f"{w} key" for w in KEY_WORDS],
            "door": [f"{w} door" for w in DOOR_WORDS],
            "container": list(CONTAINERS),
            "supporter": list(SUPPORTERS),
            "item": list(ITEMS),
        }

    def count(self, bounds: tuple[int, int]) -> int:
        return int(self.rng.integers(bounds[0], bounds[1] + 1))

    def pick(self, options: list[str]) -> str:
        return options[int(self.rng.integers(len(options)))]

    def add(self, pool: str, kind: str, location: str = GONE, **state: bool | str) -> Entity:
        names = self.pools.get(pool)
        name = names.pop(int(self.rng.integers(len(names)))) if names else pool
        entity = self.entities[name] = Entity(name, kind, location, **state)  # type: ignore[arg-type]
        return entity

    def next_order(self) -> float:
        return math.floor(max(self.order.values())) + 1.0

    def places(self, below: float = math.inf) -> list[str]:
        """Rooms and receptacles of order lower than ``below``."""
        return [name for name, order in self.order.items() if order < below]

    def layout(self) -> None:
        """Grow the rooms as a tree on the grid, with open, closed and locked passages."""
        spec, count = self.spec, self.count(self.spec.rooms)
        names = [spec.room_names[int(i)] for i in self.rng.permutation(len(spec.room_names))]
        locked_count = min(self.count(spec.locked_doors), count - 1)
        locked = {int(i) for i in self.rng.choice(np.arange(1, count), locked_count, False)}
        cells = {(0, 0): names[0]}
        self.rooms[names[0]], self.order[names[0]] = Room(names[0]), 0.0
        for index, name in enumerate(names[1:count], 1):
            free = [
                (cell, direction)
                for cell in cells
                for direction, (dx, dy) in DIRECTION_STEPS.items()
                if (cell[0] + dx, cell[1] + dy) not in cells
            ]
            cell, direction = free[int(self.rng.integers(len(free)))]
            dx, dy = DIRECTION_STEPS[direction]
            cells[(cell[0] + dx, cell[1] + dy)] = name
            parent, back = self.rooms[cells[cell]], OPPOSITE[direction]
            room = self.rooms[name] = Room(name)
            parent.exits[direction], room.exits[back] = name, parent.name
            self.order[name] = self.order[parent.name]
            if index in locked:
                key = self.add("key", KEY)
                door = self.add("door", DOOR, "", closed=True, locked=True, key=key.name)
                self.order[name] = self.next_order()
                self.locks.append((door, self.order[name]))
            elif self.rng.random() < spec.door_chance:
                door = self.add("door", DOOR, "", closed=True)
            else:
                continue
            parent.doors[direction] = room.doors[back] = door.name

    def furnish(self) -> None:
        """Supporters and closed (sometimes open) containers in random rooms."""
        rooms = list(self.rooms)
        for pool, kind, bounds in (
            ("supporter", SUPPORTER, self.spec.supporters),
            ("container", CONTAINER, self.spec.containers),
        ):
            for _ in range(self.count(bounds)):
                room = self.pick(rooms)
                closed = kind == CONTAINER and bool(self.rng.random() < 0.7)
                self.order[self.add(pool, kind, room, closed=closed).name] = self.order[room]

    def hide(self, entity: Entity, below: float = math.inf, nest: int = 0) -> None:
        """Put ``entity`` in a place of order lower than ``below``; with ``nest``, first
        lock it in a new container whose key is hidden (recursively) below that."""
        if nest <= 0:
            entity.location = self.pick(self.places(below))
            return
        if math.isfinite(below):
            order = (max(o for o in self.order.values() if o < below) + below) / 2
        else:
            order = self.next_order()
        room = self.pick([r for r in self.rooms if self.order[r] < order])
        key = self.add("key", KEY)
        box = self.add("container", CONTAINER, room, closed=True, locked=True, key=key.name)
        self.order[box.name] = order
        self.locks.append((box, order))
        entity.location = box.name
        self.hide(key, order, nest - 1)

    def hide_keys(self) -> list[Entity]:
        """Hide the locked doors' keys, spreading the extra locked containers over them; with
        no locked door, the extra containers lock up quest items instead (returned)."""
        doors = list(self.locks)
        nests = [0] * len(doors)
        extra = self.count(self.spec.locked_containers)
        for _ in range(extra if doors else 0):
            nests[int(self.rng.integers(len(doors)))] += 1
        for (door, order), nest in zip(doors, nests, strict=True):
            self.hide(self.entities[str(door.key)], order, nest)
        items = [] if doors else [self.add("item", ITEM) for _ in range(extra)]
        for item in items:
            self.hide(item, math.inf, 1)
        return items

    def quest(self, locked_items: list[Entity]) -> list[Goal]:
        """Subgoals: unlocks, a combination, then takes, puts and visits."""
        spec, goals = self.spec, []
        total = self.count(spec.goals)
        locks = [lock for lock, _ in self.locks]
        for i in self.rng.permutation(len(locks))[: spec.unlock_goals]:
            goals.append(
                Goal(UNLOCK, locks[int(i)].name, text=goal_text(UNLOCK, locks[int(i)].name))
            )
        if spec.combine:
            first, second, made = RECIPES[int(self.rng.integers(len(RECIPES)))]
            for part in (first, second):
                self.hide(self.add(part, ITEM))
            self.add(made, ITEM)
            self.recipes[frozenset((first, second))] = made
            goals.append(Goal(COMBINE, first, second, goal_text(COMBINE, first, second)))
            if len(goals) < total and self.rng.random() < 0.5:
                goals.append(self.put_goal(self.entities[made]))
        visits = [r for r in self.rooms if r != next(iter(self.rooms))]
        while len(goals) < total:
            kind = spec.goal_kinds[int(self.rng.integers(len(spec.goal_kinds)))]
            if kind == VISIT and visits:
                room, visits = self.pick(visits), []  # one visit at most
                goals.append(Goal(VISIT, room, text=goal_text(VISIT, room)))
                continue
            item = locked_items.pop() if locked_items else self.add("item", ITEM)
            if item.location == GONE:
                self.hide(item)
            if kind == PUT:
                goals.append(self.put_goal(item))
            else:
                goals.append(Goal(TAKE, item.name, text=goal_text(TAKE, item.name)))
        for _ in range(self.count(spec.distractors)):
            self.hide(self.add("item", ITEM))
        return goals

    def put_goal(self, item: Entity) -> Goal:
        receptacles = [e.name for e in self.entities.values() if e.receptacle]
        options = [r for r in receptacles if r != item.location] or receptacles
        target = self.entities[self.pick(options)]
        return Goal(
            PUT, item.name, target.name, goal_text(PUT, item.name, target.name, target.preposition)
        )

    def world(self) -> World:
        self.layout()
        self.furnish()
        goals = self.quest(self.hide_keys())
        start = next(iter(self.rooms))
        return World(self.rooms, self.entities, goals, self.recipes, start)


def generate_world(rng: np.random.Generator, spec: Difficulty) -> World:
    """A solvable world drawn from ``rng`` (redrawn from the same generator, so still seeded,
    until one passes :func:`~.world.solvable`; by construction the first one does)."""
    for _ in range(100):
        world = _Builder(rng, spec).world()
        if solvable(world):
            return world
    raise RuntimeError("could not generate a solvable world")  # pragma: no cover
