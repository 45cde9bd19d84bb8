"""Quadrotor tasks: backend agreement, the batched vector env, the PID reference, action types."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import rlbench_suite
from rlbench_suite.envs.robotics.quad.backends import NumpyQuads, PyBulletQuads
from rlbench_suite.envs.robotics.quad.control import QuadPID, rpms_to_action
from rlbench_suite.envs.robotics.quad.dynamics import (
    CRAZYFLIE,
    body_wrench,
    motor_rpms,
    rotation_matrices,
)
from rlbench_suite.envs.robotics.quad.env import QuadHoverEnv, QuadWaypointsEnv
from rlbench_suite.envs.robotics.quad.vector import QuadVectorEnv
from rlbench_suite.policies import make_policy

PID = "module:rlbench_suite.envs.robotics.quad.experts:QuadPIDPolicy"


def _open_loop_commands(seed: int, ticks: int, n: int) -> np.ndarray:
    """Motor speeds ``(ticks, 4, n)``: a climb-and-sink around hover, with a slight tilt."""
    rng = np.random.default_rng(seed)
    t = np.arange(ticks)[:, None, None] / 240
    common = 0.03 * np.sin(2 * np.pi * rng.uniform(0.3, 1.0, (1, n)) * t)
    differential = rng.uniform(-5e-4, 5e-4, (4, n)) * np.cos(2 * np.pi * t)
    return CRAZYFLIE.hover_rpm * (1.0 + common + differential)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batched_backend_agrees_with_pybullet_without_contacts(seed):
    """Same motor commands, 2 s of flight clear of the floor: positions within 1 cm."""
    n, ticks = 3, 480
    commands = _open_loop_commands(seed, ticks, n)
    start = np.array([[0.0, 0.0, 1.5], [1.0, 0.0, 1.5], [0.0, -1.0, 1.5]])
    fast, bullet = NumpyQuads(n), PyBulletQuads(n)
    try:
        fast.place(np.arange(n), start)
        bullet.place(np.arange(n), start)
        for rpm in commands:
            fast.tick(rpm)
            bullet.tick(rpm)
            assert not bullet.contacts() and bullet.position[2].min() > 0.2
        travelled = np.linalg.norm(fast.position.T - start, axis=1)
        assert travelled.min() > 0.1  # they really flew somewhere
        gap = np.linalg.norm(fast.position - bullet.position, axis=0)
        assert gap.max() < 0.01, gap
        np.testing.assert_allclose(fast.quat, bullet.quat, atol=1e-6)
    finally:
        bullet.close()


def test_mixer_inverts_the_motor_model():
    rng = np.random.default_rng(0)
    rpm = CRAZYFLIE.hover_rpm * rng.uniform(0.8, 1.2, (4, 10))
    thrust, torque = body_wrench(rpm)
    np.testing.assert_allclose(motor_rpms(thrust, torque), rpm, rtol=1e-9)


@pytest.mark.parametrize("mode", list(AutoresetMode))
@pytest.mark.parametrize("task", ["hover", "waypoints"])
def test_vector_env_is_sync_vector_env_over_the_numpy_backend(mode, task):
    single = {"hover": QuadHoverEnv, "waypoints": QuadWaypointsEnv}[task]
    kwargs = {"max_episode_steps": 40, "backend": "numpy"}
    sync = gym.vector.SyncVectorEnv([lambda: single(**kwargs)] * 3, autoreset_mode=mode)
    fast = QuadVectorEnv(3, task=task, max_episode_steps=40, autoreset_mode=mode)
    obs_a, _ = sync.reset(seed=7)
    obs_b, _ = fast.reset(seed=7)
    np.testing.assert_array_equal(obs_a, obs_b)
    rng = np.random.default_rng(0)
    ends, done = 0, np.zeros(3, bool)
    for t in range(150):
        actions = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
        if mode == AutoresetMode.DISABLED and done.any():
            obs_a, _ = sync.reset(options={"reset_mask": done})
            obs_b, _ = fast.reset(options={"reset_mask": done})
        obs_a, rew_a, term_a, trunc_a, info_a = sync.step(actions)
        obs_b, rew_b, term_b, trunc_b, info_b = fast.step(actions)
        np.testing.assert_allclose(obs_a, obs_b, rtol=1e-6, atol=1e-6, err_msg=f"step {t}")
        np.testing.assert_allclose(rew_a, rew_b, rtol=1e-9, atol=1e-9)
        np.testing.assert_array_equal(term_a, term_b)
        np.testing.assert_array_equal(trunc_a, trunc_b)
        np.testing.assert_array_equal(info_a["_success"], info_b["_success"])
        shown = info_a["_success"]
        np.testing.assert_array_equal(info_a["success"][shown], info_b["success"][shown])
        done = term_a | trunc_a
        if mode == AutoresetMode.SAME_STEP and "final_obs" in info_a:
            np.testing.assert_array_equal(done, info_b["_final_obs"])
            for a, b in zip(info_a["final_obs"][done], info_b["final_obs"][done], strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        ends += int(done.sum())
    assert ends >= 3


def test_make_vec_runs_the_batched_backend_with_statistics():
    envs = gym.make_vec("rlbench/QuadHover-v0", num_envs=64)
    assert isinstance(envs.unwrapped, QuadVectorEnv)
    envs.reset(seed=0)
    finished = 0
    for _ in range(500):
        info = envs.step(envs.action_space.sample())[4]
        if "rlbench_episode" in info:
            finished += int(info["_rlbench_episode"].sum())
    assert finished >= 64  # every drone crashed or timed out at least once
    envs.close()


def _pid_flight(env: gym.Env, seed: int) -> tuple[np.ndarray, bool]:
    policy = make_policy(PID, env)
    obs, info = env.reset(seed=seed)
    policy.reset(seed)
    errors = []
    while True:
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        errors.append(info["position_error"])
        if terminated or truncated:
            return np.array(errors), bool(info["rlbench_episode"]["success"])


def test_pid_hover_holds_the_target_within_5_cm_after_take_off():
    env = gym.make("rlbench/QuadHover-v0")  # PyBullet, floor contacts
    take_off = 3 * 48
    means = []
    for seed in range(20):
        errors, success = _pid_flight(env, seed)
        assert success and len(errors) == 480
        means.append(errors[take_off:].mean())
    env.close()
    assert max(means) < 0.05, means


def test_pid_flies_all_waypoints_on_both_backends():
    for backend in ("pybullet", "numpy"):
        env = gym.make("rlbench/QuadWaypoints-v0", backend=backend)
        policy = make_policy(PID, env)
        for seed in range(5):
            obs, info = env.reset(seed=seed)
            passed = 0
            while True:
                obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
                assert info["waypoints_passed"] >= passed
                passed = info["waypoints_passed"]
                if terminated or truncated:
                    break
            assert terminated and info["success"] and passed == 4
        env.close()


def test_velocity_and_attitude_actions_are_tracked_by_the_pid():
    env = QuadHoverEnv(action_type="velocity", backend="numpy")
    env.reset(seed=0)
    for _ in range(96):  # climb at 0.5 m/s for 2 s
        env.step(np.array([0.0, 0.0, 0.5, 0.0], np.float32))
    assert env.quads.velocity[2, 0] == pytest.approx(0.5, abs=0.05)
    env = QuadHoverEnv(action_type="attitude", backend="numpy")
    env.reset(seed=0)
    for _ in range(24):  # 10 degrees of roll with a little more than hover thrust
        env.step(np.array([1 / 3, 0.0, 0.0, 0.2], np.float32))
    roll = np.arctan2(rotation_matrices(env.quads.quat)[2, 1, 0],
                      rotation_matrices(env.quads.quat)[2, 2, 0])  # fmt: skip
    assert np.degrees(roll) == pytest.approx(10.0, abs=1.5)
    assert env.quads.position[2, 0] > 0.1  # it took off


def test_pid_controller_batch_equals_single():
    rng = np.random.default_rng(3)
    quads = NumpyQuads(4)
    quads.place(np.arange(4), rng.uniform(0.5, 1.5, (4, 3)))
    batch = QuadPID(4).position_rpms(rng.normal(size=(3, 4)), rotation_matrices(quads.quat),
                                     quads.velocity, quads.omega, 1 / 48)  # fmt: skip
    assert batch.shape == (4, 4) and np.all(np.isfinite(batch))
    assert np.all(np.abs(rpms_to_action(batch)) <= 1.0)


def test_bad_arguments_and_actions_get_clear_errors():
    with pytest.raises(ValueError, match="accepted: rpm, velocity, attitude"):
        gym.make("rlbench/QuadHover-v0", action_type="thrust")
    with pytest.raises(ValueError, match="accepted: pybullet, numpy"):
        QuadHoverEnv(backend="bullet")
    with pytest.raises(ValueError, match="vectorization_mode='sync'"):
        gym.make_vec("rlbench/QuadHover-v0", num_envs=2, backend="pybullet")
    env = QuadHoverEnv(backend="numpy")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="finite"):
        env.step(np.array([np.nan, 0, 0, 0]))


def test_rgb_array_render_is_headless():
    env = gym.make("rlbench/QuadHover-v0", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (240, 320, 3) and frame.dtype == np.uint8 and frame.std() > 1
    env.close()


def _swarm(**kwargs):
    return rlbench_suite.make_multiagent("rlbench/QuadSwarm-v0", "parallel", **kwargs)


def test_pid_swarm_keeps_the_formation_without_collisions():
    from rlbench_suite.envs.robotics.quad.experts import QuadPIDPolicy

    env = _swarm()
    obs, _ = env.reset(seed=3)
    policies = {a: QuadPIDPolicy(env.observation_space(a)) for a in env.agents}
    errors, collisions, cycles = [], 0, 0
    while env.agents:
        obs, _, terminated, _, info = env.step({a: policies[a].act(obs[a], {}) for a in obs})
        assert not any(terminated.values())
        errors.append([info[a]["position_error"] for a in info])
        collisions += sum(info[a]["collisions"] for a in info)
        cycles += 1
    assert cycles == 480 and collisions == 0
    assert np.mean(errors[144:]) < 0.15  # the slots move; the PID lags them a little
    frame = env.render() if env.render_mode else None
    assert frame is None
    env.close()


def test_a_crashed_drone_leaves_the_swarm_and_is_zeroed_for_the_others():
    env = _swarm(num_drones=3)
    obs, _ = env.reset(seed=0)
    size = env.observation_space("drone_0").shape[0]
    assert size == 3 + 6 * 2 + 20
    gone = None
    for _ in range(200):
        actions = {a: np.array([1.0, -1.0, 1.0, -1.0], np.float32) if a == "drone_2"
                   else np.zeros(4, np.float32) for a in env.agents}  # fmt: skip
        obs, rewards, terminated, _, _ = env.step(actions)
        if terminated.get("drone_2"):
            gone = rewards["drone_2"]
            break
    assert gone is not None and gone <= -9.0  # the crash penalty
    assert env.agents == ["drone_0", "drone_1"]
    obs, *_ = env.step({a: np.zeros(4, np.float32) for a in env.agents})
    # drone_0 sees drone_1 (index 0 of the others) and zeros for drone_2 (index 1)
    others = obs["drone_0"][3:15].reshape(2, 2, 3)  # positions then velocities, per drone
    assert np.all(others[:, 1] == 0.0) and np.any(others[0, 0] != 0.0)
    with pytest.raises(ValueError, match="not in the game"):
        env.step({"drone_2": np.zeros(4)})
    env.close()


def test_swarm_renders_headless():
    env = _swarm(render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (240, 320, 3) and frame.std() > 1
    env.close()


def test_same_step_final_obs_has_one_slot_per_env_when_all_finish_together():
    envs = QuadVectorEnv(4, max_episode_steps=3, autoreset_mode=AutoresetMode.SAME_STEP)
    envs.reset(seed=0)
    for _ in range(3):
        *_, truncated, info = envs.step(np.zeros((4, 4), np.float32))
    assert truncated.all() and info["final_obs"].shape == (4,)
    assert info["final_obs"][0].shape == (23,)


def test_out_of_range_actions_are_clipped_as_the_card_says_and_bad_shapes_refused():
    from rlbench_suite.core.catalog import get_card

    assert "values outside are clipped to it" in get_card("rlbench/QuadHover-v0").description
    trajectories = []
    for action in ([1.0, -1.0, 0.5, 0.0], [7.0, -3.0, 0.5, 0.0]):
        env = gym.make("rlbench/QuadHover-v0")
        env.reset(seed=3)
        trajectories.append([env.step(np.array(action))[0] for _ in range(5)])
        env.close()
    np.testing.assert_array_equal(trajectories[0], trajectories[1])
    env = gym.make("rlbench/QuadHover-v0")
    env.reset(seed=0)
    shape_error = r"must be 4 numbers, shape \(4,\).*clipped.*got shape \(3,\)"
    with pytest.raises(ValueError, match=shape_error):
        env.step(np.zeros(3))
    with pytest.raises(ValueError, match="must be finite numbers"):
        env.step(np.array([np.nan, 0, 0, 0]))
    env.close()
    venv = gym.make_vec("rlbench/QuadHover-v0", num_envs=3)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must be 12 numbers, shape \(3, 4\)"):
        venv.step(np.zeros((2, 4)))
    venv.close()


@pytest.mark.parametrize("env_id", ["rlbench/QuadHover-v0", "rlbench/KukaReach-v0"])
def test_pybullet_envs_print_no_build_banner(env_id):
    """``import pybullet`` writes its build time from C to stderr; the suite drops it, so a
    command on a PyBullet env prints only its own output (envs.robotics.pybullet_import)."""
    import subprocess
    import sys

    code = f"import gymnasium as gym, rlbench_suite; gym.make({env_id!r}).reset(seed=0)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "pybullet build time" not in done.stderr + done.stdout
    banner = subprocess.run([sys.executable, "-c", "import pybullet"], capture_output=True,
                            text=True, timeout=120, check=False)  # fmt: skip
    assert "pybullet build time" in banner.stderr  # what it would have printed


def test_rollouts_have_the_same_bits_whatever_kernels_the_cpu_picks():
    """QuadHover's data rebuilds bit for bit on other machines: the dynamics (PyBullet's and the
    batched backend's) and the PID expert use no BLAS (:mod:`tests.cpu_kernels`: the mixer
    products and inverse went through OpenBLAS, so the data built on an Intel Xeon did not
    rebuild on an AMD EPYC)."""
    from tests.cpu_kernels import digests_under_cpu_kernels

    pid = "module:rlbench_suite.envs.robotics.quad.experts:QuadPIDPolicy"
    digests = digests_under_cpu_kernels([
        ("rlbench/QuadHover-v0", {}, pid),
        ("rlbench/QuadWaypoints-v0", {}, pid),
        ("rlbench/QuadHover-v0", {"backend": "numpy"}, pid),
    ])  # fmt: skip
    assert len(digests) == 1, digests
