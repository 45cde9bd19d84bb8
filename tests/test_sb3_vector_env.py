"""VectorEnvToSB3 on PettingZoo vector envs: infos, episode statistics, action masks."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

pytest.importorskip("stable_baselines3")
pytest.importorskip("pettingzoo")
from pettingzoo import ParallelEnv

with warnings.catch_warnings():  # PettingZoo 1.27 deprecates importing game modules directly
    warnings.simplefilter("ignore", DeprecationWarning)
    from pettingzoo.classic import rps_v2

import rlbench_suite  # noqa: F401  (registers the ids)
from rlbench_suite.wrappers.pz_vector import ParallelEnvToVectorEnv
from rlbench_suite.wrappers.sb3 import VectorEnvToSB3, pettingzoo_to_sb3
from rlbench_suite.wrappers.stats import STATS_KEY as EP
from tests.conftest import learn_ppo
from tests.test_pz_vector import ACTIONS, AGENTS, DISABLED, NEXT, SAME, Staggered, rps, staggered


def test_refuses_next_step():
    with pytest.raises(ValueError, match=r"autoreset_mode=AutoresetMode.SAME_STEP"):
        VectorEnvToSB3(rps(NEXT))
    with pytest.raises(ValueError, match="SAME_STEP"):
        VectorEnvToSB3(rps(DISABLED))
    assert pettingzoo_to_sb3(lambda: rps_v2.parallel_env(), num_envs=2).num_envs == 4


def test_infos_and_reset_infos():
    env = VectorEnvToSB3(staggered(SAME))
    env.seed(0)
    obs = env.reset()
    assert obs.shape == (3, 3) and env.reset_infos[0] == {"t": 0, "active": True}
    _, rewards, dones, infos = env.step(ACTIONS)
    assert dones.tolist() == [True, False, False] and rewards.dtype == np.float32
    assert infos[0]["terminal_observation"][:2].tolist() == [1, 0]
    assert infos[0]["episode"] == {"r": 2.0, "l": 1} and "episode" not in infos[1]
    assert infos[0][EP] == {"r": 2.0, "l": 1} and infos[0]["t"] == 1  # the terminal info
    assert infos[0]["TimeLimit.truncated"] is False
    assert env.reset_infos[0] == {"active": False}  # a left: its slot is padding now
    _, _, dones, infos = env.step(ACTIONS)
    assert dones.tolist() == [False, True, False] and infos[1]["TimeLimit.truncated"] is True
    _, _, dones, infos = env.step(ACTIONS)
    assert dones.tolist() == [False, False, True] and infos[2]["t"] == 3
    assert infos[2]["episode"] == {"r": 3.0, "l": 3}
    # the sub-env was reset in this step: the new episode's info
    assert env.reset_infos[2] == {"t": 0, "active": True}
    assert env.get_attr("possible_agents", indices=[2]) == [AGENTS]
    assert env.env_method("action_space", "a") == [spaces.Discrete(3)] * 3
    assert env.env_is_wrapped(Staggered) == [True] * 3
    env.set_attr("flag", 1, indices=[0])
    assert env.get_attr("flag") == [1, 1, 1]  # the three slots share one sub-env
    env.close()


def _doubled_cartpole() -> gym.Env:
    """The suite's CartPole (its own statistics) under Gymnasium's, which sees 2x rewards."""
    env = gym.wrappers.TransformReward(gym.make("rlbench/CartPole-v1"), lambda r: 2 * r)
    return gym.wrappers.RecordEpisodeStatistics(env)


def _first_ending(env: VectorEnvToSB3) -> dict:
    env.seed(1)
    env.reset()
    for _ in range(300):
        _, _, dones, infos = env.step(np.zeros(env.num_envs, dtype=np.int64))
        if dones.any():
            return infos[int(np.flatnonzero(dones)[0])]
    pytest.fail("no episode ended")


def test_episode_statistics_sources():
    # the terminal step's final_info[STATS_KEY] wins over Gymnasium's "episode" beside it
    sync = gym.vector.SyncVectorEnv([_doubled_cartpole] * 2, autoreset_mode=SAME)
    info = _first_ending(VectorEnvToSB3(sync))
    assert info["episode"]["r"] == info["episode"]["l"] == info[EP]["l"] > 0
    assert set(info["episode"]) == {"r", "l"} and "is_success" in info
    # without the suite's statistics: Gymnasium's
    plain = [lambda: gym.wrappers.RecordEpisodeStatistics(gym.make("CartPole-v1"))] * 2
    info = _first_ending(VectorEnvToSB3(gym.vector.SyncVectorEnv(plain, autoreset_mode=SAME)))
    assert info["episode"]["l"] > 0 and EP not in info
    # vector-level: ParallelEnvToVectorEnv's STATS_KEY (no "t": it wins over Gymnasium's
    # vector RecordEpisodeStatistics, which now stacks on top)
    venv = gym.wrappers.vector.RecordEpisodeStatistics(rps(SAME))
    env = VectorEnvToSB3(venv)
    env.reset()
    for _ in range(3):
        _, _, dones, infos = env.step(np.array([0, 1, 2, 2]))
    assert dones.all() and [i["episode"] for i in infos] == [
        {"r": r, "l": 3} for r in (-3.0, 3.0, 0.0, 0.0)
    ]


def test_action_masks():
    env = VectorEnvToSB3(staggered(SAME, masked=True))
    env.reset()
    assert env.has_attr("action_masks")
    masks = env.action_masks()
    assert masks.dtype == np.bool_ and masks.tolist() == [[True, True, False]] * 3
    listed = env.env_method("action_masks", indices=[1, 2])
    assert [m.tolist() for m in listed] == [[True, True, False]] * 2
    env.step(np.array([1, 1, 1]))  # a leaves: no mask for its slot, all legal
    assert env.action_masks().tolist() == [[True] * 3, [True, True, False], [True, True, False]]
    assert env.get_attr("action_masks")[0]().tolist() == [True] * 3
    unmasked = VectorEnvToSB3(rps(SAME))
    unmasked.reset()
    assert unmasked.action_masks().shape == (4, 3) and unmasked.action_masks().all()


class MaskedRace(ParallelEnv):
    """Two agents, 8 steps; each step a fresh random half of the 4 actions is legal and
    taking a masked action fails an assertion. ``y`` leaves after step 3 (black death)."""

    metadata = {"name": "masked_race_v0"}
    possible_agents = ["x", "y"]

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)
        self.steps = 0

    def observation_space(self, agent):
        return spaces.Dict(
            observation=spaces.Box(0.0, 1.0, (5,), np.float32),
            action_mask=spaces.Box(0, 1, (4,), np.int8),
        )

    def action_space(self, agent):
        return spaces.Discrete(4)

    def _observe(self) -> dict:
        self.masks = {}
        out = {}
        for agent in self.agents:
            mask = np.zeros(4, dtype=np.int8)
            mask[self.rng.choice(4, size=2, replace=False)] = 1
            self.masks[agent] = mask
            obs = np.append(mask, self.t / 8).astype(np.float32)
            out[agent] = {"observation": obs, "action_mask": mask}
        return out

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents, self.t = list(self.possible_agents), 0
        return self._observe(), {a: {} for a in self.agents}

    def step(self, actions):
        assert set(actions) == set(self.agents)
        for agent, action in actions.items():
            assert self.masks[agent][action], f"masked action {action} for {agent}"
        self.steps += 1
        self.t += 1
        rewards = {a: float(actions[a] == np.flatnonzero(self.masks[a])[-1]) for a in actions}
        term = {a: a == "y" and self.t == 3 for a in actions}
        trunc = {a: self.t == 8 for a in actions}
        self.agents = [a for a in self.agents if not (term[a] or trunc[a])]
        obs = self._observe()
        return obs, rewards, term, trunc, {a: {} for a in actions}


@pytest.mark.slow
def test_maskable_ppo_never_takes_a_masked_action():
    torch = pytest.importorskip("torch")
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks

    torch.set_num_threads(1)
    env = pettingzoo_to_sb3(MaskedRace, num_envs=2)
    env.reset()
    masks = get_action_masks(env)
    assert masks.shape == (4, 4) and masks.sum(axis=1).tolist() == [2] * 4
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu"
    )
    model.learn(1000)
    assert model.num_timesteps >= 1000 and len(model.ep_info_buffer) > 0
    assert sum(sub.steps for sub in env.venv.envs) >= 1000 // 4


@pytest.mark.slow
def test_ppo_learns_on_rps():
    max_cycles = 10
    venv = ParallelEnvToVectorEnv(
        lambda: rps_v2.parallel_env(max_cycles=max_cycles), 2, autoreset_mode=SAME
    )
    model = learn_ppo(venv, 2000)
    assert model.num_timesteps >= 2000
    assert len(model.ep_info_buffer) > 0
    assert {ep["l"] for ep in model.ep_info_buffer} == {max_cycles}
    model.env.close()


def test_set_attr_on_a_subset_of_a_vector_env_without_sub_envs():
    # AsyncVectorEnv keeps its envs in workers: the others keep their values
    venv = gym.vector.AsyncVectorEnv(
        [lambda: gym.make("CartPole-v1")] * 3, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    env = VectorEnvToSB3(venv)
    try:
        env.set_attr("flag", 0)
        env.set_attr("flag", 7, indices=[1])
        assert env.get_attr("flag") == [0, 7, 0]
        with pytest.raises(NotImplementedError, match="subset needs a vector env exposing"):
            env.env_method("reset", indices=[0])
    finally:
        env.close()
