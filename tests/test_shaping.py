"""Potential-based shaping for MiniGrid's key-and-door tasks: the bonuses follow the
subgoals, sum to P(last) - P(first), and leave the harness's episode statistics alone."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from minigrid.core.world_object import Key

import rlbench_suite  # noqa: F401  (registers the cards)
from rlbench_suite.core.cards import WrapperRef
from rlbench_suite.wrappers import STATS_KEY, apply_wrappers

SHAPING = WrapperRef(name="rlbench/MiniGridKeyDoorShaping-v0", kwargs={"scale": 0.5})
DONE = 6  # MiniGrid's no-op action


def _pair(env_id: str, seed: int):
    shaped = apply_wrappers(gym.make(env_id), [SHAPING])
    plain = gym.make(env_id)
    shaped.reset(seed=seed)
    plain.reset(seed=seed)
    return shaped, plain


def test_holding_the_key_then_unlocking_the_door_each_earn_half_the_scale():
    shaped, plain = _pair("rlbench/MiniGrid-KeyCorridorS3R1-v0", 0)
    base = shaped.unwrapped
    [door] = [c for c in base.grid.grid if c is not None and getattr(c, "is_locked", False)]
    _, reward, *_ = shaped.step(DONE)
    assert reward == plain.step(DONE)[1] == 0.0
    base.carrying = Key(door.color)  # as if picked up
    _, reward, *_ = shaped.step(DONE)
    assert reward == pytest.approx(0.25)
    door.is_locked, door.is_open = False, True  # as if toggled with the key
    _, reward, *_ = shaped.step(DONE)
    assert reward == pytest.approx(0.25)
    base.carrying = None  # putting the key down after unlocking costs nothing
    _, reward, *_ = shaped.step(DONE)
    assert reward == 0.0


def test_bonuses_sum_to_the_potential_difference_and_the_statistics_stay_unshaped():
    shaped, plain = _pair("rlbench/MiniGrid-Unlock-v0", 3)
    rng = np.random.default_rng(0)
    shaped_total = plain_total = 0.0
    for _ in range(400):
        action = int(rng.integers(0, 6))
        _, r_shaped, term, trunc, info = shaped.step(action)
        _, r_plain, *_ = plain.step(action)
        shaped_total += r_shaped
        plain_total += r_plain
        if term or trunc:
            break
    wrapper = shaped
    while not hasattr(wrapper, "potential"):
        wrapper = wrapper.env
    assert shaped_total == pytest.approx(plain_total + 0.5 * wrapper.potential)
    assert term or trunc
    assert info[STATS_KEY]["r"] == pytest.approx(plain_total)  # the env's own reward


def test_bad_scale_and_non_minigrid_envs_are_refused():
    with pytest.raises(ValueError, match="scale must be a finite number >= 0"):
        apply_wrappers(gym.make("rlbench/MiniGrid-Unlock-v0"),
                       [WrapperRef(name=SHAPING.name, kwargs={"scale": float("nan")})])
    with pytest.raises(ValueError, match="needs a MiniGrid env"):
        apply_wrappers(gym.make("rlbench/CartPole-v1"), [SHAPING])
