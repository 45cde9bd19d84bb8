"""MultiAgentToSingleAgent: a PettingZoo game as a single-agent Gymnasium env."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

pytest.importorskip("pettingzoo")
from pettingzoo import AECEnv

with warnings.catch_warnings():  # PettingZoo 1.27 deprecates importing game modules directly
    warnings.simplefilter("ignore", DeprecationWarning)
    from pettingzoo.classic import connect_four_v3, rps_v2, tictactoe_v3

from rlbench_suite.policies import RandomPolicy
from rlbench_suite.wrappers.multiagent import MultiAgentToSingleAgent

GAMES = {
    "connect_four": connect_four_v3.env,
    "tictactoe": tictactoe_v3.env,
    "rps_parallel": rps_v2.parallel_env,
}


class Scripted:
    """Plays the first legal action of ``moves`` (a Policy), counting its calls."""

    def __init__(self, moves: list[int]) -> None:
        self.moves, self.calls, self.seeds = moves, 0, []

    def reset(self, seed: int | None = None) -> None:
        self.seeds.append(seed)

    def act(self, observation, info):
        self.calls += 1
        mask = info.get("action_mask")
        return next(m for m in self.moves if mask is None or mask[m])


@pytest.mark.parametrize("name", sorted(GAMES))
def test_check_env(name):
    env = MultiAgentToSingleAgent(GAMES[name]())
    check_env(env, skip_render_check=True)
    env.close()


def _rollout(env: MultiAgentToSingleAgent, seed: int, steps: int) -> list:
    sampler = RandomPolicy(env.action_space, seed=seed)
    obs, info = env.reset(seed=seed)
    trajectory = [(obs.tolist() if hasattr(obs, "tolist") else obs, info.get("action_mask"))]
    for _ in range(steps):
        action = sampler.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        trajectory.append((np.asarray(obs).tolist(), reward, terminated, truncated))
        if terminated or truncated:
            obs, info = env.reset()
    return trajectory


@pytest.mark.parametrize("name", sorted(GAMES))
def test_same_seed_same_trajectory(name):
    one = _rollout(MultiAgentToSingleAgent(GAMES[name]()), seed=7, steps=1000)
    two = _rollout(MultiAgentToSingleAgent(GAMES[name]()), seed=7, steps=1000)
    assert repr(one) == repr(two)
    assert sum(1 for step in one[1:] if step[2] or step[3]) > 5  # several episodes


def test_different_seeds_change_opponents():
    one = _rollout(MultiAgentToSingleAgent(connect_four_v3.env()), seed=1, steps=200)
    two = _rollout(MultiAgentToSingleAgent(connect_four_v3.env()), seed=2, steps=200)
    assert repr(one) != repr(two)


def test_spaces_unwrap_the_mask():
    env = MultiAgentToSingleAgent(connect_four_v3.env())
    assert env.observation_space.shape == (6, 7, 2)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].tolist() == [1] * 7


def test_controlling_second_player_opponent_moves_first():
    opponent = Scripted([3])
    env = MultiAgentToSingleAgent(connect_four_v3.env(), agent="player_1", opponents=opponent)
    obs, _ = env.reset(seed=0)
    assert opponent.calls == 1
    # channel 1 holds the opponent's pieces: one in the bottom row, column 3
    assert obs[:, :, 1].sum() == 1 and obs[5, 3, 1] == 1 and obs[:, :, 0].sum() == 0
    obs, reward, terminated, truncated, _info = env.step(0)
    assert opponent.calls == 2 and obs[4, 3, 1] == 1 and obs[5, 0, 0] == 1
    assert (reward, terminated, truncated) == (0.0, False, False)


def _play(env: MultiAgentToSingleAgent, moves: list[int]) -> list[tuple]:
    env.reset(seed=0)
    return [env.step(m)[1:4] for m in moves]


def test_tictactoe_win_on_own_move():
    # squares 0, 1, 2 form a line; the game ends on the opponent's turn
    env = MultiAgentToSingleAgent(tictactoe_v3.env(), opponents=Scripted([3, 4, 5]))
    assert _play(env, [0, 1, 2]) == [(0.0, False, False), (0.0, False, False), (1.0, True, False)]


def test_tictactoe_loss_on_opponent_move():
    env = MultiAgentToSingleAgent(tictactoe_v3.env(), opponents=Scripted([3, 4, 5]))
    assert _play(env, [0, 1, 8]) == [(0.0, False, False), (0.0, False, False), (-1.0, True, False)]


def test_tictactoe_second_player_wins_and_loses():
    env = MultiAgentToSingleAgent(
        tictactoe_v3.env(), agent="player_2", opponents=Scripted([0, 1, 6, 7])
    )
    assert _play(env, [3, 4, 5]) == [(0.0, False, False), (0.0, False, False), (1.0, True, False)]
    env = MultiAgentToSingleAgent(
        tictactoe_v3.env(), agent="player_2", opponents=Scripted([0, 1, 2])
    )
    assert _play(env, [3, 4]) == [(0.0, False, False), (-1.0, True, False)]


def test_illegal_action_raises_with_legal_actions():
    env = MultiAgentToSingleAgent(
        tictactoe_v3.env(), opponents=Scripted([4, 5]), on_illegal="raise"
    )
    env.reset(seed=0)
    env.step(0)  # opponent answers 4
    with pytest.raises(ValueError, match=r"legal actions: \[1, 2, 3, 5, 6, 7, 8\]"):
        env.step(4)


def test_illegal_action_follows_the_games_rule_by_default():
    env = MultiAgentToSingleAgent(tictactoe_v3.env(), opponents=Scripted([4, 5]))
    env.reset(seed=0)
    env.step(0)  # opponent answers 4
    _, reward, terminated, truncated, _ = env.step(4)
    assert (reward, terminated, truncated) == (-1.0, True, False)  # PettingZoo: the mover loses
    with pytest.raises(ValueError, match="on_illegal must be 'env' or 'raise'"):
        MultiAgentToSingleAgent(tictactoe_v3.env(), on_illegal="ignore")


def test_invalid_actions_raise_value_error_naming_the_space():
    env = MultiAgentToSingleAgent(tictactoe_v3.env(), opponents=Scripted([4, 5]))
    env.reset(seed=0)
    legal = r"; legal actions: \[0, 1, 2, 3, 4, 5, 6, 7, 8\]"
    with pytest.raises(ValueError, match=r"invalid action array\(\[0, 1\]\) for the action "):
        env.step(np.array([0, 1]))
    with pytest.raises(
        ValueError, match=r"invalid action 'x' for the action space Discrete\(9\)" + legal
    ):
        env.step("x")
    rps = MultiAgentToSingleAgent(rps_v2.parallel_env(), opponents=Scripted([1]))
    rps.reset(seed=0)
    with pytest.raises(ValueError, match=r"^invalid action 5 for the action space Discrete\(3\)$"):
        rps.step(5)
    # numpy integer scalars and 0-d arrays are fine; the failed calls changed nothing
    assert env.step(np.int32(0))[1:4] == (0.0, False, False)
    assert env.step(np.array(1, dtype=np.uint8))[1:4] == (0.0, False, False)
    assert rps.step(np.array(0))[1] == -1.0  # rock loses to paper


def test_step_after_end_raises():
    env = MultiAgentToSingleAgent(tictactoe_v3.env(), opponents=Scripted([3, 4, 5]))
    _play(env, [0, 1, 2])
    with pytest.raises(RuntimeError, match="reset"):
        env.step(6)


def test_opponents_as_dict_policy_and_callable():
    by_dict = Scripted([8, 7, 6])
    env = MultiAgentToSingleAgent(tictactoe_v3.env(), opponents={"player_2": by_dict})
    env.reset(seed=3)
    env.step(0)
    assert by_dict.calls == 1 and by_dict.seeds == [4]  # seed + 1 for the first opponent

    calls = []

    def first_legal(observation, info):
        calls.append(observation.shape)
        return int(np.flatnonzero(info["action_mask"])[0])

    env = MultiAgentToSingleAgent(tictactoe_v3.env(), opponents=first_legal)
    env.reset(seed=0)
    obs, *_ = env.step(4)
    assert calls == [(3, 3, 2)] and obs[0, 0, 1] == 1  # the opponent took square 0

    env = MultiAgentToSingleAgent(rps_v2.parallel_env(), opponents=Scripted([1]))
    env.reset(seed=0)
    obs, reward, *_ = env.step(0)  # rock loses to paper
    assert obs == 1 and reward == -1.0


def test_bad_agent_and_opponent_names():
    with pytest.raises(ValueError, match="possible agents"):
        MultiAgentToSingleAgent(tictactoe_v3.env(), agent="player_9")
    with pytest.raises(ValueError, match="not opponents"):
        MultiAgentToSingleAgent(tictactoe_v3.env(), opponents={"player_1": Scripted([0])})
    with pytest.raises(TypeError, match="PettingZoo"):
        MultiAgentToSingleAgent(object())


def test_rps_parallel_episode_length_and_render():
    env = MultiAgentToSingleAgent(rps_v2.parallel_env(max_cycles=5, render_mode="rgb_array"))
    env.reset(seed=0)
    flags = [env.step(0)[3] for _ in range(5)]
    assert flags == [False] * 4 + [True]
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.ndim == 3
    env.close()


class Tally(AECEnv):
    """Three agents move in turn for ``moves`` moves. Every move pays every agent a reward
    that depends on the mover, its action and the receiver; the last move adds a bonus."""

    metadata = {"name": "tally_v0"}
    possible_agents = ["p0", "p1", "p2"]

    def __init__(self, moves: int = 8) -> None:
        self.moves = moves

    def observation_space(self, agent):
        return spaces.Box(0.0, 100.0, (2,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(3)

    def observe(self, agent):
        return np.array([self.t, self.possible_agents.index(agent)], dtype=np.float32)

    def reset(self, seed=None, options=None):
        self.agents, self.t, self.agent_selection = list(self.possible_agents), 0, "p0"
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}

    def step(self, action):
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        mover = self.possible_agents.index(agent)
        self.t += 1
        for j, other in enumerate(self.possible_agents):
            self.rewards[other] = (int(action) + 1) * (j - mover) + 0.25 * (j == mover)
            if self.t == self.moves:
                self.rewards[other] += 10.0 * (j + 1)
                self.terminations[other] = True
        self.agent_selection = self.possible_agents[self.t % 3]
        self._accumulate_rewards()


def tally_opponent(observation, info):
    return int(observation[0]) % 3


def _tally_by_hand(me: str, moves: list[int]) -> tuple[list[float], float]:
    """Per own action, the summed ``rewards[me]`` of the PettingZoo steps until the next
    own action (or the end); and the episode total from ``last()``'s cumulative rewards."""
    env = Tally()
    env.reset(seed=0)
    mine = iter(moves)
    segments, pending, cumulative, acted = [], 0.0, 0.0, False
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, _ = env.last()
        if agent == me:
            cumulative += reward  # _cumulative_rewards[me] since its previous action
        if terminated or truncated:
            env.step(None)
            continue
        if agent == me:
            if acted:
                segments.append(pending)
                pending = 0.0
            acted = True
        env.step(next(mine) if agent == me else tally_opponent(obs, {}))
        pending += env.rewards[me]
    segments.append(pending)
    return segments, cumulative


@pytest.mark.parametrize("me", Tally.possible_agents)
def test_three_agents_rewards_sum_over_opponent_moves(me):
    moves = [2, 0, 1, 2]
    env = MultiAgentToSingleAgent(Tally(), agent=me, opponents=tally_opponent)
    env.reset(seed=0)
    rewards, flags = [], []
    for move in moves:
        _, reward, terminated, truncated, _ = env.step(move)
        rewards.append(reward)
        flags.append((terminated, truncated))
        if terminated or truncated:
            break
    segments, cumulative = _tally_by_hand(me, moves)
    assert rewards == pytest.approx(segments)
    assert sum(rewards) == pytest.approx(cumulative)
    assert flags[-1] == (True, False) and not any(map(any, flags[:-1]))
    # opponents' moves matter: own moves alone would pay (a + 1) * 0 + 0.25 each
    assert any(r != 0.25 for r in rewards[:-1])
