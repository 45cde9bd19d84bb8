"""``rlbench tune``: the study, its resume, the written entry, and tuning seeds only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("optuna")

import optuna
from typer.testing import CliRunner

from rlbench_suite.baselines.hyperparams import read_file
from rlbench_suite.baselines.train import TrainConfig, train
from rlbench_suite.baselines.tune import (
    TRIAL_EVAL_FIRST_SEED,
    TRIAL_TRAIN_SEED,
    TuneConfig,
    TuneError,
    read_trials,
    tune,
    write_entry,
)
from rlbench_suite.cli import app
from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.seeds import TRAINING_SEEDS, TUNING_SEEDS

CARTPOLE = "rlbench/CartPole-v1"
BASE = """\
# PPO entries for the test: this comment stays
rlbench/Acrobot-v1:
  source:
    origin: public
    reference: kept as it is
  n_envs: 2
  n_timesteps: !!float 1e5   # a tag and a comment that stay

rlbench/CartPole-v1:
  source:
    origin: public
    reference: a test entry
  n_envs: 2
  n_timesteps: 512
  policy: MlpPolicy
"""


def _files(tmp_path: Path) -> tuple[Path, Path]:
    base = tmp_path / "ppo.yaml"
    base.write_text(BASE)
    out = tmp_path / "written.yaml"
    out.write_text(BASE)
    return base, out


def _check_seeds(study_dir: Path, trials: int) -> None:
    """Every trial trained and was evaluated on tuning seeds only."""
    evaluation = set(get_card(CARTPOLE).evaluation.seeds)
    records = [r for r in read_trials(study_dir) if r["state"] != "stopped" or r["evaluations"]]
    assert len({r["trial"] for r in records}) == trials
    for record in records:
        used = record["train_seeds"] + record["eval_seeds"]
        assert record["train_seeds"] == [TRIAL_TRAIN_SEED, TRIAL_TRAIN_SEED + 1]
        assert record["eval_seeds"] == [TRIAL_EVAL_FIRST_SEED, TRIAL_EVAL_FIRST_SEED + 1]
        assert all(s in TUNING_SEEDS and s not in TRAINING_SEEDS for s in used)
        assert not set(used) & evaluation


def _check_entry(out: Path, trials: int, budget: int) -> dict:
    text = out.read_text()
    assert text.startswith(BASE.split("rlbench/CartPole-v1")[0])  # the rest byte for byte
    entry = read_file(out)[CARTPOLE]
    source = entry["source"]
    assert source["origin"] == "tuned"
    assert source["trials"] == trials and source["budget_per_trial"] == budget
    assert source["tuning_seeds"] == [100000, 100001, 600000, 600001]
    assert "rlbench" in source["command"] and source["date"]
    assert entry["n_envs"] == 2 and entry["n_timesteps"] == 512
    assert {"gamma", "gae_lambda", "learning_rate", "n_steps"} <= set(entry)
    return entry


@pytest.mark.slow
def test_tune_local_writes_the_best_entry_resumes_and_uses_tuning_seeds_only(tmp_path, monkeypatch):
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv

    seen: list[int] = []  # every seed a CartPole was reset from, in this process
    reset = CartPoleEnv.reset

    def spy(self, *, seed=None, options=None):
        if seed is not None:
            seen.append(int(seed))
        return reset(self, seed=seed, options=options)

    monkeypatch.setattr(CartPoleEnv, "reset", spy)
    base, out = _files(tmp_path)
    study_dir = tmp_path / "study"
    config = TuneConfig(
        CARTPOLE,
        "ppo",
        trials=2,
        budget=256,
        study_dir=study_dir,
        hyperparams=base,
        write=out,
        evaluations=2,
        eval_episodes=2,
    )
    report = tune(config)
    study = optuna.load_study(
        study_name="CartPole-v1-ppo", storage=f"sqlite:///{study_dir}/study.db"
    )
    assert len(study.trials) == 2 and report.trials == 2
    assert report.best_value == pytest.approx(study.best_value)
    entry = _check_entry(out, 2, 256)
    assert entry["source"]["best_value"] == pytest.approx(study.best_value, rel=1e-5)

    with pytest.raises(TuneError, match="--resume"):
        tune(config)
    with pytest.raises(TuneError, match="budget: recorded 256, now 300"):
        tune(TuneConfig(**{**config.__dict__, "budget": 300, "resume": True}))
    tune(TuneConfig(**{**config.__dict__, "trials": 3, "resume": True}))
    study = optuna.load_study(
        study_name="CartPole-v1-ppo", storage=f"sqlite:///{study_dir}/study.db"
    )
    assert len(study.trials) == 3
    drawn = [t.params["learning_rate"] for t in study.trials]
    assert len(set(drawn)) == 3  # the resumed study drew new values, not its first ones again
    _check_entry(out, 3, 256)
    _check_seeds(study_dir, 3)
    assert set(seen) == {100000, 100001, 600000, 600001}  # what the envs were really reset from

    # a policy trained from the tuned entry records the study's seeds as its tuning seeds
    runs = train(
        TrainConfig(
            CARTPOLE,
            "ppo",
            budget=64,
            hyperparams=out,
            out=tmp_path / "runs",
            eval_every=64,
            eval_episodes=1,
            final_episodes=2,
        )
    )
    meta = json.loads((runs.run_dir / "policy.onnx.meta.json").read_text())
    assert meta["tuning_seeds"] == [100000, 100001, 600000, 600001]


@pytest.mark.slow
def test_tune_with_ray_tune_locally(tmp_path):
    pytest.importorskip("ray.tune")
    base, out = _files(tmp_path)
    study_dir = tmp_path / "study"
    result = CliRunner().invoke(
        app,
        [
            "tune",
            CARTPOLE,
            "--algo",
            "ppo",
            "--trials",
            "2",
            "--budget",
            "256",
            "--backend",
            "ray",
            "--study-dir",
            str(study_dir),
            "--hyperparams",
            str(base),
            "--write",
            str(out),
            "--evaluations",
            "2",
            "--eval-episodes",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "wrote the best entry" in result.output
    study = optuna.load_study(
        study_name="CartPole-v1-ppo", storage=f"sqlite:///{study_dir}/study.db"
    )
    assert len(study.trials) == 2
    _check_entry(out, 2, 256)
    _check_seeds(study_dir, 2)


def test_write_entry_replaces_one_entry_and_appends_new_ones(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text(BASE)
    entry = {"source": {"origin": "tuned", "reference": "x: y"}, "n_envs": 1, "n_timesteps": 9}
    write_entry(path, "Acrobot-v1", entry)
    write_entry(path, "rlbench/Pendulum-v1", entry)
    text = path.read_text()
    assert "kept as it is" not in text and "# PPO entries for the test" in text
    assert text.count("a test entry") == 1 and "\n\nrlbench/CartPole-v1:" in text
    assert text.endswith(
        "\n\nrlbench/Pendulum-v1:\n  source:\n    origin: tuned\n"
        "    reference: 'x: y'\n  n_envs: 1\n  n_timesteps: 9\n"
    )
    entries = read_file(path)
    assert list(entries) == ["rlbench/Acrobot-v1", CARTPOLE, "rlbench/Pendulum-v1"]
    assert entries["rlbench/Acrobot-v1"]["n_timesteps"] == 9


def test_tune_refuses_bad_input_in_one_line(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["tune", CARTPOLE, "--algo", "maskable_ppo"])
    assert result.exit_code == 2 and "tunable: ppo, a2c, dqn, sac, td3" in result.output
    result = runner.invoke(
        app, ["tune", CARTPOLE, "--algo", "ppo", "--backend", "dask", "--study-dir", str(tmp_path)]
    )
    assert result.exit_code == 2 and "accepted: local, ray" in result.output
    result = runner.invoke(app, ["tune", CARTPOLE, "--algo", "sac", "--budget", "100"])
    assert result.exit_code == 2 and "algorithms for it: ppo, a2c, dqn" in result.output
    result = runner.invoke(
        app, ["tune", CARTPOLE, "--algo", "ppo", "--resume", "--study-dir", str(tmp_path)]
    )
    assert result.exit_code == 2 and "nothing to resume" in result.output


def test_ctrl_c_in_a_trial_is_one_line_without_optunas_traceback(tmp_path, monkeypatch):
    """A review pressed Ctrl-C 6 s into `rlbench tune`: Optuna's warning with the trial's
    40-line KeyboardInterrupt traceback came first, then `error: interrupted`."""
    import io
    import logging
    import signal

    from rlbench_suite import interrupts
    from rlbench_suite.baselines import tune as tune_module

    monkeypatch.setattr(interrupts, "_received", [])

    def ctrl_c(*args, **kwargs):
        interrupts._received.append(signal.SIGINT)  # what the handler records
        raise KeyboardInterrupt

    monkeypatch.setattr(tune_module, "run_trial", ctrl_c)
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # makes Optuna's handler
    logged = io.StringIO()
    for handler in logging.getLogger("optuna").handlers:
        if isinstance(handler, logging.StreamHandler):  # pytest adds a handler of its own
            monkeypatch.setattr(handler, "stream", logged)
    result = CliRunner().invoke(app, ["tune", CARTPOLE, "--algo", "ppo", "--trials", "2",
                                      "--budget", "512", "--study-dir", str(tmp_path),
                                      "--no-write"])  # fmt: skip
    assert result.exit_code == 130, result.output
    lines = result.output.strip().splitlines()
    assert lines[-1] == "interrupted; continue the study with the same command and --resume"
    for text in (result.output, logged.getvalue()):
        assert "Traceback" not in text and "failed with" not in text and "error:" not in text
