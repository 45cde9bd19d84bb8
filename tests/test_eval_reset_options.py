"""Reset options in evaluation protocols: held-out variations reach every runner."""

from __future__ import annotations

import pytest

from rlbench_suite.core.protocol import EvalProtocol
from rlbench_suite.evaluation.protocols import default_protocol
from rlbench_suite.evaluation.runner import EvaluationError, evaluate
from tests.conftest import run_cli

HELD_OUT = "module:tests.toy_policies:held_out_goals_only"


def test_reset_options_are_part_of_the_protocol_hash():
    plain = default_protocol("rlbench/ArmReach-v0", episodes=4)
    held_out = default_protocol("rlbench/ArmReach-v0", episodes=4, reset_options={"split": "test"})
    assert plain.hash != held_out.hash
    # protocols written before reset options existed keep their hash
    older = plain.model_dump(mode="json")
    del older["reset_options"]
    assert EvalProtocol.model_validate(older).hash == plain.hash


@pytest.mark.parametrize("workers", [1, 2])
def test_held_out_variations_reach_every_worker(workers):
    protocol = default_protocol("rlbench/ArmReach-v0", episodes=4, reset_options={"split": "test"})
    result = evaluate("rlbench/ArmReach-v0", HELD_OUT, protocol, workers=workers)
    assert result.protocol.reset_options == {"split": "test"} and len(result.returns) == 4
    with pytest.raises((EvaluationError, RuntimeError), match="expected a held-out"):
        evaluate("rlbench/ArmReach-v0", HELD_OUT, default_protocol("rlbench/ArmReach-v0",
                 episodes=4), workers=workers)  # fmt: skip


def test_cli_reset_option(tmp_path):
    out = tmp_path / "r.json"
    done = run_cli("eval", "rlbench/ArmReach-v0", "--policy", HELD_OUT, "--episodes", "3",
                   "--workers", "1", "--reset-option", "split=test", "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "reset options {'split': 'test'}" in done.stdout.replace("\n", "")
    bad = run_cli("eval", "rlbench/ArmReach-v0", "--policy", "random", "--reset-option", "split",
                  "--out", str(tmp_path / "x.json"))  # fmt: skip
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr
