"""TextMaze: seeded perfect mazes, commands, observations, the expert, and fuzzed input."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings

import rlbench_suite  # noqa: F401  (registers the ids)
from rlbench_suite.envs.text.maze.env import DIRECTIONS, TextMazeEnv
from rlbench_suite.envs.text.maze.experts import TextMazeSolver
from tests.text_fuzz import commands, step_fuzzed


def _floor(env: TextMazeEnv) -> list[tuple[int, int]]:
    return [(int(r), int(c)) for r, c in zip(*np.nonzero(~env.walls), strict=True)]


@pytest.mark.parametrize("size", [5, 7, 11, 25])
def test_mazes_are_perfect(size):
    env = TextMazeEnv(size=size)
    for seed in range(10):
        env.reset(seed=seed)
        floor = _floor(env)
        edges = sum(len(env.open_moves(square)) for square in floor) // 2
        assert edges == len(floor) - 1  # a tree ...
        assert (env.distances[~env.walls] >= 0).all()  # ... that is connected
        assert env.walls[0].all() and env.walls[-1].all()
        assert env.walls[:, 0].all() and env.walls[:, -1].all()


def test_reset_is_seeded():
    a, b = TextMazeEnv(), TextMazeEnv()
    assert a.reset(seed=3) == b.reset(seed=3)
    assert (a.walls == b.walls).all() and a.goal == b.goal
    mazes = {TextMazeEnv().reset(seed=s)[0] for s in range(20)}
    assert len(mazes) > 10


def test_arguments_are_validated():
    with pytest.raises(ValueError, match="'full', 'partial'"):
        TextMazeEnv(observability="hidden")
    with pytest.raises(ValueError, match="odd integer from 5 to 25"):
        TextMazeEnv(size=8)


@pytest.mark.parametrize(
    "command, move",
    [
        ("north", "north"),
        ("N", "north"),
        ("go north", "north"),
        ("move up", "north"),
        ("  Down ", "south"),
        ("e", "east"),
        ("walk right.", "east"),
        ("left", "west"),
        ("head west", "west"),
    ],
)
def test_commands_and_synonyms(command, move):
    env = TextMazeEnv()
    for seed in range(50):
        _, info = env.reset(seed=seed)
        if move in info["admissible_commands"] and env.player != env.goal:
            break
    start, distance = env.player, info["distance"]
    obs, reward, terminated, _, info = env.step(command)
    dr, dc = DIRECTIONS[move]
    assert env.player == (start[0] + dr, start[1] + dc)
    assert obs.startswith(f"You go {move}.")
    assert abs(info["distance"] - distance) == 1
    assert reward == (1.0 if terminated else -0.01)


@pytest.mark.parametrize("command", ["", "xyzzy", "go", "north east", "fly north", "\x00\x07"])
def test_unknown_commands_get_a_reply_and_no_reward(command):
    env = TextMazeEnv()
    env.reset(seed=0)
    start = env.player
    obs, reward, terminated, truncated, _ = env.step(command)
    assert obs.startswith("I don't understand") and "try: north, south, east, west" in obs
    assert (reward, terminated, truncated, env.player) == (0.0, False, False, start)


def test_walls_block_and_admissible_commands_are_the_open_moves():
    env = TextMazeEnv(size=9)
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        r, c = env.player
        walled = [d for d, (dr, dc) in DIRECTIONS.items() if env.walls[r + dr, c + dc]]
        assert info["admissible_commands"] == [d for d in DIRECTIONS if d not in walled]
        assert f"You can go: {', '.join(info['admissible_commands'])}." in obs
        for move in walled:
            obs, reward, *_ = env.step(move)
            assert obs.startswith(f"There is a wall to the {move}.") and reward == 0.0
            assert env.player == (r, c)


def test_full_observation_draws_the_map():
    env = TextMazeEnv()
    obs, _ = env.reset(seed=1)
    lines = obs.split("\n")
    assert lines[0] == "You enter the maze."
    assert "\n".join(lines[1:8]) == env.render_map()
    assert obs.count("@") == 1 and obs.count("G") == 1 and len(lines) == 9


def _line_of_sight(env: TextMazeEnv) -> tuple[str, int] | None:
    """The direction and distance of the goal along an open straight line, if any."""
    for move, (dr, dc) in DIRECTIONS.items():
        (r, c), steps = env.player, 0
        while not env.walls[r + dr, c + dc]:
            r, c, steps = r + dr, c + dc, steps + 1
            if (r, c) == env.goal:
                return move, steps
    return None


def test_partial_observation_describes_the_surroundings():
    env = TextMazeEnv(size=11, observability="partial")
    solver, kinds = TextMazeSolver(), set()
    for seed in range(20):
        obs, info = env.reset(seed=seed)
        while not info["success"]:
            assert "#" not in obs and "@" not in obs
            _, moves, sight = obs.split("\n")
            assert moves == f"You can go: {', '.join(info['admissible_commands'])}."
            seen = _line_of_sight(env)
            if seen is None:
                assert sight == "You cannot see the goal."
            elif seen[1] == 1:
                assert sight == f"The goal is next to you, to the {seen[0]}."
            else:
                assert sight == f"You see the goal {seen[1]} steps to the {seen[0]}."
            kinds.add(sight.split()[1])
            obs, *_, info = env.step(solver.act(obs, info))
        assert obs.endswith("You are standing on the goal.")
    assert kinds == {"goal", "see", "cannot"}


@pytest.mark.parametrize(
    "env_id, limit", [("rlbench/TextMaze-v0", 100), ("rlbench/TextMazePartial-v0", 200)]
)
def test_solver_reaches_the_goal(env_id, limit):
    env = gym.make(env_id)
    assert env.spec.max_episode_steps == limit
    solver, wins, extra = TextMazeSolver(env.observation_space, env.action_space), 0, []
    for seed in range(100):
        obs, info = env.reset(seed=seed)
        solver.reset(seed)
        shortest, steps, done = info["distance"], 0, False
        while not done:
            obs, _, terminated, truncated, info = env.step(solver.act(obs, info))
            steps, done = steps + 1, terminated or truncated
        wins += info["success"]
        extra.append(steps - shortest)
    assert wins >= 95
    if env_id == "rlbench/TextMaze-v0":
        assert max(extra) == 0  # BFS on the map is a shortest path


_FUZZ = {view: TextMazeEnv(observability=view) for view in ("full", "partial")}
for _env in _FUZZ.values():
    _env.reset(seed=0)


@pytest.mark.parametrize("view", sorted(_FUZZ))  # TextMaze-v0 and TextMazePartial-v0
@settings(max_examples=10_000, deadline=None)
@given(commands())
def test_fuzzed_commands_never_raise_within_the_limit(view, text):
    step_fuzzed(_FUZZ[view], text, rewards=(0.0, -0.01, 1.0))
