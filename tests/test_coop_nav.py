"""``rlbench/CoopNav-v0``: the PettingZoo game, its batched backend and the scripted team."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from gymnasium.vector import AutoresetMode
from pettingzoo.test import parallel_api_test

import rlbench_suite
from rlbench_suite.checks import check_card
from rlbench_suite.core.catalog import get_card
from rlbench_suite.envs.multiagent.coop_nav.agents import GreedyLandmarks
from rlbench_suite.envs.multiagent.coop_nav.env import CoopNavEnv
from rlbench_suite.envs.multiagent.coop_nav.vector import CoopNavVectorEnv

N = 3


def placed(agents: list[list[float]], landmarks: list[list[float]]) -> CoopNavEnv:
    """A game reset, then moved to the given agent and landmark positions."""
    env = CoopNavEnv(num_agents=len(agents))
    env.reset(seed=0)
    env.state.spawn(np.array([0]), np.array([agents + landmarks], dtype=float))
    return env


def team_episode(env: CoopNavEnv, seed: int) -> tuple[float, bool, int]:
    """One episode with every agent scripted: team return, success, collisions."""
    policies = {a: GreedyLandmarks(env.observation_space(a), env.action_space(a))
                for a in env.possible_agents}  # fmt: skip
    obs, infos = env.reset(seed=seed)
    team, collisions = 0.0, 0
    while env.agents:
        actions = {a: policies[a].act(obs[a], infos[a]) for a in env.agents}
        obs, _, _, _, infos = env.step(actions)
        team += infos["agent_0"]["team_reward"]
        collisions += sum(info["collisions"] for info in infos.values())
    return team, infos["agent_0"]["success"], collisions


def test_card_passes_rlbench_check() -> None:
    result = check_card(get_card("rlbench/CoopNav-v0"), steps=1000)
    assert result.ok, result.errors


def test_continuous_actions_pass_the_parallel_api_test() -> None:
    parallel_api_test(CoopNavEnv(continuous_actions=True, num_agents=4), num_cycles=60)


def test_same_seed_same_trajectory() -> None:
    runs = []
    for _ in range(2):
        env, rng = CoopNavEnv(), np.random.default_rng(3)
        obs, _ = env.reset(seed=11)
        trace = [obs["agent_1"]]
        while env.agents:
            obs, rewards, *_ = env.step({a: int(rng.integers(5)) for a in env.agents})
            trace += [obs["agent_1"], np.array([rewards["agent_2"]])]
        runs.append(np.concatenate(trace))
    np.testing.assert_array_equal(runs[0], runs[1])


def test_observation_layout() -> None:
    env = placed([[0.0, 0.0], [0.5, 0.0], [0.0, -0.5]], [[1.0, 1.0], [-1.0, 0.0], [0.2, 0.3]])
    obs, *_ = env.step({})  # no-ops: nobody moves
    expected = [0.0, 0.0, 0.5, 0.0, 0.5, 1.0, -1.5, 0.0, -0.3, 0.3, -0.5, 0.0, -0.5, -0.5]
    np.testing.assert_allclose(obs["agent_1"], expected, atol=1e-6)
    assert obs["agent_1"].dtype == np.float32 and obs["agent_1"].shape == (4 * N + 2,)


def test_agents_on_landmarks_cover_them() -> None:
    spots = [[-0.8, -0.8], [0.0, 0.8], [0.8, -0.2]]
    env = placed(spots, spots)
    for _ in range(env.max_cycles):
        _, rewards, _, truncations, infos = env.step({})
    assert all(r == pytest.approx(0.0) for r in rewards.values())
    assert infos["agent_0"] == {"covered": 3, "collisions": 0, "team_reward": 0.0, "success": True}
    assert all(truncations.values()) and not env.agents


def test_team_reward_is_minus_the_distances_to_the_nearest_agents() -> None:
    env = placed([[0.0, 0.0], [0.0, 0.5], [0.9, 0.9]], [[0.3, 0.0], [0.0, 0.9], [0.0, 0.65]])
    _, rewards, _, _, infos = env.step({})
    # landmarks 0.3 (agent 0), 0.4 and 0.15 (agent 1) away from their nearest agents
    assert infos["agent_2"]["team_reward"] == pytest.approx(-0.85)
    assert rewards["agent_2"] == pytest.approx(0.5 * -0.85)
    assert infos["agent_2"]["covered"] == 0 and not infos["agent_2"]["success"]


def test_collisions_are_penalised_and_push_apart() -> None:
    env = placed([[0.0, 0.0], [0.2, 0.0], [1.0, 1.0]], [[0.0, 0.0], [0.2, 0.0], [1.0, 1.0]])
    _, rewards, _, _, infos = env.step({})
    assert [infos[a]["collisions"] for a in env.agents] == [1, 1, 0]
    assert rewards["agent_0"] == pytest.approx(-0.5) and rewards["agent_2"] == pytest.approx(0)
    env.step({})
    assert env.state.pos[0, 0, 0] < 0.0 < 0.2 < env.state.pos[0, 1, 0]


def test_discrete_and_continuous_moves_agree() -> None:
    games = [CoopNavEnv(), CoopNavEnv(continuous_actions=True)]
    for env in games:
        env.reset(seed=5)
    pushes = np.eye(5, dtype=np.float32)
    for move in [2, 2, 4, 1, 3, 0]:
        a, b = (env.step({"agent_0": act})[0]["agent_0"]
                for env, act in zip(games, [move, pushes[move]], strict=True))  # fmt: skip
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_bad_actions_are_refused() -> None:
    env = CoopNavEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"integer in 0\.\.4"):
        env.step({"agent_0": 5})
    with pytest.raises(ValueError, match="not in the game"):
        env.step({"agent_9": 0})


def test_render_frame() -> None:
    env = CoopNavEnv(render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (320, 320, 3) and frame.dtype == np.uint8
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) == 3  # background, landmarks, agents


def test_gymnasium_view_plays_agent_0() -> None:
    env = gym.make("rlbench/CoopNav-v0")
    obs, _ = env.reset(seed=0)
    assert env.action_space == gym.spaces.Discrete(5) and obs.shape == (14,)
    assert len(rlbench_suite.make_multiagent("rlbench/CoopNav-v0").possible_agents) == N


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_batched_games_equal_single_games(mode: AutoresetMode) -> None:
    games, cycles = 3, 4
    venv = CoopNavVectorEnv(games, max_cycles=cycles, autoreset_mode=mode)
    envs = [CoopNavEnv(max_cycles=cycles) for _ in range(games)]
    obs, _ = venv.reset(seed=20)
    singles = [env.reset(seed=20 + g)[0] for g, env in enumerate(envs)]
    rng = np.random.default_rng(0)
    for _ in range(3 * cycles + 2):
        np.testing.assert_array_equal(obs, np.concatenate([np.stack(list(o.values()))
                                                           for o in singles]))  # fmt: skip
        actions = rng.integers(0, 5, games * N)
        obs, rewards, terminated, truncated, info = venv.step(actions)
        for g, env in enumerate(envs):
            block = slice(g * N, (g + 1) * N)
            if not env.agents:  # next-step autoreset: the vector env began a new game
                singles[g] = env.reset()[0]
                assert not truncated[block].any() and not rewards[block].any()
                continue
            single = env.step({a: actions[g * N + i] for i, a in enumerate(env.possible_agents)})
            np.testing.assert_array_equal(rewards[block], list(single[1].values()))
            assert list(truncated[block]) == list(single[3].values())
            source = info["final_info"] if mode == AutoresetMode.SAME_STEP and truncated[
                g * N] else info  # fmt: skip
            assert source["covered"][g * N] == single[4]["agent_0"]["covered"]
            singles[g] = single[0]
            if mode == AutoresetMode.SAME_STEP and not env.agents:
                final = np.stack(list(info["final_obs"][block]))
                np.testing.assert_array_equal(final, np.stack(list(single[0].values())))
                singles[g] = env.reset()[0]
        assert not terminated.any()


def test_batched_disabled_autoreset_and_reset_mask() -> None:
    venv = CoopNavVectorEnv(2, max_cycles=2, autoreset_mode=AutoresetMode.DISABLED)
    venv.reset(seed=0)
    for _ in range(2):
        _, _, _, truncated, _ = venv.step(np.zeros(2 * N, dtype=np.int64))
    assert truncated.all()
    mask = np.repeat([True, False], N)
    obs, _ = venv.reset(seed=[7, None], options={"reset_mask": mask})
    assert venv.cycles.tolist() == [0, 2]
    np.testing.assert_array_equal(obs[:N], np.stack(list(CoopNavEnv().reset(seed=7)[0].values())))
    with pytest.raises(ValueError, match="whole games"):
        venv.reset(options={"reset_mask": np.eye(1, 2 * N, dtype=bool)[0]})


def test_4096_games_step() -> None:
    venv = CoopNavVectorEnv(4096)
    obs, _ = venv.reset(seed=0)
    assert venv.num_envs == 4096 * N and obs.shape == (4096 * N, 4 * N + 2)
    for _ in range(30):
        obs, rewards, _, _, info = venv.step(venv.action_space.sample())
    assert np.isfinite(obs).all() and rewards.shape == (4096 * N,)
    assert venv.observation_space.contains(obs) and info["_covered"].all()


def test_scripted_team_covers_the_landmarks() -> None:
    env = CoopNavEnv()
    outcomes = [team_episode(env, seed) for seed in range(10_000, 10_050)]
    assert np.mean([success for _, success, _ in outcomes]) >= 0.8
    assert np.mean([team for team, _, _ in outcomes]) > -20.0


def test_the_scripted_agent_0_still_scores_the_cards_expert_reference() -> None:
    # the scripted policy acts in batches now; one by one through the Gymnasium view it
    # must play exactly as when the card's expert reference was measured
    card = get_card("rlbench/CoopNav-v0")
    env = gym.make(card.id)
    policy = GreedyLandmarks(env.observation_space, env.action_space)
    returns = []
    for seed in card.reference.expert.seeds:
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy.act(obs, {}))
            total, done = total + reward, terminated or truncated
        returns.append(total)
    assert np.mean(returns) == pytest.approx(card.reference.expert.value, abs=1e-6)


@pytest.mark.parametrize("continuous", [False, True])
def test_a_batch_of_scripted_agents_acts_as_each_would_alone(continuous: bool) -> None:
    venv = CoopNavVectorEnv(32, continuous_actions=continuous)
    policy = GreedyLandmarks(action_space=venv.single_action_space)
    obs, _ = venv.reset(seed=3)
    for _ in range(30):
        batch = policy.act_batch(obs)
        alone = np.array([policy.act(o, {}) for o in obs])
        assert np.array_equal(batch, alone)
        obs, *_ = venv.step(batch)


def test_the_trainers_batched_view_plays_the_gymnasium_view() -> None:
    from rlbench_suite.baselines.training_envs import make_vector_env
    from rlbench_suite.wrappers.agent_view_vector import AgentViewVectorEnv

    card = get_card("rlbench/CoopNav-v0")
    envs = make_vector_env(card, 4)  # agent_0 of 4 batched games, the partners in batches
    assert isinstance(envs, AgentViewVectorEnv) and envs.num_envs == 4
    singles = [gym.make(card.id) for _ in range(4)]
    obs, _ = envs.reset(seed=500)
    assert np.array_equal(obs, np.stack([e.reset(seed=500 + g)[0] for g, e in enumerate(singles)]))
    rng, ended = np.random.default_rng(1), 0
    for _ in range(80):  # three episodes, through two same-step autoresets
        actions = rng.integers(0, 5, 4)
        obs, rewards, terminated, truncated, info = envs.step(actions)
        for g, env in enumerate(singles):
            one, reward, _, one_truncated, one_info = env.step(int(actions[g]))
            assert reward == rewards[g] and one_truncated == truncated[g]
            if one_truncated:
                ended += 1
                assert np.array_equal(info["final_obs"][g], one)
                assert info["final_info"]["success"][g] == one_info["success"]
                one, _ = env.reset()  # each game goes on with its own generator
            assert np.array_equal(one, obs[g])
        assert not terminated.any()
    assert ended == 12
