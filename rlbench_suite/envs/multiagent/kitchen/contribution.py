"""Training-only credit for a cook's own work in ``rlbench/Kitchen-v0``.

Kitchen's reward is shared: a learner beside a scripted cook that makes soup alone is paid
for its partner's work as much as for its own, and its own few contributions drown in that
noise (the pilot of the zoo's shared PPO settled into staying out of the way, 57 against the
partner alone's 52). :class:`OwnContributionBonus` adds, for each learning cook, a bonus
for what its own interacts did - the recipe steps it finished - on top of the team reward.
It is for training only (like the grid worlds' shaping in :mod:`rlbench_suite.wrappers.shaping`):
the harness scores the card's own team reward.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from pettingzoo.utils.wrappers import BaseParallelWrapper

from rlbench_suite.envs.multiagent.kitchen.env import INTERACT, MOVES
from rlbench_suite.envs.multiagent.kitchen.layouts import (
    BOARD,
    CHOPPED,
    CRATE,
    NOTHING,
    ONION,
    PLATE,
    POT,
    SOUP,
    WINDOW,
)
from rlbench_suite.wrappers.base import register_wrapper

STEPS = ("onion", "board", "chopped", "pot", "plated", "delivered")
"""The recipe steps a cook is credited for: taking an onion from the crate, putting it on a
board, finishing its chopping, putting a chopped onion in the pot, plating a soup and
delivering it."""

DEFAULT_BONUS: dict[str, float] = {"onion": 0.2, "board": 0.2, "chopped": 0.5, "pot": 1.0,
                                   "plated": 3.0, "delivered": 20.0}  # fmt: skip
"""The default bonus per step: the card's own rewards again for the steps it rewards (so a
cook's own pot, plating and delivery count twice), small ones for the steps before."""


HELD_CHANGES: dict[tuple[int, int, int], str] = {
    (CRATE, NOTHING, ONION): "onion", (BOARD, ONION, NOTHING): "board",
    (POT, CHOPPED, NOTHING): "pot", (POT, PLATE, SOUP): "plated",
    (WINDOW, SOUP, NOTHING): "delivered",
}  # fmt: skip
"""(faced tile, held before, held after) -> the step an interact finished; chopping, which
changes the board's item instead, is the one other step."""


def check_bonus(bonus: Any) -> dict[str, float]:
    """``bonus`` as a step -> number dict, or a ``ValueError`` naming what is accepted."""
    if not isinstance(bonus, Mapping):
        raise ValueError(f"bonus must map recipe steps to numbers, got {bonus!r}")
    unknown = sorted(str(k) for k in set(bonus) - set(STEPS))
    if unknown:
        raise ValueError(f"unknown recipe steps {unknown}; accepted: {list(STEPS)}")
    for step, value in bonus.items():
        real = isinstance(value, int | float | np.integer | np.floating)
        if not real or isinstance(value, bool | np.bool_) or not np.isfinite(value):
            raise ValueError(f"bonus for {step!r} must be a finite number, got {value!r}")
    return {step: float(value) for step, value in bonus.items()}


def own_steps(
    before_held: int, after_held: int, tile: int, before_item: int, after_item: int
) -> list[str]:
    """Which recipe steps one cook's interact finished, from what it held and what lay on
    the faced tile before and after the cycle."""
    if tile == BOARD and before_item == ONION and after_item == CHOPPED:
        return ["chopped"]
    step = HELD_CHANGES.get((tile, before_held, after_held))
    return [step] if step else []


@register_wrapper("rlbench/KitchenOwnContribution-v0")
class OwnContributionBonus(BaseParallelWrapper):
    """Adds to each cook's reward a bonus for the recipe steps its own interacts finished.

    ``bonus`` maps a step of :data:`STEPS` to its bonus (missing steps: 0; default
    :data:`DEFAULT_BONUS`). Wraps a Kitchen Parallel env (the game itself, not a view of it);
    ``info[agent]["own_steps"]`` lists the steps that cook finished this cycle.
    """

    def __init__(self, env: Any, bonus: Mapping[str, float] | None = None) -> None:
        super().__init__(env)
        self.bonus = check_bonus(DEFAULT_BONUS if bonus is None else bonus)
        base = env.unwrapped
        if not all(hasattr(base, a) for a in ("held", "items", "tiles", "position", "facing")):
            raise ValueError(f"{type(self).__name__} needs the Kitchen game, got "
                             f"{type(base).__name__} (a game wrapper: shared_ppo entries "
                             "name it under game_wrappers)")  # fmt: skip

    @classmethod
    def check_kwargs(cls, bonus: Mapping[str, float] | None = None) -> None:
        """Refuse bad keyword arguments before any game is made (hyperparameter files)."""
        check_bonus(DEFAULT_BONUS if bonus is None else bonus)

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        base = self.env.unwrapped
        held, items = dict(base.held), base.items.copy()
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        rewards, infos = dict(rewards), {a: dict(i) for a, i in infos.items()}
        for agent in rewards:
            steps: list[str] = []
            if actions.get(agent) == INTERACT:
                r, c = base.position[agent] + MOVES[base.facing[agent]]
                steps = own_steps(held[agent], base.held[agent], int(base.tiles[r, c]),
                                  int(items[r, c]), int(base.items[r, c]))  # fmt: skip
            rewards[agent] = float(rewards[agent]) + sum(self.bonus.get(s, 0.0) for s in steps)
            infos[agent]["own_steps"] = steps
        return obs, rewards, terms, truncs, infos
