"""SB3 and ONNX policy adapters: loading, algorithm detection, parity, seeding, masks."""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from rlbench_suite.policies import (
    OnnxPolicy,
    SB3Policy,
    export_sb3_to_onnx,
    make_policy,
    metadata_path,
)
from rlbench_suite.policies.sb3 import detect_sb3_algorithm

torch = pytest.importorskip("torch")
sb3 = pytest.importorskip("stable_baselines3")
pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
sb3_contrib = pytest.importorskip("sb3_contrib")


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


ENV_OF = {
    "PPO": "CartPole-v1",
    "A2C": "Pendulum-v1",
    "DQN": "CartPole-v1",
    "SAC": "Pendulum-v1",
    "TD3": "Pendulum-v1",
    "DDPG": "Pendulum-v1",
    "TQC": "Pendulum-v1",
    "RecurrentPPO": "CartPole-v1",
}
SMALL = {  # a few hundred steps of learning, small buffers and networks
    "PPO": {"n_steps": 64, "batch_size": 64, "n_epochs": 1},
    "A2C": {"n_steps": 8},
    "DQN": {"learning_starts": 50, "buffer_size": 500},
    "SAC": {"learning_starts": 50, "buffer_size": 500},
    "TD3": {"learning_starts": 50, "buffer_size": 500},
    "DDPG": {"learning_starts": 50, "buffer_size": 500},
    "TQC": {"learning_starts": 50, "buffer_size": 500},
    "RecurrentPPO": {"n_steps": 64, "batch_size": 64, "n_epochs": 1},
}
_TRAINED: dict[str, tuple[object, Path]] = {}


def algorithm(name: str):
    module = sb3_contrib if name in ("TQC", "RecurrentPPO", "MaskablePPO") else sb3
    return getattr(module, name)


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("models")


def trained(name: str, folder: Path, steps: int = 200):
    """A tiny model of algorithm ``name`` (cached per test module) and the path it is saved to."""
    if name not in _TRAINED:
        policy = "MlpLstmPolicy" if name == "RecurrentPPO" else "MlpPolicy"
        model = algorithm(name)(
            policy,
            ENV_OF[name],
            seed=0,
            policy_kwargs={"net_arch": [16]} | extra_kwargs(name),
            **SMALL[name],
        )
        model.learn(steps)
        path = folder / f"{name.lower()}.zip"
        model.save(path)
        _TRAINED[name] = (model, path)
    return _TRAINED[name]


def extra_kwargs(name: str) -> dict:
    if name == "TQC":
        return {"n_critics": 2, "n_quantiles": 5}
    return {"lstm_hidden_size": 8} if name == "RecurrentPPO" else {}


def observations(env_id: str, n: int = 300) -> np.ndarray:
    """``n`` observations visited by a random walk (CartPole's space is too wide to sample)."""
    env = gym.make(env_id)
    env.action_space.seed(0)
    obs, _ = env.reset(seed=0)
    seen = []
    for _ in range(n):
        seen.append(obs)
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()
    return np.asarray(seen, dtype=np.float32)


def close(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iu":
        return a.shape == b.shape and bool((a == b).all())
    return np.allclose(a, b, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ SB3


@pytest.mark.parametrize("name", ["PPO", "A2C", "DQN", "SAC", "TD3", "DDPG", "TQC"])
def test_sb3_zip_is_loaded_with_the_detected_algorithm(name, models_dir):
    model, path = trained(name, models_dir)
    assert detect_sb3_algorithm(path) == name
    policy = make_policy(f"sb3:{path}")
    assert isinstance(policy, SB3Policy) and policy.algo == name
    assert policy.identity.kind == "sb3" and policy.identity.extra["algo"] == name
    assert policy.identity.artifact_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    obs = observations(ENV_OF[name], 100)
    expected, _ = model.predict(obs, deterministic=True)
    actions = np.stack([policy.act(o, {}) for o in obs])
    assert close(actions.astype(expected.dtype), expected)
    env = gym.make(ENV_OF[name])
    assert env.action_space.contains(policy.act(obs[0], {}))  # the space's own dtype


def test_explicit_algo_overrides_detection(models_dir):
    _, path = trained("TD3", models_dir)
    assert SB3Policy(path, algo="ddpg").algo == "DDPG"  # DDPG loads TD3's files
    with pytest.raises(ValueError, match="unknown SB3 algorithm 'XYZ'; accepted: PPO, A2C"):
        SB3Policy(path, algo="XYZ")


def test_sb3_policy_from_a_model_object_and_a_bad_file(models_dir, tmp_path):
    model, _ = trained("PPO", models_dir)
    policy = SB3Policy(model)
    assert policy.model is model and policy.identity.artifact_sha256 is None
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"nope")
    with pytest.raises(ValueError, match="is not an SB3 model"):
        make_policy(f"sb3:{bad}")
    with pytest.raises(TypeError, match="expected an SB3 model"):
        SB3Policy(42)


@pytest.mark.parametrize("name", ["PPO", "DQN", "SAC"])
def test_stochastic_sb3_actions_are_reproducible_under_a_seed(name, models_dir):
    _, path = trained(name, models_dir)
    policy = SB3Policy(path, deterministic=False)
    if name == "DQN":
        policy.model.exploration_rate = 0.5  # explore often enough to see it
    obs = observations(ENV_OF[name], 60)

    def run(seed: int) -> np.ndarray:
        policy.reset(seed)
        actions = []
        for o in obs:
            torch.rand(3), np.random.rand()  # other users of the global generators
            actions.append(policy.act(o, {}))
        return np.asarray(actions)

    first = run(5)
    assert close(run(5), first)
    assert not close(run(6), first)
    deterministic = np.asarray([SB3Policy(path).act(o, {}) for o in obs])
    assert not close(first, deterministic)  # it really samples


def test_stochastic_sb3_policy_leaves_the_global_generators_alone(models_dir):
    _, path = trained("PPO", models_dir)
    policy = SB3Policy(path, deterministic=False)
    policy.reset(1)
    torch.manual_seed(0)
    np.random.seed(0)
    policy.act(observations("CartPole-v1", 1)[0], {})
    after = torch.rand(1), np.random.rand()
    torch.manual_seed(0)
    np.random.seed(0)
    assert after == (torch.rand(1), np.random.rand())


def test_recurrent_policy_keeps_state_across_steps_and_resets_it(models_dir):
    model, path = trained("RecurrentPPO", models_dir)
    policy = make_policy(f"sb3:{path}")
    assert policy.algo == "RecurrentPPO"
    obs = observations("CartPole-v1", 40)
    state, start, expected = None, np.ones(1, bool), []
    for o in obs:
        action, state = model.predict(o, state=state, episode_start=start, deterministic=True)
        start = np.zeros(1, bool)
        expected.append(int(action))
    policy.reset(0)
    first = [int(policy.act(o, {})) for o in obs]
    assert first == expected
    assert policy._state is not None
    policy.reset(0)
    assert policy._state is None
    assert [int(policy.act(o, {})) for o in obs] == first


class MaskedChoice(gym.Env):
    """Pick a legal action out of 4; the legal ones change every step; illegal ones raise."""

    observation_space = spaces.Box(0.0, 1.0, (4,), np.float32)
    action_space = spaces.Discrete(4)

    def _mask(self) -> np.ndarray:
        mask = (self.np_random.random(4) < 0.5).astype(np.int8)
        mask[self.np_random.integers(4)] = 1
        return mask

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.mask = 0, self._mask()
        return self.mask.astype(np.float32) * 0 + 0.5, {"action_mask": self.mask}

    def step(self, action):
        if not self.mask[int(action)]:
            raise ValueError(f"illegal action {action} under mask {self.mask}")
        self.t += 1
        self.mask = self._mask()
        obs = np.full(4, 0.5, np.float32)  # the mask is not observed: the policy needs info
        return obs, float(action), False, self.t >= 20, {"action_mask": self.mask}

    def action_masks(self) -> np.ndarray:
        return self.mask.astype(bool)


@pytest.mark.parametrize("deterministic", [True, False])
def test_maskable_ppo_receives_the_action_mask(deterministic, tmp_path):
    model = sb3_contrib.MaskablePPO(
        "MlpPolicy", MaskedChoice(), seed=0, n_steps=64, batch_size=64, n_epochs=1
    )
    model.learn(128)
    model.save(tmp_path / "masked.zip")
    policy = make_policy(f"sb3:{tmp_path / 'masked.zip'}", deterministic=deterministic)
    assert policy.algo == "MaskablePPO"
    env = MaskedChoice()
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        policy.reset(seed)
        done = False
        while not done:  # raises on an illegal action
            obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
            done = terminated or truncated


def test_sidecar_metadata_reaches_the_identity(models_dir, tmp_path):
    _, path = trained("PPO", models_dir)
    copy = tmp_path / "ppo.zip"
    copy.write_bytes(path.read_bytes())
    metadata_path(copy).write_text(
        json.dumps(
            {
                "name": "ppo-tiny",
                "algo": "PPO",
                "env_id": "CartPole-v1",
                "train_seeds": [0],
                "tuning_seeds": [1, 2],
                "training_budget_steps": 200,
            }
        )
    )
    identity = make_policy(f"sb3:{copy}").identity
    assert identity.name == "ppo-tiny" and identity.spec == f"sb3:{copy}"
    assert identity.train_seeds == [0] and identity.tuning_seeds == [1, 2]
    assert identity.training_budget_steps == 200 and identity.extra["env_id"] == "CartPole-v1"
    metadata_path(copy).write_text(json.dumps({"tuning_seeds": ["x"]}))
    with pytest.raises(ValueError, match=r"ppo\.zip\.meta\.json: field 'tuning_seeds\.0'"):
        make_policy(f"sb3:{copy}")


# ------------------------------------------------------------------------------ ONNX


@pytest.mark.parametrize("name", ["PPO", "A2C", "DQN", "SAC", "TD3"])
def test_onnx_export_matches_sb3_predict(name, models_dir, tmp_path):
    model, _ = trained(name, models_dir)
    path = export_sb3_to_onnx(model, tmp_path / "policy.onnx")
    env = gym.make(ENV_OF[name])
    policy = make_policy(f"onnx:{path}", env)
    assert isinstance(policy, OnnxPolicy) and policy.identity.kind == "onnx"
    assert policy.identity.artifact_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert policy.output == ("logits" if name == "PPO" else "action")
    obs = observations(ENV_OF[name], 300)
    expected, _ = model.predict(obs, deterministic=True)
    actions = np.stack([policy.act(o, {}) for o in obs])
    assert close(actions, expected)
    assert env.action_space.contains(actions[0])
    tags = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    assert tags == {"rlbench.policy_format": "1", "rlbench.source": f"sb3:{name}"}


def test_onnx_logits_policy_masks_and_samples_with_its_seed(models_dir, tmp_path):
    model, _ = trained("PPO", models_dir)
    path = export_sb3_to_onnx(model, tmp_path / "policy.onnx")
    obs = observations("CartPole-v1", 200)
    masked = OnnxPolicy(path)
    assert {int(masked.act(o, {"action_mask": np.array([0, 1], np.int8)})) for o in obs} == {1}
    stochastic = OnnxPolicy(path, deterministic=False)
    stochastic.reset(3)
    first = [int(stochastic.act(o, {})) for o in obs]
    stochastic.reset(3)
    assert [int(stochastic.act(o, {})) for o in obs] == first
    assert set(first) == {0, 1}
    mask = {"action_mask": np.array([1, 0], np.int8)}
    assert {int(stochastic.act(o, mask)) for o in obs} == {0}
    stochastic.reset(4)
    clone = pickle.loads(pickle.dumps(stochastic))  # e.g. sent to a worker process
    assert [int(clone.act(o, {})) for o in obs] == [int(stochastic.act(o, {})) for o in obs]
    with pytest.raises(ValueError, match="every action is masked out"):
        stochastic.act(obs[0], {"action_mask": np.array([0, 0], np.int8)})


def test_onnx_action_policies_refuse_stochastic_use(models_dir, tmp_path):
    model, _ = trained("SAC", models_dir)
    path = export_sb3_to_onnx(model, tmp_path / "policy.onnx")
    with pytest.raises(ValueError, match="deterministic=False needs a 'logits' output"):
        OnnxPolicy(path, deterministic=False)
    with pytest.raises(ValueError, match=r"observation of shape \(5,\)"):
        OnnxPolicy(path).act(np.zeros(5), {})


def test_onnx_files_outside_the_convention_are_refused(tmp_path):
    from onnx import TensorProto, helper

    def save(input_name: str, output_name: str) -> Path:
        graph = helper.make_graph(
            [helper.make_node("Identity", [input_name], [output_name])],
            "g",
            [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, ["batch", 3])],
            [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, ["batch", 3])],
        )
        path = tmp_path / f"{input_name}-{output_name}.onnx"
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        onnx.save(model, path)
        return path

    policy = OnnxPolicy(save("obs", "action"))  # the smallest valid policy: echo
    assert close(policy.act(np.array([1, 2, 3]), {}), np.array([1, 2, 3], np.float32))
    with pytest.raises(ValueError, match="one float32 input named 'obs'"):
        OnnxPolicy(save("x", "action"))
    with pytest.raises(ValueError, match="output named 'action' or 'logits', got \\['y'\\]"):
        OnnxPolicy(save("obs", "y"))
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"garbage")
    with pytest.raises(ValueError, match="not a loadable ONNX model"):
        make_policy(f"onnx:{garbage}")


def test_onnx_export_of_a_discrete_observation_space(tmp_path):
    model = sb3.PPO("MlpPolicy", "FrozenLake-v1", seed=0, n_steps=64, batch_size=64)
    path = export_sb3_to_onnx(model, tmp_path / "policy.onnx")
    obs = np.arange(16)
    expected, _ = model.predict(obs, deterministic=True)
    assert [int(OnnxPolicy(path).act(o, {})) for o in obs] == expected.tolist()


def test_a_recurrent_onnx_export_plays_whole_episodes_like_the_sb3_model(models_dir, tmp_path):
    """The LSTM state is carried step to step and reset at each episode by both adapters."""
    model, _ = trained("RecurrentPPO", models_dir)
    onnx = OnnxPolicy(export_sb3_to_onnx(model, tmp_path / "policy.onnx"))
    sb3 = SB3Policy(model)
    env = gym.make("CartPole-v1")
    for seed in (3, 4):  # the second episode starts from a fresh state again
        obs, info = env.reset(seed=seed)
        onnx.reset(seed)
        sb3.reset(seed)
        for _ in range(60):
            action = sb3.act(obs, info)
            assert onnx.act(obs, info) == action
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break


# ------------------------------------------------------------------------------ baselines


def test_baseline_resolves_to_the_onnx_file_with_its_sidecar(models_dir, tmp_path, monkeypatch):
    model, zip_path = trained("PPO", models_dir)
    folder = tmp_path / "baselines" / "ppo-cartpole"
    folder.mkdir(parents=True)
    onnx_path = export_sb3_to_onnx(model, folder / "policy.onnx")
    (folder / "policy.zip").write_bytes(zip_path.read_bytes())
    metadata_path(onnx_path).write_text(json.dumps({"train_seeds": [3], "tuning_seeds": [4]}))
    monkeypatch.setenv("RLBENCH_CONTENT_ROOT", str(tmp_path))
    env = gym.make("CartPole-v1")
    policy = make_policy("baseline:ppo-cartpole", env)
    assert isinstance(policy, OnnxPolicy)  # preferred to the .zip: no code is run
    identity = policy.identity
    assert identity.kind == "baseline" and identity.name == "ppo-cartpole"
    assert identity.spec == "baseline:ppo-cartpole" and identity.train_seeds == [3]
    assert identity.artifact_sha256 == hashlib.sha256(onnx_path.read_bytes()).hexdigest()
    onnx_path.unlink()
    assert isinstance(make_policy("baseline:ppo-cartpole", env), SB3Policy)
