"""The wheel ships the content folders and the resolver finds them in an installed wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rlbench_suite.core.cards import card_files
from rlbench_suite.resources import content_dir
from tests.conftest import REPO, run_python


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [path] = out.glob("rlbench_suite-*.whl")
    return path


def test_wheel_contains_every_card(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    cards = card_files()
    assert len(cards) >= 30
    for card in cards:
        relative = card.relative_to(REPO / "envs").as_posix()
        assert f"rlbench_suite/_content/envs/{relative}" in names
    for folder in ("datasets", "baselines", "leaderboard"):
        assert f"rlbench_suite/_content/{folder}/README.md" in names
    assert "rlbench_suite/core/catalog.py" in names
    assert not any(n.startswith(("envs/", "tests/", "benchmarks/")) for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "rlbench = rlbench_suite.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_wheel_ships_the_env_data_files_beside_their_envs(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    data = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "rlbench_suite").rglob("data/*"))
    assert len(data) >= 5  # the quadrotor URDF, the arm's MJCF, the text games' word lists
    assert set(data) <= names
    content = [n for n in names if n.startswith("rlbench_suite/_content/envs/")]
    assert content and all(n.endswith(".toml") for n in content)  # the cards only


def test_installed_wheel_finds_its_cards(wheel, tmp_path):
    target = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    proc = run_python(
        "import rlbench_suite, gymnasium as gym\n"
        "from rlbench_suite.resources import content_dir\n"
        "print(rlbench_suite.__file__)\n"
        "print(content_dir('envs'))\n"
        "print(len(rlbench_suite.cards()))\n"
        "print(gym.make('rlbench/CartPole-v1').spec.id)\n"
        "from rlbench_suite.envs.text.wordle.env import load_words\n"
        "from rlbench_suite.envs.text.questions.twenty_questions import kb_data\n"
        "print(len(load_words()) > 100 and len(kb_data()) > 0)\n",
        env={"PYTHONPATH": str(target)},
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    module, envs, count, env_id, data_found = proc.stdout.split()
    assert module.startswith(str(target))
    assert envs == str(target / "rlbench_suite" / "_content" / "envs")
    assert int(count) == len(card_files())
    assert env_id == "rlbench/CartPole-v1"
    assert data_found == "True"  # the text games' data files, read from the installed wheel


def test_checkout_resolves_to_repo_root():
    assert content_dir("envs") == REPO / "envs"
    with pytest.raises(ValueError, match="accepted: envs, datasets, baselines, leaderboard"):
        content_dir("models")
