"""Text-env datasets: random and epsilon steps pick admissible commands, not random strings."""

from __future__ import annotations

import copy

import gymnasium as gym

from rlbench_suite.core.dataset_cards import get_dataset_card
from rlbench_suite.datasets.builder import TEXT_RANDOM_POLICY, play
from rlbench_suite.policies import make_policy

ENV_ID = "rlbench/TextAdventureEasy-v0"
EXPERT = "module:rlbench_suite.envs.text.adventure.experts:TextAdventureExpert"


def _replay_admissible(env: gym.Env, seed: int, actions: list[str]) -> list[bool]:
    """For each action of an episode replayed from ``seed``: was it an admissible command?"""
    _, info = env.reset(seed=seed)
    found = []
    for action in actions:
        found.append(action in info["admissible_commands"])
        _, _, _, _, info = env.step(action)
    return found


def test_epsilon_steps_on_text_are_admissible_commands_and_seeded() -> None:
    env = gym.make(ENV_ID)
    try:
        expert = make_policy(EXPERT, env)
        space = copy.deepcopy(env.action_space)
        first = play(env, expert, 123_456, epsilon=1.0, random_space=space)
        again = play(env, expert, 123_456, epsilon=1.0, random_space=copy.deepcopy(space))
        assert first.actions == again.actions
        assert len(first.actions) > 3
        assert all(_replay_admissible(env, 123_456, first.actions))
        other = play(env, expert, 123_457, epsilon=1.0, random_space=copy.deepcopy(space))
        assert other.actions != first.actions
    finally:
        env.close()


def test_text_cards_use_random_admissible_and_the_builder_rule() -> None:
    random = get_dataset_card("rlbench/TextAdventureEasy-random-v0")
    assert [p.policy for p in random.source.policies] == [TEXT_RANDOM_POLICY]
    assert random.reference.random.policy == TEXT_RANDOM_POLICY
    medium = get_dataset_card("rlbench/TextAdventureEasy-medium-v0")
    assert medium.source.policies[0].epsilon > 0
    assert "admissible_commands" in medium.description
    # the data: random < medium < expert in return, and below the expert reference
    returns = [get_dataset_card(f"rlbench/TextAdventureEasy-{k}-v0").mean_return
               for k in ("random", "medium", "expert")]  # fmt: skip
    assert returns[0] < returns[1] < returns[2] <= random.reference.expert.value


def test_text_data_reads_back_as_strings_with_transitions_inside_episodes(tmp_path) -> None:
    import numpy as np
    import pytest

    from rlbench_suite.datasets.loader import OfflineDataset
    from rlbench_suite.datasets.storage import write_episodes

    env = gym.make(ENV_ID)
    try:
        expert = make_policy(EXPERT, env)
        space = copy.deepcopy(env.action_space)
        episodes = [play(env, expert, s, epsilon=0.3, random_space=space) for s in (5, 6)]
    finally:
        env.close()
    path = tmp_path / "text.hdf5"
    write_episodes(path, episodes)
    data = OfflineDataset(path).get_dataset()
    steps = sum(len(e) for e in episodes)
    assert all(data[k].shape == (steps,) for k in data)
    first = len(episodes[0])
    assert list(data["observations"][:first]) == episodes[0].observations[:-1]
    assert list(data["actions"][first:]) == episodes[1].actions
    # the last step of episode 0 keeps its own next observation, not episode 1's first
    assert data["next_observations"][first - 1] == episodes[0].observations[-1]
    assert data["observations"][first] == episodes[1].observations[0]
    dataset = OfflineDataset(path)
    assert dataset.episode_returns().tolist() == pytest.approx([e.total_return for e in episodes])
    assert all(isinstance(a, str) for a in dataset.sample(8)["action"])
    with pytest.raises(TypeError, match=r"strings .* no tensor form"):
        dataset.sample(8, torch=True)
    assert np.asarray(data["rewards"]).dtype == np.float64
