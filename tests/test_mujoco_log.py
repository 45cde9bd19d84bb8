"""MuJoCo's warnings: never a ``MUJOCO_LOG.TXT`` in the working directory, whatever path makes
the env (``rlbench_suite.mujoco_log``, installed by ``import rlbench_suite``)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from rlbench_suite.mujoco_log import mujoco_warning

pytest.importorskip("mujoco")
ROOT = Path(__file__).resolve().parents[1]

TRAIN_AND_EVALUATE = """
import sys
import gymnasium as gym
import rlbench_suite
from rlbench_suite.evaluation import default_protocol, evaluate

assert "mujoco" not in sys.modules  # importing the suite imports no simulator
env = gym.make_vec("rlbench/HalfCheetah-v5", num_envs=2, vectorization_mode="sync")  # training
env.reset(seed=0)
env.close()
card = rlbench_suite.get_card("rlbench/HalfCheetah-v5")
evaluate(card, "random", default_protocol(card, episodes=1), workers=1)
print("done")
"""


def test_training_and_evaluation_leave_no_log_file_and_print_no_known_deprecation(tmp_path):
    """Gymnasium's half_cheetah.xml makes MuJoCo warn about ``settotalmass`` at every load;
    MuJoCo's default handler appended it to MUJOCO_LOG.TXT in the working directory and
    printed it, outside previews too."""
    done = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", TRAIN_AND_EVALUATE],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("done")
    assert "settotalmass" not in done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []


def test_other_mujoco_warnings_become_python_warnings_and_the_known_one_is_dropped():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        mujoco_warning("compiler attribute 'settotalmass' is deprecated and will be removed")
        mujoco_warning("Nan, Inf or huge value in QACC at DOF 0. The simulation is unstable.")
    assert [str(w.message) for w in seen] == [
        "MuJoCo: Nan, Inf or huge value in QACC at DOF 0. The simulation is unstable."]
    assert seen[0].category is RuntimeWarning
