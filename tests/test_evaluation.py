"""The evaluation harness end to end: workers, backends, resume, seeds, reproduce."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.protocol import SeedOverlapError
from rlbench_suite.core.result import load_result
from rlbench_suite.core.summary import with_figures
from rlbench_suite.evaluation.protocols import default_protocol
from rlbench_suite.evaluation.runner import evaluate, split_statically
from rlbench_suite.policies import RandomPolicy
from tests.conftest import REPO, as_a_foreground_job, run_cli

CARTPOLE = default_protocol("rlbench/CartPole-v1", episodes=7)


def _per_episode(result) -> list[tuple]:
    return list(zip(result.seeds, result.returns, result.lengths, result.successes, strict=True))


@pytest.fixture(scope="module")
def one_worker():
    return evaluate("rlbench/CartPole-v1", "random", CARTPOLE, workers=1)


def test_static_division_is_round_robin():
    pending = [(i, 100 + i) for i in range(7)]
    assert split_statically(pending, 3) == [
        [(0, 100), (3, 103), (6, 106)],
        [(1, 101), (4, 104)],
        [(2, 102), (5, 105)],
    ]
    assert split_statically(pending[:1], 4) == [[(0, 100)]]


def test_one_and_two_workers_give_identical_episodes(one_worker):
    two = evaluate("rlbench/CartPole-v1", "random", CARTPOLE, workers=2)
    assert _per_episode(two) == _per_episode(one_worker)
    assert two.workers == 2 and one_worker.workers == 1
    assert two.aggregates == one_worker.aggregates
    assert len(set(one_worker.returns)) > 1  # really different episodes


def test_ray_backend_gives_identical_episodes(one_worker):
    pytest.importorskip("ray")
    on_ray = evaluate("rlbench/CartPole-v1", "random", CARTPOLE, workers=2, backend="ray")
    assert _per_episode(on_ray) == _per_episode(one_worker)
    assert on_ray.backend == "ray"


def test_result_contents(one_worker, tmp_path):
    result = one_worker
    assert result.protocol_hash == CARTPOLE.hash and result.spec_hash
    assert result.policy["kind"] == "random" and result.policy["spec"] == "random"
    mean = result.aggregates["return_mean"]
    assert mean.point == pytest.approx(np.mean(result.returns))
    assert mean.low <= mean.point <= mean.high and mean.reps == 2000
    assert result.aggregates["success_rate"].method == "wilson"
    # CartPole's expert reference is the trained zoo's: the mean return on its 0-100 scale
    card = get_card("rlbench/CartPole-v1")
    assert result.normalized_score.point == pytest.approx(card.normalized_score(mean.point))
    assert result.provenance.packages["gymnasium"] and result.provenance.finished
    path = result.save(tmp_path / "r.json")
    assert load_result(path) == result
    data = json.loads(path.read_text())
    data["returns"][0] += 1
    data["protocol_hash"] = "0" * 64
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="protocol_hash does not match"):
        load_result(path)


class _TrainedOn:
    """A policy recording the seeds it was trained and tuned on."""

    def __init__(self, train_seeds: list[int]) -> None:
        from rlbench_suite.policies import PolicyIdentity

        self.identity = PolicyIdentity(name="trained", kind="callable", train_seeds=train_seeds)
        self.inner = None

    def reset(self, seed=None):
        pass

    def act(self, observation, info):
        return 0


def test_overlapping_seeds_are_refused():
    protocol = default_protocol("rlbench/CartPole-v1", seeds=[5, 6, 7])
    with pytest.raises(SeedOverlapError, match=r"\(6\)"):
        evaluate("rlbench/CartPole-v1", _TrainedOn([6, 40]), protocol, workers=1)
    result = evaluate("rlbench/CartPole-v1", _TrainedOn([1, 2]), protocol, workers=1)
    assert result.policy["train_seeds"] == [1, 2]


def test_policy_objects_need_pickling_for_several_workers():
    class Unpicklable(RandomPolicy):
        def __reduce__(self):
            raise TypeError("no")

    import gymnasium as gym

    policy = Unpicklable(gym.spaces.Discrete(2))
    with pytest.raises(ValueError, match="must be picklable to run on several workers"):
        evaluate("rlbench/CartPole-v1", policy, CARTPOLE, workers=2)


def test_killed_run_resumes_without_losing_or_repeating_episodes(tmp_path):
    out = tmp_path / "hc.json"
    log = tmp_path / "hc.json.episodes.jsonl"
    args = ["eval", "rlbench/HalfCheetah-v5", "--policy", "random", "--episodes", "12",
            "--workers", "2", "--out", str(out)]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlbench_suite.cli", *args], cwd=REPO,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.time() + 120
    while time.time() < deadline:
        if log.exists() and len(log.read_text().splitlines()) >= 4:  # header + 3 episodes
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole run, workers included
    proc.wait()
    kept = log.read_text().splitlines()
    finished = [json.loads(line) for line in kept[1:]]
    assert 3 <= len(finished) < 12 and not out.exists()

    again = run_cli(*args)
    assert again.returncode == 2 and "pass --resume" in again.stderr
    resumed = run_cli(*args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    lines = log.read_text().splitlines()
    assert lines[: len(kept)] == kept  # finished episodes kept as they were
    indices = [json.loads(line)["index"] for line in lines[1:]]
    assert sorted(indices) == list(range(12))  # none lost, none repeated
    protocol = default_protocol("rlbench/HalfCheetah-v5", episodes=12)
    fresh = evaluate("rlbench/HalfCheetah-v5", "random", protocol, workers=1)
    assert _per_episode(load_result(out)) == _per_episode(fresh)


def test_cli_eval_then_reproduce(tmp_path):
    out = tmp_path / "cp.json"
    proc = run_cli("eval", "CartPole-v1", "--policy", "random", "--episodes", "5",
                   "--workers", "1", "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "return_mean" in proc.stdout and "success_rate" in proc.stdout
    shown = run_cli("results", "show", str(out))
    assert shown.returncode == 0 and "return_iqm" in shown.stdout
    again = run_cli("reproduce", str(out), "--workers", "1")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "reproduced: 5 episodes identical" in again.stdout
    data = json.loads(out.read_text())
    data["returns"][2] += 1.0
    out.write_text(json.dumps(data))
    tampered = run_cli("reproduce", str(out), "--workers", "1")
    assert tampered.returncode == 2 and "return_mean does not match" in tampered.stderr
    with_figures(get_card("rlbench/CartPole-v1"), data)  # a consistent edit still differs
    out.write_text(json.dumps(data))
    differs = run_cli("reproduce", str(out), "--workers", "1")
    assert differs.returncode == 1 and "episode 2 (seed 1000002)" in differs.stdout
    # --write records the re-run (as after an env's code changed its bits), the rest kept
    data["training_budget_steps"] = 1234
    out.write_text(json.dumps(data))
    written = run_cli("reproduce", str(out), "--workers", "1", "--write")
    assert written.returncode == 0, written.stdout + written.stderr
    assert f"wrote the re-run into {out} (1 episode differed)" in " ".join(written.stdout.split())
    now = json.loads(out.read_text())
    assert now["returns"][2] == data["returns"][2] - 1.0 and now["training_budget_steps"] == 1234
    assert run_cli("reproduce", str(out), "--workers", "1").returncode == 0
    # another policy than the file's is never written over it
    now["returns"][2] += 1.0
    with_figures(get_card("rlbench/CartPole-v1"), now)
    now["policy"]["artifact_sha256"] = "ab" * 32
    out.write_text(json.dumps(now))
    refused = run_cli("reproduce", str(out), "--workers", "1", "--write")
    assert refused.returncode == 2 and "not the same environment and policy" in refused.stderr
    assert "policy artifact_sha256" in refused.stderr
    assert json.loads(out.read_text()) == now  # untouched


HOPPER_IQL = REPO / "baselines/results/Hopper-medium-v0/iql/seed-0/result.json"


@pytest.mark.parametrize(
    ("field", "update", "message"),
    [
        ("normalized_score", {"point": 90.0, "low": 88.0, "high": 92.0},
         "normalized_score.point 90 does not match the per-episode returns on the file's "
         "normalization (random 17.4721, expert 3260.25): expected 11.0239"),
        ("normalization", {"expert": 999.0},
         "normalization.expert 999.0 differs from rlbench/Hopper-medium-v0's card, which has "
         "3260.253454"),
    ],
)  # fmt: skip
def test_results_show_and_reproduce_refuse_a_normalized_score_the_file_contradicts(
    field, update, message, tmp_path
):
    """A review: a committed offline result with its normalized score set to 90 (the returns
    give 11) showed 90 [88, 92] and `reproduce` said `reproduced`, exit 0; expert 999 too."""
    data = json.loads(HOPPER_IQL.read_text(encoding="utf-8"))
    data[field].update(update)
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    for command in (["results", "show"], ["reproduce"], ["results", "compare"]):
        proc = run_cli(*command, str(path), *([str(HOPPER_IQL)] if "compare" in command else []))
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert proc.stderr.startswith(f"error: {path}: ") and proc.stderr.count("\n") == 1
        assert message in proc.stderr and "Traceback" not in proc.stderr
        assert "reproduced" not in proc.stdout and "90 [88" not in proc.stdout
        assert "\x1b" not in proc.stdout + proc.stderr


def test_reproduce_says_when_returns_differ_only_in_their_last_bits(tmp_path):
    """A review: `rlbench reproduce` exited 1 over 1-ulp return differences (another CPU's
    floating point) with nothing saying so; they stay an exit 1 unless --accept-rounding."""
    out = tmp_path / "pendulum.json"
    proc = run_cli("eval", "rlbench/Pendulum-v1", "--policy", "random", "--episodes", "3",
                   "--workers", "1", "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    for index in (0, 2):  # the last bit of two returns, as another CPU summed them
        data["returns"][index] = float(np.nextafter(data["returns"][index], 0.0))
    out.write_text(json.dumps(data))
    differs = run_cli("reproduce", str(out), "--workers", "1")
    assert differs.returncode == 1, differs.stdout + differs.stderr
    text = " ".join(differs.stdout.split())
    assert "differs only in the last bits of 2 episodes (max |diff| " in text
    assert "another CPU's floating point (returns within relative 1e-12" in text
    assert "--accept-rounding counts that as reproduced" in text
    assert "episode 0 (seed" not in text and "\x1b" not in differs.stdout
    accepted = run_cli("reproduce", str(out), "--workers", "1", "--accept-rounding")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    said = " ".join(accepted.stdout.split())
    assert "reproduced (--accept-rounding): the re-run differs only in the last bits of 2" in said
    # a real difference is listed, and --accept-rounding does not take it
    data["returns"][1] += 1e-6
    out.write_text(json.dumps(with_figures(get_card("rlbench/Pendulum-v1"), data)))
    real = run_cli("reproduce", str(out), "--workers", "1", "--accept-rounding")
    assert real.returncode == 1, real.stdout + real.stderr
    assert "differs: episode 1 (seed 1000001)" in real.stdout and "last bits" not in real.stdout


def test_a_rescored_result_keeps_its_normalized_score_with_the_references_it_is_on():
    """An offline id's result names the dataset card's references beside its normalized score:
    a re-run written over it brings both, never a new score on the old references."""
    from rlbench_suite.evaluation.reproduce import rescored

    path = next((REPO / "baselines/results/Acrobot-medium-v0").rglob("result.json"))
    original = load_result(path)
    assert original.normalization is not None and original.normalized_score is not None
    references = original.normalization.model_copy(update={"expert": -70.0})
    score = original.normalized_score.model_copy(update={"point": 12.5})
    again = original.model_copy(update={"normalization": references, "normalized_score": score,
                                        "training_budget_steps": None})  # fmt: skip
    written = rescored(original, again)
    assert (written.normalization, written.normalized_score) == (references, score)
    assert written.training_budget_steps == original.training_budget_steps


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "nosuch:thing"], "nosuch"),
        (["--policy", "random", "--seeds", "1,x"], "give integers"),
        (["--policy", "random", "--backend", "slurm"], "accepted: local, ray"),
        (["--policy", "random", "--episodes", "3", "--seeds", "1,2"], "disagrees with 2 --seeds"),
    ],
)
def test_cli_eval_bad_input(args, message, tmp_path):
    proc = run_cli("eval", "rlbench/CartPole-v1", *args, "--out", str(tmp_path / "x.json"))
    assert proc.returncode == 2, proc.stdout
    assert message in proc.stderr


def test_results_show_refuses_a_malformed_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"schema_version": 1}')
    proc = run_cli("results", "show", str(path))
    assert proc.returncode == 2 and "invalid result" in proc.stderr


def test_worker_failures_are_clear_errors(tmp_path):
    broken = "module:tests.toy_policies:broken"
    proc = run_cli("eval", "rlbench/CartPole-v1", "--policy", broken, "--episodes", "4",
                   "--workers", "2", "--out", str(tmp_path / "x.json"))  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "an evaluation worker failed: RuntimeError: this policy always fails" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_protocol_must_fit_the_registered_env():
    from rlbench_suite.evaluation.runner import EvaluationError

    protocol = default_protocol("rlbench/Pendulum-v1", episodes=2)
    shorter = protocol.model_copy(update={"max_episode_steps": 50})
    with pytest.raises(EvaluationError, match="step limit differs"):
        evaluate("rlbench/Pendulum-v1", "random", shorter, workers=1)
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        default_protocol("rlbench/Pendulum-v1", seeds=[-1, 2])


def test_stochastic_sb3_policy_is_identical_across_workers(tmp_path):
    torch = pytest.importorskip("torch")
    from stable_baselines3 import PPO

    torch.set_num_threads(1)
    path = tmp_path / "ppo.zip"
    PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=64, seed=0, device="cpu").save(path)
    protocol = default_protocol("rlbench/CartPole-v1", episodes=4, deterministic=False)
    one = evaluate("rlbench/CartPole-v1", f"sb3:{path}", protocol, workers=1)
    two = evaluate("rlbench/CartPole-v1", f"sb3:{path}", protocol, workers=2)
    assert _per_episode(one) == _per_episode(two)
    assert one.policy["artifact_sha256"] and one.policy["kind"] == "sb3"


def test_evaluate_vector_scores_one_episode_per_seed_as_single_envs_do():
    import gymnasium as gym

    from rlbench_suite.evaluation.batched import evaluate_vector

    def left(obs):
        return np.zeros(len(obs), dtype=np.int64)

    seeds = [1_000_000, 1_000_001, 1_000_002]
    score = evaluate_vector(
        lambda n: gym.make_vec("rlbench/CartPole-v1", n, vectorization_mode="sync"), left, seeds
    )
    single = []
    for seed in seeds:
        env = gym.make("rlbench/CartPole-v1")
        env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(0)
            total, done = total + reward, terminated or truncated
        single.append(total)
    assert score == {"mean_return": float(np.mean(single)), "success_rate": 0.0}
    assert 1 < score["mean_return"] < 50  # pushing left topples it within a few dozen steps


def test_reproduce_write_refuses_a_training_run(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("{}")
    done = run_cli("reproduce", str(run), "--write")
    assert done.returncode == 2 and "--write takes a result file" in done.stderr
    assert (run / "run.json").read_text() == "{}"


def test_ctrl_c_says_how_many_episodes_were_kept_and_how_to_finish(tmp_path):
    """A review's Ctrl-C of `rlbench eval` exited 130 silently: nothing said the finished
    episodes were kept, nor that --resume finishes the run."""
    out = tmp_path / "cp.json"
    log = tmp_path / "cp.json.episodes.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlbench_suite.cli", "eval", "rlbench/CartPole-v1", "--policy",
         "random", "--episodes", "100000", "--workers", "1", "--out", str(out)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=as_a_foreground_job,
    )  # fmt: skip
    deadline = time.time() + 120
    while time.time() < deadline and not (log.exists() and len(log.read_text().splitlines()) > 3):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    kept = len(log.read_text().splitlines()) - 1  # after the header
    assert err.strip().splitlines()[-1] == (
        f"interrupted; {kept} finished episodes kept in {log}; run the same command with "
        "--resume to finish"
    )


def test_a_piped_eval_says_how_far_it_is(tmp_path, monkeypatch):
    """A review: piped (no bar), `rlbench eval` printed nothing until it finished, minutes on
    the MuJoCo envs; it now prints a line at most every PIPED_EVERY_S seconds (here: each
    episode), on stderr, the result on stdout as before."""
    from typer.testing import CliRunner

    from rlbench_suite.cli import app, common

    monkeypatch.setattr(common, "PIPED_EVERY_S", -1.0)
    result = CliRunner().invoke(app, ["eval", "CartPole-v1", "--policy", "random", "--episodes",
                                      "3", "--workers", "1", "--out", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if "(local): " in line]
    assert [line.split(": ")[1].split(",")[0] for line in lines] == [
        "1/3 episodes", "2/3 episodes", "3/3 episodes"]
    assert all(line.startswith("rlbench/CartPole-v1 (local): ") for line in lines)
    assert "(local): " not in result.stdout and "return_mean" in result.stdout


def test_a_result_scored_on_a_cards_earlier_references_is_read_with_a_note(tmp_path):
    """A review: a result consistent with its episodes, scored before its card's references
    changed (they do between versions), was refused as disagreeing "from the episodes"."""
    from rlbench_suite.core.scoring import normalized_interval, normalized_score

    source = REPO / "baselines/results/Ant-v5/fast_ppo/seed-0/result.json"
    data = json.loads(source.read_text(encoding="utf-8"))
    assert data.get("normalization") is None  # an env card's result: on the card's own
    random, expert = get_card("rlbench/Ant-v5").reference_values()
    earlier = (random, expert * 1.05)  # as the card might have had them
    mean = data["aggregates"]["return_mean"]
    low, high = normalized_interval(mean["low"], mean["high"], *earlier)
    data["normalized_score"].update(point=normalized_score(mean["point"], *earlier), low=low,
                                    high=high)  # fmt: skip
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    shown = run_cli("results", "show", str(path))
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr.startswith(f"note: {path}'s normalized score is not on "
                                   "rlbench/Ant-v5's references as the card has them now")
    assert "from the episodes on rlbench/Ant-v5's references" in shown.stderr
    data["aggregates"]["return_iqm"]["point"] += 1.0  # a figure the episodes contradict: refused
    path.write_text(json.dumps(data), encoding="utf-8")
    refused = run_cli("results", "show", str(path))
    assert refused.returncode == 2
    assert refused.stderr.startswith(f"error: {path}: the result disagrees with its own episodes: "
                                     "aggregates.return_iqm")  # fmt: skip
