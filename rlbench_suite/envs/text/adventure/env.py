"""TextAdventure: seeded procedural interactive fiction (TextWorld-like) at three difficulties.

Reset's seed fixes the world (:mod:`~.generator`): rooms on a grid joined by
exits (north, south, east, west), some through doors that are closed or locked; keys (a lock
opens with one specific key, and keys may lie in containers that are themselves locked:
nested keys); containers (closed, open or locked), supporters, portable items; and a quest of
subgoals: find and take an item, put an item in or on a receptacle, unlock a door or
container, combine two items into a third ("Combine the battery with the flashlight" makes a
working flashlight), go to a room. Every world is solvable, and stays solvable whatever the
player does (nothing is lost but the parts of a combination, which no other goal uses).

Difficulties (``difficulty=`` "easy", "medium", "hard"; :data:`~.generator.DIFFICULTIES`):

- easy: 2-3 rooms, no locks, 1-2 subgoals (take, put, go to);
- medium: 4-6 rooms, one locked door (its key maybe in a locked container), 3-4 subgoals
  including an unlock;
- hard: 8-10 rooms, 2-3 locked doors, 1-2 locked containers holding keys (nested keys),
  5-7 subgoals including two unlocks and a combination.

Observations (a ``Text`` space over :data:`~.text_io.CHARSET`, at most
:data:`MAX_OBSERVATION_LENGTH` characters) are the reply to the last command, a blank line,
then ``-= Room =-``, ``You see: a wooden table; a red apple (on the wooden table); a metal
box (closed).`` (things in open containers and on supporters follow their holder),
``Exits: north (oak door, locked), east.``, ``You carry: a brass key.``, ``Quest:`` with one
line per subgoal (``[x] Unlock the oak door.``, ``[ ] Find the red apple and take it.``),
``Score: 1/3.`` and ``Moves: 5.``.

Commands (at most :data:`~.text_io.MAX_COMMAND_LENGTH` characters, case-insensitive) are
parsed by :mod:`~.parser` (synonyms, articles, "pick X up", "use X on Y", "take X
from Y", "go to <room>" for a room next to the player's, and in-game questions for ambiguous
names, which the next command may answer: "brass"); anything not understood, or impossible, gets an
in-game reply, zero reward and uses a step. A longer command raises ValueError naming the limit.

Rewards: each subgoal is worth one point the first time it is met (in any order); the reward
is the points gained over ``max_score``, so an episode's return is its normalized score. The
episode terminates when every subgoal is met (a win); the card's time limit truncates it.
``info``: ``success`` (won), ``score``, ``max_score``, ``moves`` and ``admissible_commands``
(:func:`~.game.admissible_commands`: moves through open exits, unlocks with a held
key that fits, opens, takes, combines, puts, drops, closes, look and inventory).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from rlbench_suite.envs.text.adventure.game import admissible_commands, describe, execute
from rlbench_suite.envs.text.adventure.generator import DIFFICULTIES, Difficulty, generate_world
from rlbench_suite.envs.text.adventure.world import World
from rlbench_suite.envs.text.text_io import (
    MAX_COMMAND_LENGTH,
    clip_observation,
    read_command,
    text_space,
)

MAX_OBSERVATION_LENGTH = 2048
"""Enough for the longest reply and the fullest room, inventory and quest of a hard world."""
INTRO = "Welcome to TextAdventure! Complete the quest below; type 'help' for the commands."
GAME_OVER = "The game is over: the quest is complete."


class AdventureEnv(gym.Env[str, str]):
    """A quest in a seeded procedural world, played by typing commands (see the module
    docstring); :class:`~.nav.TextNavEnv` plays houses on the same engine."""

    metadata: dict[str, Any] = {"render_modes": []}
    intro = INTRO

    def __init__(self, difficulty: str = "medium") -> None:
        if difficulty not in DIFFICULTIES:
            raise ValueError(
                f"difficulty must be one of {', '.join(map(repr, DIFFICULTIES))}; "
                f"got {difficulty!r}"
            )
        self.difficulty = difficulty
        self.observation_space = text_space(MAX_OBSERVATION_LENGTH)
        self.action_space = text_space(MAX_COMMAND_LENGTH)
        self.world: World | None = None
        self.moves = 0

    def spec_of_world(self) -> Difficulty:
        """What the generator draws (subclasses choose other worlds)."""
        return DIFFICULTIES[self.difficulty]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.world = generate_world(self.np_random, self.spec_of_world())
        self.moves = 0
        return self._observe(self.intro), self._info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        command = read_command(action)
        world = self.world
        if world is None:
            raise RuntimeError("call reset before step")
        if world.won:
            return self._observe(GAME_OVER), 0.0, True, False, self._info()
        self.moves += 1
        reply = execute(world, command)
        gained = world.update_goals()
        if gained:
            reply += f" Your score went up by {gained}."
        if world.won:
            reply += " You have completed the quest!"
        reward = gained / len(world.goals)
        return self._observe(reply), reward, world.won, False, self._info()

    def _observe(self, reply: str) -> str:
        assert self.world is not None
        body = describe(self.world)
        return clip_observation(f"{reply}\n\n{body}\nMoves: {self.moves}.", MAX_OBSERVATION_LENGTH)

    def _info(self) -> dict[str, Any]:
        assert self.world is not None
        return {
            "success": self.world.won,
            "score": self.world.score,
            "max_score": len(self.world.goals),
            "moves": self.moves,
            "admissible_commands": admissible_commands(self.world),
        }


class TextAdventureEnv(AdventureEnv):
    """``rlbench/TextAdventure-v0`` (and its Easy and Hard cards)."""
