"""rlbench-suite: a Gymnasium-compatible environment and benchmark suite for reinforcement learning.

``import rlbench_suite`` registers every environment card: single-agent ids with
Gymnasium (``gym.make("rlbench/CartPole-v1")``), multi-agent ids with PettingZoo's registry
and :func:`make_multiagent`. No simulator is imported until an environment is made.
"""

from __future__ import annotations

import os
import sys

__version__ = "0.1.0"

# Headless MuJoCo rendering works with EGL on machines without a display (see doctor).
if sys.platform.startswith("linux") and not os.environ.get("DISPLAY"):
    os.environ.setdefault("MUJOCO_GL", "egl")

from rlbench_suite.catalog import EnvCard, UnknownEnvError, catalog, get_card
from rlbench_suite.registry import make_multiagent, register_all

register_all()

__all__ = [
    "EnvCard",
    "UnknownEnvError",
    "__version__",
    "catalog",
    "get_card",
    "make_multiagent",
]
