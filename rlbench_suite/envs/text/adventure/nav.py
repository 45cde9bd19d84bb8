"""TextNav: LMRL-Gym's text navigation: find an object in a described house and take it.

It runs on TextAdventure's engine (:mod:`~.env`): reset's seed draws a house
(:data:`~.generator.HOUSE`) of 5 to 8 rooms (kitchen, bedroom, bathroom, hallway,
living room, ...) laid out on a grid, with 2 or 3 supporters (a table, a shelf, ...), 2 to 4
containers (none locked; each closed with probability 0.7, else open), 3 to 5 other objects
and no keys. The target object is anywhere: on a floor, on a supporter, or inside a container
(closed, or sometimes open). The quest has one
subgoal, "Find the <object> and take it.": the episode is won (reward 1, terminated) when the
target is in the inventory.

Observations, commands, the parser, rewards and ``info`` (``success``, ``score``,
``max_score``, ``moves``, ``admissible_commands``) are TextAdventure's; the room description
shows only the room the player stands in, so the house must be explored.
"""

from __future__ import annotations

from rlbench_suite.envs.text.adventure.env import AdventureEnv
from rlbench_suite.envs.text.adventure.generator import HOUSE, Difficulty


class TextNavEnv(AdventureEnv):
    """Find the target object in a seeded house and take it (see the module docstring)."""

    intro = "Welcome to TextNav! Find the object named in the quest and take it."

    def __init__(self) -> None:
        super().__init__("easy")

    def spec_of_world(self) -> Difficulty:
        return HOUSE
