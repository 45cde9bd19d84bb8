"""``rlbench train <offline id> --algo bc|td3bc|iql|cql``: whole runs, resume, ONNX parity,
and the errors that name what is accepted."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from rlbench_suite.baselines.train import TrainConfig, TrainError, train
from rlbench_suite.cli import app
from rlbench_suite.core.dataset_cards import get_dataset_card
from rlbench_suite.core.result import load_result
from tests.offline_support import CONTINUOUS, DISCRETE

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")


def _config(tmp_path, dataset_id: str, algo: str, budget: int = 40, **kw) -> TrainConfig:
    settings = dict(eval_every=20, eval_episodes=1, final_episodes=2, out=tmp_path / "runs")
    return TrainConfig(dataset_id, algo, seed=kw.pop("seed", 3), budget=budget,
                       **(settings | kw))  # fmt: skip


def _onnx_out(path, obs: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"obs": obs.astype(np.float32)})[0]


@pytest.mark.parametrize(
    ("dataset_id", "algo"),
    [(CONTINUOUS, "bc"), (CONTINUOUS, "td3bc"), (CONTINUOUS, "iql"), (CONTINUOUS, "cql"),
     (DISCRETE, "bc"), (DISCRETE, "cql")],
)  # fmt: skip
def test_a_tiny_run_writes_the_whole_run_folder(tmp_path, data_dir, dataset_id, algo):
    report = train(_config(tmp_path, dataset_id, algo))
    run_dir, dataset = report.run_dir, get_dataset_card(dataset_id)
    assert run_dir == tmp_path / "runs" / dataset.name / algo / "seed-3"
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "finished" and run["steps"] == 40
    assert run["budget_unit"] == "gradient steps" and run["vector_backend"] == "offline"
    assert run["dataset"] == {"id": dataset_id, "content_sha256": dataset.content_sha256}
    first = dataset.build.seed
    assert run["train_seeds"] == [3, *range(first, first + dataset.source.episodes)]
    assert run["hyperparams"]["source"]["reference"].startswith(("CORL", "CQL(H)"))
    curve = (run_dir / "curve.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in curve[1:]] == ["0", "20", "40"]
    for name in ("policy.onnx", "policy.onnx.meta.json", "agent.pt", "result.json"):
        assert (run_dir / name).is_file(), name
    result = load_result(run_dir / "result.json")
    assert result.env_id == dataset_id and result.training_budget_steps == 40
    assert result.normalization.references_from == f"dataset {dataset_id}"
    scores = dataset.normalized_score(np.array(result.returns))
    assert result.normalized_score.point == pytest.approx(float(np.mean(scores)))
    meta = json.loads((run_dir / "policy.onnx.meta.json").read_text())
    assert meta["algo"] == algo and meta["train_seeds"] == run["train_seeds"]
    # the ONNX file acts as the torch actor does, on the data's own observations
    observations = report.model.data.obs[:64].numpy() * report.model.spec.obs_std
    observations = (observations + report.model.spec.obs_mean).astype(np.float32)
    with torch.no_grad():
        expected = report.model.actor().eval()(torch.as_tensor(observations)).numpy()
    np.testing.assert_allclose(_onnx_out(run_dir / "policy.onnx", observations), expected,
                               rtol=1e-4, atol=1e-5)  # fmt: skip


def _agent_state(run_dir) -> dict:
    return torch.load(run_dir / "agent.pt", weights_only=False)["agent"]


@pytest.mark.parametrize("algo", ["td3bc", "iql"])
def test_an_interrupted_run_resumes_exactly(tmp_path, data_dir, algo):
    whole = train(_config(tmp_path / "whole", CONTINUOUS, algo, budget=60, checkpoint_every=20))

    def stop_at_40(progress) -> None:
        if progress.step >= 40:
            raise KeyboardInterrupt

    config = _config(tmp_path / "cut", CONTINUOUS, algo, budget=60, checkpoint_every=20)
    with pytest.raises(KeyboardInterrupt):
        train(config, on_progress=stop_at_40)
    cut_dir = tmp_path / "cut" / "runs" / "Pendulum-random-v0" / algo / "seed-3"
    assert json.loads((cut_dir / "run.json").read_text())["status"] == "interrupted"
    resumed = train(_config(tmp_path / "cut", CONTINUOUS, algo, budget=60, checkpoint_every=20,
                            resume=True))  # fmt: skip
    run = json.loads((resumed.run_dir / "run.json").read_text())
    assert run["resumes"][-1]["step"] == 40 and run["resume_exact"] is True
    a, b = _agent_state(whole.run_dir), _agent_state(resumed.run_dir)
    for part in ("actor", "critic", "qf"):
        for key, value in a.get(part, {}).items():
            torch.testing.assert_close(b[part][key], value, rtol=0, atol=0)
    assert (
        load_result(whole.run_dir / "result.json").returns
        == load_result(resumed.run_dir / "result.json").returns
    )


def test_a_run_stopped_in_its_final_evaluation_resumes_with_one_final_curve_point(tmp_path,
                                                                                  data_dir):
    """A review: resumed from the checkpoint at its last step, the run evaluated that step again
    (two curve rows at step 40), and ``rlbench reproduce`` then refused the run."""
    config = _config(tmp_path, CONTINUOUS, "bc", checkpoint_every=20)
    whole = train(config)
    curve = (whole.run_dir / "curve.csv").read_text()
    (whole.run_dir / "result.json").unlink()
    record = json.loads((whole.run_dir / "run.json").read_text())
    (whole.run_dir / "run.json").write_text(json.dumps({**record, "status": "interrupted"}))
    resumed = train(_config(tmp_path, CONTINUOUS, "bc", checkpoint_every=20, resume=True))
    assert resumed.run["status"] == "finished" and resumed.run["resumes"][-1]["step"] == 40
    assert (whole.run_dir / "curve.csv").read_text() == curve  # steps 0, 20, 40: once each


def _one_line(*args: str) -> str:
    result = CliRunner().invoke(app, ["train", *args, "--out", "/nonexistent/never-written"])
    assert result.exit_code == 2, result.output
    return result.output.replace("\n", " ")


def test_an_online_algorithm_on_an_offline_id_names_the_offline_ones(data_dir):
    text = _one_line(CONTINUOUS, "--algo", "sac")
    assert "is an offline id" in text and "bc | td3bc | iql | cql" in text
    assert "rlbench/Pendulum-v1" in text


def test_an_online_algorithm_on_discrete_data_names_the_offline_ones_that_fit(data_dir):
    text = _one_line(DISCRETE, "--algo", "ppo")
    assert "is an offline id" in text and "--algo bc | cql;" in text  # not td3bc or iql


def test_a_typo_in_an_offline_id_suggests_datasets_not_envs_to_train_on(data_dir):
    text = _one_line("rlbench/CartPole-meduim-v0", "--algo", "bc")
    assert "Did you mean" in text and "rlbench/CartPole-medium-v0" in text
    assert "Ids with bc hyperparameters" not in text  # env ids, which bc refuses
    assert "bc has hyperparameters for the datasets of" in text and "datasets list" in text


def test_corrupt_cached_data_is_one_error_line_not_a_traceback(offline_data, tmp_path,
                                                               monkeypatch):  # fmt: skip
    import shutil

    from rlbench_suite.datasets.cache import dataset_folder

    root = shutil.copytree(offline_data, tmp_path / "data")
    monkeypatch.setenv("RLBENCH_DATA_DIR", str(root))
    data = dataset_folder(get_dataset_card(DISCRETE), root / "datasets") / "data/main_data.hdf5"
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data.write_bytes(bytes(raw))
    text = _one_line(DISCRETE, "--algo", "bc", "--budget", "10")
    assert text.startswith("error: ") and "Traceback" not in text
    assert str(data) in text or "main_data.hdf5" in text


def test_an_offline_algorithm_on_an_online_id_names_its_datasets(data_dir):
    text = _one_line("rlbench/Pendulum-v1", "--algo", "iql")
    assert "offline algorithm" in text and "rlbench/Pendulum-medium-v0" in text
    assert "ppo" in text  # the online algorithms


def test_an_algorithm_for_other_actions_names_the_ones_that_fit(data_dir):
    text = _one_line(DISCRETE, "--algo", "td3bc")
    assert "cannot train on rlbench/CartPole-random-v0" in text and "bc" in text and "cql" in text


def test_a_dataset_not_in_the_cache_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("RLBENCH_DATA_DIR", str(tmp_path / "empty"))
    with pytest.raises(TrainError, match="rlbench datasets download rlbench/Pendulum-expert-v0"):
        train(_config(tmp_path, "rlbench/Pendulum-expert-v0", "bc"))
    assert not (tmp_path / "runs").exists()


def test_bad_offline_hyperparameters_name_the_key(tmp_path, data_dir):
    path = tmp_path / "iql.yaml"
    entry = {"source": {"origin": "defaults", "reference": "test"}, "n_timesteps": 10,
             "beta": "hot"}  # fmt: skip
    path.write_text(json.dumps({"rlbench/Pendulum-v1": entry}))
    with pytest.raises(TrainError, match="'beta'"):
        train(_config(tmp_path, CONTINUOUS, "iql", hyperparams=path))
    path.write_text(json.dumps({"rlbench/Pendulum-v1": {**entry, "beta": 1.0, "expectile": 1}}))
    with pytest.raises(ValueError, match="'expectile' is not a hyperparameter"):
        train(_config(tmp_path, CONTINUOUS, "iql", hyperparams=path))


def test_rlbench_reproduce_retrains_an_offline_run_identically(tmp_path, data_dir):
    from rlbench_suite.baselines.reproduce_run import reproduce_run

    report = train(_config(tmp_path, CONTINUOUS, "bc", budget=30, eval_every=15))
    again = reproduce_run(report.run_dir, tmp_path / "again")
    assert again.differences == [], again.differences
    assert again.identical and again.max_return_difference == 0.0
