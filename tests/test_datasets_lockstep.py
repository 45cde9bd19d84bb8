"""Lockstep rollouts give the episodes of the one-at-a-time builder, bit for bit."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from dataset_helpers import small_card

from rlbench_suite.core.dataset_cards import load_dataset_card
from rlbench_suite.datasets import lockstep
from rlbench_suite.datasets.builder import rollouts
from rlbench_suite.datasets.storage import content_hash

REPO = Path(__file__).resolve().parents[1]


def _assert_same(card) -> None:
    slow = list(rollouts(card, lockstep=False))
    fast = list(rollouts(card))
    assert len(fast) == len(slow) == card.source.episodes
    for a, b in zip(slow, fast, strict=True):
        assert a.seed == b.seed
        for key in ("observations", "actions", "rewards", "terminations", "truncations"):
            x, y = getattr(a, key), getattr(b, key)
            assert x.dtype == y.dtype and x.shape == y.shape, key
            np.testing.assert_array_equal(x, y, err_msg=key)
    assert content_hash(fast) == content_hash(slow)


@pytest.mark.parametrize("policy, epsilon", [
    ("baseline:CartPole-v1/ppo/seed-0", 0.0),
    ("baseline:CartPole-v1/ppo/seed-0", 0.4),
    ("random", 0.0),
    ("random", 0.3),
])  # fmt: skip
def test_lockstep_episodes_equal_one_at_a_time(policy, epsilon):
    card = small_card(episodes=6)
    source = {"policies": [{"policy": policy, "episodes": 6, "epsilon": epsilon}]}
    _assert_same(card.model_copy(update={"source": type(card.source).model_validate(source)}))


def test_more_episodes_than_slots_keep_their_order(monkeypatch):
    monkeypatch.setattr(lockstep, "SLOTS", 3)  # slots are refilled as episodes end
    _assert_same(small_card(episodes=8, epsilon=0.5))


@pytest.mark.parametrize("kind", ["random", "medium", "expert", "medium-expert"])
def test_the_committed_cartpole_cards_rebuild_to_their_content_hashes(kind):
    card = load_dataset_card(REPO / "datasets" / "CartPole" / f"{kind}.toml")
    assert content_hash(rollouts(card)) == card.content_sha256


def test_blocks_of_several_policies_play_together():
    card = small_card(episodes=4)
    source = {"policies": [
        {"policy": "baseline:CartPole-v1/ppo/seed-0", "episodes": 3, "epsilon": 0.5},
        {"policy": "random", "episodes": 2},
        {"policy": "baseline:CartPole-v1/ppo/seed-0", "episodes": 3},
        {"policy": "random", "episodes": 2, "epsilon": 0.2},
    ]}  # fmt: skip
    _assert_same(card.model_copy(update={"source": type(card.source).model_validate(source)}))


def test_envs_and_policies_without_batch_support_play_one_at_a_time():
    from rlbench_suite.policies.core import CallablePolicy, RandomPolicy

    cartpole = gym.make("rlbench/CartPole-v1")
    assert lockstep.dynamics_of(cartpole) is not None
    assert lockstep.dynamics_of(gym.make("rlbench/Acrobot-v1")) is None
    rendering = gym.make("rlbench/CartPole-v1", render_mode="rgb_array")
    assert lockstep.dynamics_of(rendering) is None
    assert lockstep.dynamics_of(gym.wrappers.ClipReward(cartpole, 0, 0.5)) is None
    scripted = lockstep.Block(CallablePolicy(lambda obs, info: 0), [1, 2])
    random = lockstep.Block(RandomPolicy(cartpole.action_space), [3, 4])
    assert lockstep.lockstep_rollouts(cartpole, [random, scripted]) is None
    assert lockstep.lockstep_rollouts(cartpole, [random]) is not None


def test_onnx_act_batch_refuses_a_sampling_policy():
    from rlbench_suite.policies import make_policy

    env = gym.make("rlbench/CartPole-v1")
    sampling = make_policy("baseline:CartPole-v1/ppo/seed-0", env, deterministic=False)
    assert not sampling.batchable
    with pytest.raises(ValueError, match="act_batch needs a stateless greedy policy"):
        sampling.act_batch(np.zeros((2, 4), np.float32))
    greedy = make_policy("baseline:CartPole-v1/ppo/seed-0", env, deterministic=True)
    obs = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
    assert list(greedy.act_batch(obs)) == [greedy.act(o, {}) for o in obs]


@pytest.mark.parametrize("n, start", [(2, 0), (3, 0), (5, -2), (1000, 0), (2**40, 7)])
def test_drawing_ahead_gives_the_single_draws(n, start):
    one, many = gym.spaces.Discrete(n, start=start), gym.spaces.Discrete(n, start=start)
    one.seed(11)
    many.seed(11)
    singles = [one.sample() for _ in range(300)]
    ahead = np.concatenate([lockstep.uniform_actions(many, k) for k in (1, 64, 7, 228)])
    assert ahead.dtype == np.asarray(singles).dtype and list(ahead) == singles
    stream, again = np.random.default_rng(5), np.random.default_rng(5)
    assert list(np.concatenate([stream.random(64), stream.random(3)])) == [
        again.random() for _ in range(67)
    ]
