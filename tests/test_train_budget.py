"""A budget that is not a whole number of rollouts (rlbench_suite/baselines/budget.py): rounded
down and said before training, the steps trained recorded everywhere a budget is read."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("stable_baselines3")

from typer.testing import CliRunner

from rlbench_suite.baselines.budget import BudgetError, plan_budget, rollouts, vector_steps
from rlbench_suite.baselines.train import TrainConfig, train
from rlbench_suite.cli import app
from rlbench_suite.evaluation import load_result

CARTPOLE = "rlbench/CartPole-v1"  # the committed ppo entry: rollouts of 8 envs x 32 n_steps


def test_a_budget_rounds_down_to_whole_rollouts_and_says_the_nearest_whole_one():
    plan = plan_budget(4096, rollouts(8, 250))
    assert plan.steps == 4000 and plan.spacing(204) == 2000 and plan.spacing(4001) == 6000
    assert plan.notice() == (
        "--budget 4,096 is not a whole number of rollouts (2,000 steps: 8 envs x 250 n_steps): "
        "training 4,000 steps, rounded down so the run stays within its budget; the nearest "
        "whole budget is --budget 4000 (6000 trains one more)"
    )
    assert plan_budget(5990, rollouts(8, 250)).notice().endswith("--budget 6000")
    assert plan_budget(6000, rollouts(8, 250)).notice() is None
    legacy = plan_budget(60000, rollouts(256, 25, "num_steps"), "up")  # SB3's learn, as before
    assert legacy.steps == 64000 and legacy.spacing(3000) == 3000
    assert "rounded up" in legacy.notice()
    off_policy = plan_budget(50001, vector_steps(1, 32))
    assert off_policy.steps == 50001 and off_policy.notice() is None
    assert off_policy.spacing(2500) == 2528  # its boundaries: every train_freq steps
    with pytest.raises(BudgetError, match=r"--budget 1,000 is less than one of its rollouts "
                       r"\(2,000 steps: 8 envs x 250 n_steps\); pass --budget 2000 or more"):
        plan_budget(1000, rollouts(8, 250))


def test_cli_train_says_the_steps_it_trains_first_and_records_them(tmp_path):
    result = CliRunner().invoke(app, [
        "train", CARTPOLE, "--algo", "ppo", "--budget", "1000", "--eval-every", "300",
        "--eval-episodes", "1", "--final-episodes", "2", "--out", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert " ".join(lines[0].split()) == (
        "note: --budget 1,000 is not a whole number of rollouts (256 steps: 8 envs x 32 "
        "n_steps): training 768 steps, rounded down so the run stays within its budget; the "
        "nearest whole budget is --budget 1024"
    )
    assert " ".join(lines[1].split()) == (
        "note: --eval-every 300 falls between rollout boundaries: a curve point every 512 steps")
    assert sum("note:" in line for line in lines) == 2 and "step 0/768" in lines[2]
    run_dir = tmp_path / "CartPole-v1" / "ppo" / "seed-0"
    run = json.loads((run_dir / "run.json").read_text())
    assert (run["budget"], run["budget_steps"], run["steps"]) == (1000, 768, 768)
    assert run["budget_note"] in lines[0] and run["budget_rounding"] == "down"
    # published records name the suite's own files and the CLI, not this machine's folders
    assert run["hyperparams_file"] == "baselines/hyperparams/ppo.yaml"
    assert run["eval_every"] == run["checkpoint_every"] == 512  # 300, at rollout boundaries
    steps = [int(line.split(",")[0]) for line in (run_dir / "curve.csv").read_text().split()[1:]]
    assert steps == [0, 512, 768]
    meta = json.loads((run_dir / "policy.onnx.meta.json").read_text())
    assert meta["training_budget_steps"] == 768
    assert load_result(run_dir / "result.json").training_budget_steps == 768
    assert "trained 768 steps" in result.output


def test_cli_train_refuses_a_budget_below_one_rollout_in_one_line(tmp_path):
    result = CliRunner().invoke(app, ["train", CARTPOLE, "--algo", "ppo", "--budget", "100",
                                      "--out", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 2
    assert " ".join(result.output.split()) == (
        "error: rlbench/CartPole-v1 ppo: --budget 100 is less than one of its rollouts (256 "
        "steps: 8 envs x 32 n_steps); pass --budget 256 or more, or smaller rollouts in "
        "--hyperparams"
    )
    assert not list(tmp_path.iterdir())


def test_runs_recorded_before_whole_rollout_budgets_reproduce_rounding_up(tmp_path):
    report = train(TrainConfig(CARTPOLE, "ppo", budget=1000, eval_every=300, eval_episodes=1,
                               final_episodes=1, out=tmp_path, budget_rounding="up"))  # fmt: skip
    assert report.run["steps"] == report.run["budget_steps"] == 1024  # as SB3's learn trains
    assert report.run["eval_every"] == 300 and report.run["budget_rounding"] == "up"


def test_a_run_recorded_before_whole_rollout_budgets_resumes_as_it_began(tmp_path):
    from stable_baselines3.common.callbacks import BaseCallback

    class Interrupt(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps >= 600:
                raise KeyboardInterrupt
            return True

    settings = dict(env_id=CARTPOLE, algo="ppo", budget=1000, eval_every=256, eval_episodes=1,
                    final_episodes=1, out=tmp_path)  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        train(TrainConfig(**settings), callbacks=[Interrupt()])
    record_file = tmp_path / "CartPole-v1" / "ppo" / "seed-0" / "run.json"
    record = json.loads(record_file.read_text())
    for key in ("budget_steps", "budget_rounding", "budget_note"):  # as older runs wrote it
        del record[key]
    record_file.write_text(json.dumps(record))
    notes: list[str] = []
    resumed = train(TrainConfig(**settings, resume=True), on_notice=notes.append)
    assert resumed.run["resumes"][0]["step"] == 512
    assert resumed.run["steps"] == resumed.run["budget_steps"] == 1024
    assert resumed.run["budget_rounding"] == "up" and resumed.run["budget_note"] == notes[0]
    assert "training 1,024 steps, rounded up as runs recorded before" in notes[0]


def test_an_off_policy_budget_not_above_learning_starts_is_refused(tmp_path):
    """DQN's CartPole entry waits 1,000 steps before its first update: a 700-step run would
    never learn, so it is refused before anything is written."""
    result = CliRunner().invoke(app, [
        "train", CARTPOLE, "--algo", "dqn", "--budget", "700", "--out", str(tmp_path)])  # fmt: skip
    assert result.exit_code != 0
    assert "--budget 700 is not above learning_starts 1,000" in " ".join(result.output.split())
    assert "pass --budget 1001 or more" in " ".join(result.output.split())
    assert not (tmp_path / "CartPole-v1" / "dqn" / "seed-0" / "curve.csv").exists()


@pytest.mark.parametrize(("argv0", "shown"), [
    ("/home/me/.venv/bin/rlbench", "rlbench"),
    ("/home/me/clone/rlbench_suite/cli/__main__.py", "rlbench"),  # python -m rlbench_suite.cli
    ("scripts/train_zoo.py", "scripts/train_zoo.py"),
])  # fmt: skip
def test_a_recorded_command_names_the_cli_not_a_local_path(argv0, shown):
    from rlbench_suite.core.provenance import program

    assert program(argv0) == shown



def test_resuming_a_finished_run_with_another_budget_says_it_cannot_be_extended(tmp_path):
    args = ["train", CARTPOLE, "--algo", "ppo", "--eval-episodes", "1", "--final-episodes", "2",
            "--out", str(tmp_path)]  # fmt: skip
    assert CliRunner().invoke(app, [*args, "--budget", "512"]).exit_code == 0
    again = CliRunner().invoke(app, [*args, "--budget", "1024", "--resume"])
    assert again.exit_code != 0
    said = " ".join(again.output.split())
    assert "has finished already; nothing to resume (its budget was 512, not 1,024: a run " in said
    assert "cannot be extended; train a new one with another --out or --seed)" in said
