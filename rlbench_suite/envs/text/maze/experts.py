"""An expert for TextMaze that reads only the observation text.

Fully observed, it parses the ASCII map and follows a breadth-first shortest path to the goal.
Partially observed, it explores depth first: it tracks its own position by dead reckoning
(a move counts when the reply says "You go ..."), remembers the squares it has visited,
walks straight at the goal once it sees it, and backtracks along its path from dead ends.
In a perfect maze this visits each square at most twice, so it always finds the goal.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any

from rlbench_suite.envs.text.maze.env import DIRECTIONS, ENTER

OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}
_MAP_CHARS = frozenset("#.@G")
_MOVED = re.compile(r"^You go (north|south|east|west)\.")
_OPEN = re.compile(r"^You can go: (.*)\.$", re.MULTILINE)
_SEEN = re.compile(r"goal.* to the (north|south|east|west)\.$", re.MULTILINE)

Square = tuple[int, int]


def shortest_move(lines: list[str]) -> str | None:
    """The first move of a shortest path from ``@`` to ``G`` on an ASCII map, or None."""
    squares = {(r, c): ch for r, line in enumerate(lines) for c, ch in enumerate(line)}
    start = next((s for s, ch in squares.items() if ch == "@"), None)
    if start is None:
        return None
    first: dict[Square, str | None] = {start: None}
    queue = deque([start])
    while queue:
        square = queue.popleft()
        if squares[square] == "G":
            return first[square]
        for move, (dr, dc) in DIRECTIONS.items():
            nxt = (square[0] + dr, square[1] + dc)
            if squares.get(nxt, "#") != "#" and nxt not in first:
                first[nxt] = first[square] or move
                queue.append(nxt)
    return None


class TextMazeSolver:
    """BFS on the map when the maze is fully observed; depth-first exploration otherwise."""

    def __init__(self, observation_space: Any = None, action_space: Any = None, seed: Any = None):
        self.position: Square = (0, 0)
        self.visited: set[Square] = set()
        self.path: list[Square] = []

    def reset(self, seed: int | None = None) -> None:
        """Forget the explored maze (also done on seeing a new episode's first observation)."""
        self.position, self.visited, self.path = (0, 0), set(), []

    def act(self, observation: str, info: dict[str, Any] | None = None) -> str:
        lines = observation.split("\n")
        maze = [line for line in lines if line and set(line) <= _MAP_CHARS]
        if maze:
            return shortest_move(maze) or "north"
        return self._explore(observation)

    def _explore(self, observation: str) -> str:
        if observation.startswith(ENTER):
            self.reset()
        moved = _MOVED.match(observation)
        if moved:
            dr, dc = DIRECTIONS[moved.group(1)]
            self.position = (self.position[0] + dr, self.position[1] + dc)
        self.visited.add(self.position)
        seen = _SEEN.search(observation)
        if seen:
            return seen.group(1)
        found = _OPEN.search(observation)
        open_moves = found.group(1).split(", ") if found else []
        for move in open_moves:
            dr, dc = DIRECTIONS[move]
            if (self.position[0] + dr, self.position[1] + dc) not in self.visited:
                self.path.append(self.position)
                return move
        if not self.path:
            return open_moves[0] if open_moves else "north"
        back = self.path.pop()
        delta = (back[0] - self.position[0], back[1] - self.position[1])
        return next(m for m, d in DIRECTIONS.items() if d == delta)
