"""The text games' reference figures (``rlbench text-figures``) and the RandomAdmissible policy."""

from __future__ import annotations

import gymnasium as gym
import pytest
from typer.testing import CliRunner

import rlbench_suite  # noqa: F401  (registers the ids)
from rlbench_suite.cli import app, text_figures_command
from rlbench_suite.cli.text_figures_command import score_fraction
from rlbench_suite.envs.text.random_admissible import RandomAdmissible

SOLVER = "module:rlbench_suite.envs.text.maze.experts:TextMazeSolver"


def test_solver_figures_are_its_shortest_paths():
    figures = text_figures_command.figures("rlbench/TextMaze-v0", SOLVER, episodes=10, first_seed=0)
    env = gym.make("rlbench/TextMaze-v0")
    shortest = [env.reset(seed=s)[1]["distance"] for s in range(10)]
    assert (figures.score_fraction_mean, figures.win_rate) == (1.0, 1.0)
    assert figures.steps_to_win == pytest.approx(sum(shortest) / 10)
    assert figures.seeds == tuple(range(10))


def test_random_text_never_wins():
    figures = text_figures_command.figures("rlbench/Wordle-v0", "random", episodes=3)
    assert (figures.score_fraction_mean, figures.win_rate, figures.steps_to_win) == (0.0, 0.0, None)
    assert "no wins (seeds 10000 to 10002)" in figures.line()


@pytest.mark.parametrize(
    "info, expected",
    [
        ({"score": 3, "max_score": 4, "success": False}, 0.75),
        ({"success": True}, 1.0),  # no score kept: a win counts 1
        ({"success": False}, 0.0),
        ({"score": 0, "max_score": 0, "success": True}, 1.0),
    ],
)
def test_normalized_score(info, expected):
    assert score_fraction(info) == expected


def test_random_admissible_picks_listed_commands_reproducibly():
    policy, info = RandomAdmissible(), {"admissible_commands": ["north", "south", "east"]}
    policy.reset(5)
    first = [policy.act("", info) for _ in range(30)]
    policy.reset(5)
    assert [policy.act("", info) for _ in range(30)] == first
    assert set(first) == {"north", "south", "east"}
    assert policy.act("", {}) == "look"


def test_command_line_prints_the_figures():
    args = ["rlbench/TextMaze-v0", "--policy", SOLVER, "--episodes", "2", "--first-seed", "7"]
    result = CliRunner().invoke(app, ["text-figures", *args])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "score fraction 1.000, win rate 1.00" in out and "(seeds 7 to 8)" in out
