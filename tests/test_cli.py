"""The `rlbench` command, run as a user runs it."""

from __future__ import annotations

import tomllib

from rlbench_suite.catalog import load_card
from tests.conftest import run_cli


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("rlbench-suite 0.")


def test_list_filters():
    proc = run_cli("list")
    assert proc.returncode == 0, proc.stderr
    assert "environments)" in proc.stdout
    count = int(proc.stdout.split("catalog (")[1].split()[0])
    assert count >= 30
    proc = run_cli("list", "--family", "multiagent")
    assert "rlbench/ConnectFour-v3" in proc.stdout and "rlbench/CartPole-v1" not in proc.stdout
    proc = run_cli("list", "--suite", "mujoco-v5", "--tag", "manipulation")
    assert "rlbench/Pusher-v5" in proc.stdout and "rlbench/Ant-v5" not in proc.stdout
    proc = run_cli("list", "--tag", "no-such-tag")
    assert proc.returncode == 1


def test_info_shows_card_spaces_and_a_step():
    proc = run_cli("info", "rlbench/Pendulum-v1")
    assert proc.returncode == 0, proc.stderr
    for part in (
        "classic-control",
        "Box(shape=(1,), dtype=float32, bounds=[-1.0, 1.0])",
        "reference.random",
        "rlbench/RescaleActionToUnit-v0",
        "sample action",
    ):
        assert part in proc.stdout
    proc = run_cli("info", "rlbench/TicTacToe-v3")
    assert proc.returncode == 0, proc.stderr
    assert "action_mask" in proc.stdout


def test_unknown_id_exits_2_with_suggestion():
    proc = run_cli("info", "rlbench/Hoper-v5")
    assert proc.returncode == 2
    assert "Did you mean: rlbench/Hopper-v5" in proc.stdout


def test_check_passes_and_prints_a_table():
    proc = run_cli("check", "rlbench/CartPole-v1", "rlbench/TicTacToe-v3", "--steps", "300")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed, 0 failed" in proc.stdout
    assert "parallel" not in proc.stdout.split("rlbench/TicTacToe-v3")[1].split("\n")[0]


def test_check_fails_on_a_broken_card(content_copy):
    card = content_copy / "envs" / "classic" / "CartPole-v1.toml"
    card.write_text(card.read_text().replace("CartPoleEnv", "NoSuchEnv"))
    proc = run_cli("check", "rlbench/CartPole-v1", env={"RLBENCH_CONTENT_ROOT": str(content_copy)})
    assert proc.returncode == 1
    assert "0 passed, 1 failed" in proc.stdout
    assert "NoSuchEnv" in proc.stdout


def test_malformed_card_fails_clearly(content_copy):
    card = content_copy / "envs" / "classic" / "CartPole-v1.toml"
    card.write_text(card.read_text().replace('family = "classic"', 'family = "arcade"'))
    proc = run_cli("list", env={"RLBENCH_CONTENT_ROOT": str(content_copy)})
    assert proc.returncode != 0
    assert "CartPole-v1.toml" in proc.stderr and "field 'family'" in proc.stderr


def test_refscores_writes_card_and_keeps_layout(content_copy):
    path = content_copy / "envs" / "classic" / "CartPole-v1.toml"
    before = path.read_text()
    proc = run_cli(
        "refscores",
        "rlbench/CartPole-v1",
        "--episodes",
        "5",
        "--first-seed",
        "3",
        "--write",
        env={"RLBENCH_CONTENT_ROOT": str(content_copy)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = path.read_text()
    assert after.split("[reference")[0] == before.split("[reference")[0]
    ref = load_card(path).reference.random
    assert ref.episodes == 5 and ref.seeds == [3, 4, 5, 6, 7] and ref.policy == "random"
    assert 8 <= ref.value <= 100
    assert tomllib.loads(after)["reference"]["random"]["suite_version"].startswith("0.")


def test_doctor():
    proc = run_cli("doctor")
    assert proc.returncode == 0, proc.stderr
    for part in ("gymnasium", "MuJoCo GL backend", "PyBullet", "torch threads"):
        assert part in proc.stdout
