"""The MuJoCo arm tasks (``rlbench/ArmReach-v0``, ``ArmPush-v0``, ``ArmPickPlace-v0``): API,
determinism, train/test splits, observation contents, success semantics, scripted experts and
rendering."""

from __future__ import annotations

import copy
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

mujoco = pytest.importorskip("mujoco")

import rlbench_suite  # noqa: E402,F401  (registers the cards)
from rlbench_suite.checks import check_determinism  # noqa: E402
from rlbench_suite.envs.robotics.arm.env import (  # noqa: E402
    CELL_SIZE,
    SPLITS,
    ArmPickPlaceEnv,
    ArmPushEnv,
    ArmReachEnv,
    variation_split,
)
from rlbench_suite.policies import make_policy  # noqa: E402

TASKS = {
    "rlbench/ArmReach-v0": (ArmReachEnv, "ArmReachScripted"),
    "rlbench/ArmPush-v0": (ArmPushEnv, "ArmPushScripted"),
    "rlbench/ArmPickPlace-v0": (ArmPickPlaceEnv, "ArmPickPlaceScripted"),
}
ENV_IDS = list(TASKS)


def _scripted(env_id: str, env: gym.Env):
    return make_policy(f"module:rlbench_suite.envs.robotics.arm.experts:{TASKS[env_id][1]}", env)


def _episode_succeeds(env: gym.Env, policy, seed: int, split: str) -> bool:
    """Run one episode (stopping at the first success: any step counts)."""
    obs, info = env.reset(seed=seed, options={"split": split})
    policy.reset(seed)
    while True:
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        if info["success"]:
            return True
        if terminated or truncated:
            return False


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_on_the_registered_env(env_id):
    env = gym.make(env_id)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*(infinity|unwrapped).*")
            check_env(env, skip_render_check=True)
        assert env.spec.max_episode_steps in (50, 100)
        assert env.action_space == gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_same_trajectory(env_id):
    assert check_determinism(lambda: gym.make(env_id), seed=7, steps=1000) >= 10


def test_episode_depends_only_on_its_seed():
    fresh, used = ArmPushEnv(), ArmPushEnv()
    actions = np.random.default_rng(0).uniform(-1, 1, (40, 4)).astype(np.float32)
    try:
        used.reset(seed=1)
        for action in actions:
            used.step(action)
        a, b = fresh.reset(seed=5)[0], used.reset(seed=5)[0]
        np.testing.assert_array_equal(a, b)
        for action in actions:
            np.testing.assert_array_equal(fresh.step(action)[0], used.step(action)[0])
    finally:
        fresh.close()
        used.close()


@pytest.mark.parametrize("cls", [ArmReachEnv, ArmPushEnv, ArmPickPlaceEnv])
def test_splits_are_disjoint_checkerboards(cls):
    env = cls()
    seen: dict[str, set[tuple[int, ...]]] = {}
    for split in SPLITS:
        variations = []
        for seed in range(40):
            env.reset(seed=seed, options={"split": split})
            assert variation_split(env.variation) == split
            variations.append(tuple(env.variation))
        assert len(set(variations)) == 40  # seeds give different variations
        seen[split] = {tuple(np.floor(np.array(v) / CELL_SIZE).astype(int)) for v in variations}
    assert not seen["train"] & seen["test"]  # no grid cell holds variations of both splits
    # The same seed gives different variations in the two splits; the constructor's split is
    # the default, and options override it.
    test_env = cls(split="test")
    test_env.reset(seed=3)
    assert variation_split(test_env.variation) == "test"
    test_env.reset(seed=3, options={"split": "train"})
    assert variation_split(test_env.variation) == "train"
    env.close()
    test_env.close()


def test_variation_split_is_a_checkerboard():
    assert variation_split(np.array([0.01, 0.01])) == "train"
    assert variation_split(np.array([0.01 + CELL_SIZE, 0.01])) == "test"
    assert variation_split(np.array([-0.01, 0.01])) == "test"


@pytest.mark.parametrize("bad", ["validation", "", None, 1])
def test_invalid_split_names_the_accepted_values(bad):
    with pytest.raises(ValueError, match="'train', 'test'"):
        ArmReachEnv(split=bad)
    env = ArmReachEnv()
    with pytest.raises(ValueError, match="'train', 'test'"):
        env.reset(seed=0, options={"split": bad})
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_observation_matches_the_simulator(env_id):
    env = gym.make(env_id)
    obs, info = env.reset(seed=4)
    model = env.unwrapped.model
    for action in np.random.default_rng(1).uniform(-1, 1, (20, 4)).astype(np.float32):
        obs, _, terminated, _, info = env.step(action)
        assert obs.shape == (22,) and obs.dtype == np.float64 and terminated is False
        ee, block, goal = obs[0:3], obs[7:10], obs[13:16]
        data = copy.copy(env.unwrapped.data)
        mujoco.mj_forward(model, data)  # positions of sites and bodies at the current state
        np.testing.assert_allclose(ee, data.site("ee").xpos, atol=1e-12)
        assert obs[3] == data.joint("finger_l").qpos[0] + data.joint("finger_r").qpos[0]
        np.testing.assert_allclose(block, data.body("block").xpos, atol=1e-12)
        np.testing.assert_array_equal(goal, info["goal"])
        np.testing.assert_array_equal(goal, model.site("goal").pos)
        np.testing.assert_allclose(obs[10:13], block - ee)
        np.testing.assert_allclose(obs[16:19], goal - block)
        np.testing.assert_allclose(obs[19:22], goal - ee)
        assert isinstance(info["success"], bool)
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_scripted_policy_succeeds_on_both_splits(env_id):
    env = gym.make(env_id)
    policy = _scripted(env_id, env)
    for split in SPLITS:
        successes = [_episode_succeeds(env, policy, 10_000 + i, split) for i in range(50)]
        assert np.mean(successes) >= 0.9, (split, np.mean(successes))
    env.close()


@pytest.mark.parametrize("env_id", ["rlbench/ArmPush-v0", "rlbench/ArmPickPlace-v0"])
def test_random_policy_mostly_fails(env_id):
    env = gym.make(env_id)
    policy = make_policy("random", env, seed=0)
    successes = [_episode_succeeds(env, policy, 20_000 + i, "train") for i in range(10)]
    assert np.mean(successes) <= 0.2
    env.close()


def test_success_is_reported_on_every_step_and_never_terminates():
    env = gym.make("rlbench/ArmPickPlace-v0")
    policy = _scripted("rlbench/ArmPickPlace-v0", env)
    obs, info = env.reset(seed=1)
    flags = [info["success"]]
    for _ in range(100):
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        assert terminated is False
        flags.append(info["success"])
    assert truncated and not flags[0] and any(flags) and info["grasped"]
    env.close()


def test_rgb_array_frames_are_real_images():
    env = gym.make("rlbench/ArmPickPlace-v0", render_mode="rgb_array", width=160, height=120)
    env.reset(seed=0)
    first = env.render()
    for _ in range(5):
        env.step(np.array([1.0, 0.0, -1.0, 1.0], np.float32))
    later = env.render()
    env.close()
    assert first.dtype == np.uint8 and first.shape == (120, 160, 3)
    assert first.std() > 5 and not np.array_equal(first, later)


def test_expert_rollouts_have_the_same_bits_whatever_kernels_the_cpu_picks():
    """Datasets are rebuilt bit for bit on other machines: the arm's rewards and experts use no
    BLAS (ArmPush's data built on an Intel Xeon did not rebuild on an AMD EPYC while they did:
    :mod:`tests.cpu_kernels`)."""
    from tests.cpu_kernels import digests_under_cpu_kernels

    experts = "module:rlbench_suite.envs.robotics.arm.experts:"
    digests = digests_under_cpu_kernels([(k, {}, experts + v) for k, (_, v) in TASKS.items()])
    assert len(digests) == 1, digests
