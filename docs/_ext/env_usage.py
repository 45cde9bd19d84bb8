"""The usage section of an environment's page: who the other agents are, and a snippet that
plays a short episode (legal moves only where the game has an action mask).

A card tagged ``action-mask`` is a game whose Gymnasium view gives the mask of legal
actions in ``info["action_mask"]`` and whose PettingZoo observations carry it as
``obs["action_mask"]`` (PettingZoo's classic games); a random action there ends the game on
an illegal move, so the snippets sample from the mask.
"""

from __future__ import annotations

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.registry import supported_apis

MASK_TAG = "action-mask"
STEPS = 100
"""The most steps (or AEC turns) a snippet plays."""


def masked(card: EnvCard) -> bool:
    return MASK_TAG in card.tags


def others(card: EnvCard) -> str:
    """The other agents of a multi-agent card's Gymnasium view, by the game's kind (its tags):
    partners in a cooperative game, opponents in a competitive one."""
    if "cooperative" in card.tags:
        return "beside the card's scripted partners"
    if "mixed-motive" in card.tags:
        return "among the card's scripted other agents"
    return "against the card's opponents" if card.opponents else "against a random opponent"


def others_sentence(card: EnvCard) -> str:
    """Who the other agents of ``gym.make``'s view are, named."""
    who = (f"play `{card.opponents}` (the card's `opponents`)" if card.opponents
           else "play uniformly random actions" + (", legal moves only" if masked(card) else "")
           + " (the card names no `opponents`)")  # fmt: skip
    return (f"`gym.make` plays agent `{card.agent}`; the other agents {who}. Another "
            "policy: `gym.make(ID, opponents=SPEC)`, any `--policy` string.")  # fmt: skip


def _gym_loop(card: EnvCard) -> list[str]:
    sample = ('env.action_space.sample(mask=info["action_mask"])  # a legal move'
              if masked(card) else "env.action_space.sample()")  # fmt: skip
    return ["obs, info = env.reset(seed=0)", f"for step in range(1, {STEPS + 1}):",
            f"    action = {sample}",
            "    obs, reward, terminated, truncated, info = env.step(action)",
            "    if terminated or truncated:", "        break"]  # fmt: skip


def _multiagent_loop(card: EnvCard, api: str) -> list[str]:
    made = f'game = rlbench_suite.make_multiagent("{card.id}", api="{api}")'
    if api == "parallel":
        return [made, "observations, infos = game.reset(seed=0)",
                f"for step in range(1, {STEPS + 1}):",
                "    actions = {a: game.action_space(a).sample() for a in game.agents}",
                "    observations, rewards, terminations, truncations, infos = game.step(actions)",
                "    if not game.agents:", "        break"]  # fmt: skip
    mask = 'obs["action_mask"]' if masked(card) else ""
    return [made, "game.reset(seed=0)",
            f"for step, agent in enumerate(game.agent_iter(max_iter={STEPS}), 1):",
            "    obs, reward, termination, truncation, info = game.last()",
            "    done = termination or truncation",
            f"    game.step(None if done else game.action_space(agent).sample({mask}))",
            ]  # fmt: skip


def usage(card: EnvCard) -> list[str]:
    """The usage section's lines: for a multi-agent card who plays beside or against its
    agent, then a runnable snippet (``gym.make``, and ``make_multiagent`` per API)."""
    lines = [others_sentence(card), ""] if card.is_multiagent else []
    lines += ["```python", "import gymnasium as gym", "", "import rlbench_suite", "",
              f'env = gym.make("{card.id}")']  # fmt: skip
    if card.is_multiagent:
        lines[-1] += f"  # agent {card.agent!r} {others(card)}"
    lines += _gym_loop(card)
    if card.is_multiagent:
        for api in supported_apis(card):
            lines += ["", *_multiagent_loop(card, api)]
    lines.append("```")
    return lines
