"""The text games' shared conventions: commands are read safely, observations fit the space."""

from __future__ import annotations

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlbench_suite  # noqa: F401  (registers the ids)
from rlbench_suite.core.catalog import select_cards
from rlbench_suite.envs.text.text_io import (
    CHARSET,
    MAX_COMMAND_LENGTH,
    clip_observation,
    read_command,
    text_space,
)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=MAX_COMMAND_LENGTH))
def test_any_string_up_to_the_limit_reads_as_a_clean_command(text):
    command = read_command(text)
    assert command == command.strip() and "  " not in command
    assert all(not c.isspace() or c == " " for c in command)


def test_commands_are_normalized_and_limits_are_named():
    assert read_command("  Take\tthe  LAMP\x00\n") == "take the lamp"
    assert read_command(b"open door") == "open door"
    with pytest.raises(ValueError, match=f"at most {MAX_COMMAND_LENGTH} characters; got one of"):
        read_command("x" * (MAX_COMMAND_LENGTH + 1))
    with pytest.raises(ValueError, match="a string"):
        read_command(3)


def test_observations_are_clipped_into_the_space():
    space = text_space(20)
    text = clip_observation("Ünïcode room\twith a very long description", 20)
    assert space.contains(text) and len(text) == 20 and set(text) <= CHARSET
    assert space.contains(clip_observation("short", 20))


TEXT_IDS = [card.id for card in select_cards(family="text")]


@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_every_text_game_refuses_over_long_and_non_string_commands_and_loses_nothing(env_id):
    """Through the card's whole stack: the error names the limit (even when the command
    would read as a valid one once its padding is stripped), and the game goes on as if
    the bad command had never been sent."""
    refused, clean = gym.make(env_id), gym.make(env_id)
    _, info = refused.reset(seed=1)
    clean.reset(seed=1)
    command = info["admissible_commands"][0]
    with pytest.raises(ValueError, match=f"at most {MAX_COMMAND_LENGTH} characters"):
        refused.step(command + " " * MAX_COMMAND_LENGTH)
    with pytest.raises(ValueError, match="a string"):
        refused.step(7)
    assert refused.step(command)[:4] == clean.step(command)[:4]
