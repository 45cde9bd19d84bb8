"""fast_ppo (rlbench_suite/baselines/fast_ppo.py): it learns, it is deterministic, its ONNX
export acts like the torch policy, and ``rlbench train --algo fast_ppo`` writes a run folder.
No timings here: speed is benchmarks/bench_training.py's job."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from typer.testing import CliRunner

import rlbench_suite  # noqa: F401  (registers the rlbench/ ids)
from rlbench_suite.baselines import fast_ppo
from rlbench_suite.baselines.fast_ppo import PPOConfig
from rlbench_suite.baselines.train import TrainConfig, train
from rlbench_suite.cli import app
from rlbench_suite.policies.onnx import OnnxPolicy

CARTPOLE = "rlbench/CartPole-v1"
CARTPOLE_CFG = dict(num_steps=16, num_minibatches=4, update_epochs=4, learning_rate=2.5e-3,
                    activation="relu")  # fmt: skip


def _cartpole(n: int = 16, native: bool = True) -> gym.vector.VectorEnv:
    if native:  # Gymnasium's own vector CartPole (NEXT_STEP autoreset only)
        return gym.make_vec("CartPole-v1", n, vectorization_mode="vector_entry_point")
    return gym.make_vec(CARTPOLE, n, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})  # fmt: skip


def _pendulum(n: int = 4) -> gym.vector.VectorEnv:
    return gym.make_vec("rlbench/Pendulum-v1", n, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})  # fmt: skip


def _params(agent: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in agent.state_dict().items()}


@pytest.mark.parametrize("native", [True, False], ids=["next-step", "same-step"])
def test_learns_cartpole_within_a_small_budget(native):
    cfg = PPOConfig(total_timesteps=60_000, **CARTPOLE_CFG)
    agent = fast_ppo.train(_cartpole(32, native), cfg, seed=0)
    returns = fast_ppo.evaluate_returns(agent, lambda: gym.make(CARTPOLE), list(range(9000, 9010)))
    assert np.mean(returns) >= 475, returns


@pytest.mark.parametrize("make", [_cartpole, _pendulum], ids=["discrete", "box"])
def test_same_seed_same_parameters(make):
    cfg = PPOConfig(total_timesteps=1024, num_steps=32)
    first = _params(fast_ppo.train(make(), cfg, seed=3))
    second = _params(fast_ppo.train(make(), cfg, seed=3))
    other = _params(fast_ppo.train(make(), cfg, seed=4))
    assert first.keys() == second.keys()
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in first)


@pytest.mark.parametrize("make", [_cartpole, _pendulum], ids=["discrete", "box"])
def test_onnx_export_acts_like_the_torch_policy(tmp_path, make):
    envs = make()
    agent = fast_ppo.train(envs, PPOConfig(total_timesteps=1024, num_steps=32), seed=0)
    path = fast_ppo.export_onnx(agent, tmp_path / "policy.onnx")
    policy = OnnxPolicy(path)
    assert policy.output == ("logits" if agent.discrete else "action")
    rng = np.random.default_rng(0)
    scale = 3.0 * np.ones(envs.single_observation_space.shape, np.float32)
    for _ in range(30):
        obs = (rng.normal(size=scale.shape) * scale).astype(np.float32)
        expected = agent.predict(obs[None])[0]
        got = policy.act(obs, {})
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-5)
    if not agent.discrete:  # the mean is clipped to the bounds, as the env would
        space = envs.single_action_space
        big = agent.predict(1e3 * np.ones((1, *scale.shape), np.float32))[0]
        assert np.all(big >= space.low) and np.all(big <= space.high)


def test_truncation_needs_a_resetting_vector_env():
    envs = gym.make_vec("CartPole-v1", 2, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": AutoresetMode.DISABLED})  # fmt: skip
    with pytest.raises(ValueError, match="DISABLED"):
        fast_ppo.train(envs, PPOConfig(total_timesteps=64), seed=0)


def _hyperparams(tmp_path, **entry):
    path = tmp_path / "fast_ppo.yaml"
    source = {"origin": "defaults", "reference": "test"}
    base = {"source": source, "n_envs": 8, "n_timesteps": 1024, **CARTPOLE_CFG}
    path.write_text(json.dumps({CARTPOLE: {**base, **entry}}))
    return path


def test_cli_train_writes_the_run_folder(tmp_path):
    result = CliRunner().invoke(
        app,
        ["train", CARTPOLE, "--algo", "fast_ppo", "--budget", "2048", "--out", str(tmp_path),
         "--eval-every", "512", "--eval-episodes", "1", "--final-episodes", "2"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    run_dir = tmp_path / "CartPole-v1" / "fast_ppo" / "seed-0"
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "finished" and run["algo"] == "fast_ppo" and run["steps"] == 2048
    for name in run["files"]:
        assert (run_dir / name).is_file(), name
    assert {"agent.pt", "policy.onnx", "policy.onnx.meta.json", "result.json"} <= set(run["files"])
    meta = json.loads((run_dir / "policy.onnx.meta.json").read_text())
    assert meta["algo"] == "fast_ppo" and meta["training_budget_steps"] == 2048
    assert len((run_dir / "curve.csv").read_text().splitlines()) == 1 + 3  # 0, 1024, 2048
    assert json.loads((run_dir / "result.json").read_text())["env_id"] == CARTPOLE


def test_resume_ends_with_the_same_parameters(tmp_path):
    path = _hyperparams(tmp_path)
    settings = dict(env_id=CARTPOLE, algo="fast_ppo", hyperparams=path, budget=2048,
                    eval_every=512, eval_episodes=1, final_episodes=1)  # fmt: skip
    whole = train(TrainConfig(**settings, out=tmp_path / "whole"))

    calls = {"n": 0}

    def interrupt_after_two_checkpoints(progress) -> None:
        calls["n"] += 1
        if progress.step >= 1024 + 128 * 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(TrainConfig(**settings, out=tmp_path / "cut"),
              on_progress=interrupt_after_two_checkpoints)  # fmt: skip
    cut_dir = tmp_path / "cut" / "CartPole-v1" / "fast_ppo" / "seed-0"
    assert json.loads((cut_dir / "run.json").read_text())["status"] == "interrupted"
    resumed = train(TrainConfig(**settings, out=tmp_path / "cut", resume=True))
    run = resumed.run
    assert run["status"] == "finished" and run["resume_exact"] is True
    a, b = whole.model.state.agent.state_dict(), resumed.model.state.agent.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert (whole.run_dir / "curve.csv").read_text().splitlines()[1:][-1].split(",")[0] == "2048"


def test_bad_hyperparameters_are_refused_naming_the_key(tmp_path):
    from rlbench_suite.baselines.hyperparams import HyperparamsError
    from rlbench_suite.baselines.train import TrainError

    with pytest.raises(HyperparamsError, match="num_step"):
        train(TrainConfig(CARTPOLE, "fast_ppo", hyperparams=_hyperparams(tmp_path, num_step=8),
                          out=tmp_path))  # fmt: skip
    with pytest.raises(TrainError, match="num_steps"):
        train(TrainConfig(CARTPOLE, "fast_ppo", out=tmp_path,
                          hyperparams=_hyperparams(tmp_path, num_steps="many")))  # fmt: skip
    assert not (tmp_path / "CartPole-v1").exists()
