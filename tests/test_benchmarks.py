"""The benchmark runner, run as a user runs it (``--quick``; no timed assertions)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ENVS = ("CartPole-v1", "HalfCheetah-v5")
PAIRS = {
    ("rlbench stack", "bare"),
    ("rlbench stack", "gym.make default"),
    ("gym.make default", "bare"),
}
EVAL_PAIRS = {
    ("evaluate", "hand loop"),
    ("evaluate", "evaluate_policy"),
    ("evaluate_policy", "hand loop"),
}


def run_benchmarks(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.run", *args],
        capture_output=True,
        text=True,
        timeout=900,  # the quick run takes ~100 s alone, 200-300 s beside other tests on 2 cores
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
    )


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    path = tmp_path_factory.mktemp("bench") / "out.json"
    proc = run_benchmarks("--quick", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads(path.read_text())


@pytest.mark.slow
def test_table_prints(quick_run):
    stdout, _ = quick_run
    for text in ("benchmark", "subject rate", "peer rate", "ratio", "goal", "wrapper_overhead"):
        assert text in stdout
    for text in ("eval_overhead", "eval_parallel", "evaluate_policy", "workers=2"):
        assert text in stdout
    for env in ENVS:
        assert env in stdout


@pytest.mark.slow
def test_json_rows(quick_run):
    _, doc = quick_run
    assert {r["benchmark"] for r in doc["rows"]} == {
        "wrapper_overhead",
        "eval_overhead",
        "eval_parallel",
        "robotics_env_speed",
        "quad_batched",
        "multiagent_env_speed",
        "coopnav_batched",
        "text_env_speed",
        "cpu_burn",
        "training_throughput",
        "training_throughput_families",
        "training_throughput_mujoco",
        "time_to_solve_cartpole",
        "time_to_solve_quadhover",
        "dataset_build",
        "dataset_sample",
        "leaderboard_latency",
        "leaderboard_verify",
        "dataset_download",
    }
    rows = [r for r in doc["rows"] if r["benchmark"] == "wrapper_overhead"]
    for env in ENVS:
        got = {(r["subject"], r["peer"]) for r in rows if r["env"] == env}
        assert got == PAIRS, env
    for r in rows:
        assert r["subject_rate"] > 0 and r["peer_rate"] > 0
        for key in ("ratio", "ratio_p25", "ratio_p75"):
            assert math.isfinite(r[key]) and r[key] > 0
        # both variants did the same work: same episode boundaries
        assert r["subject_detail"]["episodes_ended"] == r["peer_detail"]["episodes_ended"]
    goals = {(r["env"], r["subject"], r["peer"]): r for r in rows if r["goal"] is not None}
    # the robotics rows: each env beside HalfCheetah, the batched backend beside its peers
    speed = {r["env"] for r in doc["rows"] if r["benchmark"] == "robotics_env_speed"}
    assert {"QuadHover-v0", "KukaReach-v0", "ArmPickPlace-v0"} <= speed
    batched = [r for r in doc["rows"] if r["benchmark"] == "quad_batched"]
    assert {r["env"] for r in batched} == {f"QuadHover-v0 x{n}" for n in (1, 256, 4096)}
    assert all(r["subject"].startswith("batched numpy") and r["subject_rate"] > 0 for r in batched)
    assert {r["peer"].split(" ")[0] for r in batched} == {"SyncVectorEnv", "AsyncVectorEnv"}
    coop = [r for r in doc["rows"] if r["benchmark"] == "coopnav_batched"]
    assert {r["env"] for r in coop} == {f"CoopNav-v0 x{n}" for n in (1, 256, 4096)}
    assert {r["peer"] for r in coop} == {"mpe2 simple_spread", "CoopNav-v0 (PettingZoo)"}
    text = [r for r in doc["rows"] if r["benchmark"] == "text_env_speed"]
    assert {"TextMaze-v0", "Wordle-v0"} <= {r["env"] for r in text}
    assert {r["peer"] for r in text} == {"CartPole-v1", "MiniGrid-DoorKey-8x8-v0"}
    assert all(r["subject"] == f"rlbench/{r['env']}" and r["subject_rate"] > 0 for r in text)
    assert set(goals) == {("HalfCheetah-v5", "rlbench stack", "bare")}
    row = goals["HalfCheetah-v5", "rlbench stack", "bare"]
    assert row["goal"] == 1.10 and isinstance(row["met"], bool)  # whichever way it went
    assert all(r["met"] is None for r in rows if r["goal"] is None)


@pytest.mark.slow
def test_json_machine_info(quick_run):
    _, doc = quick_run
    machine = doc["machine"]
    assert machine["cpu_count"] >= 1 and machine["python"] and machine["date"]
    assert machine["packages"]["gymnasium"] and "git_commit" in machine
    assert doc["settings"]["quick"] is True


def test_unknown_benchmark_is_a_clear_error(tmp_path):
    proc = run_benchmarks("--only", "wrapper_overhed", "--json", str(tmp_path / "x.json"))
    assert proc.returncode == 2
    assert "unknown benchmark 'wrapper_overhed'" in proc.stderr
    assert "Did you mean: wrapper_overhead" in proc.stderr
    assert not (tmp_path / "x.json").exists()


def test_ratio_quartiles_stay_within_the_rounds():
    """Two rounds far apart (a busy machine) gave a negative lower quartile: the default
    quantile method extrapolates past the data; CI failed on it once."""
    from benchmarks.harness import Case, Comparison, Settings, Variant, compare

    case = Case(env="e", variants=[Variant("a", lambda: None), Variant("b", lambda: None)],
                comparisons=[Comparison("a", "b")], work_per_round=1, rounds=2)  # fmt: skip
    (row,) = compare("x", case, Settings(rounds=2), {"a": [1.0, 0.1], "b": [1.0, 1.0]}, {})
    assert 0.1 <= row.ratio_p25 <= row.ratio <= row.ratio_p75 <= 1.0


def _check_rates(row: dict) -> None:
    assert row["subject_rate"] > 0 and row["peer_rate"] > 0
    for key in ("ratio", "ratio_p25", "ratio_p75"):
        assert math.isfinite(row[key]) and row[key] > 0


@pytest.mark.slow
def test_eval_overhead_rows(quick_run):
    _, doc = quick_run
    rows = [r for r in doc["rows"] if r["benchmark"] == "eval_overhead"]
    for env in ENVS:
        got = {(r["subject"], r["peer"]) for r in rows if r["env"] == env}
        assert got == EVAL_PAIRS, env
    for r in rows:
        _check_rates(r)
        assert r["unit"] == "steps" and r["clock"] == doc["settings"]["clock"]
        details = {r["subject"]: r["subject_detail"], r["peer"]: r["peer_detail"]}
        for detail in details.values():
            assert detail["calls"] >= 1 and detail["steps"] >= detail["episodes"] >= 1
        if set(details) == {"evaluate", "hand loop"}:
            # the same seeded episodes: same steps and the same returns
            harness, hand = details["evaluate"], details["hand loop"]
            assert harness["steps"] == hand["steps"] and harness["episodes"] == hand["episodes"]
            assert math.isclose(
                harness["last_call_mean_return"], hand["last_call_mean_return"], rel_tol=1e-9
            )
    goals = {(r["env"], r["subject"], r["peer"]): r for r in rows if r["goal"] is not None}
    assert set(goals) == {
        ("HalfCheetah-v5", "evaluate", "hand loop"),
        ("HalfCheetah-v5", "evaluate", "evaluate_policy"),
    }
    for row in goals.values():
        assert row["goal"] == 1.05 and isinstance(row["met"], bool)  # whichever way it went


@pytest.mark.slow
def test_eval_parallel_row(quick_run):
    _, doc = quick_run
    rows = [r for r in doc["rows"] if r["benchmark"] == "eval_parallel"]
    assert [(r["env"], r["subject"], r["peer"]) for r in rows] == [
        ("HalfCheetah-v5", "workers=1", "workers=2")
    ]
    (row,) = rows
    _check_rates(row)
    assert row["unit"] == "steps" and row["clock"] == "wall"  # whatever --clock says
    # the ratio time(1 worker) / time(2 workers) is the speed-up; the goal a lower bound
    assert row["goal"] == 1.7 and row["goal_at_least"] is True and isinstance(row["met"], bool)
    one, two = row["subject_detail"], row["peer_detail"]
    assert two["episodes"] == one["episodes"] >= 1 and two["steps"] == one["steps"]
    assert two["last_call_mean_return"] == one["last_call_mean_return"]  # identical episodes


@pytest.mark.slow
def test_training_rows(quick_run):
    """bench_training.py: the CPU-burn speed-up, throughput ratios and time-to-solve rows."""
    _, doc = quick_run
    rows = {(r["benchmark"], r["env"], r["subject"], r["peer"]): r for r in doc["rows"]}
    burn = rows["cpu_burn", "pure-Python burn", "1 process", "2 processes"]
    _check_rates(burn)
    assert burn["clock"] == "wall"
    fast_quad, fast_cart = "fast_ppo numpy batched", "fast_ppo native vector"
    throughput = {(env, s, p) for b, env, s, p in rows if b == "training_throughput"}
    assert throughput == {
        ("CartPole-v1", fast_cart, "sb3 ppo SyncVectorEnv"),
        ("CartPole-v1", "fast_ppo SyncVectorEnv", "sb3 ppo SyncVectorEnv"),
        ("CartPole-v1", fast_cart, "fast_ppo SyncVectorEnv"),
        ("QuadHover-v0", fast_quad, "sb3 ppo numpy batched x32"),
        ("QuadHover-v0", fast_quad, "sb3 ppo SyncVectorEnv pybullet x8"),
        ("QuadHover-v0", "sb3 ppo numpy batched x32", "sb3 ppo SyncVectorEnv pybullet x8"),
        ("QuadHover-v0", fast_quad, "fast_ppo numpy batched, 2 threads"),
    }
    mujoco = {(env, s, p) for b, env, s, p in rows if b == "training_throughput_mujoco"}
    assert mujoco == {
        ("HalfCheetah-v5", "fast_ppo SyncVectorEnv x8", "sb3 ppo (rl-zoo) SyncVectorEnv x1")
    }
    for key, row in rows.items():
        if key[0] in ("training_throughput", "training_throughput_mujoco"):
            _check_rates(row)
            assert row["unit"] == "steps" and row["clock"] == "wall"
            assert row["subject_detail"]["steps"] > 0 and row["peer_detail"]["steps"] > 0
    solve = {key: row for key, row in rows.items() if key[0].startswith("time_to_solve")}
    assert {key[1] for key in solve} == {
        "CartPole-v1 to mean return 475",
        "QuadHover-v0 to PyBullet success 0.9",
    }
    for row in solve.values():
        _check_rates(row)
        assert row["unit"] == "solves" and row["rounds"] == 1  # quick: one seed each
        for detail in (row["subject_detail"], row["peer_detail"]):
            assert len(detail["times_s"]) == 1 == len(detail["runs"])
            assert 0 < detail["times_s"][0] <= detail["cap_s"]
            assert detail["runs"][0]["snapshots"]  # it was scored at least once


@pytest.mark.slow
def test_training_family_rows(quick_run):
    """bench_training_families.py: one row per (family, algorithm, env) of its table, each
    side having trained (steps done, rates), the shared-policy row beside SuperSuit."""
    from benchmarks.bench_training_families import ROWS

    _, doc = quick_run
    rows = [r for r in doc["rows"] if r["benchmark"] == "training_throughput_families"]
    expected = {f"{fam}: {algo} {env.removeprefix('rlbench/')}" for fam, algo, env, *_ in ROWS}
    assert {r["env"] for r in rows} == expected and len(rows) == len(ROWS)
    assert {fam for fam, *_ in ROWS} >= {"classic", "minigrid", "mujoco", "robotics",
                                          "multiagent", "matrix", "text", "box2d"}  # fmt: skip
    for row in rows:
        _check_rates(row)
        assert row["subject"] == "rlbench train" and row["clock"] == "wall"
        assert row["subject_detail"]["steps"] > 0 and row["peer_detail"]["steps"] > 0
        shared = "shared_ppo" in row["env"]
        assert row["peer"] == ("sb3 + SuperSuit" if shared else "sb3 SyncVectorEnv")


@pytest.mark.slow
def test_leaderboard_rows(quick_run):
    """bench_leaderboard.py: latency rows with their percentiles, the verification ratio."""
    _, doc = quick_run
    latency = [r for r in doc["rows"] if r["benchmark"] == "leaderboard_latency"]
    pairs = {(r["subject"], r["peer"]) for r in latency}
    assert ("SQLite env page", "SQLite static file") in pairs
    assert pairs <= {
        ("SQLite env page", "SQLite static file"),
        ("SQLite GET /api/results", "SQLite static file"),
        ("PostgreSQL env page", "SQLite env page"),
        ("PostgreSQL GET /api/results", "SQLite GET /api/results"),
    }
    for row in latency:
        _check_rates(row)
        assert row["unit"] == "requests" and row["clock"] == "wall"
        for detail in (row["subject_detail"], row["peer_detail"]):
            assert detail["errors"] == 0 and detail["requests"] > 0
            assert 0 < detail["p50_ms"] <= detail["p99_ms"] <= detail["max_ms"]
            assert isinstance(detail["p99_goal_met"], bool)
    (verify,) = [r for r in doc["rows"] if r["benchmark"] == "leaderboard_verify"]
    _check_rates(verify)
    assert verify["goal"] == 1.2 and isinstance(verify["met"], bool)
    # the worker and `rlbench eval` played the same episodes
    assert verify["subject_detail"]["returns_sum"] == verify["peer_detail"]["returns_sum"]


@pytest.mark.slow
def test_dataset_rows(quick_run):
    _, doc = quick_run
    build = [r for r in doc["rows"] if r["benchmark"] == "dataset_build"]
    assert {r["env"] for r in build} == {f"rlbench/CartPole-{k}-v0" for k in ("random", "medium")}
    for r in build:
        _check_rates(r)
        assert (r["subject"], r["peer"]) == ("rlbench build", "minari DataCollector")
        assert r["subject_detail"]["steps"] == r["peer_detail"]["steps"] > 0  # the same work
        assert min(r["subject_detail"]["bytes_per_step"], r["peer_detail"]["bytes_per_step"]) > 0
    download = {r["subject"]: r for r in doc["rows"] if r["benchmark"] == "dataset_download"}
    assert set(download) == {"rlbench download", "rlbench resume"}
    assert download["rlbench download"]["peer"] == "bare urllib GET + SHA-256"
    assert {(r["unit"], r["clock"]) for r in download.values()} == {("MB", "wall")}
    resume = download["rlbench resume"]["subject_detail"]
    assert resume["missing_bytes"] > 0 and resume["resent_bytes"] == 0  # only the missing bytes
    for r in download.values():
        _check_rates(r)
