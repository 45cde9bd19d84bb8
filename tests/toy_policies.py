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
