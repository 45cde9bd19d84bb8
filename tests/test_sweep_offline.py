"""``scripts/sweep_offline.py``: a grid over one offline hyperparameter on tuning seeds, each
trial trained, evaluated and recorded, the record resumable (tiny budgets here; the committed
sweeps are a maintainer's run)."""

from __future__ import annotations

import json

import pytest

from rlbench_suite.baselines.tune import TRIAL_EVAL_FIRST_SEED, TRIAL_TRAIN_SEED
from rlbench_suite.core.dataset_cards import get_dataset_card
from rlbench_suite.core.seeds import EVALUATION_SEEDS, TRAINING_SEEDS, TUNING_SEEDS
from tests.conftest import load_script
from tests.offline_support import CONTINUOUS, DISCRETE

pytestmark = pytest.mark.usefixtures("data_dir")


@pytest.fixture
def script(tmp_path, monkeypatch):
    module = load_script("sweep_offline")
    monkeypatch.setattr(module, "RESULTS", tmp_path / "offline_sweeps.json")
    return module


def _run(script, monkeypatch, *args: str) -> None:
    monkeypatch.setattr("sys.argv", ["sweep_offline.py", *args])
    script.main()


def test_each_value_and_seed_trains_on_tuning_seeds_and_is_recorded_once(
    script, monkeypatch, capsys
):
    args = (CONTINUOUS, "--algo", "td3bc", "--param", "alpha", "--values", "2.5", "0.1",
            "--budget", "40", "--episodes", "2")  # fmt: skip
    _run(script, monkeypatch, *args)
    trials = json.loads(script.RESULTS.read_text(encoding="utf-8"))["trials"]
    assert [(t["value"], t["seed"]) for t in trials] == [
        (2.5, TRIAL_TRAIN_SEED), (2.5, TRIAL_TRAIN_SEED + 1),
        (0.1, TRIAL_TRAIN_SEED), (0.1, TRIAL_TRAIN_SEED + 1),
    ]  # fmt: skip
    card = get_dataset_card(CONTINUOUS)
    from rlbench_suite.core.provenance import cpu_platform

    for t in trials:
        assert t["entry"] == card.env_id and t["budget"] == 40
        assert t["cpu"] == cpu_platform()  # each trial's own (the file's was overwritten)
        assert t["eval_seeds"] == [TRIAL_EVAL_FIRST_SEED, TRIAL_EVAL_FIRST_SEED + 1]
        for seed in (t["seed"], *t["eval_seeds"]):
            assert seed in TUNING_SEEDS and seed not in TRAINING_SEEDS
            assert seed not in EVALUATION_SEEDS
        expected = float(card.normalized_score(t["mean_return"]))
        assert t["normalized_score"] == pytest.approx(expected)
    # different values train different policies
    by_value = {v: [t["mean_return"] for t in trials if t["value"] == v] for v in (2.5, 0.1)}
    assert by_value[2.5] != by_value[0.1]
    out = capsys.readouterr().out
    assert "alpha=0.1 seed 100001: normalized score" in out and "best" in out

    def no_trial(*a, **k):
        raise AssertionError("a recorded trial trained again")

    monkeypatch.setattr(script, "trial", no_trial)
    _run(script, monkeypatch, *args)  # resumed: nothing left
    again = json.loads(script.RESULTS.read_text(encoding="utf-8"))["trials"]
    assert again == trials


def test_a_sweep_needs_its_grid(script, monkeypatch):
    with pytest.raises(SystemExit):
        _run(script, monkeypatch, CONTINUOUS, "--algo", "td3bc")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((CONTINUOUS, "--algo", "td3bc", "--param", "alpah"),
         "'alpah' is not a hyperparameter of rlbench_suite.baselines.offline.td3bc.Config; did "
         "you mean 'alpha'?"),
        ((CONTINUOUS, "--algo", "ppo", "--param", "alpha"), "ppo is an online algorithm"),
        ((CONTINUOUS, "--algo", "nope", "--param", "alpha"), "nope"),
        ((DISCRETE, "--algo", "td3bc", "--param", "alpha"), "td3bc"),
        ((CONTINUOUS, "--algo", "td3bc", "--param", "hidden", "--values", "32.5"), "hidden"),
        (("rlbench/Pendulum-expert-v0", "--algo", "td3bc", "--param", "alpha"),
         "rlbench/Pendulum-expert-v0 is not in the cache; run `rlbench datasets download "
         "rlbench/Pendulum-expert-v0 --build` first"),
        (("rlbench/Pendulm-random-v0", "--algo", "td3bc", "--param", "alpha"),
         "rlbench/Pendulum-random-v0"),
        ((CONTINUOUS, "--algo", "td3bc", "--param", "alpha", "--episodes", "0"), "0 is not in"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_before_anything_trains(script, monkeypatch, capsys, args, message):
    monkeypatch.setattr(script, "trial", lambda *a: pytest.fail("trained on bad input"))
    if "--values" not in args:
        args = (*args, "--values", "1")
    # the first dataset is fine: the second's problem still stops the sweep before training
    with pytest.raises(SystemExit) as exc:
        _run(script, monkeypatch, CONTINUOUS, *args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in " ".join(err.split()) and "Traceback" not in err, err
    assert not script.RESULTS.exists()


def test_bc_frac_keeps_the_best_episodes_as_the_trainer_does(script):
    """The sweep builds the trainer's model: frac 0.1 trains on the best tenth of episodes."""
    setup = script.setup(CONTINUOUS, "bc", "frac", [1.0, 0.1])
    rows = [script.trial(setup, "frac", f, 100000, 30, 1) for f in (1.0, 0.1)]
    assert rows[0]["mean_return"] != rows[1]["mean_return"]
    from rlbench_suite.baselines.hyperparams import native_config
    from rlbench_suite.baselines.offline_run import build_model, offline_settings

    cfg = native_config(setup.module.Config, setup.params,
                        {**offline_settings(setup.params), "frac": 0.1})  # fmt: skip
    model = build_model(setup.module, cfg, setup.card, setup.observation_space,
                        setup.action_space, 100000, 30)  # fmt: skip
    assert model.data.allowed is not None and len(model.data.allowed) < len(model.data)


def test_trials_recorded_side_by_side_are_all_kept_and_tables_split_by_episodes(script, capsys):
    row = {"dataset": CONTINUOUS, "algo": "td3bc", "param": "alpha", "value": 1.0,
           "seed": 100000, "budget": 10, "episodes": 1, "normalized_score": 10.0}  # fmt: skip
    script._record(row)
    # another process's sweep wrote in between: this one re-reads before it saves
    script._record({**row, "algo": "iql", "param": "beta"})
    script._record({**row, "episodes": 2, "normalized_score": 30.0})
    script._record({**row, "normalized_score": 20.0})  # the same trial again replaces it
    trials = script._load()
    assert len(trials) == 3 and {t["algo"] for t in trials} == {"td3bc", "iql"}
    assert [t["normalized_score"] for t in trials if t["episodes"] == 1 and t["algo"] == "td3bc"
            ] == [20.0]  # fmt: skip
    script.report(trials)
    out = " ".join(capsys.readouterr().out.split())
    assert "1 episode a trial" in out and "2 episodes a trial" in out
