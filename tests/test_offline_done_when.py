"""Issue 14's "done when", through the ``rlbench`` command as a user runs it: serve a mirror,
download a dataset from it, read it through its offline id, train TD3+BC on it, evaluate the
trained policy on the offline id."""

from __future__ import annotations

import json

import pytest

from rlbench_suite.core.dataset_cards import get_dataset_card
from tests.conftest import run_cli, run_python, served

pytest.importorskip("h5py")
pytest.importorskip("onnxruntime")
DATASET = "rlbench/Pendulum-random-v0"


def test_serve_download_load_train_and_evaluate_an_offline_id(tmp_path):
    card = get_dataset_card(DATASET)
    publisher = {"RLBENCH_DATA_DIR": str(tmp_path / "publisher")}
    assert run_cli("datasets", "build", DATASET, env=publisher).returncode == 0
    mirror = tmp_path / "mirror"
    done = run_cli("datasets", "publish", DATASET, "--to", str(mirror), env=publisher)
    assert done.returncode == 0, done.stderr

    user = {"RLBENCH_DATA_DIR": str(tmp_path / "user")}
    with served(mirror) as url:
        done = run_cli("datasets", "download", DATASET, "--remote", url, env=user)
        assert done.returncode == 0, done.stderr

    code = (
        "import gymnasium as gym, rlbench_suite\n"
        f"data = gym.make({DATASET!r}).get_dataset()\n"
        "print(data['observations'].shape, int(data['terminals'].sum() + data['timeouts'].sum()))"
    )
    done = run_python(code, env=user)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [f"({card.steps},", "3)", str(card.episodes)]

    runs = tmp_path / "runs"
    done = run_cli("train", DATASET, "--algo", "td3bc", "--budget", "60", "--eval-every", "30",
                   "--eval-episodes", "1", "--final-episodes", "2", "--out", str(runs),
                   env=user)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "trained 60 steps" in done.stdout
    policy = runs / card.name / "td3bc" / "seed-0" / "policy.onnx"
    assert policy.is_file()

    out = tmp_path / "result.json"
    done = run_cli("eval", DATASET, "--policy", f"onnx:{policy}", "--episodes", "3",
                   "--workers", "1", "--out", str(out), env=user)  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["env_id"] == DATASET and len(result["returns"]) == 3
    assert result["normalization"]["references_from"] == f"dataset {DATASET}"
    assert result["policy"]["training_budget_steps"] == 60
    assert result["policy"]["train_seeds"][1] == card.build.seed  # the data's episodes
