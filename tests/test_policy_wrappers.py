"""A trained policy carries the wrappers it was trained through; the harness rebuilds them."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from rlbench_suite.core.result import load_result
from rlbench_suite.evaluation import default_protocol, evaluate
from rlbench_suite.policies import PolicyMetadataError, load_metadata
from rlbench_suite.wrappers import AdmissibleActions, HashedBagOfWords
from tests.conftest import run_cli

pytest.importorskip("sb3_contrib")
ENV_ID = "rlbench/TextAdventureEasy-v0"
STACK = [
    {
        "name": "rlbench/AdmissibleActions-v1",
        "kwargs": {"max_actions": 16, "inadmissible": "noop", "penalty": 0.01, "max_turns": None},
    },
    {"name": "rlbench/HashedBagOfWords-v0", "kwargs": {"dim": 256, "pairs": True}},
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A MaskablePPO trained briefly through the text wrappers, saved both ways."""
    import torch
    from sb3_contrib import MaskablePPO

    from rlbench_suite.baselines.artifacts import save_policy

    torch.set_num_threads(1)
    env = HashedBagOfWords(AdmissibleActions(gym.make(ENV_ID), max_actions=16), dim=256)
    model = MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0)
    model.learn(256)
    folder = tmp_path_factory.mktemp("policies")
    zipped = save_policy(model, folder / "adventure.zip", env, train_seeds=[0],
                         training_budget_steps=256)  # fmt: skip
    onnx = save_policy(model, folder / "adventure.onnx", env, train_seeds=[0])
    model.save(folder / "bare.zip")  # no sidecar: what a plain model.save leaves
    return {"zip": zipped, "onnx": onnx, "bare": folder / "bare.zip"}


def test_the_sidecar_records_the_stack(trained):
    metadata = load_metadata(trained["zip"])
    assert [w.model_dump() for w in metadata.wrappers] == STACK
    assert metadata.env_id == ENV_ID and metadata.algo == "MaskablePPO"


@pytest.mark.parametrize("kind", ["zip", "onnx"])
def test_rlbench_eval_rebuilds_the_stack_and_records_it(trained, kind, tmp_path):
    out = tmp_path / "result.json"
    scheme = "sb3" if kind == "zip" else "onnx"
    done = run_cli("eval", ENV_ID, "--policy", f"{scheme}:{trained[kind]}", "--episodes", "4",
                   "--workers", "2", "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = load_result(out)
    assert result.policy["wrappers"] == STACK
    in_process = evaluate(ENV_ID, f"{scheme}:{trained[kind]}",
                          default_protocol(ENV_ID, episodes=4), workers=1)  # fmt: skip
    assert in_process.returns == result.returns and in_process.lengths == result.lengths


def test_a_model_saved_without_its_stack_gets_a_clear_error(trained):
    done = run_cli("eval", ENV_ID, "--policy", f"sb3:{trained['bare']}", "--episodes", "2",
                   "--workers", "1")  # fmt: skip
    assert done.returncode == 2
    assert "expects observations of shape (256,)" in done.stderr
    assert "save_policy" in done.stderr and "Traceback" not in done.stderr


def test_a_sidecar_naming_an_unknown_wrapper_is_refused_without_importing_it(trained, tmp_path):
    copy = tmp_path / "evil.zip"
    copy.write_bytes(trained["zip"].read_bytes())
    meta = json.loads(trained["zip"].with_name("adventure.zip.meta.json").read_text())
    meta["wrappers"] = [{"name": "os:system", "kwargs": {"command": "touch /tmp/pwned"}}]
    copy.with_name("evil.zip.meta.json").write_text(json.dumps(meta))
    with pytest.raises(PolicyMetadataError, match="unknown wrapper 'os:system'; accepted:"):
        load_metadata(copy)


def _with_stack(trained, tmp_path, name: str, stack: list[dict]) -> str:
    copy = tmp_path / f"{name}.onnx"
    copy.write_bytes(trained["onnx"].read_bytes())
    meta = json.loads(trained["onnx"].with_name("adventure.onnx.meta.json").read_text())
    meta["wrappers"] = stack
    copy.with_name(f"{name}.onnx.meta.json").write_text(json.dumps(meta))
    return f"onnx:{copy}"


def test_a_stack_that_would_write_the_score_is_refused(trained, tmp_path):
    """The review's forgery: an outer statistics wrapper (whose success rule the sidecar
    sets) overwrote the card's episode record, and the harness scored a CartPole policy as
    successful on every episode."""
    forged = _with_stack(trained, tmp_path, "forged", [
        *STACK, {"name": "rlbench/EpisodeStatistics-v0",
                 "kwargs": {"success": {"kind": "return_at_least", "threshold": -1e9}}}])
    with pytest.raises(ValueError, match="may not include rlbench/EpisodeStatistics-v0: the "
                                         "card's own stack records the episodes"):
        evaluate(ENV_ID, forged, default_protocol(ENV_ID, episodes=2), workers=1)
    early = [{**STACK[0], "kwargs": {**STACK[0]["kwargs"], "max_turns": 1}}, STACK[1]]
    done = run_cli("eval", ENV_ID, "--policy", _with_stack(trained, tmp_path, "early", early),
                   "--episodes", "2", "--workers", "1")  # fmt: skip
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "may not set max_turns: episodes end where the card ends them" in done.stderr


def test_training_only_shaping_is_left_out_of_evaluations(trained, tmp_path):
    shaped = _with_stack(trained, tmp_path, "shaped", [
        *STACK, {"name": "rlbench/MiniGridKeyDoorShaping-v0", "kwargs": {"scale": 1e6}}])
    protocol = default_protocol(ENV_ID, episodes=3)
    plain = evaluate(ENV_ID, f"onnx:{trained['onnx']}", protocol, workers=1)
    again = evaluate(ENV_ID, shaped, protocol, workers=1)  # a MiniGrid wrapper: never built
    assert again.returns == plain.returns and again.lengths == plain.lengths


def test_a_plain_ppo_scores_alike_as_sb3_and_as_onnx(tmp_path):
    """An unmasked PPO picks unlisted indices (no-op turns); evaluated as SB3 or as ONNX it
    takes the best legal command in both, so the two files of one model score the same."""
    import torch
    from stable_baselines3 import PPO

    from rlbench_suite.baselines.artifacts import save_policy

    torch.set_num_threads(1)
    env = HashedBagOfWords(AdmissibleActions(gym.make("rlbench/TextMaze-v0"), max_actions=16),
                           dim=128)  # fmt: skip
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0).learn(64)
    protocol = default_protocol("rlbench/TextMaze-v0", episodes=3)
    scored = [
        evaluate(
            "rlbench/TextMaze-v0",
            f"{scheme}:{save_policy(model, tmp_path / name, env)}",
            protocol,
            workers=1,
        )
        for scheme, name in (("sb3", "ppo.zip"), ("onnx", "ppo.onnx"))
    ]
    assert scored[0].returns == scored[1].returns and scored[0].lengths == scored[1].lengths
    assert min(scored[0].lengths) > 0  # the game received commands
