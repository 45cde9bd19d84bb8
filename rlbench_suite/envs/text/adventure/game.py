"""The rules of TextAdventure and TextNav: what commands do, what the player sees, and which
commands are admissible.

:func:`execute` applies a normalized command to a :class:`~.world.World` and returns
the reply; it never raises. :func:`describe` writes the observation's body (room, exits,
inventory, quest, score) and :func:`admissible_commands` lists the commands that make sense
now, most useful kinds first.
"""

from __future__ import annotations

from collections.abc import Callable

from rlbench_suite.envs.text.adventure.parser import (
    HELP,
    Parsed,
    answer,
    parse,
    question,
    resolve,
)
from rlbench_suite.envs.text.adventure.world import (
    CONTAINER,
    DIRECTIONS,
    DOOR,
    GONE,
    INVENTORY,
    KEY,
    SUPPORTER,
    Entity,
    World,
)


def a(name: str) -> str:
    """``name`` with its indefinite article."""
    return ("an " if name[0] in "aeiou" else "a ") + name


def listing(names: list[str]) -> str:
    """ "a, b and c" (or "nothing")."""
    if not names:
        return "nothing"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def state(entity: Entity) -> str:
    """A door's or container's state: "locked", "closed" or "open"."""
    return "locked" if entity.locked else "closed" if entity.closed else "open"


def exits(world: World) -> str:
    """The player's room's exits: "north (oak door, locked), east" (or "none")."""
    room, listed = world.rooms[world.player], []
    for direction in DIRECTIONS:
        if direction in room.exits:
            door = room.doors.get(direction)
            door_note = f" ({door}, {state(world.entities[door])})" if door else ""
            listed.append(direction + door_note)
    return ", ".join(listed) or "none"


def describe(world: World) -> str:
    """The room (name, things, exits), the inventory, the quest with checkboxes and the score."""
    seen = []
    for entity, _ in world.visible_tree(world.player):
        notes = [state(entity)] if entity.kind == CONTAINER else []
        if entity.location in world.entities:
            holder = world.entities[entity.location]
            notes.append(f"{holder.preposition} the {holder.name}")
        seen.append(a(entity.name) + (f" ({', '.join(notes)})" if notes else ""))
    room = world.rooms[world.player]
    quest = [
        f"[{'x' if done else ' '}] {g.text}"
        for g, done in zip(world.goals, world.done, strict=True)
    ]
    return "\n".join(
        [
            f"-= {room.name} =-",
            f"You see: {'; '.join(seen) if seen else 'nothing'}.",
            f"Exits: {exits(world)}.",
            f"You carry: {listing([a(e.name) for e in world.inventory()])}.",
            "Quest:",
            *quest,
            f"Score: {world.score}/{len(world.goals)}.",
        ]
    )


def admissible_commands(world: World) -> list[str]:
    """Commands that make sense now, grouped by kind (moves, unlocks, opens, takes, combines,
    puts, drops, closes, then look and inventory): moves in direction order (north, south,
    east, west, up, down), every other group sorted; keys are never offered for putting or
    dropping, which keeps the list short."""
    scope = world.scope()
    held = world.inventory()
    keys = {e.name for e in held if e.kind == KEY}
    room = world.rooms[world.player]
    moves = [
        f"go {d}"
        for d in DIRECTIONS
        if d in room.exits and (d not in room.doors or not world.entities[room.doors[d]].closed)
    ]
    unlocks = [f"unlock {e.name} with {e.key}" for e in scope if e.locked and e.key in keys]
    opens = [f"open {e.name}" for e in scope if e.openable and e.closed and not e.locked]
    takes = [f"take {e.name}" for e in scope if e.portable and e.location != INVENTORY]
    combines = [
        f"combine {x.name} with {y.name}"
        for i, x in enumerate(held)
        for y in held[i + 1 :]
        if world.product(x.name, y.name)
    ]
    items = [e for e in held if e.kind != KEY]
    receptacles = [
        e for e in scope if e.kind == SUPPORTER or (e.kind == CONTAINER and not e.closed)
    ]
    puts = [f"put {x.name} {y.preposition} {y.name}" for x in items for y in receptacles]
    drops = [f"drop {e.name}" for e in items]
    closes = [f"close {e.name}" for e in scope if e.openable and not e.closed]
    groups = [moves, unlocks, opens, takes, combines, puts, drops, closes]
    ordered = [c for group in groups for c in (group if group is moves else sorted(group))]
    return list(dict.fromkeys([*ordered, "look", "inventory"]))


def execute(world: World, command: str) -> str:
    """Apply ``command`` (normalized) to ``world``; the reply. Never raises.

    A command that answers the last one's "Which do you mean?" (``world.pending``) completes
    it; any other command drops the question."""
    pending, world.pending = world.pending, None
    parsed = parse(command)
    if pending is not None:
        verb, phrases, index, names = pending
        chosen = answer(command, names)
        if len(chosen) > 1:
            world.pending = (verb, phrases, index, tuple(chosen))
            return question([name.lower() for name in chosen])
        if chosen:
            parsed = Parsed(verb, (*phrases[:index], chosen[0], *phrases[index + 1 :]))
    if isinstance(parsed, str):
        return parsed
    if parsed.verb == "go":
        return _go(world, parsed.objects[0])
    if parsed.verb == "goto":
        return _go_to(world, parsed.objects[0])
    if parsed.verb in _SIMPLE:
        return _SIMPLE[parsed.verb](world)
    things = _things(world, parsed)
    if isinstance(things, str):
        return things
    if parsed.verb == "use":
        lock, key = sorted(things, key=lambda e: e.kind == KEY)
        if key.kind == KEY and lock.key is not None:
            return _unlock(world, lock, key)
        return _combine(world, *things)
    if parsed.verb == "take" and len(things) == 2:
        thing, holder = things
        if thing.location != holder.name:
            return f"The {thing.name} is not {holder.preposition} the {holder.name}."
        return _take(world, thing)
    return _ACTIONS[parsed.verb](world, *things)


def _fits(verb: str, index: int, holder: Entity | None) -> Callable[[Entity], bool] | None:
    """Which things make sense as a command's ``index``-th noun phrase (None: any)."""
    if verb == "take" and index == 0:
        return lambda e: (
            e.portable
            and e.location not in (INVENTORY, GONE)
            and (holder is None or e.location == holder.name)
        )
    if verb == "take" or (verb == "put" and index == 1):
        return lambda e: e.receptacle
    if verb in ("drop", "put", "combine"):
        return lambda e: e.location == INVENTORY
    if verb == "open":
        return lambda e: e.openable and e.closed and not e.locked
    if verb == "close":
        return lambda e: e.openable and not e.closed
    if verb == "unlock":
        return (
            (lambda e: e.locked)
            if index == 0
            else (lambda e: e.kind == KEY and e.location == INVENTORY)
        )
    if verb == "use":
        return lambda e: e.location == INVENTORY or e.locked
    return None


def _things(world: World, parsed: Parsed) -> list[Entity] | str:
    """The things a command's noun phrases name, or a reply (none seen, or a question: then
    ``world.pending`` holds it). "take X from Y" resolves Y first, and prefers an X in Y."""
    phrases, found = parsed.objects, {}
    two_takes = parsed.verb == "take" and len(phrases) == 2
    for index in (1, 0) if two_takes else range(len(phrases)):
        holder = found.get(1) if two_takes else None
        got = resolve(phrases[index], world.scope(), _fits(parsed.verb, index, holder))
        if isinstance(got, str):
            return got
        if isinstance(got, list):
            if holder is not None and all(e.location != holder.name for e in got):
                return f"There is no {phrases[index]} {holder.preposition} the {holder.name}."
            world.pending = (parsed.verb, phrases, index, tuple(e.name for e in got))
            return question([e.name for e in got])
        found[index] = got
    return [found[index] for index in range(len(phrases))]


def _go(world: World, direction: str) -> str:
    room = world.rooms[world.player]
    if direction not in room.exits:
        return "You can't go that way."
    door = room.doors.get(direction)
    if door and world.entities[door].closed:
        return f"The {door} is {state(world.entities[door])}."
    world.player = room.exits[direction]
    return f"You go {direction}."


def _go_to(world: World, phrase: str) -> str:
    """One step towards a room named by name: into it when it is next to the player's room."""
    room, words = world.rooms[world.player], frozenset(phrase.lower().split())
    matches = [name for name in world.rooms if words <= frozenset(name.lower().split())]
    exact = [name for name in matches if name.lower() == phrase.lower()]
    if len(matches) > 1 and not exact:  # "go to room": the rooms next to this one
        matches = [name for name in matches if name in room.exits.values()]
        if len(matches) > 1:
            world.pending = ("goto", (phrase,), 0, tuple(matches))
            return question([name.lower() for name in matches])
        if not matches:
            return f"No {phrase} is next to this room; exits: {exits(world)}."
    if not matches:
        return f"You know of no place called {phrase!r} here; exits: {exits(world)}."
    target = (exact or matches)[0]
    if target == world.player:
        return f"You are already in the {target.lower()}."
    directions = [d for d in DIRECTIONS if room.exits.get(d) == target]
    if not directions:
        return f"The {target.lower()} is not next to this room; exits: {exits(world)}."
    return _go(world, directions[0])


def _inventory(world: World) -> str:
    return f"You are carrying {listing([a(e.name) for e in world.inventory()])}."


_SIMPLE: dict[str, Callable[[World], str]] = {
    "look": lambda world: "You look around.",
    "inventory": _inventory,
    "help": lambda world: "Commands: " + HELP,
    "wait": lambda world: "Time passes.",
}


def _examine(world: World, thing: Entity) -> str:
    if thing.kind == DOOR:
        return f"The {thing.name} is {state(thing)}."
    if thing.kind == CONTAINER and thing.closed:
        return f"The {thing.name} is {state(thing)}."
    if thing.receptacle:
        inside = listing([a(e.name) for e in world.contents(thing.name)])
        return f"{thing.preposition.capitalize()} the {thing.name} you see {inside}."
    if thing.kind == KEY:
        return f"The {thing.name} must open something."
    return f"It is {a(thing.name)}, nothing special."


def _take(world: World, thing: Entity) -> str:
    if not thing.portable:
        return f"You can't take the {thing.name}."
    if thing.location == INVENTORY:
        return f"You already have the {thing.name}."
    thing.location = INVENTORY
    return f"You take the {thing.name}."


def _drop(world: World, thing: Entity) -> str:
    if thing.location != INVENTORY:
        return f"You aren't carrying the {thing.name}."
    thing.location = world.player
    return f"You drop the {thing.name}."


def _put(world: World, thing: Entity, receptacle: Entity) -> str:
    if thing.location != INVENTORY:
        return f"You aren't carrying the {thing.name}."
    if not receptacle.receptacle or receptacle is thing:
        return f"You can't put things in or on the {receptacle.name}."
    if receptacle.closed:
        return f"The {receptacle.name} is {state(receptacle)}."
    thing.location = receptacle.name
    return f"You put the {thing.name} {receptacle.preposition} the {receptacle.name}."


def _open(world: World, thing: Entity) -> str:
    if not thing.openable:
        return f"You can't open the {thing.name}."
    if not thing.closed:
        return f"The {thing.name} is already open."
    if thing.locked:
        return f"The {thing.name} is locked."
    thing.closed = False
    if thing.kind == CONTAINER:
        inside = listing([a(e.name) for e in world.contents(thing.name)])
        return f"You open the {thing.name}. Inside you see {inside}."
    return f"You open the {thing.name}."


def _close(world: World, thing: Entity) -> str:
    if not thing.openable:
        return f"You can't close the {thing.name}."
    if thing.closed:
        return f"The {thing.name} is already closed."
    thing.closed = True
    return f"You close the {thing.name}."


def _unlock(world: World, thing: Entity, key: Entity | None = None) -> str:
    if thing.key is None:
        return f"The {thing.name} has no lock."
    if not thing.locked:
        return f"The {thing.name} is already unlocked."
    if key is None:
        return f"What do you want to unlock the {thing.name} with?"
    if key.location != INVENTORY:
        return f"You aren't holding the {key.name}."
    if key.name != thing.key:
        return f"The {key.name} doesn't fit the {thing.name}."
    thing.locked = False
    return f"You unlock the {thing.name} with the {key.name}."


def _combine(world: World, first: Entity, second: Entity) -> str:
    if first.location != INVENTORY or second.location != INVENTORY:
        return f"You need to hold both the {first.name} and the {second.name}."
    made = world.product(first.name, second.name)
    if made is None or first is second:
        return f"Nothing happens when you combine the {first.name} with the {second.name}."
    first.location = second.location = GONE
    world.entities[made].location = INVENTORY
    return f"You combine the {first.name} with the {second.name}: you now have {a(made)}."


_ACTIONS: dict[str, Callable[..., str]] = {
    "examine": _examine,
    "take": _take,
    "drop": _drop,
    "put": _put,
    "open": _open,
    "close": _close,
    "unlock": _unlock,
    "combine": _combine,
}
