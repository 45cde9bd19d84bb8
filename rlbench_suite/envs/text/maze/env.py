"""TextMaze: LMRL-Gym's maze task as a text game, fully or partially observed.

The maze is a seeded perfect maze (randomized depth-first search, so exactly one path joins
any two squares) drawn on an odd ``size`` x ``size`` grid of squares with a wall border.
Reset's seed fixes the maze, the start and the goal.

Observations (a ``Text`` space over :data:`~rlbench_suite.envs.text.text_io.CHARSET`, at most
:data:`MAX_OBSERVATION_LENGTH` characters) start with the game's reply to the last command
("You enter the maze.", "You go north.", "There is a wall to the north.", or "I don't
understand ..."). Fully observed, the reply is followed by the map (``#`` wall, ``.`` floor,
``@`` player, ``G`` goal, one line per row) and "You can go: north, east."; partially
observed, by "You can go: ..." and what the player sees of the goal: adjacent, in a straight
line ("You see the goal 3 steps to the south."), or not at all.

Commands (at most :data:`~rlbench_suite.envs.text.text_io.MAX_COMMAND_LENGTH` characters,
case-insensitive): north, south, east, west; n, s, e, w; up, down, right, left; each
optionally after go, move, walk or head ("go north", "move up"). Anything else gets an
in-game reply and zero reward; a longer command raises ValueError naming the limit.

Rewards: +1 for the move that reaches the goal (the episode terminates), -0.01 for every
other move; unknown commands and walking into a wall get zero reward (but use a step).
``info``: ``success`` (the goal is reached), ``admissible_commands`` (the legal moves) and
``distance`` (the shortest path to the goal, in moves).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.envs.text.text_io import (
    MAX_COMMAND_LENGTH,
    clip_observation,
    read_command,
    text_space,
)

DIRECTIONS: dict[str, tuple[int, int]] = {
    "north": (-1, 0),
    "south": (1, 0),
    "east": (0, 1),
    "west": (0, -1),
}
"""Each move's (row, column) step, in the order moves are listed."""
SYNONYMS: dict[str, str] = {
    **{d: d for d in DIRECTIONS},
    **{d[0]: d for d in DIRECTIONS},
    "up": "north",
    "down": "south",
    "right": "east",
    "left": "west",
}
VERBS = ("go", "move", "walk", "head")
OBSERVABILITIES = ("full", "partial")
MIN_SIZE, MAX_SIZE = 5, 25
MAX_OBSERVATION_LENGTH = 1024
"""Enough for the largest map (25 lines of 26) plus the reply and the moves line."""
GOAL_REWARD, STEP_COST = 1.0, -0.01
ENTER, HELP = "You enter the maze.", "try: north, south, east, west."


def parse_move(command: str) -> str | None:
    """The direction a normalized command names, or None."""
    words = command.rstrip(".!").split()
    if len(words) == 2 and words[0] in VERBS:
        words = words[1:]
    return SYNONYMS.get(words[0]) if len(words) == 1 else None


class TextMazeEnv(gym.Env[str, str]):
    """Find the goal in a seeded perfect maze by typing moves (see the module docstring)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, size: int = 7, observability: str = "full") -> None:
        if observability not in OBSERVABILITIES:
            raise ValueError(
                f"observability must be one of {', '.join(map(repr, OBSERVABILITIES))}; "
                f"got {observability!r}"
            )
        if not isinstance(size, int) or size % 2 == 0 or not MIN_SIZE <= size <= MAX_SIZE:
            raise ValueError(
                f"size must be an odd integer from {MIN_SIZE} to {MAX_SIZE}; got {size!r}"
            )
        self.size = size
        self.observability = observability
        self.observation_space = text_space(MAX_OBSERVATION_LENGTH)
        self.action_space = text_space(MAX_COMMAND_LENGTH)
        self.walls = np.ones((size, size), dtype=bool)
        self.distances = np.zeros((size, size), dtype=np.int64)
        self.player = self.goal = (1, 1)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.walls = self._carve()
        cells = [(r, c) for r in range(1, self.size, 2) for c in range(1, self.size, 2)]
        start, goal = self.np_random.choice(len(cells), size=2, replace=False)
        self.player, self.goal = cells[int(start)], cells[int(goal)]
        self.distances = self._distances_to(self.goal)
        return self._observe(ENTER), self._info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        command = read_command(action)
        move = parse_move(command)
        reward = 0.0
        if move is None:
            shown = command if len(command) <= 40 else command[:37] + "..."
            reply = f"I don't understand {shown!r}; {HELP}"
        elif move not in self.open_moves():
            reply = f"There is a wall to the {move}."
        else:
            dr, dc = DIRECTIONS[move]
            self.player = (self.player[0] + dr, self.player[1] + dc)
            reply = f"You go {move}."
            reward = STEP_COST
        success = self.player == self.goal
        if success:
            reply += " You reached the goal!"
            reward = GOAL_REWARD
        return self._observe(reply), reward, success, False, self._info()

    def open_moves(self, square: tuple[int, int] | None = None) -> list[str]:
        """The moves that do not walk into a wall from ``square`` (default: the player's)."""
        r, c = self.player if square is None else square
        return [d for d, (dr, dc) in DIRECTIONS.items() if not self.walls[r + dr, c + dc]]

    def render_map(self) -> str:
        """The maze as ASCII lines: ``#`` wall, ``.`` floor, ``@`` player, ``G`` goal."""
        grid = [["#" if wall else "." for wall in row] for row in self.walls]
        grid[self.goal[0]][self.goal[1]] = "G"
        grid[self.player[0]][self.player[1]] = "@"
        return "\n".join("".join(row) for row in grid)

    def _carve(self) -> np.ndarray:
        """A perfect maze by the recursive backtracker (iterative, seeded by ``np_random``)."""
        walls = np.ones((self.size, self.size), dtype=bool)
        walls[1, 1] = False
        stack = [(1, 1)]
        while stack:
            r, c = stack[-1]
            options = [
                (r + 2 * dr, c + 2 * dc)
                for dr, dc in DIRECTIONS.values()
                if 0 < r + 2 * dr < self.size
                and 0 < c + 2 * dc < self.size
                and walls[r + 2 * dr, c + 2 * dc]
            ]
            if not options:
                stack.pop()
                continue
            nr, nc = options[int(self.np_random.integers(len(options)))]
            walls[(r + nr) // 2, (c + nc) // 2] = walls[nr, nc] = False
            stack.append((nr, nc))
        return walls

    def _distances_to(self, target: tuple[int, int]) -> np.ndarray:
        """Shortest-path distances (in moves) from every floor square to ``target``."""
        distances = np.full((self.size, self.size), -1, dtype=np.int64)
        distances[target] = 0
        queue = deque([target])
        while queue:
            square = queue.popleft()
            for move in self.open_moves(square):
                dr, dc = DIRECTIONS[move]
                nxt = (square[0] + dr, square[1] + dc)
                if distances[nxt] < 0:
                    distances[nxt] = distances[square] + 1
                    queue.append(nxt)
        return distances

    def _sight(self) -> str:
        """What the player sees of the goal along the four open lines of sight."""
        if self.player == self.goal:
            return "You are standing on the goal."
        for move, (dr, dc) in DIRECTIONS.items():
            r, c, steps = *self.player, 0
            while not self.walls[r + dr, c + dc]:
                r, c, steps = r + dr, c + dc, steps + 1
                if (r, c) == self.goal:
                    if steps == 1:
                        return f"The goal is next to you, to the {move}."
                    return f"You see the goal {steps} steps to the {move}."
        return "You cannot see the goal."

    def _observe(self, reply: str) -> str:
        moves = f"You can go: {', '.join(self.open_moves())}."
        if self.observability == "full":
            body = [reply, self.render_map(), moves]
        else:
            body = [reply, moves, self._sight()]
        return clip_observation("\n".join(body), MAX_OBSERVATION_LENGTH)

    def _info(self) -> dict[str, Any]:
        return {
            "success": self.player == self.goal,
            "admissible_commands": self.open_moves(),
            "distance": int(self.distances[self.player]),
        }
