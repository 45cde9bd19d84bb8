"""``rlbench/KukaReach-v0``: API, determinism, isolation, success semantics, the scripted expert."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

pybullet = pytest.importorskip("pybullet")

import rlbench_suite  # noqa: E402,F401  (registers the cards)
from rlbench_suite.checks import check_determinism  # noqa: E402
from rlbench_suite.envs.robotics.kuka.env import (  # noqa: E402
    SUCCESS_DISTANCE,
    TARGET_HIGH,
    TARGET_LOW,
    KukaReachEnv,
)
from rlbench_suite.envs.robotics.kuka.experts import revolute_joints, tool_jacobian  # noqa: E402
from rlbench_suite.policies import make_policy  # noqa: E402

ENV_ID = "rlbench/KukaReach-v0"
SCRIPTED = "module:rlbench_suite.envs.robotics.kuka.experts:KukaReachScripted"


def _rollout(env: gym.Env, seed: int, steps: int) -> list[tuple]:
    """Reset with ``seed`` and step with seeded uniform actions; every output, in order."""
    actions = np.random.default_rng(seed).uniform(-1, 1, (steps, 7)).astype(np.float32)
    out: list[tuple] = [env.reset(seed=seed)]
    out += [env.step(action) for action in actions]
    return out


def _assert_same_rollouts(a: list[tuple], b: list[tuple]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x[0], y[0])
        assert x[1:-1] == y[1:-1]
        assert x[-1]["success"] == y[-1]["success"]
        assert x[-1]["distance"] == y[-1]["distance"]


def _episode(env: gym.Env, policy, seed: int) -> list[dict]:
    """Run ``policy`` for one episode; the infos of every step."""
    obs, info = env.reset(seed=seed)
    policy.reset(seed)
    infos = []
    while True:
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        infos.append(info)
        if terminated or truncated:
            return infos


def test_check_env_on_the_registered_env():
    env = gym.make(ENV_ID, render_mode="rgb_array")
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*(infinity|unwrapped).*")
            check_env(env.unwrapped)
        assert env.spec.max_episode_steps == 100
    finally:
        env.close()


def test_same_seed_same_trajectory():
    # 1,000 steps of 100-step episodes: the check goes through ten resets too.
    assert check_determinism(lambda: gym.make(ENV_ID), seed=3, steps=1000) == 11


def test_episode_depends_only_on_its_seed():
    fresh, used = KukaReachEnv(), KukaReachEnv()
    try:
        for seed in (11, 12):
            _rollout(used, seed, 60)
        _assert_same_rollouts(_rollout(fresh, 5, 60), _rollout(used, 5, 60))
    finally:
        fresh.close()
        used.close()


def test_two_envs_in_one_process_do_not_interfere():
    alone = KukaReachEnv()
    expected = [_rollout(alone, seed, 50) for seed in (1, 2)]
    alone.close()
    envs = [KukaReachEnv(), KukaReachEnv()]
    actions = [np.random.default_rng(seed).uniform(-1, 1, (50, 7)) for seed in (1, 2)]
    got = [[env.reset(seed=seed)] for env, seed in zip(envs, (1, 2), strict=True)]
    for t in range(50):
        for i, env in enumerate(envs):
            got[i].append(env.step(actions[i][t].astype(np.float32)))
    for env in envs:
        env.close()
    for a, b in zip(got, expected, strict=True):
        _assert_same_rollouts(a, b)


def test_observation_layout_matches_info():
    env = KukaReachEnv()
    try:
        targets = []
        for seed in range(5):
            obs, info = env.reset(seed=seed)
            for _ in range(3):
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            assert obs.shape == (23,)
            ee, target, delta = obs[14:17], obs[17:20], obs[20:23]
            np.testing.assert_array_equal(target, info["target"])
            np.testing.assert_allclose(target - ee, delta)
            assert info["distance"] == pytest.approx(np.linalg.norm(delta))
            assert reward == -info["distance"]
            assert not terminated and not truncated
            assert np.all(target >= TARGET_LOW) and np.all(target <= TARGET_HIGH)
            targets.append(target)
        assert len({tuple(t) for t in targets}) == 5
    finally:
        env.close()


def test_scripted_policy_reaches_random_mostly_does_not():
    env = gym.make(ENV_ID)
    try:
        scripted = make_policy(SCRIPTED, env)
        successes = 0
        for seed in range(20_000, 20_050):
            infos = _episode(env, scripted, seed)
            assert all(i["success"] == (i["distance"] < SUCCESS_DISTANCE) for i in infos)
            successes += any(i["success"] for i in infos)
            assert len(infos) == 100
        assert successes >= 45
        assert infos[-1]["success"] and infos[-1]["distance"] < SUCCESS_DISTANCE
        random = make_policy("random", env, seed=0)
        random_successes = sum(
            any(i["success"] for i in _episode(env, random, seed)) for seed in range(20)
        )
        assert random_successes <= 4
    finally:
        env.close()


def test_rgb_array_frames():
    env = gym.make(ENV_ID, render_mode="rgb_array")
    try:
        env.reset(seed=0)
        first = env.render()
        assert first.shape == (240, 320, 3) and first.dtype == np.uint8
        assert first.min() < first.max()
        for _ in range(10):
            env.step(np.ones(7, np.float32))
        assert not np.array_equal(env.render(), first)
    finally:
        env.close()


def test_close_releases_the_client():
    env = KukaReachEnv()
    env.reset(seed=0)
    client = env._client
    assert pybullet.getConnectionInfo(physicsClientId=client)["isConnected"]
    env.close()
    assert not pybullet.getConnectionInfo(physicsClientId=client)["isConnected"]
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step(np.zeros(7, np.float32))


def test_bad_input_is_refused_clearly():
    with pytest.raises(ValueError, match="render_mode"):
        KukaReachEnv(render_mode="human")
    env = KukaReachEnv()
    try:
        env.reset(seed=0)
        with pytest.raises(ValueError, match="7 finite numbers"):
            env.step(np.zeros(6, np.float32))
        with pytest.raises(ValueError, match="7 finite numbers"):
            env.step(np.full(7, np.nan, np.float32))
    finally:
        env.close()


def test_scripted_kinematic_model_matches_the_simulator():
    origins, _ = revolute_joints()
    env = KukaReachEnv()
    try:
        obs, _ = env.reset(seed=4)
        for _ in range(20):
            obs, *_ = env.step(env.action_space.sample())
            tool, _ = tool_jacobian(origins, obs[:7])
            np.testing.assert_allclose(tool, obs[14:17], atol=1e-6)
    finally:
        env.close()


def test_rollouts_have_the_same_bits_whatever_kernels_the_cpu_picks():
    """The env's observations and rewards go through no BLAS, so a submitted policy scores
    the same bits on any x86-64 CPU (:mod:`tests.cpu_kernels`; its distance
    was ``linalg.norm``, a BLAS dot product). The scripted expert still uses LAPACK (``pinv``,
    ``solve``): its reference returns are measured, not rebuilt."""
    from tests.cpu_kernels import digests_under_cpu_kernels

    digests = digests_under_cpu_kernels([("rlbench/KukaReach-v0", {}, "random")])
    assert len(digests) == 1, digests
