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
from tests.offline_support import CONTINUOUS

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
    for t in trials:
        assert t["entry"] == card.env_id and t["budget"] == 40
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
