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


def run_benchmarks(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.run", *args],
        capture_output=True,
        text=True,
        timeout=300,
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
    for env in ENVS:
        assert env in stdout


@pytest.mark.slow
def test_json_rows(quick_run):
    _, doc = quick_run
    rows = doc["rows"]
    for env in ENVS:
        got = {(r["subject"], r["peer"]) for r in rows if r["env"] == env}
        assert got == PAIRS, env
    for r in rows:
        assert r["benchmark"] == "wrapper_overhead"
        assert r["subject_rate"] > 0 and r["peer_rate"] > 0
        for key in ("ratio", "ratio_p25", "ratio_p75"):
            assert math.isfinite(r[key]) and r[key] > 0
        # both variants did the same work: same episode boundaries
        assert r["subject_detail"]["episodes_ended"] == r["peer_detail"]["episodes_ended"]
    goals = {(r["env"], r["subject"], r["peer"]): r for r in rows if r["goal"] is not None}
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
