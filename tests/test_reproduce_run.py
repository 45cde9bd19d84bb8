"""``rlbench reproduce RUN_DIR``: re-training a run from its record and comparing."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("onnxruntime")

from typer.testing import CliRunner

from rlbench_suite.baselines.reproduce_run import reproduce_run
from rlbench_suite.baselines.train import TrainConfig, TrainError, train
from rlbench_suite.cli import app

CARTPOLE = "rlbench/CartPole-v1"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    config = TrainConfig(CARTPOLE, "ppo", seed=4, budget=512, out=out, eval_every=256,
                         eval_episodes=1, final_episodes=3)  # fmt: skip
    return train(config).run_dir


@pytest.mark.slow
def test_a_ppo_cartpole_run_reproduces_exactly(run_dir, tmp_path):
    found = reproduce_run(run_dir / "run.json", tmp_path / "again")
    assert found.identical, found.differences
    assert found.again_dir == tmp_path / "again" / "CartPole-v1" / "ppo" / "seed-4"
    assert found.max_return_difference == 0.0 and found.episodes == 3
    before, after = found.aggregates["return_mean"]
    assert before == after
    again = json.loads((found.again_dir / "run.json").read_text())
    assert again["hyperparams"] == json.loads((run_dir / "run.json").read_text())["hyperparams"]


@pytest.mark.slow
def test_reproduce_command_reports_the_aggregates_and_any_difference(run_dir, tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["reproduce", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert "reproduced: policy, learning curve and 3 episodes identical" in result.output
    assert "return_mean" in result.output and "re-trained run" not in result.output  # temp, gone

    tampered = tmp_path / "tampered"
    tampered.mkdir()
    for name in ("run.json", "curve.csv", "result.json"):
        (tampered / name).write_bytes((run_dir / name).read_bytes())
    result_file = tampered / "result.json"
    data = json.loads(result_file.read_text())
    data["returns"][0] += 3.0
    data["aggregates"]["return_mean"]["point"] += 1.0
    result_file.write_text(json.dumps(data))
    result = runner.invoke(app, ["reproduce", str(tampered), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert "differs: episode 0 (seed 1000000)" in result.output
    assert "largest per-episode return difference: 3" in result.output


def test_reproduce_refuses_an_unfinished_run(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"status": "interrupted"}))
    with pytest.raises(TrainError, match="has not finished"):
        reproduce_run(tmp_path)
    result = CliRunner().invoke(app, ["reproduce", str(tmp_path / "run.json")])
    assert result.exit_code == 2 and "--resume" in result.output
