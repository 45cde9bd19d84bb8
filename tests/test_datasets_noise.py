"""Gaussian action noise in a dataset's source (``noise_std``): seeded, of the std asked,
clipped to the bounds, refused where it does not apply; and the committed cards that use it
(QuadHover's noisy PID expert, its medium policy trained partway) rebuild to their hashes."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from dataset_helpers import small_card

from rlbench_suite.core.dataset_cards import DatasetCard, SourcePolicy, load_dataset_card
from rlbench_suite.datasets.builder import SourceError, noise_scale, play, rollouts
from rlbench_suite.datasets.storage import content_hash
from tests.conftest import load_script

REPO = Path(__file__).resolve().parents[1]


class Still:
    """A policy that always asks for the zero action (so the noise is all that moves it)."""

    def __init__(self, space: gym.spaces.Box) -> None:
        self.zero = np.zeros(space.shape, dtype=space.dtype)

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, obs, info):
        return self.zero


def _actions(env: gym.Env, std, seeds) -> np.ndarray:
    component = SourcePolicy(policy="test", episodes=1, noise_std=std)
    scale = noise_scale(component, env.action_space)
    return np.concatenate([play(env, Still(env.action_space), s, noise_std=scale).actions
                           for s in seeds])  # fmt: skip


def test_noise_is_seeded_per_episode_and_of_the_std_asked_per_dimension():
    env = gym.make("rlbench/Reacher-v5")  # two action dimensions in [-1, 1]
    seeds = list(range(1_000_000_000, 1_000_000_008))
    actions = _actions(env, [0.1, 0.3], seeds)
    assert actions.dtype == env.action_space.dtype and actions.shape == (8 * 50, 2)
    np.testing.assert_allclose(actions.std(axis=0), [0.1, 0.3], rtol=0.15)
    np.testing.assert_allclose(actions.mean(axis=0), [0, 0], atol=0.05)
    np.testing.assert_array_equal(actions, _actions(env, [0.1, 0.3], seeds))  # a rebuild
    other = _actions(env, [0.1, 0.3], [s + 100 for s in seeds])
    assert not np.array_equal(actions, other)  # another seed, other draws
    # the same draws scaled: the stream is the episode's, whatever the std
    inside = np.abs(actions[:, 1]) < 1.0  # not clipped
    np.testing.assert_allclose(_actions(env, 0.1, seeds)[inside, 1] * 3, actions[inside, 1],
                               rtol=1e-5)  # fmt: skip


def test_noisy_actions_are_clipped_to_the_action_bounds():
    env = gym.make("rlbench/Reacher-v5")
    actions = _actions(env, 10.0, [1_000_000_000])
    assert actions.min() == -1.0 and actions.max() == 1.0
    assert np.mean(np.abs(actions) == 1.0) > 0.8


def test_no_noise_plays_the_policy_unchanged():
    env = gym.make("rlbench/Reacher-v5")
    assert not SourcePolicy(policy="test", episodes=1).noisy
    assert noise_scale(SourcePolicy(policy="test", episodes=1), env.action_space) is None
    assert not _actions(env, 0.0, [1_000_000_000]).any()


@pytest.mark.parametrize("std, message", [
    (-0.1, "finite numbers >= 0"),
    (float("inf"), "finite numbers >= 0"),
    ([0.1, float("nan")], "finite numbers >= 0"),
    (True, "finite numbers >= 0"),
    ("abc", "finite numbers >= 0"),
    ([], "not an empty list"),
])  # fmt: skip
def test_a_bad_noise_std_is_refused_by_the_card(std, message):
    with pytest.raises(ValueError, match=message):
        SourcePolicy(policy="random", episodes=1, noise_std=std)


def test_noise_where_it_cannot_apply_is_a_clear_error():
    noisy = small_card(source={"policies": [{"policy": "random", "episodes": 1,
                                             "noise_std": 0.1}]})  # fmt: skip
    with pytest.raises(SourceError, match=r"source.policies\[0\].noise_std: .*Box actions "
                       r"only.*Discrete.*or use epsilon"):  # fmt: skip
        list(rollouts(noisy))
    reacher = gym.make("rlbench/Reacher-v5")
    with pytest.raises(SourceError, match=r"3 values; the action space .* has 2 dimensions"):
        noise_scale(SourcePolicy(policy="x", episodes=1, noise_std=[0.1] * 3),
                    reacher.action_space)  # fmt: skip
    data = load_dataset_card(REPO / "datasets" / "CoopNav" / "expert.toml").model_dump()
    data["source"]["policies"][0]["noise_std"] = 0.1
    joint = DatasetCard.model_validate(data)
    with pytest.raises(SourceError, match=r"CoopNav.expert.toml: source.policies\[0\]"
                       r".noise_std: .*joint data takes epsilon only"):  # fmt: skip
        list(rollouts(joint))


def test_the_cli_names_the_card_and_field_and_goes_on_to_the_next_dataset(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from rlbench_suite.cli import app, datasets_common
    from rlbench_suite.core.dataset_cards import get_dataset_card

    monkeypatch.setenv("RLBENCH_DATA_DIR", str(tmp_path))
    data = get_dataset_card("rlbench/CartPole-medium-v0").model_dump()
    data["source"]["policies"][0]["noise_std"] = 0.1  # CartPole's actions are Discrete
    noisy = DatasetCard.model_validate(data)
    real = datasets_common.get_dataset_card
    monkeypatch.setattr(datasets_common, "get_dataset_card",
                        lambda i: noisy if i == noisy.id else real(i))  # fmt: skip
    result = CliRunner().invoke(app, ["datasets", "build", noisy.id], catch_exceptions=False)
    assert result.exit_code == 2
    assert "CartPole/medium.toml: source.policies[0].noise_std: Gaussian noise applies to Box" \
        in " ".join(result.output.split())
    assert "Traceback" not in result.output
    result = CliRunner().invoke(app, ["datasets", "download", noisy.id,
                                      "rlbench/CartPole-random-v0", "--build"])  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "rlbench/CartPole-random-v0: verified" in " ".join(result.output.split())


@pytest.mark.parametrize("kind", ["medium", "expert"])
def test_the_committed_noisy_quadhover_cards_rebuild_to_their_content_hashes(kind):
    """QuadHover's dynamics and PID expert compute nothing through BLAS
    (``tests/test_quad_envs.py`` plays them under other CPU kernels), so its noisy data built
    on an AMD EPYC rebuilds here whatever OpenBLAS kernels this CPU picks (the cards built on an
    Intel Xeon did not rebuild on the EPYC)."""
    card = load_dataset_card(REPO / "datasets" / "QuadHover" / f"{kind}.toml")
    assert any(p.noisy for p in card.source.policies)
    assert content_hash(rollouts(card)) == card.content_sha256


def test_the_committed_medium_checkpoints_stop_where_the_rule_says():
    """Each medium policy trained partway is the zoo run's at one of the two curve points
    around its first crossing of a third of the expert, the one whose measured return (its
    sidecar records both) is nearer that level; the medium card plays it with its own std
    where the script says noisy."""
    import json

    from rlbench_suite.core.catalog import get_card

    script = load_script("dataset_cards")
    assert script.CHECKPOINTS
    for env_id, (algo, seed, noisy) in script.CHECKPOINTS.items():
        env = get_card(env_id)
        medium = load_dataset_card(REPO / "datasets" / env.name.rsplit("-v", 1)[0] / "medium.toml")
        random, expert = medium.reference.random.value, medium.reference.expert.value
        level = random + (expert - random) / 3
        curve = REPO / "baselines" / "results" / env.name / algo / f"seed-{seed}" / "curve.csv"
        candidates = script.crossing_candidates(curve, level)
        step = int(medium.source.policies[0].policy.rsplit("/step-", 1)[1])
        name = f"checkpoints/{env.name}/{algo}/seed-{seed}/step-{step}"
        assert medium.source.policies[0].policy == f"baseline:{name}"
        meta = json.loads((REPO / "baselines" / name / "policy.onnx.meta.json").read_text())
        extra = meta["extra"]
        assert extra["medium_level"] == pytest.approx(level, abs=1e-5)
        assert [(c["step"], c["curve_return"]) for c in extra["candidates"]] == [
            (s, pytest.approx(r, abs=1e-5)) for s, r in candidates]
        nearer = min(extra["candidates"], key=lambda c: abs(c["measured_return"] - level))
        assert step == nearer["step"] == extra["stop"] == meta["training_budget_steps"]
        assert extra["measured_episodes"] == script.CANDIDATE_EPISODES
        assert medium.source.policies[0].noisy == noisy
        if noisy:
            assert medium.source.policies[0].noise_std == extra["action_std"]


def test_the_candidates_are_the_first_crossing_and_the_point_before(tmp_path):
    script = load_script("dataset_cards")
    curve = tmp_path / "curve.csv"
    curve.write_text("step,mean_return\n0,500\n10,20\n20,90\n30,200\n40,130\n")
    assert script.crossing_candidates(curve, 100) == [(20, 90.0), (30, 200.0)]
    assert script.crossing_candidates(curve, 10) == [(10, 20.0)]  # step 0 is never one
    with pytest.raises(SystemExit, match="never reaches"):
        script.crossing_candidates(curve, 1000)
