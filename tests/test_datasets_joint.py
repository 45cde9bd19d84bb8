"""Joint multi-agent data (CoopNav): every agent's observation, action and reward per step."""

from __future__ import annotations

import numpy as np
import pytest

from rlbench_suite.core.dataset_cards import get_dataset_card
from rlbench_suite.datasets.builder import build, measure_returns
from rlbench_suite.datasets.joint import joint_play, joint_policy, make_joint_env
from rlbench_suite.datasets.storage import content_hash, read_episodes, write_episodes

ENV_ID = "rlbench/CoopNav-v0"
EXPERT = "module:rlbench_suite.envs.multiagent.coop_nav.agents:GreedyLandmarks"


@pytest.fixture(scope="module")
def env():
    env = make_joint_env(ENV_ID)
    yield env
    env.close()


def test_a_joint_episode_holds_every_agent_and_round_trips(env, tmp_path) -> None:
    policy = joint_policy(env, EXPERT)
    episode = joint_play(env, policy, 1_234, epsilon=0.5)
    agents = list(env.possible_agents)
    assert sorted(episode.observations) == sorted(episode.actions) == sorted(agents)
    steps = len(episode)
    assert steps == 25 and episode.truncations[-1] and not episode.terminations.any()
    for agent in agents:
        assert episode.observations[agent].shape == (steps + 1, 14)
        assert episode.actions[agent].shape == (steps,)
        assert episode.rewards[agent].shape == (steps,)
    returns = [episode.rewards[a].sum() for a in agents]
    assert episode.total_return == pytest.approx(np.mean(returns))
    # seeded: the same seed gives the same episode, another seed another
    again = joint_play(env, policy, 1_234, epsilon=0.5)
    assert content_hash([again]) == content_hash([episode])
    assert content_hash([joint_play(env, policy, 1_235, epsilon=0.5)]) != content_hash([episode])
    path = tmp_path / "joint.hdf5"
    assert write_episodes(path, [episode]) == (1, steps)
    (read,) = read_episodes(path)
    assert content_hash([read]) == content_hash([episode])
    assert read.rewards["agent_2"].tolist() == episode.rewards["agent_2"].tolist()


def test_epsilon_replaces_each_agents_actions_on_its_own(env) -> None:
    policy = joint_policy(env, EXPERT)
    greedy = joint_play(env, policy, 77)
    noisy = joint_play(env, policy, 77, epsilon=0.5)
    assert greedy.observations["agent_0"][0].tolist() == noisy.observations["agent_0"][0].tolist()
    differs = [(greedy.actions[a] != noisy.actions[a]).any() for a in env.possible_agents]
    assert all(differs)
    assert noisy.total_return < greedy.total_return


def test_coop_nav_cards_use_team_references_and_rebuild_to_their_hash(tmp_path) -> None:
    card = get_dataset_card("rlbench/CoopNav-random-v0")
    random, expert = card.reference.random, card.reference.expert
    assert random.value < -20 < expert.value  # team scale, not the card's agent_0 -12.4/-7.9
    seeds = random.seeds[:5]
    assert measure_returns(ENV_ID, "random", seeds).mean() < measure_returns(
        ENV_ID, EXPERT, seeds).mean()  # fmt: skip
    out = build(card, tmp_path / "coop", expect_content=card.content_sha256)
    assert (out.episodes, out.steps) == (card.episodes, card.steps)
    medium = get_dataset_card("rlbench/CoopNav-medium-v0")
    assert 20 < medium.normalized_score(medium.mean_return) < 45


def test_joint_data_reads_back_per_agent_with_transitions_inside_episodes(env, tmp_path) -> None:
    from rlbench_suite.datasets.loader import OfflineDataset

    policy = joint_policy(env, EXPERT)
    episodes = [joint_play(env, policy, s, epsilon=0.3) for s in (11, 12)]
    path = tmp_path / "joint.hdf5"
    write_episodes(path, episodes)
    dataset = OfflineDataset(path)
    data = dataset.get_dataset()
    agents = sorted(env.possible_agents)
    n = len(episodes[0])
    for key in ("observations", "actions", "rewards", "next_observations"):
        assert sorted(data[key]) == agents
    for agent in agents:
        obs = data["observations"][agent]
        assert obs.shape == (2 * n, 14)
        assert obs[:n].tolist() == episodes[0].observations[agent][:-1].tolist()
        assert data["next_observations"][agent][n - 1].tolist() == (
            episodes[0].observations[agent][-1].tolist())  # not episode 1's first
        assert data["actions"][agent][n:].tolist() == episodes[1].actions[agent].tolist()
    assert dataset.episode_returns() == pytest.approx([e.total_return for e in episodes])
    batch = dataset.sample(16, torch=True)
    assert sorted(batch["obs"]) == agents and tuple(batch["obs"][agents[0]].shape) == (16, 14)
    assert dataset.episode(1).actions[agents[2]].tolist() == episodes[1].actions[agents[2]].tolist()
    view = dataset.episode(1)
    assert len(view) == len(episodes[1]) == n  # steps, not the number of agents
    assert view.total_return == pytest.approx(episodes[1].total_return)
    assert view.terminations.shape == view.truncations.shape == (n,)  # the team's flags
    detached = view.copy()
    detached.actions[agents[0]][0] = (view.actions[agents[0]][0] + 1) % 5
    assert detached.actions[agents[0]][0] != dataset.episode(1).actions[agents[0]][0]


def test_recover_environment_gives_the_parallel_env_that_replays_joint_data(env) -> None:
    from rlbench_suite.datasets import recover_environment

    episode = joint_play(env, joint_policy(env, EXPERT), 4_321, epsilon=0.3)
    recovered = recover_environment("rlbench/CoopNav-medium-v0")
    try:
        observations, _ = recovered.reset(seed=4_321)
        for t in range(len(episode)):
            for agent in recovered.possible_agents:
                assert observations[agent].tolist() == (
                    episode.observations[agent][t].tolist())  # fmt: skip
            actions = {a: episode.actions[a][t] for a in recovered.possible_agents}
            observations, rewards, *_ = recovered.step(actions)
            assert rewards == {a: episode.rewards[a][t] for a in recovered.possible_agents}
    finally:
        recovered.close()
