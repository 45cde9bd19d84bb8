"""ParallelEnvToVectorEnv (PettingZoo Parallel -> Gymnasium VectorEnv) and VectorEnvToSB3."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

pytest.importorskip("pettingzoo")
from pettingzoo import ParallelEnv

with warnings.catch_warnings():  # PettingZoo 1.27 deprecates importing game modules directly
    warnings.simplefilter("ignore", DeprecationWarning)
    from pettingzoo.classic import rps_v2

from rlbench_suite.wrappers.pz_vector import ParallelEnvToVectorEnv
from rlbench_suite.wrappers.stats import STATS_KEY as EP

NEXT, SAME, DISABLED = AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED
AGENTS = ["a", "b", "c"]


class Staggered(ParallelEnv):
    """Three agents leaving at different times: ``a`` terminates at step 1, ``b`` is
    truncated at step 2, ``c`` terminates at step 3 (ending the episode). Observations are
    ``[t, agent index, noise drawn at reset]``; the reward is the action taken."""

    metadata = {"name": "staggered_v0"}

    def __init__(self, masked: bool = False, odd_space: bool = False) -> None:
        self.possible_agents = list(AGENTS)
        self.masked, self.odd_space = masked, odd_space
        box = spaces.Box(-1.0, 10.0, (3,), np.float32)
        mask = spaces.Box(0, 1, (3,), np.int8)
        self._obs_space = spaces.Dict(observation=box, action_mask=mask) if masked else box
        self.rng = np.random.default_rng()

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return spaces.Discrete(4 if self.odd_space and agent == "b" else 3)

    def _obs(self, agent):
        obs = np.array([self.t, AGENTS.index(agent), self.noise], dtype=np.float32)
        if self.masked:
            return {"observation": obs, "action_mask": np.array([1, 1, 0], dtype=np.int8)}
        return obs

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents, self.t = list(AGENTS), 0
        self.noise = float(self.rng.uniform())
        return {a: self._obs(a) for a in self.agents}, {a: {"t": 0} for a in self.agents}

    def step(self, actions):
        assert set(actions) == set(self.agents), f"actions for {set(actions)}, live {self.agents}"
        self.t += 1
        t = self.t
        obs = {a: self._obs(a) for a in self.agents}
        rewards = {a: float(actions[a]) for a in self.agents}
        term = {a: (a == "a" and t == 1) or (a == "c" and t == 3) for a in self.agents}
        trunc = {a: a == "b" and t == 2 for a in self.agents}
        infos = {a: {"t": t} for a in self.agents}
        self.agents = [a for a in self.agents if not (term[a] or trunc[a])]
        return obs, rewards, term, trunc, infos


def staggered(mode: AutoresetMode, num_envs: int = 1, **kwargs) -> ParallelEnvToVectorEnv:
    return ParallelEnvToVectorEnv(lambda: Staggered(**kwargs), num_envs, autoreset_mode=mode)


def rps(mode: AutoresetMode, num_envs: int = 2) -> ParallelEnvToVectorEnv:
    return ParallelEnvToVectorEnv(
        lambda: rps_v2.parallel_env(max_cycles=3), num_envs, autoreset_mode=mode
    )


ACTIONS = np.array([2, 1, 1])  # rewards 2, 1, 1 for a, b, c


def _first_three_steps(vec: ParallelEnvToVectorEnv):
    vec.reset(seed=0)
    return [vec.step(ACTIONS) for _ in range(3)]


# -- spaces, slots, errors --------------------------------------------------------------------


def test_slots_and_batched_spaces():
    vec = staggered(NEXT, num_envs=2, masked=True)
    assert vec.num_envs == 6 and vec.num_sub_envs == 2
    assert vec.agent_slots == [(0, "a"), (0, "b"), (0, "c"), (1, "a"), (1, "b"), (1, "c")]
    assert vec.single_observation_space == spaces.Box(-1.0, 10.0, (3,), np.float32)
    assert vec.observation_space.shape == (6, 3)
    assert vec.action_space == spaces.MultiDiscrete([3] * 6)
    assert vec.metadata["autoreset_mode"] == NEXT
    obs, info = vec.reset(seed=0)
    assert vec.observation_space.contains(obs)
    assert info["action_mask"].shape == (6, 3) and info["action_mask"].dtype == np.int8
    assert info["_action_mask"].all() and info["active"].all()
    vec.step(np.zeros(6, dtype=np.int64))
    _, _, _, _, info = vec.step(np.zeros(6, dtype=np.int64))
    # slot a has left: no mask from the env (all ones, so samplers still work), inactive
    assert info["_action_mask"].tolist() == [False, True, True] * 2
    assert info["action_mask"][0].tolist() == [1, 1, 1]
    assert info["action_mask"][1].tolist() == [1, 1, 0]
    assert info["active"].tolist() == [False, True, True] * 2


def test_different_spaces_are_refused():
    with pytest.raises(ValueError, match=r"action space of 'a' is Discrete\(3\).*'b' is Discrete"):
        staggered(NEXT, odd_space=True)


def test_rps_spaces():
    vec = rps(NEXT)
    assert vec.single_observation_space == spaces.Discrete(4)
    assert vec.observation_space == spaces.MultiDiscrete([4] * 4)
    obs, _ = vec.reset(seed=0)
    assert obs.tolist() == [3, 3, 3, 3]


# -- black death and the three autoreset modes ------------------------------------------------


def _check_black_death_common(steps):
    (_, r1, te1, tr1, i1), (o2, r2, te2, tr2, i2), (_, r3, te3, tr3, i3) = steps
    assert r1.tolist() == [2, 1, 1] and te1.tolist() == [True, False, False] and not tr1.any()
    assert i1[EP]["l"].tolist() == [1, 0, 0] and i1[f"_{EP}"].tolist() == [1, 0, 0]
    assert i1[EP]["r"].tolist() == [2, 0, 0] and "episode" not in i1  # left to Gymnasium
    # a is gone: zero obs, reward 0, no flags, inactive; its action is ignored
    assert o2[0].tolist() == [0, 0, 0] and r2.tolist() == [0, 1, 1]
    assert te2.tolist() == [False] * 3 and tr2.tolist() == [False, True, False]
    assert not i2["active"][0] and i2["active"][2]
    assert i2[EP]["l"].tolist() == [0, 2, 0]
    assert r3.tolist() == [0, 0, 1] and te3.tolist() == [False, False, True] and not tr3.any()
    assert i3[EP]["l"].tolist() == [0, 0, 3] and i3[EP]["r"].tolist() == [0, 0, 3]


def test_black_death_next_step():
    vec = staggered(NEXT)
    steps = _first_three_steps(vec)
    _check_black_death_common(steps)
    (o1, *_), (o2, _, _, _, i2), (o3, _, _, _, i3) = steps
    assert o1[0, :2].tolist() == [1, 0] and o2[1, :2].tolist() == [2, 1]
    assert o3[2, :2].tolist() == [3, 2] and o3[:2].tolist() == [[0, 0, 0]] * 2
    assert i2["active"].tolist() == [False, True, True]  # b's last obs is real: active
    assert "final_obs" not in i3 and vec.ended_slots.all()
    obs, rewards, term, trunc, info = vec.step(ACTIONS)  # the autoreset step
    assert obs[:, :2].tolist() == [[0, 0], [0, 1], [0, 2]]
    assert not rewards.any() and not term.any() and not trunc.any()
    assert info["active"].all() and info["t"].tolist() == [0, 0, 0] and EP not in info
    _, _, term, _, info = vec.step(ACTIONS)
    assert term.tolist() == [True, False, False] and info[EP]["l"][0] == 1


def test_black_death_same_step():
    vec = staggered(SAME)
    steps = _first_three_steps(vec)
    _check_black_death_common(steps)
    (o1, _, _, _, i1), (o2, _, _, _, i2), (o3, _, _, _, i3) = steps
    # a leaves a running sub-env: zero obs now, its last obs in final_obs
    assert o1[0].tolist() == [0, 0, 0] and i1["_final_obs"].tolist() == [True, False, False]
    assert i1["final_obs"][0][:2].tolist() == [1, 0] and i1["final_info"]["t"][0] == 1
    assert i1["active"].tolist() == [False, True, True]
    assert i2["final_obs"][1][:2].tolist() == [2, 1] and o2[1].tolist() == [0, 0, 0]
    assert i2["active"].tolist() == [False, False, True]  # b's returned obs is a placeholder
    # c ends the sub-env: it is reset in the same step
    assert o3[:, :2].tolist() == [[0, 0], [0, 1], [0, 2]]
    assert i3["_final_obs"].tolist() == [False, False, True]
    assert i3["final_obs"][2][:2].tolist() == [3, 2] and i3["final_info"]["t"][2] == 3
    assert i3["active"].all() and i3["t"].tolist() == [0, 0, 0]
    assert not vec.ended_slots.any()
    obs, rewards, term, _, _ = vec.step(ACTIONS)
    assert obs[1:, :2].tolist() == [[1, 1], [1, 2]] and rewards.tolist() == [2, 1, 1]
    assert term.tolist() == [True, False, False]


def test_black_death_disabled():
    vec = staggered(DISABLED, num_envs=2)
    vec.reset(seed=0)
    acts = np.tile(ACTIONS, 2)
    for _ in range(3):
        obs, _, term, _, info = vec.step(acts)
    assert term.tolist() == [False, False, True] * 2 and "final_obs" not in info
    assert obs[2, :2].tolist() == [3, 2] and vec.ended_slots.all()
    with pytest.raises(RuntimeError, match="reset_mask"):
        vec.step(acts)
    with pytest.raises(ValueError, match=r"splits sub-env 0: slots \[0, 1, 2\]"):
        vec.reset(options={"reset_mask": term})
    mask = np.array([True] * 3 + [False] * 3)
    obs, info = vec.reset(options={"reset_mask": mask})
    assert obs[:3, :2].tolist() == [[0, 0], [0, 1], [0, 2]]
    assert obs[5, :2].tolist() == [3, 2]  # not reset: its last observation stays
    assert info["_t"].tolist() == mask.tolist()
    assert vec.ended_slots.tolist() == [False] * 3 + [True] * 3
    vec.reset(options={"reset_mask": vec.ended_slots})
    _, rewards, term, _, _ = vec.step(acts)
    assert term.tolist() == [True, False, False] * 2 and rewards.tolist() == [2, 1, 1] * 2


@pytest.mark.parametrize("mode", [NEXT, SAME, DISABLED])
def test_rps_modes(mode):
    vec = rps(mode)
    vec.reset(seed=0)
    moves = np.array([0, 1, 2, 2])  # env 0: rock vs paper; env 1: a draw
    for t in range(3):
        obs, rewards, term, trunc, info = vec.step(moves)
        assert rewards.tolist() == [-1, 1, 0, 0] and not term.any()
        assert trunc.tolist() == [t == 2] * 4
    assert info[EP]["l"].tolist() == [3] * 4
    assert info[EP]["r"].tolist() == [-3, 3, 0, 0]
    if mode == SAME:
        assert obs.tolist() == [3] * 4  # the reset observation ("no move yet")
        assert [int(o) for o in info["final_obs"]] == [1, 0, 2, 2]  # the opponent's last move
        obs, rewards, _, trunc, _ = vec.step(moves)
        assert obs.tolist() == [1, 0, 2, 2] and rewards.tolist() == [-1, 1, 0, 0]
        return
    assert obs.tolist() == [1, 0, 2, 2] and "final_obs" not in info
    if mode == DISABLED:
        with pytest.raises(RuntimeError, match="DISABLED"):
            vec.step(moves)
        with pytest.raises(ValueError, match="splits"):
            vec.reset(options={"reset_mask": np.array([True, False, False, False])})
        obs, _ = vec.reset(options={"reset_mask": np.array([False, False, True, True])})
        assert obs.tolist() == [1, 0, 3, 3]
        obs, _ = vec.reset(options={"reset_mask": vec.ended_slots})
    else:
        obs, rewards, term, trunc, info = vec.step(moves)
        assert not rewards.any() and not trunc.any() and EP not in info
    assert obs.tolist() == [3] * 4
    obs, rewards, _, trunc, _ = vec.step(moves)
    assert obs.tolist() == [1, 0, 2, 2] and rewards.tolist() == [-1, 1, 0, 0]


# -- seeding ----------------------------------------------------------------------------------


def _trajectory(vec: ParallelEnvToVectorEnv, seed: int, steps: int = 60) -> list:
    vec.action_space.seed(seed)
    out = [vec.reset(seed=seed)[0].tolist()]
    for _ in range(steps):
        obs, rewards, term, trunc, _ = vec.step(vec.action_space.sample())
        out.append((obs.tolist(), rewards.tolist(), term.tolist(), trunc.tolist()))
    return out


@pytest.mark.parametrize("mode", [NEXT, SAME])
def test_same_seed_same_trajectory(mode):
    assert _trajectory(staggered(mode, 2), 3) == _trajectory(staggered(mode, 2), 3)
    assert _trajectory(staggered(mode, 2), 3) != _trajectory(staggered(mode, 2), 4)
    assert _trajectory(rps(mode), 3) == _trajectory(rps(mode), 3)


def test_sub_env_i_is_seeded_with_seed_plus_i():
    obs5, _ = staggered(NEXT, 2).reset(seed=5)
    obs4, _ = staggered(NEXT, 2).reset(seed=4)
    assert obs5[0, 2] == obs4[3, 2] and obs5[0, 2] != obs5[3, 2]


def test_seed_list_has_one_seed_per_slot():
    obs4, _ = staggered(NEXT, 2).reset(seed=4)
    obs5, _ = staggered(NEXT, 2).reset(seed=5)
    obs, _ = staggered(NEXT, 2).reset(seed=[4, 4, 4, 5, 5, 5])
    assert obs.tolist() == [*obs4[:3].tolist(), *obs5[:3].tolist()]
    obs, _ = staggered(NEXT, 2).reset(seed=np.array([5, 5, 5, None, None, None]))
    assert obs[:3].tolist() == obs5[:3].tolist()
    with pytest.raises(ValueError, match=r"one seed per slot \(6 slots: 2 sub-env.*got 2"):
        staggered(NEXT, 2).reset(seed=[4, 5])
    with pytest.raises(ValueError, match=r"slots \[3, 4, 5\] share sub-environment 1.*\[5, 6, 5\]"):
        staggered(NEXT, 2).reset(seed=[4, 4, 4, 5, 6, 5])
