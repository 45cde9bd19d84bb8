"""``module:`` specs recorded before the scripted agents moved beside their envs still resolve."""

from __future__ import annotations

import importlib
import importlib.util

import numpy as np
import pytest

import rlbench_suite
from rlbench_suite.policies import make_policy
from rlbench_suite.policies.moved_modules import MOVED_MODULES

NEW_DUEL_BOTS = "rlbench_suite.envs.multiagent.duel.bots"


@pytest.mark.parametrize("old, new", sorted(MOVED_MODULES.items()))
def test_the_table_maps_gone_modules_to_existing_ones(old, new):
    assert importlib.util.find_spec(new) is not None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


def test_an_old_spec_builds_the_same_policy():
    [old_module] = [old for old, new in MOVED_MODULES.items() if new == NEW_DUEL_BOTS]
    old, new = f"module:{old_module}:EasyBot", f"module:{NEW_DUEL_BOTS}:EasyBot"
    game = rlbench_suite.make_multiagent("rlbench/Duel-v0", "parallel")
    before = make_policy(old, game, seed=3, agent="player_1")
    after = make_policy(new, game, seed=3, agent="player_1")
    assert type(before.policy) is type(after.policy)
    assert type(after.policy).__module__ == NEW_DUEL_BOTS
    assert before.identity.name == old.removeprefix("module:")  # the name results recorded
    assert before.identity.spec == old and after.identity.spec == new
    obs, _ = game.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(50):
        actions = [p.act(obs["player_1"], {}) for p in (before, after)]
        assert actions[0] == actions[1]
        obs, *_ = game.step({"player_0": int(rng.integers(6)), "player_1": actions[0]})
        if not game.agents:
            break


def test_an_unknown_attribute_of_a_moved_module_is_a_clear_error():
    old_module = min(MOVED_MODULES)
    with pytest.raises(ValueError, match="has no attribute 'Nope'"):
        make_policy(f"module:{old_module}:Nope")
