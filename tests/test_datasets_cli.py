"""`rlbench datasets ...` end to end on a suite card, and the offline env ids."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from typer.testing import CliRunner

import rlbench_suite
from rlbench_suite.cli import app
from rlbench_suite.core.dataset_cards import DATA_FILE, get_dataset_card
from rlbench_suite.datasets import load, recover_environment
from rlbench_suite.datasets.cache import dataset_folder
from rlbench_suite.datasets.storage import DatasetFileError

pytest.importorskip("h5py")
DATASET = "rlbench/CartPole-random-v0"  # the smallest suite dataset: builds in about a second


def run(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RLBENCH_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data" / "datasets"


def _corrupt(path, at: float = 0.5) -> None:
    raw = bytearray(path.read_bytes())
    raw[int(len(raw) * at)] ^= 0xFF
    path.write_bytes(bytes(raw))


def test_build_reproduces_the_committed_card_then_verify_finds_corruption(cache):
    card = get_dataset_card(DATASET)
    assert card.built
    result = run("datasets", "build", DATASET)
    assert result.exit_code == 0, result.output
    assert card.content_sha256 in result.output
    folder = dataset_folder(card, cache)
    assert [f.path for f in card.files] == [DATA_FILE, "data/metadata.json"]
    # same versions here: the file bytes match the card too
    result = run("datasets", "verify", DATASET)
    assert result.exit_code == 0 and "ok" in result.output
    _corrupt(folder / DATA_FILE)
    result = run("datasets", "verify", DATASET)
    assert result.exit_code == 1
    assert f"{folder / DATA_FILE}: SHA-256 mismatch: expected {card.files[0].sha256}" in (
        result.output
    )
    with pytest.raises(DatasetFileError, match="corrupt") as info:
        load(DATASET)
    assert str(folder / DATA_FILE) in str(info.value)
    assert run("datasets", "delete", DATASET).exit_code == 0
    assert not folder.exists()


def test_unknown_ids_suggest_and_offline_mode_uses_only_the_cache(cache):
    result = run("datasets", "info", "rlbench/CartPole-randum-v0")
    assert result.exit_code == 2
    assert "Did you mean: rlbench/CartPole-random-v0" in result.output
    result = run("datasets", "download", DATASET, "--offline")
    assert result.exit_code == 2
    assert "--offline forbids downloading" in result.output and "missing" in result.output
    assert not dataset_folder(get_dataset_card(DATASET), cache).exists()


def test_download_build_falls_back_to_building_from_source(cache):
    result = run("datasets", "download", DATASET, "--build", "--remote", str(cache / "nowhere"))
    assert result.exit_code == 0, result.output
    assert "building from source" in result.output and "verified" in result.output
    assert run("datasets", "download", DATASET, "--offline").exit_code == 0


def test_serve_publish_download_then_the_offline_env(cache, tmp_path):
    card = get_dataset_card(DATASET)
    assert run("datasets", "build", DATASET).exit_code == 0
    mirror = tmp_path / "mirror"
    result = run("datasets", "publish", DATASET, "--to", str(mirror))
    assert result.exit_code == 0 and (mirror / card.id / DATA_FILE).is_file()
    assert run("datasets", "delete", DATASET).exit_code == 0
    server = subprocess.Popen(
        [sys.executable, "-m", "rlbench_suite.cli", "datasets", "serve", str(mirror),
         "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        line = server.stdout.readline()
        url = line.split(" at ")[1].split()[0]
        assert url.startswith("http://127.0.0.1:")
        result = run("datasets", "download", DATASET, "--remote", url)
        assert result.exit_code == 0, result.output
    finally:
        server.terminate()
        server.wait(timeout=10)
    env = gym.make(DATASET)
    data = env.get_dataset()
    assert data["observations"].shape == (card.steps, 4)
    assert data["next_observations"].shape == (card.steps, 4)
    assert int(data["terminals"].sum() + data["timeouts"].sum()) == card.episodes
    # D4RL's (and minari.get_normalized_score's) 0-1 scale
    assert env.get_normalized_score(card.reference.expert.value) == pytest.approx(1.0)
    assert env.get_normalized_score(card.reference.random.value) == pytest.approx(0.0)
    assert env.get_normalized_score(np.array([card.reference.random.value])) == pytest.approx([0])
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    env.close()
    dataset = load(DATASET)
    assert dataset.num_episodes == card.episodes
    assert float(dataset.episode_returns().mean()) == pytest.approx(card.mean_return)
    online = recover_environment(DATASET)
    assert online.spec.id == card.env_id
    online.close()


def test_every_dataset_card_is_a_registered_offline_id():
    rlbench_suite.register_all()
    from rlbench_suite.core.dataset_cards import dataset_cards

    for dataset_id, card in dataset_cards().items():
        spec = gym.spec(dataset_id)
        assert spec.kwargs == {"dataset_id": dataset_id}
        assert card.built, f"{dataset_id}: build it with `rlbench datasets build --write`"
