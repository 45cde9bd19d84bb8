"""``rlbench train``: resume, seeds, hyperparameter files, errors, the run folder, ONNX parity."""

from __future__ import annotations

import json
import re
import shutil
import signal
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("onnxruntime")

import torch
from stable_baselines3.common.callbacks import BaseCallback
from typer.testing import CliRunner

import rlbench_suite
from rlbench_suite import interrupts
from rlbench_suite.baselines import sb3_run
from rlbench_suite.baselines.algorithms import ALGORITHMS, get_algorithm
from rlbench_suite.baselines.curves import read_curve
from rlbench_suite.baselines.hyperparams import (
    HyperparamsError,
    hyperparams_file,
    load_hyperparams,
    read_file,
)
from rlbench_suite.baselines.train import (
    SeedOverlapError,
    TrainConfig,
    TrainError,
    train,
)
from rlbench_suite.cli import app
from rlbench_suite.cli.common import interval
from rlbench_suite.evaluation import load_result
from rlbench_suite.policies import OnnxPolicy
from rlbench_suite.policies.specs import (
    available_baselines,
    make_policy,
    resolve_baseline,
)

CARTPOLE = "rlbench/CartPole-v1"


class _Interrupt(BaseCallback):
    """Stops training like Ctrl-C once ``at`` steps are done (mid-rollout)."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def _on_step(self) -> bool:
        if self.model.num_timesteps >= self.at:
            raise KeyboardInterrupt
        return True


def _params(algo: str, run_dir: Path) -> dict[str, torch.Tensor]:
    model = get_algorithm(algo).load_class().load(run_dir / "model.zip", device="cpu")
    return model.policy.state_dict()


# ------------------------------------------------------------------------------ resume


_OFF_POLICY = {"learning_starts": 50, "buffer_size": 1000, "policy_kwargs": {"net_arch": [32]}}
_RESUME = {  # env, algo, hyperparameters (None: the committed ones), budget, Ctrl-C at, every
    "ppo-cartpole": (CARTPOLE, "ppo", None, 2048, 1300, 256),
    "dqn": (CARTPOLE, "dqn", {**_OFF_POLICY, "train_freq": 16, "gradient_steps": 4,
                              "target_update_interval": 50}, 600, 350, 100),
    "td3-ou-noise": ("rlbench/Pendulum-v1", "td3", {**_OFF_POLICY, "noise_std": 0.3,
                     "noise_type": "ornstein-uhlenbeck"}, 300, 170, 50),
    "sac-gsde": ("rlbench/Pendulum-v1", "sac", {**_OFF_POLICY, "use_sde": True, "train_freq": 8,
                 "gradient_steps": 8}, 300, 170, 50),
    "ppo-normalize-gsde": ("rlbench/Pendulum-v1", "ppo", {"normalize": True, "use_sde": True,
                           "n_envs": 2, "n_steps": 64, "batch_size": 64}, 768, 400, 128),
}  # fmt: skip


@pytest.mark.parametrize("case", list(_RESUME))
def test_an_interrupted_run_resumes_bit_identical(tmp_path, case, monkeypatch):
    env_id, algo, entry, budget, stop, every = _RESUME[case]
    temp = tmp_path / "tmp"  # SB3's default logger would leave a folder here on every learn()
    temp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    monkeypatch.delenv("SB3_LOGDIR")  # conftest's, which would hide a folder made there
    hyperparams = None
    if entry is not None:
        hyperparams = tmp_path / f"{algo}.yaml"
        source = {"origin": "defaults", "reference": "test"}
        hyperparams.write_text(json.dumps({env_id: {"source": source, "n_timesteps": budget,
                                                    **entry}}))  # fmt: skip
    settings = dict(env_id=env_id, algo=algo, budget=budget, eval_every=2 * every,
                    checkpoint_every=every, eval_episodes=1, final_episodes=2,
                    hyperparams=hyperparams)  # fmt: skip
    whole = train(TrainConfig(**settings, out=tmp_path / "whole"))
    assert whole.run["steps"] == budget  # off-policy too, whatever their train_freq
    with pytest.raises(KeyboardInterrupt):
        train(TrainConfig(**settings, out=tmp_path / "cut"), callbacks=[_Interrupt(stop)])
    run_dir = tmp_path / "cut" / whole.run_dir.relative_to(tmp_path / "whole")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
    resumed = train(TrainConfig(**settings, out=tmp_path / "cut", resume=True))

    resumed_at = resumed.run["resumes"][0]["step"]
    assert stop - every < resumed_at <= stop  # the last checkpoint before the interruption
    if case == "ppo-cartpole":
        assert resumed_at == 1280  # rollouts of 8 envs x 32 steps
    assert resumed.run["resume_exact"] and resumed.run["status"] == "finished"
    a, b = _params(algo, whole.run_dir), _params(algo, resumed.run_dir)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a), "resumed parameters differ"

    def curve(d):
        text = (d / "curve.csv").read_text().splitlines()
        return [line.split(",")[:1] + line.split(",")[2:] for line in text]  # minus wall time

    assert curve(whole.run_dir) == curve(resumed.run_dir)
    assert not list(temp.glob("SB3-*"))  # new, interrupted and resumed runs left none there


def test_an_env_whose_state_does_not_pickle_resumes_with_new_episodes(tmp_path):
    # PettingZoo games (like Box2D and MuJoCo envs) are EzPickle: they pickle as their
    # constructor arguments, so a checkpoint cannot hold their state
    path = tmp_path / "maskable_ppo.yaml"
    entry = {"source": {"origin": "defaults", "reference": "test"}, "n_timesteps": 512,
             "n_envs": 2, "n_steps": 64, "batch_size": 64}  # fmt: skip
    path.write_text(json.dumps({"rlbench/TicTacToe-v3": entry}))
    settings = dict(env_id="rlbench/TicTacToe-v3", algo="maskable_ppo", hyperparams=path,
                    checkpoint_every=128, eval_episodes=1, final_episodes=2,
                    out=tmp_path)  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        train(TrainConfig(**settings), callbacks=[_Interrupt(300)])
    run_dir = tmp_path / "TicTacToe-v3" / "maskable_ppo" / "seed-0"
    assert not list((run_dir / "checkpoints").glob("*/env.pkl"))
    resumed = train(TrainConfig(**settings, resume=True))
    assert resumed.run["status"] == "finished" and resumed.run["steps"] == 512
    assert resumed.run["resumes"][0] == {**resumed.run["resumes"][0], "step": 256,
                                         "env_restored": False}  # fmt: skip
    assert resumed.run["resume_exact"] is False


def test_a_run_interrupted_in_its_final_evaluation_resumes_it(tmp_path):
    # the zoo's HalfCheetah seed stopped mid-evaluation; resuming refused the half-written
    # episode log instead of going on with it
    settings = dict(env_id=CARTPOLE, algo="ppo", budget=512, checkpoint_every=256,
                    eval_episodes=1, final_episodes=6, out=tmp_path)  # fmt: skip
    whole = train(TrainConfig(**settings))
    curve = [(r["step"], r["mean_return"]) for r in read_curve(whole.run_dir / "curve.csv")]
    log = whole.run_dir / "result.json.episodes.jsonl"
    first = load_result(whole.run_dir / "result.json")
    log.write_text("\n".join(log.read_text().splitlines()[:3]) + "\n")  # header, 2 episodes
    (whole.run_dir / "result.json").unlink()
    record = json.loads((whole.run_dir / "run.json").read_text())
    (whole.run_dir / "run.json").write_text(json.dumps({**record, "status": "interrupted"}))
    resumed = train(TrainConfig(**settings, resume=True))
    assert resumed.run["status"] == "finished"
    again = load_result(whole.run_dir / "result.json")
    assert again.returns == first.returns and len(again.returns) == 6
    again_curve = read_curve(whole.run_dir / "curve.csv")
    assert [(r["step"], r["mean_return"]) for r in again_curve] == curve  # no point twice
    # a log of an earlier final policy (a resume that retrained differently) is started over
    lines = [json.loads(line) for line in log.read_text().splitlines()[:3]]
    lines[0]["header"]["policy"]["artifact_sha256"] = "0" * 64
    for line in lines[1:]:
        line["r"] = -1.0
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (whole.run_dir / "result.json").unlink()
    (whole.run_dir / "run.json").write_text(json.dumps({**record, "status": "interrupted"}))
    train(TrainConfig(**settings, resume=True))
    assert load_result(whole.run_dir / "result.json").returns == first.returns


def test_resume_refuses_other_settings_and_says_which(tmp_path):
    settings = dict(env_id=CARTPOLE, algo="ppo", budget=512, checkpoint_every=256,
                    eval_episodes=1, out=tmp_path)  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        train(TrainConfig(**settings), callbacks=[_Interrupt(300)])
    with pytest.raises(TrainError, match=r"budget: recorded 512, now 1024"):
        train(TrainConfig(**{**settings, "budget": 1024}, resume=True))
    entries = read_file(hyperparams_file(get_algorithm("ppo")))
    changed = tmp_path / "ppo.yaml"
    entry = {**entries[CARTPOLE], "gamma": 0.9}
    changed.write_text(json.dumps({CARTPOLE: entry}))  # JSON is YAML
    with pytest.raises(TrainError, match=r"hyperparameter 'gamma': recorded 0.98, now 0.9"):
        train(TrainConfig(**settings, hyperparams=changed, resume=True))
    with pytest.raises(TrainError, match="already holds an unfinished run; pass --resume"):
        train(TrainConfig(**settings))


# ------------------------------------------------------------------------------- seeds


@pytest.mark.parametrize("seed", [999_999, 1_000_003])
def test_training_on_evaluation_seeds_is_refused_naming_the_overlap(tmp_path, seed):
    with pytest.raises(SeedOverlapError) as info:
        train(TrainConfig(CARTPOLE, "ppo", seed=seed, out=tmp_path))
    message = str(info.value)
    assert "overlap rlbench/CartPole-v1's evaluation seeds 1000000..1000049" in message
    assert str(max(seed, 1_000_000)) in message
    assert not any(tmp_path.iterdir()), "a refused run wrote files"


def test_a_seed_outside_the_training_range_is_refused(tmp_path):
    with pytest.raises(TrainError, match=r"outside the training seeds 0\.\.9999"):
        train(TrainConfig(CARTPOLE, "ppo", seed=5_000_000, out=tmp_path))


# ------------------------------------------------------------------------ hyperparameters


@pytest.mark.parametrize("algo", sorted(ALGORITHMS))
def test_every_committed_entry_is_valid_and_names_its_source(algo):
    entries = read_file(hyperparams_file(ALGORITHMS[algo]))
    assert entries
    for env_id in entries:
        params = load_hyperparams(ALGORITHMS[algo], env_id)
        assert rlbench_suite.get_card(env_id).id == env_id
        assert params.entry.source.reference


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"n_stepz": 8}, r"rlbench/CartPole-v1: key 'n_stepz' is not a hyperparameter of PPO; "
                         r"did you mean 'n_steps'\?"),
        ({"n_envs": "many"}, r"rlbench/CartPole-v1: key 'n_envs': .*integer"),
        ({"learning_rate": "fast"}, r"rlbench/CartPole-v1: key 'learning_rate': 'fast' is neither"),
        ({"policy_kwargs": {"activation_fn": "swish"}},
         r"rlbench/CartPole-v1: key 'policy_kwargs': .*activation_fn 'swish'"),
        ({"source": None}, r"rlbench/CartPole-v1: key 'source'"),
        ({"policy": "no_such_module:Policy"},
         r"rlbench/CartPole-v1: key 'policy': 'no_such_module:Policy' cannot be imported"),
    ],
)  # fmt: skip
def test_yaml_errors_name_the_env_and_the_key(tmp_path, entry, expected):
    good = read_file(hyperparams_file(get_algorithm("ppo")))[CARTPOLE]
    bad = {k: v for k, v in {**good, **entry}.items() if v is not None}
    path = tmp_path / "ppo.yaml"
    path.write_text(json.dumps({CARTPOLE: bad}))
    with pytest.raises(HyperparamsError, match=expected):
        load_hyperparams(get_algorithm("ppo"), CARTPOLE, path)


def test_yaml_syntax_and_missing_entry_errors(tmp_path):
    path = tmp_path / "ppo.yaml"
    path.write_text("rlbench/CartPole-v1: [unclosed\n")
    with pytest.raises(HyperparamsError, match="is not valid YAML"):
        load_hyperparams(get_algorithm("ppo"), CARTPOLE, path)
    with pytest.raises(HyperparamsError, match=r"no hyperparameters for rlbench/Wordle-v0"):
        load_hyperparams(get_algorithm("ppo"), "rlbench/Wordle-v0")


# -------------------------------------------------------------------------------- the CLI


def _one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def test_unknown_algorithm_or_env_is_one_clear_line(tmp_path):
    runner = CliRunner()
    line = _one_line_error(runner.invoke(app, ["train", CARTPOLE, "--algo", "ppp"]))
    assert "unknown algorithm 'ppp'; accepted: ppo, a2c, dqn, sac, td3, maskable_ppo" in line
    line = _one_line_error(runner.invoke(app, ["train", "CartPol-v1", "--algo", "dqn"]))
    assert "unknown environment id 'CartPol-v1'" in line
    assert "Ids with dqn hyperparameters: rlbench/CartPole-v1" in line


def test_a_device_that_is_not_used_is_refused_in_one_line_and_never_recorded(tmp_path):
    """A review: ``--device banana`` was a traceback for SB3 algorithms, and the offline (and
    the suite's own) algorithms, which train on the CPU, recorded any --device as their own."""
    runner = CliRunner()

    def refused(*args: str) -> str:
        line = _one_line_error(runner.invoke(app, ["train", *args, "--out", str(tmp_path)]))
        assert not list(tmp_path.iterdir())  # nothing written
        return line

    line = refused(CARTPOLE, "--algo", "ppo", "--device", "banana")
    assert "--device 'banana' is not a torch device: cpu, cuda, cuda:N or auto" in line
    for other in ("meta", "mps"):  # torch devices, but no run trains there (were tracebacks)
        line = refused(CARTPOLE, "--algo", "ppo", "--device", other)
        assert f"--device '{other}': runs train on the CPU or CUDA: cpu, cuda, cuda:N" in line
    line = refused(CARTPOLE, "--algo", "fast_ppo", "--device", "cuda")
    assert "--algo fast_ppo trains on the CPU only" in line and "--device cpu or auto" in line
    line = refused("rlbench/Pendulum-medium-v0", "--algo", "bc", "--device", "cuda:0")
    assert "--algo bc trains on the CPU only" in line
    if not torch.cuda.is_available():
        line = refused(CARTPOLE, "--algo", "ppo", "--device", "cuda")
        assert "this torch has no CUDA device" in line
    result = runner.invoke(app, ["train", CARTPOLE, "--algo", "ppo", "--budget", "256",
                                 "--device", "auto", "--out", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 0, result.output
    run = json.loads((tmp_path / "CartPole-v1" / "ppo" / "seed-0" / "run.json").read_text())
    assert run["device"] == ("cuda" if torch.cuda.is_available() else "cpu")  # what it used
    if not torch.cuda.is_available():  # the device is a setting --resume keeps
        (tmp_path / "CartPole-v1" / "ppo" / "seed-0" / "run.json").write_text(
            json.dumps({**run, "status": "interrupted", "device": "cuda"}))  # fmt: skip
        line = _one_line_error(runner.invoke(app, [
            "train", CARTPOLE, "--algo", "ppo", "--budget", "256", "--resume", "--out",
            str(tmp_path)]))  # fmt: skip
        assert "--resume refused" in line and "device: recorded 'cuda', now 'cpu'" in line


def test_reproduce_takes_the_cpu_for_an_algorithm_that_trains_only_there():
    """A review: records of fast_ppo and offline runs made before --device was checked say
    whatever --device was given; they trained on the CPU, and reproduce must not refuse them."""
    from rlbench_suite.baselines.reproduce_run import _recorded_device

    assert _recorded_device({"algo": "bc", "device": "cuda"}) == "cpu"
    assert _recorded_device({"algo": "fast_ppo", "device": "banana"}) == "cpu"
    assert _recorded_device({"algo": "ppo", "device": "cuda:1"}) == "cuda:1"
    assert _recorded_device({"algo": "sac"}) == "cpu"


def test_cli_train_writes_the_whole_run_folder(tmp_path):
    result = CliRunner().invoke(
        app, ["train", CARTPOLE, "--algo", "ppo", "--budget", "2048", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    run_dir = tmp_path / "CartPole-v1" / "ppo" / "seed-0"
    files = ["run.json", "curve.csv", "model.zip", "policy.onnx", "policy.onnx.meta.json",
             "result.json"]  # fmt: skip
    for name in files:
        assert (run_dir / name).is_file(), name
    assert list((run_dir / "checkpoints").glob("step-*/model.zip"))
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "finished" and run["steps"] == 2048 and run["budget"] == 2048
    assert run["seed"] == 0 and run["hyperparams"]["n_steps"] == 32 and run["wall_time_s"] > 0
    assert run["versions"]["stable-baselines3"] and sorted(run["files"]) == sorted(files)
    meta = json.loads((run_dir / "policy.onnx.meta.json").read_text())
    assert meta["train_seeds"] == list(range(8)) and meta["training_budget_steps"] == 2048
    assert (meta["algo"], meta["env_id"]) == ("PPO", CARTPOLE)
    steps = [int(line.split(",")[0]) for line in (run_dir / "curve.csv").read_text().split()[1:]]
    assert steps[0] == 0 and steps[-1] == 2048 and steps == sorted(steps)
    scored = load_result(run_dir / "result.json")
    assert scored.env_id == CARTPOLE and scored.training_budget_steps == 2048
    assert scored.policy["artifact_sha256"] and scored.seeds[0] == 1_000_000
    final = " ".join(result.output.split())
    assert "trained 2,048 steps" in final
    normalized, rate = scored.normalized_score, scored.aggregates["success_rate"]
    assert f"normalized score {interval(normalized.point, normalized.low, normalized.high, 3)} " \
           "(0 = random, 100 = expert), " \
           f"success rate {interval(rate.point, rate.low, rate.high, 3)}" in final  # fmt: skip
    # the same command again: the run is finished, so no circle through --resume
    again = CliRunner().invoke(
        app, ["train", CARTPOLE, "--algo", "ppo", "--budget", "2048", "--out", str(tmp_path)]
    )
    assert again.exit_code != 0
    assert f"holds a finished run (its result: {run_dir / 'result.json'})" in again.output


# --------------------------------------------------------------------------- ONNX parity

_SMALL = {  # tiny budgets: what is compared is the exported graph, not the training
    "ppo": (CARTPOLE, {"n_envs": 2, "n_steps": 64, "batch_size": 64}),
    "a2c": (CARTPOLE, {"n_envs": 2}),
    "dqn": (CARTPOLE, {"learning_starts": 64, "train_freq": 16, "gradient_steps": 4}),
    "sac": ("rlbench/Pendulum-v1", {"learning_starts": 64}),
    "td3": ("rlbench/Pendulum-v1", {"learning_starts": 64, "noise_type": "normal",
                                    "noise_std": 0.1}),
    "maskable_ppo": ("rlbench/TicTacToe-v3", {"n_envs": 2, "n_steps": 64, "batch_size": 64}),
    "ppo-normalize": ("rlbench/Pendulum-v1", {"normalize": True, "n_steps": 64,
                                              "batch_size": 64}),
    "recurrent_ppo": (CARTPOLE, {"n_envs": 2, "n_steps": 64, "batch_size": 64,
                                 "policy": "MlpLstmPolicy"}),
    "recurrent_ppo-normalize": ("rlbench/Pendulum-v1", {"normalize": True, "n_steps": 64,
                                                        "batch_size": 64,
                                                        "policy": "MlpLstmPolicy"}),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(_SMALL))
def test_the_onnx_policy_acts_like_the_sb3_model(tmp_path, case):
    algo = case.split("-")[0]
    env_id, entry = _SMALL[case]
    path = tmp_path / f"{algo}.yaml"
    source = {"origin": "defaults", "reference": "test"}
    path.write_text(json.dumps({env_id: {"source": source, "n_timesteps": 256, **entry}}))
    report = train(TrainConfig(env_id, algo, out=tmp_path, hyperparams=path, eval_episodes=1,
                               final_episodes=2, eval_every=128))  # fmt: skip
    model, run_dir = report.model, report.run_dir
    onnx = OnnxPolicy(run_dir / "policy.onnx")
    env = gym.make(env_id)
    normalizer = model.get_vec_normalize_env()
    obs, info = env.reset(seed=5)
    state, start = None, np.ones((1,), dtype=bool)  # a recurrent policy's LSTM state
    onnx.reset()
    for _ in range(40):
        kwargs = {}
        if algo == "maskable_ppo":
            kwargs["action_masks"] = info["action_mask"]
        if algo == "recurrent_ppo":
            kwargs.update(state=state, episode_start=start)
        model_obs = normalizer.normalize_obs(obs) if normalizer is not None else obs
        expected, state = model.predict(model_obs, deterministic=True, **kwargs)
        start = np.zeros((1,), dtype=bool)
        got = onnx.act(obs, info)
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-5, atol=1e-5)
        obs, _, terminated, truncated, info = env.step(expected)
        if terminated or truncated:
            obs, info = env.reset()
            state, start = None, np.ones((1,), dtype=bool)
            onnx.reset()
    if algo == "recurrent_ppo":  # (h, c) of sb3-contrib's default 1-layer LSTM of 256
        assert onnx.state_shape == (2, 1, 256)
        feed = {"obs": np.asarray(obs, np.float32)[None]}
        carried = np.full((1, *onnx.state_shape), 0.5, dtype=np.float32)
        fresh = onnx.session.run(["state_out"], {**feed, "state": 0 * carried})[0]
        after = onnx.session.run(["state_out"], {**feed, "state": carried})[0]
        assert not np.allclose(fresh, after)  # the state input is wired into the LSTM
    env.close()


# ------------------------------------------------------------------------------ baselines


def test_committed_trained_policies_resolve_by_a_readable_name(tmp_path, monkeypatch):
    monkeypatch.setenv("RLBENCH_CONTENT_ROOT", str(tmp_path))
    run = train(TrainConfig(CARTPOLE, "ppo", budget=256, out=tmp_path / "runs", eval_episodes=1,
                            final_episodes=1))  # fmt: skip
    for seed in (3, 1):
        folder = tmp_path / "baselines" / "policies" / "CartPole-v1" / "ppo" / f"seed-{seed}"
        folder.mkdir(parents=True)
        for name in ("policy.onnx", "policy.onnx.meta.json"):
            shutil.copy(run.run_dir / name, folder / name)
    assert available_baselines() == ["CartPole-v1/ppo/seed-1", "CartPole-v1/ppo/seed-3"]
    root = tmp_path / "baselines" / "policies" / "CartPole-v1" / "ppo"
    assert resolve_baseline("CartPole-v1/ppo/seed-3") == root / "seed-3" / "policy.onnx"
    assert resolve_baseline("CartPole-v1/ppo") == root / "seed-1" / "policy.onnx"  # lowest seed
    policy = make_policy("baseline:CartPole-v1/ppo")
    assert policy.identity.kind == "baseline" and policy.identity.name == "CartPole-v1/ppo"
    assert policy.identity.train_seeds == list(range(8))
    with pytest.raises(ValueError, match=re.escape("available: CartPole-v1/ppo/seed-{1,3};")):
        resolve_baseline("CartPole-v1/dqn")


def test_hyperparameters_the_algorithm_refuses_leave_no_folder(tmp_path):
    path = tmp_path / "ppo.yaml"
    entry = {"source": {"origin": "defaults", "reference": "test"}, "n_timesteps": 256,
             "policy": "NoSuchPolicy"}  # fmt: skip
    path.write_text(json.dumps({CARTPOLE: entry}))
    with pytest.raises(TrainError, match=r"PPO refused the hyperparameters for rlbench/CartPole"):
        train(TrainConfig(CARTPOLE, "ppo", hyperparams=path, out=tmp_path / "runs"))
    assert not (tmp_path / "runs").exists()


class _CtrlCCutAnImport(BaseCallback):
    """Ctrl-C landing in an import: onnxruntime's first import reports it as
    ``ImportError('initialization failed')`` (found by a review pressing Ctrl-C as the final
    evaluation started); the handler has remembered the signal."""

    def __init__(self, at: int, signalled: bool) -> None:
        super().__init__()
        self.at, self.signalled = at, signalled

    def _on_step(self) -> bool:
        if self.model.num_timesteps >= self.at:
            if self.signalled:
                interrupts._received.append(signal.SIGINT)
            raise ImportError("initialization failed")
        return True


@pytest.mark.parametrize("signalled", [True, False])
def test_an_error_after_ctrl_c_marks_the_run_interrupted_not_failed(tmp_path, signalled,
                                                                      monkeypatch):  # fmt: skip
    monkeypatch.setattr(interrupts, "_received", [])
    settings = dict(env_id=CARTPOLE, algo="ppo", budget=2048, eval_every=1024,
                    checkpoint_every=256, eval_episodes=1, final_episodes=2)  # fmt: skip
    stopped = sb3_run.RunInterrupted if signalled else ImportError
    with pytest.raises(stopped):
        train(TrainConfig(**settings, out=tmp_path), callbacks=[_CtrlCCutAnImport(600, signalled)])
    run = json.loads(next(tmp_path.rglob("run.json")).read_text())
    if signalled:
        assert run["status"] == "interrupted" and run.get("error") is None
    else:
        assert run["status"] == "failed" and "initialization failed" in run["error"]


@pytest.mark.parametrize("signalled", [True, False])
def test_train_reports_an_error_after_ctrl_c_as_the_interruption(tmp_path, signalled,
                                                                  monkeypatch):  # fmt: skip
    monkeypatch.setattr(interrupts, "_received", [])

    def cut(*args, **kwargs):
        if signalled:
            interrupts._received.append(signal.SIGINT)
        raise ImportError("initialization failed")

    monkeypatch.setattr("rlbench_suite.baselines.train.train", cut)
    result = CliRunner().invoke(app, ["train", CARTPOLE, "--algo", "ppo", "--out", str(tmp_path)])
    if signalled:
        assert result.exit_code == 130 and "interrupted" in result.output, result.output
        assert "error:" not in result.output
    else:
        assert result.exit_code == 2 and "error: initialization failed" in result.output


def test_ctrl_c_names_the_run_folder_to_resume_or_says_none_started(tmp_path, monkeypatch):
    """A review pressed Ctrl-C 1.5 s in: the line said to --resume a run that had no run.json
    yet ("nothing to resume"). Now it names the folder when there is one to resume."""
    runs = {}
    real_learn = sb3_run.Run.learn

    def cut_learn(self, model, callbacks):
        runs["dir"] = self.dir
        real_learn(self, model, [*callbacks, _Interrupt(300)])

    monkeypatch.setattr(sb3_run.Run, "learn", cut_learn)
    args = ["train", CARTPOLE, "--algo", "ppo", "--budget", "2048", "--out", str(tmp_path),
            "--checkpoint-every", "256", "--eval-episodes", "1"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 130, result.output
    assert f"--resume (run folder: {runs['dir']})" in result.output
    assert "continue from the last checkpoint" in " ".join(result.output.split())
    assert json.loads((runs["dir"] / "run.json").read_text())["status"] == "interrupted"
    # cut before its first checkpoint: --resume starts over, and the line says so (a review)
    early = [*args[:-4], "--checkpoint-every", "2048", "--eval-episodes", "1", "--seed", "1"]
    result = CliRunner().invoke(app, early)
    assert result.exit_code == 130, result.output
    assert "continue (no checkpoint yet: it starts over) with the same command and --resume" in (
        " ".join(result.output.split()))  # fmt: skip

    monkeypatch.setattr(sb3_run.Run, "start", lambda self: (_ for _ in ()).throw(KeyboardInterrupt))
    result = CliRunner().invoke(app, [*args[:-6], "--out", str(tmp_path / "other")])
    assert result.exit_code == 130
    assert "interrupted before training started; run the same command again" in result.output


def test_an_out_that_cannot_be_a_folder_is_one_line_not_a_traceback(tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    result = CliRunner().invoke(app, ["train", CARTPOLE, "--algo", "ppo", "--out", str(a_file)])
    assert result.exit_code == 2
    assert f"error: --out {a_file} cannot be a folder: a file is in the way" in " ".join(
        result.output.split())
    assert a_file.read_text() == "mine\n"
    under = a_file / "runs"  # a file further up is in the way too
    result = CliRunner().invoke(app, ["train", CARTPOLE, "--algo", "ppo", "--out", str(under)])
    assert result.exit_code == 2
    assert f"error: --out {under} cannot be a folder: a file is in the way" in " ".join(
        result.output.split())


def test_an_out_through_a_dangling_link_is_one_line(tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    for out in (tmp_path / "link", tmp_path / "link" / "runs"):
        result = CliRunner().invoke(app, ["train", CARTPOLE, "--algo", "ppo", "--out", str(out)])
        assert result.exit_code == 2, result.output
        assert f"error: --out {out} cannot be a folder: a file is in the way" in " ".join(
            result.output.split())


def test_a_mistyped_env_id_leaves_no_runs_folder_behind(tmp_path):
    """A review: ``train`` made the runs folder before it checked the env id."""
    out = tmp_path / "runs" / "mine"
    result = CliRunner().invoke(app, ["train", "rlbench/CartPole-expertt-v0", "--algo", "bc",
                                      "--out", str(out)])  # fmt: skip
    assert result.exit_code == 2 and "unknown environment id" in result.output
    assert list(tmp_path.iterdir()) == []
