"""Duel: the rules, symmetry between the seats, the ordered ladder, the single-player view."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rlbench_suite  # noqa: F401  (registers the ids)
from rlbench_suite.envs.multiagent.duel import rules as core
from rlbench_suite.envs.multiagent.duel.bots import LADDER
from rlbench_suite.envs.multiagent.duel.env import DuelEnv, DuelVsBotEnv


def _pair(gap: float = 1.0) -> tuple[core.Fighter, core.Fighter]:
    return core.Fighter(x=5.0 - gap / 2, facing=1), core.Fighter(x=5.0 + gap / 2, facing=-1)


def _frames(fighters, actions, n):
    taken = np.zeros(2)
    for _ in range(n):
        taken += core.advance(fighters, actions)
    return taken


def test_an_attack_lands_after_its_startup_and_stuns():
    a, b = _pair()
    assert core.advance((a, b), (core.ATTACK, core.NOOP)) == (0.0, 0.0)
    taken = _frames((a, b), (core.NOOP, core.NOOP), core.STARTUP)
    assert taken.tolist() == [0.0, core.DAMAGE] and b.phase == "hitstun"
    assert b.health == core.HEALTH - core.DAMAGE
    # the same attack cannot hit twice
    assert _frames((a, b), (core.NOOP, core.NOOP), core.ACTIVE).tolist() == [0.0, 0.0]


def test_a_block_takes_chip_damage_and_a_jump_clears_the_attack():
    a, b = _pair()
    core.advance((a, b), (core.ATTACK, core.BLOCK))
    taken = _frames((a, b), (core.NOOP, core.BLOCK), core.STARTUP + core.ACTIVE)
    assert taken.tolist() == [0.0, core.CHIP] and b.phase == "block"
    a, b = _pair()
    core.advance((a, b), (core.ATTACK, core.JUMP))
    taken = _frames((a, b), (core.NOOP, core.NOOP), core.STARTUP + core.ACTIVE)
    assert taken.tolist() == [0.0, 0.0]


def test_simultaneous_attacks_both_land():
    a, b = _pair()
    core.advance((a, b), (core.ATTACK, core.ATTACK))
    taken = _frames((a, b), (core.NOOP, core.NOOP), core.STARTUP)
    assert taken.tolist() == [core.DAMAGE, core.DAMAGE]


def test_observations_are_mirror_images_for_mirrored_fighters():
    a, b = _pair(gap=2.0)
    first, second = core.observe(a, b, 0.5), core.observe(b, a, 0.5)
    np.testing.assert_allclose(first, second)
    assert first[12] == pytest.approx(2.0 / core.WIDTH)  # the opponent is 2 m in front


def _match(left: str, right: str, rounds: int = 100) -> np.ndarray:
    env, outcomes = DuelEnv(), []
    for seed in range(rounds):
        obs, _ = env.reset(seed=seed)
        bots = [LADDER[left](), LADDER[right]()]
        bots[0].reset(2 * seed)
        bots[1].reset(2 * seed + 1)
        while env.agents:
            actions = {a: bot.act(obs[a], {}) for a, bot in zip(env.agents, bots, strict=True)}
            obs, _, _, _, infos = env.step(actions)
        outcomes.append(infos["player_0"]["win"])
    return np.array(outcomes)


@pytest.mark.parametrize(("strong", "weak"), [("hard", "medium"), ("medium", "easy")])
def test_the_ladder_is_ordered_from_either_seat(strong, weak):
    assert np.mean(_match(strong, weak) == 1) >= 0.7
    assert np.mean(_match(weak, strong) == -1) >= 0.7


def test_the_seats_are_fair():
    outcomes = _match("medium", "medium")
    assert abs(np.mean(outcomes == 1) - np.mean(outcomes == -1)) < 0.15


def test_duel_vs_bot_is_the_single_player_ladder():
    env = gym.make("rlbench/DuelVsBot-v0", level="hard")
    assert env.unwrapped.level == "hard"
    env.reset(seed=0)
    while True:
        *_, terminated, truncated, info = env.step(0)  # stand still: get beaten
        if terminated or truncated:
            break
    assert terminated and info["win"] == -1 and not info["won"]
    assert info["rlbench_episode"]["success"] is False
    with pytest.raises(ValueError, match="accepted: easy, medium, hard"):
        DuelVsBotEnv(level="expert")
    with pytest.raises(ValueError, match=r"int in 0\.\.5"):
        env.step(6)


def test_duel_errors_and_render():
    env = DuelEnv(render_mode="rgb_array")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="one action for each"):
        env.step({"player_0": 0})
    frame = env.render()
    assert frame.shape == (160, 320, 3) and frame.dtype == np.uint8 and frame.std() > 5


@pytest.mark.parametrize(
    ("env_id", "seeds"),
    [
        ("rlbench/Duel-v0", range(10000, 10030)),  # random against random: many draws on time
        ("rlbench/DuelVsBotEasy-v0", (10018, 10047, 10000, 10001)),  # a double knock-out draw
    ],
)
def test_the_cards_outcome_rule_tells_wins_draws_and_losses_as_the_game_does(env_id, seeds):
    """Each episode's outcome by the card's rule (from its return and success, what a Result
    stores) is the game's own (``info["win"]``: 1 won, 0 drawn, -1 lost), draws whose return is
    not 0 (chip damage past a double knock-out) included."""
    from rlbench_suite.core.catalog import get_card
    from rlbench_suite.core.seeds import policy_seed
    from rlbench_suite.policies import RandomPolicy
    from rlbench_suite.wrappers.stats import STATS_KEY

    env = gym.make(env_id)
    policy = RandomPolicy(env.action_space)
    returns, successes, games = [], [], []
    for seed in seeds:
        observation, info = env.reset(seed=seed)
        policy.reset(policy_seed(seed))
        while True:
            observation, _, terminated, truncated, info = env.step(policy.act(observation, info))
            if terminated or truncated:
                break
        returns.append(info[STATS_KEY]["r"])
        successes.append(info[STATS_KEY]["success"])
        games.append(info["win"])
    env.close()
    scores = get_card(env_id).outcome.scores(returns, successes)
    assert list(scores) == [(win + 1) / 2 for win in games]
    assert games.count(0) >= 2  # draws were played
    if "Easy" in env_id:  # a double knock-out: a draw whose return is not 0
        assert any(r != 0 for r, win in zip(returns, games, strict=True) if win == 0)
