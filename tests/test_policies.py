"""Policy protocol, identities, sidecar metadata, make_policy, module/joint/baseline policies.

Everything here runs without torch, stable-baselines3 or onnxruntime; the SB3 and ONNX
adapters are tested in test_policy_adapters.py.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import rlbench_suite
from rlbench_suite.policies import (
    CallablePolicy,
    JointPolicy,
    ModulePolicy,
    Policy,
    PolicyIdentity,
    PolicyMetadataError,
    RandomPolicy,
    agent_seed,
    as_policy,
    available_baselines,
    file_sha256,
    identity_of,
    load_metadata,
    make_policy,
    metadata_path,
    policy_seed,
)
from tests.conftest import run_python


def test_as_policy_adapts_callables_by_arity():
    assert as_policy(lambda obs: obs + 1).act(1, {}) == 2
    assert as_policy(lambda obs, info: info["k"]).act(1, {"k": 3}) == 3
    assert as_policy(lambda *args: len(args)).act(1, {}) == 2
    policy = RandomPolicy(spaces.Discrete(3), seed=0)
    assert as_policy(policy) is policy and isinstance(policy, Policy)
    assert isinstance(as_policy(print), CallablePolicy)


def test_random_policy_respects_the_mask_and_its_seed():
    policy = RandomPolicy(spaces.Discrete(5), seed=1)
    mask = np.array([0, 1, 0, 1, 0], np.int8)
    first = [policy.act(None, {"action_mask": mask}) for _ in range(50)]
    assert set(first) == {1, 3}
    policy.reset(1)
    assert [policy.act(None, {"action_mask": mask}) for _ in range(50)] == first


def test_policy_seed_gives_a_stream_independent_of_the_env_seed():
    env_rng = np.random.default_rng(7)  # what env.reset(seed=7) seeds
    same = spaces.Discrete(1000, seed=7)
    other = spaces.Discrete(1000, seed=policy_seed(7))
    env_draws = env_rng.integers(1000, size=20)
    assert [int(same.sample()) for _ in range(20)] == list(env_draws)  # the trap
    assert [int(other.sample()) for _ in range(20)] != list(env_draws)
    assert policy_seed(7) == policy_seed(7) != policy_seed(8)


def test_agent_seeds_differ_by_agent_and_seed():
    seeds = {agent_seed(s, a) for s in (0, 1) for a in ("player_0", "player_1")}
    assert len(seeds) == 4 and agent_seed(0, "player_0") == agent_seed(0, "player_0")
    assert policy_seed(0) not in seeds


def test_importing_policies_stays_light():
    proc = run_python(
        "import sys\n"
        "from rlbench_suite.policies import make_policy, JointPolicy, SB3Policy, OnnxPolicy\n"
        "heavy = ['torch', 'stable_baselines3', 'sb3_contrib', 'onnxruntime', 'onnx']\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# ------------------------------------------------------------------------- identities


def test_code_defined_policies_have_identities():
    random_identity = RandomPolicy(spaces.Discrete(3)).identity
    assert random_identity.kind == "random" and random_identity.artifact_sha256 is None

    def greedy(obs):
        return 0

    identity = as_policy(greedy).identity
    assert identity.kind == "callable" and identity.name.endswith("greedy")
    assert identity.extra["module"] == __name__
    with pytest.raises(ValueError, match="frozen"):
        identity.name = "other"
    assert identity_of(object()).kind == "callable"  # a policy without an identity


def test_identity_round_trips_through_json():
    identity = PolicyIdentity(
        name="x", kind="onnx", artifact_sha256="ab" * 32, train_seeds=[1], extra={"a": [1]}
    )
    assert PolicyIdentity.model_validate_json(identity.model_dump_json()) == identity
    with pytest.raises(ValueError, match="kind"):
        PolicyIdentity(name="x", kind="nonsense")


# ------------------------------------------------------------------------- sidecar metadata


def write_sidecar(artifact: Path, content: object) -> Path:
    path = metadata_path(artifact)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_sidecar_metadata_is_parsed(tmp_path):
    artifact = tmp_path / "policy.onnx"
    artifact.write_bytes(b"not really onnx")
    assert load_metadata(artifact) is None
    path = write_sidecar(
        artifact,
        {
            "name": "ppo-x",
            "train_seeds": [0, 1],
            "tuning_seeds": [7],
            "training_budget_steps": 1000,
            "extra": {"notes": "hi"},
        },
    )
    assert path.name == "policy.onnx.meta.json"
    meta = load_metadata(artifact)
    assert meta.train_seeds == [0, 1] and meta.tuning_seeds == [7]
    assert meta.training_budget_steps == 1000 and meta.extra == {"notes": "hi"}
    assert file_sha256(artifact) == hashlib.sha256(b"not really onnx").hexdigest()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"train_seeds": [1, "a"]}, r"field 'train_seeds\.1'"),
        ({"train_seeds": [1, -2]}, r"field 'train_seeds\.1'.*greater than or equal to 0"),
        ({"train_seed": [1]}, r"field 'train_seed'.*accepted fields: schema_version"),
        ({"training_budget_steps": 1.5}, r"field 'training_budget_steps'"),
        ({"schema_version": 2}, r"field 'schema_version'"),
        ([1, 2], r"field '<root>'"),
        ("{not json", "is not valid JSON"),
    ],
)
def test_malformed_sidecar_names_the_file_and_the_field(tmp_path, content, expected):
    artifact = tmp_path / "policy.zip"
    artifact.write_bytes(b"")
    path = write_sidecar(artifact, content)
    with pytest.raises(PolicyMetadataError, match=expected) as excinfo:
        load_metadata(artifact)
    assert str(path) in str(excinfo.value)
    assert isinstance(excinfo.value, ValueError)


# ------------------------------------------------------------------------- make_policy


def test_make_policy_random_uses_its_own_copy_of_the_action_space():
    env = gym.make("rlbench/CartPole-v1")
    policy = make_policy("random", env, seed=3)
    assert isinstance(policy, RandomPolicy) and policy.action_space is not env.action_space
    assert policy.identity.spec == "random"
    first = [policy.act(None, {}) for _ in range(20)]
    policy.reset(3)
    assert [policy.act(None, {}) for _ in range(20)] == first


@pytest.mark.parametrize(
    ("spec", "error", "expected"),
    [
        ("random", ValueError, "needs an env"),
        ("randm", ValueError, r"unknown policy spec 'randm'.*accepted: random, sb3:PATH.*'random'"),
        ("", ValueError, "unknown policy spec ''"),
        ("sb3:", ValueError, "names no PATH"),
        ("sb3:/no/such/model.zip", FileNotFoundError, "/no/such/model.zip"),
        ("onnx:/no/such/model.onnx", FileNotFoundError, "/no/such/model.onnx"),
        ("onx:model.onnx", ValueError, r"cannot import module 'onx'.*did you mean 'onnx:'"),
        (
            "module:no_such_module_xyz:policy",
            ValueError,
            "cannot import module 'no_such_module_xyz'",
        ),
        ("module:json:dumpz", ValueError, r"'json' has no attribute 'dumpz'.*dumps"),
        ("module:json", ValueError, "expected 'package.module:attribute'"),
        ("module:json:__name__", ValueError, "not a Policy, a Policy class or a callable"),
        ("baseline:nope", ValueError, "unknown baseline 'nope'; available: "),
        (
            "baseline:KitchenHeldOut-v0/shared_ppo/seed-0",  # scored there, trained on Kitchen
            ValueError,
            r"did you mean: Kitchen-v0/shared_ppo/seed-0.*\? \(\d+ baselines are available\)$",
        ),
    ],
)
def test_make_policy_errors_name_the_spec_and_what_is_accepted(spec, error, expected):
    with pytest.raises(error, match=expected):
        make_policy(spec)


def test_make_policy_algo_is_for_sb3_only():
    with pytest.raises(ValueError, match="algo= applies to 'sb3:PATH'"):
        make_policy("random", gym.make("rlbench/CartPole-v1"), algo="PPO")


# ------------------------------------------------------------------------- module:attr

AGENTS_MODULE = """
import numpy as np

class SpacePolicy:
    def __init__(self, action_space, observation_space, seed=None):
        self.action_space, self.observation_space, self.seed = action_space, observation_space, seed
    def reset(self, seed=None):
        self.seed = seed
    def act(self, observation, info):
        return self.action_space.n - 1

class NeedsMore:
    def __init__(self, action_space, temperature):
        pass

def always_zero(observation):
    return 0

class Agents:
    left = staticmethod(lambda observation, info: 0)

INSTANCE = SpacePolicy.__new__(SpacePolicy)
INSTANCE.action_space = None
"""


@pytest.fixture
def agents_module(tmp_path, monkeypatch):
    (tmp_path / "my_agents_for_tests.py").write_text(textwrap.dedent(AGENTS_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "my_agents_for_tests"


def test_module_policy_resolves_classes_callables_and_instances(agents_module):
    env = gym.make("rlbench/CartPole-v1")
    policy = make_policy(f"module:{agents_module}:SpacePolicy", env, seed=4)
    assert isinstance(policy, ModulePolicy)
    assert policy.policy.action_space is env.action_space and policy.policy.seed == 4
    assert policy.act(np.zeros(4), {}) == 1
    assert policy.identity.kind == "module" and policy.identity.name.endswith(":SpacePolicy")
    assert policy.identity.spec == f"module:{agents_module}:SpacePolicy"

    bare = make_policy(f"{agents_module}:always_zero")  # the module: prefix is optional
    assert bare.act(np.zeros(4), {}) == 0 and isinstance(bare.policy, CallablePolicy)
    assert make_policy(f"{agents_module}:Agents.left").act(None, {}) == 0  # dotted attribute
    instance = make_policy(f"{agents_module}:INSTANCE")
    assert instance.policy.__class__.__name__ == "SpacePolicy"


def test_module_policy_class_rules(agents_module):
    with pytest.raises(ValueError, match="takes observation_space and action_space: pass an env"):
        ModulePolicy(f"{agents_module}:SpacePolicy")
    with pytest.raises(ValueError, match=r"requires \['temperature'\]"):
        ModulePolicy(f"{agents_module}:NeedsMore", gym.make("rlbench/CartPole-v1"))


# ------------------------------------------------------------------------- joint policies


def play_rps(joint: JointPolicy, seed: int, steps: int = 30) -> list[dict]:
    env = rlbench_suite.make_multiagent("rlbench/RockPaperScissors-v2")
    observations, infos = env.reset(seed=seed)
    joint.reset(policy_seed(seed))
    history = []
    for _ in range(steps):
        if not env.agents:
            break
        actions = joint.act(observations, infos)
        history.append({a: int(x) for a, x in actions.items()})
        observations, _, _, _, infos = env.step(actions)
    return history


def test_joint_policy_on_rock_paper_scissors():
    env = rlbench_suite.make_multiagent("rlbench/RockPaperScissors-v2")
    joint = JointPolicy({a: RandomPolicy(env.action_space(a)) for a in env.possible_agents})
    first = play_rps(joint, seed=11)
    assert len(first) > 5 and set(first[0]) == set(env.possible_agents)
    assert play_rps(joint, seed=11) == first
    assert play_rps(joint, seed=12) != first
    p0 = [step["player_0"] for step in first]
    p1 = [step["player_1"] for step in first]
    assert p0 != p1  # independent streams, though both were reset from one seed
    assert joint.identity.kind == "joint"
    assert set(joint.identity.extra["agents"]) == set(env.possible_agents)
    assert joint.for_agent("player_1") is joint.policies["player_1"]
    with pytest.raises(KeyError, match="no policy for agent 'player_9'"):
        joint.for_agent("player_9")


def test_joint_policy_resets_a_shared_policy_once_and_merges_seeds():
    calls = []

    class Recorder:
        identity = PolicyIdentity(name="r", kind="callable", train_seeds=[3], tuning_seeds=[5])

        def reset(self, seed=None):
            calls.append(seed)

        def act(self, observation, info):
            return 0

    other = Recorder()
    other.identity = PolicyIdentity(name="o", kind="callable", train_seeds=[1, 3])
    shared = Recorder()
    joint = JointPolicy({"a": shared, "b": shared, "c": other})
    joint.reset(9)
    assert calls == [agent_seed(9, "a"), agent_seed(9, "c")]
    assert joint.identity.train_seeds == [1, 3] and joint.identity.tuning_seeds == [5]
    assert joint.act({"a": 1, "c": 2}) == {"a": 0, "c": 0}


def test_make_policy_random_for_a_multiagent_env():
    env = rlbench_suite.make_multiagent("rlbench/RockPaperScissors-v2")
    policy = make_policy("random", env, seed=0, agent="player_0")
    assert policy.action_space == env.action_space("player_0")
    assert isinstance(make_policy("random", env), RandomPolicy)  # agents share their spaces


# ------------------------------------------------------------------------- baselines


def test_unknown_baseline_lists_the_available_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("RLBENCH_CONTENT_ROOT", str(tmp_path))
    for name in ("ppo-cartpole", "sac/Pendulum-v1"):
        (tmp_path / "baselines" / name).mkdir(parents=True)
        (tmp_path / "baselines" / name / "policy.onnx").write_bytes(b"")
    (tmp_path / "baselines" / "empty").mkdir()
    assert available_baselines() == ["ppo-cartpole", "sac/Pendulum-v1"]
    with pytest.raises(ValueError, match=r"available: ppo-cartpole, sac/Pendulum-v1.*ppo-cartpole"):
        make_policy("baseline:ppo-cartpol")
    with pytest.raises(ValueError, match="invalid baseline name"):
        make_policy("baseline:../outside")
