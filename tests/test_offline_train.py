"""``rlbench train <offline id> --algo bc|td3bc|iql|cql``: whole runs, resume, ONNX parity,
and the errors that name what is accepted."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from rlbench_suite.baselines.hyperparams import HyperparamsError
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
    with pytest.raises(HyperparamsError, match="'beta': a number >= 0, not 'hot'"):
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


# -------------------------------------------------- hyperparameter values, checked by their Config


def _entry(**values) -> dict:
    return {"source": {"origin": "defaults", "reference": "test"}, "n_timesteps": 50, **values}


@pytest.mark.parametrize(
    ("algo", "values", "expected"),
    [
        ("bc", {"learning_rate": -1}, "key 'learning_rate': a number > 0, not -1"),
        ("bc", {"batch_size": 0}, "key 'batch_size': an integer >= 1, not 0"),
        ("bc", {"hidden": 0}, "key 'hidden': an integer >= 1, not 0"),
        ("bc", {"frac": 1.5}, "key 'frac': a number in (0, 1], not 1.5"),
        ("bc", {"learning_rate": True}, "key 'learning_rate': a number > 0, not True"),
        ("bc", {"batch_size": 2.5}, "key 'batch_size': an integer >= 1, not 2.5"),
        ("bc", {"hidden": "64"}, "key 'hidden': an integer >= 1, not '64' (text: write numbers"),
        ("bc", {"learning_rate": "fast"}, "key 'learning_rate': a number > 0, not 'fast'"),
        ("bc", {"learning_rate": "lin_0.001"}, "key 'learning_rate': a number > 0, not 'lin_"),
        ("bc", {"normalize": {"norm_obs": True}}, "key 'normalize': true or false, not {"),
        ("td3bc", {"tau": 0}, "key 'tau': a number in (0, 1], not 0"),
        ("td3bc", {"policy_freq": 0}, "key 'policy_freq': an integer >= 1, not 0"),
        ("iql", {"discount": 1.5}, "key 'discount': a number in (0, 1], not 1.5"),
        ("iql", {"actor_dropout": 1.0}, "key 'actor_dropout': a number in [0, 1), or null"),
        ("iql", {"iql_tau": 1.0}, "key 'iql_tau': a number in (0, 1), not 1.0"),
        ("iql", {"actor_lr": float("nan")}, "key 'actor_lr': a number > 0, not nan"),
        ("cql", {"cql_n_actions": 0}, "key 'cql_n_actions': an integer >= 1, not 0"),
        ("cql", {"cql_clip_diff_min": 5.0, "cql_clip_diff_max": 1.0},
         "key 'cql_clip_diff_max': a number >= cql_clip_diff_min (5), not 1.0"),
        ("cql", {"use_automatic_entropy_tuning": 1}, "'use_automatic_entropy_tuning': true or "
                                                     "false, not 1"),
    ],
)  # fmt: skip
def test_an_offline_hyperparameter_out_of_range_or_of_another_type_is_one_error_line(
    tmp_path, data_dir, algo, values, expected
):
    """A review: ``learning_rate: -1`` ended in torch's 96-line traceback and ``batch_size: 0``
    "trained" without one update; now both, and every value a Config refuses, are one line
    naming the file, the key and what it accepts, before any data is loaded or folder made."""
    path = tmp_path / f"{algo}.yaml"
    path.write_text(yaml.safe_dump({"rlbench/Pendulum-v1": _entry(**values)}))
    result = CliRunner().invoke(app, ["train", CONTINUOUS, "--algo", algo, "--budget", "50",
                                      "--hyperparams", str(path), "--out",
                                      str(tmp_path / "runs")])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1
    assert "Traceback" not in result.output and "\x1b" not in result.output
    line = result.output.replace("\n", "")
    assert f"{path}: rlbench/Pendulum-v1: " in line
    assert expected in line
    assert not (tmp_path / "runs").exists()


def test_the_discrete_cql_entry_is_checked_by_its_own_config(tmp_path, data_dir):
    path = tmp_path / "cql.yaml"
    path.write_text(json.dumps({"rlbench/CartPole-v1": _entry(qf_lr=0, hidden=64)}))
    with pytest.raises(HyperparamsError, match="key 'qf_lr': a number > 0, not 0"):
        train(_config(tmp_path, DISCRETE, "cql", hyperparams=path))


def _offline_configs() -> list:
    import importlib

    from rlbench_suite.baselines.algorithms import ALGORITHMS

    packages = {p for a in ALGORITHMS.values() if a.offline
                for p in (a.package, a.discrete_package) if p}  # fmt: skip
    return [importlib.import_module(p).Config for p in sorted(packages)]


def test_every_offline_config_checks_every_field_by_one_table_of_rules():
    """One set of rules for every algorithm (``offline.common.RULES``): each number field of
    each Config has its range there, each Config checks itself when made, and the defaults
    pass."""
    import dataclasses

    from rlbench_suite.baselines.offline.common import (
        RULES,
        CheckedConfig,
        ConfigError,
        field_kinds,
    )

    configs = _offline_configs()
    assert len(configs) == 5
    for config in configs:
        assert issubclass(config, CheckedConfig), config
        kinds = field_kinds(config)
        assert set(kinds) == {f.name for f in dataclasses.fields(config)}
        for name, (kind, _) in kinds.items():
            assert kind in (bool, int, float), (config, name, kind)
            assert kind is bool or name in RULES, f"{config.__module__}.Config.{name}: no rule"
        config()  # the defaults pass
        number = next(n for n, (k, _) in kinds.items() if k is float)
        with pytest.raises(ConfigError, match=f"key '{number}'"):
            config(**{number: float("nan")})
    used = {name for config in configs for name in field_kinds(config)}
    assert set(RULES) <= used, set(RULES) - used  # no rule for a field that is gone


def test_a_config_made_from_yaml_numbers_holds_them_as_its_fields_do():
    from rlbench_suite.baselines.offline import bc, cql

    cfg = bc.Config(hidden=64.0, learning_rate=1)  # !!float 64 and a whole learning rate
    assert cfg.hidden == 64 and type(cfg.hidden) is int
    assert cfg.learning_rate == 1.0 and type(cfg.learning_rate) is float
    assert cql.Config(cql_clip_diff_min=float("-inf")).cql_clip_diff_min == float("-inf")


def test_every_committed_offline_run_records_hyperparameters_its_config_accepts():
    """``rlbench reproduce`` retrains a committed run from its recorded hyperparameters: the
    new checks refuse none of them."""
    import dataclasses

    from rlbench_suite.baselines.algorithms import get_algorithm
    from rlbench_suite.baselines.hyperparams import parse_entry
    from rlbench_suite.resources import content_dir

    runs = [json.loads(p.read_text()) for p in
            (content_dir("baselines") / "results").glob("*/*/seed-*/run.json")]  # fmt: skip
    offline = [run for run in runs if run.get("budget_unit") == "gradient steps"]
    assert offline
    for run in offline:
        algo = get_algorithm(run["algo"])
        if run["algo_class"].endswith("cql_discrete.Config"):
            algo = dataclasses.replace(algo, package=algo.discrete_package)
        parse_entry(algo, run["env_id"], run["hyperparams"])


# --------------------------------------------------------------------------- checkpoints


def test_a_huge_budget_checkpoints_by_wall_time_and_records_what_it_did(tmp_path, data_dir,
                                                                        monkeypatch):  # fmt: skip
    """A review: ``--budget 1000000000`` checkpointed first at budget/20 (about a day), so
    Ctrl-C before it lost everything. Now a checkpoint also falls at the first progress report
    ``CHECKPOINT_SECONDS`` after the last one; the curve and run.json keep their schedule."""
    from rlbench_suite.baselines import offline_run
    from rlbench_suite.baselines.checkpoints import latest_checkpoint

    monkeypatch.setattr(offline_run, "CHECKPOINT_SECONDS", 0.0)

    def stop_at_500(progress) -> None:
        if progress.step >= 500:
            raise KeyboardInterrupt

    config = _config(tmp_path, CONTINUOUS, "bc", budget=10**9, eval_every=None)
    with pytest.raises(KeyboardInterrupt):
        train(config, on_progress=stop_at_500)
    run_dir = tmp_path / "runs" / "Pendulum-random-v0" / "bc" / "seed-3"
    assert latest_checkpoint(run_dir) == run_dir / "checkpoints" / "step-250"
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "interrupted"
    assert run["eval_every"] == run["checkpoint_every"] == 10**9 // 20
    assert [line.split(",")[0] for line in
            (run_dir / "curve.csv").read_text().splitlines()[1:]] == ["0"]  # fmt: skip


def test_a_run_resumed_from_a_checkpoint_made_by_wall_time_trains_exactly_as_one_never_cut(
    tmp_path, data_dir, monkeypatch
):
    from rlbench_suite.baselines import offline_run

    settings = dict(budget=600, eval_every=300, checkpoint_every=600)
    whole = train(_config(tmp_path / "whole", CONTINUOUS, "bc", **settings))
    monkeypatch.setattr(offline_run, "CHECKPOINT_SECONDS", 0.0)

    def stop_after_250(progress) -> None:
        if progress.step > 250:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(_config(tmp_path / "cut", CONTINUOUS, "bc", **settings), on_progress=stop_after_250)
    resumed = train(_config(tmp_path / "cut", CONTINUOUS, "bc", resume=True, **settings))
    run = json.loads((resumed.run_dir / "run.json").read_text())
    assert run["resumes"][-1]["step"] == 250 and run["resume_exact"] is True
    assert run["checkpoint_every"] == whole.run["checkpoint_every"] == 600
    a, b = _agent_state(whole.run_dir), _agent_state(resumed.run_dir)
    for key, value in a["actor"].items():
        torch.testing.assert_close(b["actor"][key], value, rtol=0, atol=0)
    assert (
        load_result(whole.run_dir / "result.json").returns
        == load_result(resumed.run_dir / "result.json").returns
    )

    def points(run_dir) -> list[list[str]]:  # all but the wall time
        rows = (run_dir / "curve.csv").read_text().splitlines()
        return [row.split(",")[:1] + row.split(",")[2:] for row in rows]

    assert points(whole.run_dir) == points(resumed.run_dir)


def test_the_train_help_says_how_often_an_offline_run_checkpoints():
    from rlbench_suite.baselines.offline_run import CHECKPOINT_SECONDS

    result = CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "200"})
    assert f"at least every {CHECKPOINT_SECONDS / 60:g} minutes" in " ".join(result.output.split())


# ---------------------------------------------------- data no offline algorithm trains on yet


def test_text_data_is_refused_in_one_line_saying_what_to_do_instead(data_dir):
    """A review: the refusal printed the Text space's whole charset and ended ``algorithms for
    it: none``."""
    text = _one_line("rlbench/TextAdventureEasy-medium-v0", "--algo", "bc")
    assert text.startswith("error: ") and "charset" not in text and len(text) < 700
    assert "no offline algorithm of the suite trains on text yet" in text
    assert "rlbench_suite.datasets.load('rlbench/TextAdventureEasy-medium-v0')" in text
    assert "rlbench eval rlbench/TextAdventureEasy-medium-v0 --policy" in text
    assert "rlbench train rlbench/TextAdventureEasy-v0 --algo maskable_ppo" in text
    assert _one_line("rlbench/TextAdventureEasy-medium-v0", "--algo", "td3bc") == text


def test_joint_multi_agent_data_is_refused_naming_what_to_train_instead(data_dir):
    text = _one_line("rlbench/CoopNav-medium-v0", "--algo", "iql")
    assert text.startswith("error: ") and "joint data" in text
    assert "No offline algorithm of the suite trains on joint data yet" in text
    assert "rlbench train rlbench/CoopNav-v0 --algo ppo (or shared_ppo, fast_ppo)" in text


def test_a_space_is_shown_cut_short_on_one_line():
    import string

    import gymnasium as gym

    from rlbench_suite.baselines.offline.common import SPACE_CHARS, shown_space

    space = gym.spaces.Text(2048, charset=string.printable)  # a newline among them
    shown = shown_space(space)
    assert len(shown) == SPACE_CHARS and shown.endswith("...") and "\n" not in shown
    assert shown_space(gym.spaces.Discrete(3)) == "Discrete(3)"
