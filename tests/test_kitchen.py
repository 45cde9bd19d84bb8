"""Kitchen: the recipe, movement, counters, layouts, observations, scripted cooks, ZSC split."""

from __future__ import annotations

import numpy as np
import pytest

import rlbench_suite
from rlbench_suite.envs.multiagent.kitchen import agents as scripted
from rlbench_suite.envs.multiagent.kitchen.contribution import OwnContributionBonus
from rlbench_suite.envs.multiagent.kitchen.env import (
    CHOP_STEPS,
    CHOPPED,
    COOK_TIME,
    OBS_SIZE,
    ONION,
    PLATE,
    SOUP,
    KitchenEnv,
)
from rlbench_suite.envs.multiagent.kitchen.layouts import LAYOUTS
from rlbench_suite.policies import make_policy

STAY, UP, DOWN, LEFT, RIGHT, INTERACT = range(6)


def _kitchen(layout: str = "cramped", **cells: tuple[int, int]) -> KitchenEnv:
    env = KitchenEnv(layout=layout)
    env.reset(seed=0)
    for agent, cell in cells.items():
        env.position[agent] = np.array(cell)
    return env


def _act(env: KitchenEnv, cook_0: int, cook_1: int = STAY) -> float:
    _, rewards, *_ = env.step({"cook_0": cook_0, "cook_1": cook_1})
    assert rewards["cook_0"] == rewards["cook_1"]  # every reward is shared
    return rewards["cook_0"]


def test_the_whole_recipe_by_one_cook_delivers_a_soup():
    env = _kitchen(cook_0=(1, 1), cook_1=(2, 5))  # cramped: crate left of (1,1)
    total = 0.0
    for _ in range(3):
        total += sum(_act(env, a) for a in (LEFT, INTERACT))  # take an onion
        assert env.held["cook_0"] == ONION
        total += sum(_act(env, a) for a in (RIGHT, RIGHT, RIGHT, DOWN, INTERACT))  # on the board
        total += sum(_act(env, INTERACT) for _ in range(CHOP_STEPS + 1))  # chop, take
        assert env.held["cook_0"] == CHOPPED
        total += sum(_act(env, a) for a in (UP, LEFT, LEFT, UP, INTERACT))  # into the pot
    assert total == 3.0 and env.pot_onions[0, 2] == 3
    total += sum(_act(env, a) for a in (DOWN, DOWN, INTERACT))  # plate stack below (2,2)
    assert env.held["cook_0"] == PLATE
    for _ in range(COOK_TIME):
        total += _act(env, UP)
    assert _act(env, INTERACT) == 3.0 and env.held["cook_0"] == SOUP
    total += sum(_act(env, a) for a in (RIGHT, RIGHT, RIGHT, RIGHT))
    _, rewards, _, _, infos = env.step({"cook_0": INTERACT, "cook_1": STAY})
    assert rewards["cook_0"] == 20.0 and infos["cook_0"] == {"deliveries": 1, "success": True}
    assert infos["cook_1"]["success"] and total + 3.0 + 20.0 == 26.0


def test_own_contribution_bonus_credits_each_recipe_step_to_the_cook_that_did_it():
    """The training-only bonus (rlbench/KitchenOwnContribution-v0) on the whole recipe by one
    cook: every step is credited to cook_0, none to cook_1, and each reward is the team
    reward plus the bonus of the cook's own steps."""
    env = _kitchen(cook_0=(1, 1), cook_1=(2, 5))
    bonus = {"onion": 0.1, "board": 0.2, "chopped": 0.4, "pot": 0.8, "plated": 1.6,
             "delivered": 3.2}  # fmt: skip
    wrapped = OwnContributionBonus(env, bonus)
    steps: dict[str, list[str]] = {"cook_0": [], "cook_1": []}
    recipe = [LEFT, INTERACT, RIGHT, RIGHT, RIGHT, DOWN, *[INTERACT] * (CHOP_STEPS + 2), UP,
              LEFT, LEFT, UP, INTERACT]  # fmt: skip
    serve = [DOWN, DOWN, INTERACT, *[UP] * COOK_TIME, INTERACT, RIGHT, RIGHT, RIGHT, RIGHT,
             INTERACT]  # fmt: skip
    for action in recipe * 3 + serve:
        _, rewards, _, _, infos = wrapped.step({"cook_0": action, "cook_1": STAY})
        own = infos["cook_0"]["own_steps"]
        team = rewards["cook_1"]  # cook_1 did nothing: its reward is the team's
        assert rewards["cook_0"] == pytest.approx(team + sum(bonus[s] for s in own))
        for agent in steps:
            steps[agent] += infos[agent]["own_steps"]
    assert steps["cook_1"] == []
    assert steps["cook_0"] == ["onion", "board", "chopped", "pot"] * 3 + ["plated", "delivered"]
    assert env.deliveries == 1
    with pytest.raises(ValueError, match=r"unknown recipe steps.*accepted"):
        OwnContributionBonus(KitchenEnv(), {"stir": 1.0})


def test_cooks_block_each_other_and_cannot_swap_or_clash():
    env = _kitchen(cook_0=(1, 2), cook_1=(1, 3))
    _act(env, RIGHT, LEFT)  # a swap: both stay, both turn
    assert env.position["cook_0"].tolist() == [1, 2] and env.position["cook_1"].tolist() == [1, 3]
    assert env.facing["cook_0"] == RIGHT and env.facing["cook_1"] == LEFT
    env.position["cook_1"] = np.array([1, 4])
    _act(env, RIGHT, LEFT)  # both into (1,3): both stay
    assert env.position["cook_0"].tolist() == [1, 2] and env.position["cook_1"].tolist() == [1, 4]
    _act(env, RIGHT, RIGHT)  # a train: the leader moves, so the follower may
    assert env.position["cook_0"].tolist() == [1, 3] and env.position["cook_1"].tolist() == [1, 5]
    _act(env, UP)  # into a counter: turns only
    assert env.position["cook_0"].tolist() == [1, 3] and env.facing["cook_0"] == UP


def test_counters_hold_one_item():
    env = _kitchen(cook_0=(2, 1), cook_1=(2, 5))
    env.held["cook_0"], env.held["cook_1"] = ONION, PLATE
    _act(env, LEFT, RIGHT)  # both face their counter
    _act(env, INTERACT, INTERACT)
    assert env.items[2, 0] == ONION and env.items[2, 6] == PLATE
    assert env.held["cook_0"] == env.held["cook_1"] == 0
    env.held["cook_0"] = CHOPPED
    _act(env, INTERACT)  # the counter is taken: nothing happens
    assert env.held["cook_0"] == CHOPPED and env.items[2, 0] == ONION
    env.held["cook_0"] = 0
    _act(env, INTERACT)
    assert env.held["cook_0"] == ONION and env.items[2, 0] == 0


def test_split_layout_needs_passing_over_the_counter():
    env = _kitchen("split")
    left = {(int(r), int(c)) for r, c in np.argwhere(env.tiles == 0) if c < 3}
    cells = {a: tuple(int(x) for x in env.position[a]) for a in env.agents}
    assert sum(cell in left for cell in cells.values()) == 1  # one cook on each side
    single = scripted.Generalist(seed=0)
    kitchen = scripted._Kitchen(env._observations()["cook_0"])
    assert kitchen.handoffs()  # the dividing counter
    assert bool(kitchen.cells(4)) != bool(kitchen.cells(2))  # boards xor crate in reach
    for seed in range(3):  # a lone Generalist beside an idle cook never delivers
        obs, _ = env.reset(seed=seed)
        while env.agents:
            obs, *_, infos = env.step({"cook_0": single.act(obs["cook_0"], {}), "cook_1": STAY})
        assert not infos["cook_0"]["success"]


def test_observations_have_one_size_for_every_layout():
    for layout in LAYOUTS:
        env = KitchenEnv(layout=layout)
        obs, _ = env.reset(seed=1)
        assert env.observation_space("cook_0").shape == (OBS_SIZE,)
        assert all(o.shape == (OBS_SIZE,) and o.dtype == np.float32 for o in obs.values())
        assert all(env.observation_space(a).contains(o) for a, o in obs.items())


def test_same_seed_same_episode_and_starts_vary_by_seed():
    def trajectory(seed: int) -> list[np.ndarray]:
        env = KitchenEnv(layout="ring")
        obs, _ = env.reset(seed=seed)
        rng, out = np.random.default_rng(7), [obs["cook_0"]]
        while env.agents:
            obs, *_ = env.step({a: int(rng.integers(6)) for a in env.agents})
            out.append(obs.get("cook_0", out[-1]))
        return out

    assert all(np.array_equal(a, b) for a, b in zip(trajectory(3), trajectory(3), strict=True))
    env, starts = KitchenEnv(), set()
    for seed in range(20):
        env.reset(seed=seed)
        starts.add(tuple(tuple(int(x) for x in p) for p in env.position.values()))
    assert len(starts) > 2


def test_zsc_partners_are_disjoint_and_constructible():
    train, held_out = scripted.zsc_partners("train"), scripted.zsc_partners("held_out")
    assert train == scripted.TRAINING_PARTNERS and held_out == scripted.HELD_OUT_PARTNERS
    assert not set(train) & set(held_out) and len(train) == len(held_out) == 3
    game = rlbench_suite.make_multiagent("rlbench/Kitchen-v0", "parallel")
    obs, _ = game.reset(seed=0)
    for spec in train + held_out:
        policy = make_policy(spec, game, agent="cook_1")
        policy.reset(0)
        assert 0 <= policy.act(obs["cook_1"], {}) <= 5
    with pytest.raises(ValueError, match="train"):
        scripted.zsc_partners("test")  # type: ignore[arg-type]


def test_the_held_out_card_plays_each_held_out_partner_by_seed():
    """rlbench/KitchenHeldOut-v0's opponent is one of the HELD_OUT_PARTNERS per episode, by
    its reset seed, and never a training partner."""
    styles = [f"{scripted.__name__}:{c.__name__}" for c in scripted.HeldOutPartner.STYLES]
    assert styles == [s.removeprefix("module:") for s in scripted.HELD_OUT_PARTNERS]
    partner = scripted.HeldOutPartner(seed=7)
    played = set()
    for seed in range(6):
        partner.reset(seed)
        assert type(partner.cook) is scripted.HeldOutPartner.STYLES[seed % 3]
        played.add(type(partner.cook).__name__)
    partner.reset(None)  # an unseeded reset keeps the partner
    assert type(partner.cook) is scripted.HeldOutPartner.STYLES[5 % 3]
    assert played == {"Server", "Eager", "Jittery"}
    card = rlbench_suite.get_card("rlbench/KitchenHeldOut-v0")
    assert card.opponents == "module:rlbench_suite.envs.multiagent.kitchen.agents:HeldOutPartner"
    assert card.entry_point == rlbench_suite.get_card("rlbench/Kitchen-v0").entry_point


def _success_rate(layout: str, partner: type, seeds: int = 30) -> float:
    env = KitchenEnv(layout=layout)
    wins = 0
    for seed in range(seeds):
        obs, _ = env.reset(seed=seed)
        cooks = {"cook_0": scripted.Generalist(seed=seed), "cook_1": partner(seed=seed + 1)}
        while env.agents and not env.deliveries:  # played until the first soup
            obs, *_ = env.step({a: cooks[a].act(obs[a], {}) for a in env.agents})
        wins += env.deliveries > 0
    return wins / seeds


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_generalist_pairs_succeed_on_every_layout(layout: str):
    assert _success_rate(layout, scripted.Generalist) >= 0.9


@pytest.mark.parametrize("partner", ["Server", "Eager", "Jittery"])
def test_a_generalist_still_delivers_beside_held_out_partners(partner: str):
    assert _success_rate("cramped", getattr(scripted, partner), seeds=10) >= 0.5


def test_bad_input_gets_clear_errors():
    with pytest.raises(ValueError, match="cramped, ring, split"):
        KitchenEnv(layout="galley")
    env = _kitchen()
    with pytest.raises(ValueError, match=r"int in 0\.\.5"):
        env.step({"cook_0": 6, "cook_1": 0})
    with pytest.raises(ValueError, match="not in the game"):
        env.step({"chef": 1})
    with pytest.raises(ValueError, match="not a Kitchen observation"):
        scripted.Generalist(observation_space=rlbench_suite.make_multiagent(
            "rlbench/PredatorPrey-v0", "parallel").observation_space("predator_0"))  # fmt: skip


def test_rgb_array():
    env = KitchenEnv(layout="ring", render_mode="rgb_array")
    env.reset(seed=1)
    frame = env.render()
    assert frame.shape == (6 * 16, 7 * 16, 3) and frame.dtype == np.uint8 and frame.std() > 5
    assert KitchenEnv().render() is None
