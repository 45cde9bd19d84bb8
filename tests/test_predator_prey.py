"""PredatorPrey: capture rule, obstacles, observations, scripted agents, errors."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rlbench_suite
from rlbench_suite.envs.multiagent.predator_prey.env import PredatorPreyEnv, _connected
from rlbench_suite.policies import make_policy

SCRIPTED = "module:rlbench_suite.envs.multiagent.predator_prey.agents:PredatorPreyScripted"


def _open_field(**kwargs) -> PredatorPreyEnv:
    env = PredatorPreyEnv(obstacle_density=0.0, **kwargs)
    env.reset(seed=0)
    return env


def test_prey_is_caught_only_when_enough_predators_surround_it():
    env = _open_field(num_predators=3, capture_size=3)
    env.position["prey_0"] = np.array([5, 5])
    for agent, cell in zip(env.predators, ([4, 5], [6, 5], [1, 1]), strict=True):
        env.position[agent] = np.array(cell)
    stay = {a: 0 for a in env.agents}
    _, rewards, terminated, _, infos = env.step(stay)
    assert not any(terminated.values()) and rewards["predator_0"] == pytest.approx(-0.01)
    env.position["predator_2"] = np.array([5, 4])  # now three predators are adjacent
    _, rewards, terminated, _, infos = env.step(stay)
    assert all(terminated.values()) and env.agents == []
    assert rewards["predator_0"] == pytest.approx(10 - 0.01) and rewards["prey_0"] == -10
    assert infos["predator_0"] == {"caught": 1, "success": True}


def test_moves_into_walls_and_obstacles_stay_put():
    env = _open_field()
    env.position["predator_0"] = np.array([1, 1])  # the top-left free cell
    env.step({a: (1 if a == "predator_0" else 0) for a in env.agents})  # up: the wall
    assert env.position["predator_0"].tolist() == [1, 1]
    env.blocked[1, 2] = True
    env.step({a: (4 if a == "predator_0" else 0) for a in env.agents})  # right: obstacle
    assert env.position["predator_0"].tolist() == [1, 1]
    env.step({a: (2 if a == "predator_0" else 0) for a in env.agents})  # down: free
    assert env.position["predator_0"].tolist() == [2, 1]


def test_obstacles_never_cut_the_grid_apart():
    env = PredatorPreyEnv(obstacle_density=0.3)
    for seed in range(30):
        env.reset(seed=seed)
        free = np.argwhere(~env.blocked)
        assert _connected(env.blocked, free)
        cells = {tuple(p) for p in env.position.values()}
        assert len(cells) == len(env.possible_agents)  # distinct start cells
        assert all(not env.blocked[c] for c in cells)


def test_observation_window_shows_the_prey_where_it_is():
    env = _open_field(view=2)
    env.position["predator_0"] = np.array([5, 5])
    env.position["prey_0"] = np.array([4, 7])  # one up, two right
    obs = env._observations()["predator_0"]
    _, predators, prey = obs[:75].reshape(3, 5, 5)
    assert prey[1, 4] == 1 and prey.sum() == 1
    assert predators[2, 2] >= 1  # itself, in the centre
    assert obs[-1] == 1.0 and env._observations()["prey_0"][-1] == 0.0


def test_scripted_predators_beat_a_random_one():
    def success_rate(policy: str) -> float:
        env = gym.make("rlbench/PredatorPrey-v0")  # predator_0 with scripted others
        agent = make_policy(policy, env)
        wins = 0
        for seed in range(40):
            obs, info = env.reset(seed=seed)
            agent.reset(seed)
            while True:
                obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
                if terminated or truncated:
                    break
            wins += info["rlbench_episode"]["success"]
        return wins / 40

    assert success_rate(SCRIPTED) >= success_rate("random") + 0.2


def test_bad_input_gets_clear_errors():
    with pytest.raises(ValueError, match=r"capture_size in 1\.\.5"):
        PredatorPreyEnv(capture_size=0)
    env = _open_field()
    with pytest.raises(ValueError, match=r"int in 0\.\.4"):
        env.step({"predator_0": 7})
    with pytest.raises(ValueError, match="not in the game"):
        env.step({"wolf": 1})
    game = rlbench_suite.make_multiagent("rlbench/PredatorPrey-v0", "aec")
    assert game.possible_agents == ["predator_0", "predator_1", "predator_2", "prey_0"]


def test_rgb_array():
    env = PredatorPreyEnv(render_mode="rgb_array")
    env.reset(seed=1)
    frame = env.render()
    assert frame.shape == (12 * 16, 12 * 16, 3) and frame.dtype == np.uint8 and frame.std() > 5
