"""Scripted policies for tests: usable as ``--policy module:tests.toy_policies:NAME``."""

from __future__ import annotations

import numpy as np


def first_legal(observation, info):
    """The lowest-numbered legal action (action 0 where there is no mask)."""
    mask = info.get("action_mask")
    return 0 if mask is None else int(np.flatnonzero(mask)[0])


def broken(observation, info):
    """A policy that fails on its first step (for error-path tests)."""
    raise RuntimeError("this policy always fails")


def held_out_goals_only(observation, info):
    """Zero actions on ArmReach, failing unless the goal is a test-split variation."""
    from rlbench_suite.envs.robotics.arm.env import variation_split

    split = variation_split(np.asarray(observation)[13:16])
    if split != "test":
        raise RuntimeError(f"expected a held-out (test) variation, got a {split} one")
    return np.zeros(4, dtype=np.float32)
