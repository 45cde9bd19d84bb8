"""``scripts/quad_backend_gap.py``: QuadHover's committed offline policies on the batched NumPy
backend beside their committed PyBullet results, as docs/datasets.md quotes them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import REPO, load_script

SEEDS = 3  # of each result's 20 evaluation seeds


@pytest.fixture(scope="module")
def script():
    return load_script("quad_backend_gap")


def _fly(script, kind: str) -> tuple[dict, np.ndarray, np.ndarray]:
    run = f"QuadHover-{kind}-v0/bc/seed-0"
    result = json.loads((REPO / "baselines" / "results" / run / "result.json").read_text())
    policy = script.OnnxPolicy(REPO / "baselines" / "policies" / run / "policy.onnx")
    returns, lengths = script.fly_numpy(policy, result["protocol"]["seeds"][:SEEDS])
    return result, returns, lengths


def test_a_policy_that_flies_scores_the_same_on_both_backends(script):
    result, returns, lengths = _fly(script, "medium")
    assert lengths.tolist() == result["lengths"][:SEEDS] == [480] * SEEDS
    # the take-off differs (PyBullet's floor contact); a policy that recovers ends within 2%
    np.testing.assert_allclose(returns, result["returns"][:SEEDS], rtol=0.02)


def test_the_medium_replay_policy_flies_longer_on_the_backend_of_its_data(script):
    result, returns, lengths = _fly(script, "medium-replay")
    assert (lengths >= np.array(result["lengths"][:SEEDS])).all()
    assert lengths.sum() > 1.5 * sum(result["lengths"][:SEEDS])
    assert returns.mean() > np.mean(result["returns"][:SEEDS]) + 5
