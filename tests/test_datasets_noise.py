"""Gaussian action noise in a dataset's source (``noise_std``): seeded, of the std asked,
clipped to the bounds, refused where it does not apply; and the committed cards that use it
(QuadHover's noisy PID expert, its medium policy trained partway) rebuild to their hashes."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from dataset_helpers import small_card

from rlbench_suite.core.dataset_cards import DatasetCard, SourcePolicy, load_dataset_card
from rlbench_suite.datasets.builder import noise_scale, play, rollouts
from rlbench_suite.datasets.storage import content_hash

REPO = Path(__file__).resolve().parents[1]


class Still:
    """A policy that always asks for the zero action (so the noise is all that moves it)."""

    def __init__(self, space: gym.spaces.Box) -> None:
        self.zero = np.zeros(space.shape, dtype=space.dtype)

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, obs, info):
        return self.zero


def _actions(env: gym.Env, std, seeds) -> np.ndarray:
    component = SourcePolicy(policy="test", episodes=1, noise_std=std)
    scale = noise_scale(component, env.action_space)
    return np.concatenate([play(env, Still(env.action_space), s, noise_std=scale).actions
                           for s in seeds])  # fmt: skip


def test_noise_is_seeded_per_episode_and_of_the_std_asked_per_dimension():
    env = gym.make("rlbench/Reacher-v5")  # two action dimensions in [-1, 1]
    seeds = list(range(1_000_000_000, 1_000_000_008))
    actions = _actions(env, [0.1, 0.3], seeds)
    assert actions.dtype == env.action_space.dtype and actions.shape == (8 * 50, 2)
    np.testing.assert_allclose(actions.std(axis=0), [0.1, 0.3], rtol=0.15)
    np.testing.assert_allclose(actions.mean(axis=0), [0, 0], atol=0.05)
    np.testing.assert_array_equal(actions, _actions(env, [0.1, 0.3], seeds))  # a rebuild
    other = _actions(env, [0.1, 0.3], [s + 100 for s in seeds])
    assert not np.array_equal(actions, other)  # another seed, other draws
    # the same draws scaled: the stream is the episode's, whatever the std
    inside = np.abs(actions[:, 1]) < 1.0  # not clipped
    np.testing.assert_allclose(_actions(env, 0.1, seeds)[inside, 1] * 3, actions[inside, 1],
                               rtol=1e-5)  # fmt: skip


def test_noisy_actions_are_clipped_to_the_action_bounds():
    env = gym.make("rlbench/Reacher-v5")
    actions = _actions(env, 10.0, [1_000_000_000])
    assert actions.min() == -1.0 and actions.max() == 1.0
    assert np.mean(np.abs(actions) == 1.0) > 0.8


def test_no_noise_plays_the_policy_unchanged():
    env = gym.make("rlbench/Reacher-v5")
    assert not SourcePolicy(policy="test", episodes=1).noisy
    assert noise_scale(SourcePolicy(policy="test", episodes=1), env.action_space) is None
    assert not _actions(env, 0.0, [1_000_000_000]).any()


@pytest.mark.parametrize("std, message", [
    (-0.1, "noise_std must be >= 0"),
    ([0.1, float("nan")], "noise_std must be >= 0"),
    ([], "noise_std must be >= 0"),
])  # fmt: skip
def test_a_bad_noise_std_is_refused_by_the_card(std, message):
    with pytest.raises(ValueError, match=message):
        SourcePolicy(policy="random", episodes=1, noise_std=std)


def test_noise_where_it_cannot_apply_is_a_clear_error():
    noisy = small_card(source={"policies": [{"policy": "random", "episodes": 1,
                                             "noise_std": 0.1}]})  # fmt: skip
    with pytest.raises(ValueError, match=r"Box actions only.*Discrete"):
        list(rollouts(noisy))
    reacher = gym.make("rlbench/Reacher-v5")
    with pytest.raises(ValueError, match=r"3 values; the action space .* has 2 dimensions"):
        noise_scale(SourcePolicy(policy="x", episodes=1, noise_std=[0.1] * 3),
                    reacher.action_space)  # fmt: skip
    data = load_dataset_card(REPO / "datasets" / "CoopNav" / "expert.toml").model_dump()
    data["source"]["policies"][0]["noise_std"] = 0.1
    joint = DatasetCard.model_validate(data)
    with pytest.raises(ValueError, match="joint data takes epsilon only"):
        list(rollouts(joint))


@pytest.mark.parametrize("kind", ["medium", "expert"])
def test_the_committed_noisy_quadhover_cards_rebuild_to_their_content_hashes(kind):
    card = load_dataset_card(REPO / "datasets" / "QuadHover" / f"{kind}.toml")
    assert any(p.noisy for p in card.source.policies)
    assert content_hash(rollouts(card)) == card.content_sha256
