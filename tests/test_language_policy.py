"""The language-model policy: prompts from history, parsing, retries, fallbacks (no network)."""

from __future__ import annotations

import pytest

from rlbench_suite.policies.language import LanguageModelPolicy, build_prompt, parse_command
from tests.toy_envs import ToyTextCounter


class ScriptedModel:
    """A fake ``generate``: returns the scripted replies in turn and keeps the prompts."""

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.prompts = list(replies), []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.replies.pop(0) if self.replies else "Action: up"


def test_the_policy_plays_a_text_game_to_the_end():
    env = ToyTextCounter()
    model = ScriptedModel(["I think... Action: up", "up", "Action: 'UP'."])
    policy = LanguageModelPolicy(model, max_history=2)
    obs, info = env.reset(seed=0)
    policy.reset(0)
    for _ in range(3):
        obs, reward, terminated, _, info = env.step(policy.act(obs, info))
    assert terminated and reward == 1.0 and policy.failed_replies == 0
    last = model.prompts[-1]
    assert "Observation: count 2" in last and "Admissible commands: up, down" in last
    assert "count 0" not in last  # only the last two observation/command pairs
    assert last.endswith("Action:")


def test_unparsable_replies_are_retried_with_the_reason_then_fall_back():
    model = ScriptedModel(["", "Action: fly", "Action: down"])
    policy = LanguageModelPolicy(model, max_retries=2)
    info = {"admissible_commands": ["up", "down"]}
    assert policy.act("count 1", info) == "down"
    assert policy.failed_replies == 2
    assert "refused: the reply was empty" in model.prompts[1]
    assert "'fly' is not one of the admissible commands" in model.prompts[2]
    stubborn = LanguageModelPolicy(lambda prompt: "???", max_retries=1, fallback="look")
    assert stubborn.act("dark room", {"admissible_commands": ["wait", "go north"]}) == "wait"
    assert stubborn.act("dark room", {}) == "???"  # free text is taken as a command


def test_parse_and_prompt_helpers():
    assert parse_command("Thinking.\nAction: Go North") == ("Go North", "")
    assert parse_command("go north", ["Go North"]) == ("Go North", "")
    assert parse_command("x" * 300)[0] is None
    prompt = build_prompt([("observation", "a room"), ("action", "look")], ["look"])
    assert "Observation: a room\nAction: look" in prompt
    with pytest.raises(TypeError, match="callable"):
        LanguageModelPolicy("not a function")
