"""The harness on offline ids: scored on the dataset's references, with a sound ``env.spec``."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from typer.testing import CliRunner

import rlbench_suite  # noqa: F401  (registers the ids)
from rlbench_suite.cli import app
from rlbench_suite.core.dataset_cards import get_dataset_card
from rlbench_suite.core.offline_cards import NORMALIZATION_SCALE, offline_env_card, resolve_card
from rlbench_suite.core.result import load_result
from rlbench_suite.evaluation import default_protocol, evaluate
from rlbench_suite.evaluation.reproduce import compare_runs
from rlbench_suite.registry import added_wrappers, spec_hash

PENDULUM = "rlbench/Pendulum-medium-v0"
QUAD = "rlbench/QuadHover-expert-v0"  # a card with a native vector env (make_wrapped)


def _episode(env: gym.Env, seed: int) -> tuple[list[np.ndarray], dict]:
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    seen = [obs]
    while True:
        obs, _, terminated, truncated, info = env.step(env.action_space.sample())
        seen.append(obs)
        if terminated or truncated:
            return seen, info["rlbench_episode"]


@pytest.mark.parametrize("dataset_id", [PENDULUM, "rlbench/CartPole-expert-v0", QUAD])
def test_the_offline_env_spec_is_its_own_and_rebuilds_the_same_env(dataset_id):
    env = gym.make(dataset_id)
    spec = env.spec
    assert spec.id == dataset_id and env.unwrapped.spec.id == dataset_id
    names = [w.name for w in spec.additional_wrappers]
    assert names[0] == "rlbench/EpisodeStatistics-v0" and names[-1] == "rlbench/OfflineDataset-v0"
    assert added_wrappers(spec) == []  # nothing beyond the registered stack
    again = gym.make(spec)
    assert [w.name for w in again.spec.additional_wrappers] == names
    first, stats = _episode(env, 7)
    second, stats_again = _episode(again, 7)
    assert stats == stats_again
    np.testing.assert_array_equal(np.array(first), np.array(second))
    assert hasattr(again, "get_dataset") and again.get_wrapper_attr("dataset_id") == dataset_id


def test_episodes_are_scored_on_the_dataset_references_not_the_env_cards():
    dataset = get_dataset_card(QUAD)
    online = resolve_card(dataset.env_id)
    assert online.primary_metric == "success_rate"  # the env card ranks by success
    _, stats = _episode(gym.make(QUAD), 3)
    # the offline id scores the return on the dataset's random and expert returns (D4RL)
    assert stats["normalized_score"] == pytest.approx(dataset.normalized_score(stats["r"]))
    assert stats["normalized_score"] != pytest.approx(0.0)
    env = gym.make(QUAD)
    d4rl = env.get_wrapper_attr("get_normalized_score")(stats["r"])
    assert d4rl == pytest.approx(stats["normalized_score"] / 100)


def test_rlbench_eval_on_an_offline_id_records_the_datasets_normalization(tmp_path):
    out = tmp_path / "result.json"
    result = CliRunner().invoke(
        app,
        ["eval", PENDULUM, "--policy", "random", "--episodes", "4", "--workers", "1",
         "--out", str(out)],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "100 x D4RL's get_normalized_score" in result.output.replace("\n", " ")
    assert "note:" not in result.output  # Pendulum's random reference is 'random' itself
    saved = load_result(out)
    dataset = get_dataset_card(PENDULUM)
    assert saved.env_id == PENDULUM
    assert saved.spec_hash == spec_hash(offline_env_card(PENDULUM))
    norm = saved.normalization
    assert norm is not None and norm.references_from == f"dataset {PENDULUM}"
    assert (norm.random, norm.expert) == (dataset.reference.random.value,
                                          dataset.reference.expert.value)  # fmt: skip
    assert norm.metric == "return" and norm.scale == NORMALIZATION_SCALE
    expected = np.mean(dataset.normalized_score(np.array(saved.returns)))
    assert saved.normalized_score.point == pytest.approx(expected)
    raw = json.loads(out.read_text())
    assert raw["normalization"]["random"] == dataset.reference.random.value


def test_an_offline_result_reproduces_and_the_protocol_check_holds(tmp_path):
    card = resolve_card(PENDULUM)
    protocol = default_protocol(card, episodes=2)
    first = evaluate(PENDULUM, "random", protocol, workers=1)
    again = evaluate(card, "random", protocol, workers=2)  # a worker pool builds the offline env
    assert compare_runs(first, again) == []
    assert first.normalization == again.normalization


def test_online_results_record_no_other_normalization():
    protocol = default_protocol("rlbench/Pendulum-v1", episodes=1)
    result = evaluate("rlbench/Pendulum-v1", "random", protocol, workers=1)
    assert result.normalization is None and result.normalized_score is not None


def test_a_mistyped_offline_id_suggests_dataset_ids():
    result = CliRunner().invoke(app, ["eval", "rlbench/Pendulum-mediun-v0", "--policy", "random"])
    assert result.exit_code == 2
    assert "rlbench/Pendulum-medium-v0" in result.output.replace("\n", "")


@pytest.mark.parametrize(("env_id", "baseline"), [
    ("rlbench/CartPole-medium-v0", "Pendulum-medium-v0/iql/seed-0"),
    ("rlbench/CartPole-v1", "Pendulum-v1/sac/seed-0"),
])  # fmt: skip
def test_a_policy_of_another_env_is_named_as_such(env_id, baseline, tmp_path):
    """A review: a committed Pendulum policy evaluated on CartPole blamed missing wrapper
    records in its sidecar, not the env it was trained on."""
    args = ["eval", env_id, "--policy", f"baseline:{baseline}", "--episodes", "2", "--out",
            str(tmp_path / "r.json")]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    trained_on = "rlbench/" + baseline.split("/")[0]
    assert f"it was trained on {trained_on} (its sidecar), not {env_id}" in text
    assert "save_policy" not in text and not (tmp_path / "r.json").exists()


def test_random_on_text_data_is_told_its_reference_was_another_policy(tmp_path):
    # the text datasets' random reference picks admissible commands; 'random' types strings
    dataset_id = "rlbench/TextAdventureEasy-expert-v0"
    result = CliRunner().invoke(
        app,
        ["eval", dataset_id, "--policy", "random", "--episodes", "2", "--workers", "1",
         "--out", str(tmp_path / "result.json")],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert load_result(tmp_path / "result.json").normalized_score.point < -100
    text = " ".join(result.output.split())
    assert (f"note: {dataset_id}'s random reference (0.68) was measured with "
            "module:rlbench_suite.envs.text.random_admissible:RandomAdmissible, not with "
            "'random'") in text
