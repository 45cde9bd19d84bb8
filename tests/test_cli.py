"""The `rlbench` command, run as a user runs it."""

from __future__ import annotations

import tomllib

from rlbench_suite.core.cards import load_card
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
    proc = run_cli("list", "--tag", "sparse-rewrd")
    assert proc.returncode == 2
    assert "unknown tag 'sparse-rewrd'. Did you mean: sparse-reward" in proc.stderr
    proc = run_cli("list", "--family", "arcade")
    assert proc.returncode == 2
    assert "Accepted: classic, robotics, multiagent, text, offline" in proc.stderr
    proc = run_cli("list", "--suite", "minigrid", "--family", "robotics")
    assert proc.returncode == 1 and "(0 environments)" in proc.stdout


def test_info_shows_card_spaces_and_a_step():
    proc = run_cli("info", "rlbench/Pendulum-v1")
    assert proc.returncode == 0, proc.stderr
    for part in (
        "classic-control",
        "Box(shape=(1,), dtype=float32, bounds=[-1, 1])",
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
    assert "Did you mean: rlbench/Hopper-v5" in proc.stderr
    proc = run_cli("check", "rlbench/Nope-v0")
    assert proc.returncode == 2 and "unknown environment id 'rlbench/Nope-v0'" in proc.stderr
    proc = run_cli("refscores", "rlbench/CartPole-v1", "--first-seed", "-5")
    assert proc.returncode == 2 and "greater than or equal to 0" in proc.stderr


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


def test_malformed_card_is_reported_and_the_rest_still_works(content_copy):
    card = content_copy / "envs" / "classic" / "CartPole-v1.toml"
    card.write_text(card.read_text().replace('family = "classic"', 'family = "arcade"'))
    env = {"RLBENCH_CONTENT_ROOT": str(content_copy)}
    proc = run_cli("list", env=env)
    assert proc.returncode == 1
    assert "CartPole-v1.toml" in proc.stderr and "field 'family'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "rlbench/Pendulum-v1" in proc.stdout and "rlbench/CartPole-v1" not in proc.stdout
    assert run_cli("--version", env=env).returncode == 0
    proc = run_cli("info", "rlbench/CartPole-v1", env=env)
    assert proc.returncode == 2 and "1 card(s) failed to load" in proc.stderr


def test_info_of_a_card_without_std(content_copy):
    card = content_copy / "envs" / "classic" / "Acrobot-v1.toml"
    card.write_text(
        "\n".join(line for line in card.read_text().splitlines() if not line.startswith("std ="))
    )
    proc = run_cli("info", "rlbench/Acrobot-v1", env={"RLBENCH_CONTENT_ROOT": str(content_copy)})
    assert proc.returncode == 0, proc.stderr
    assert "reference.random" in proc.stdout


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
    recorded = tomllib.loads(after)["reference"]["random"]
    assert recorded["suite_version"].startswith("0.")
    assert recorded["command"] == (
        "rlbench refscores rlbench/CartPole-v1 --episodes 5 --first-seed 3"
    )


def test_doctor():
    proc = run_cli("doctor")
    assert proc.returncode == 0, proc.stderr
    for part in ("gymnasium", "MuJoCo GL backend", "PyBullet", "torch threads"):
        assert part in proc.stdout
