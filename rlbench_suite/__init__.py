"""rlbench-suite: a Gymnasium-compatible environment and benchmark suite for reinforcement learning.

``import rlbench_suite`` registers every environment card: single-agent ids with
Gymnasium (``gym.make("rlbench/CartPole-v1")``), multi-agent ids with PettingZoo's registry
and :func:`make_multiagent` (and with Gymnasium as one agent against opponents). No simulator
is imported until an environment is made.
"""

from __future__ import annotations

import os
import sys

__version__ = "0.1.0"

# Headless MuJoCo rendering works with EGL on machines without a display; GLFW, MuJoCo's
# default, fails there. A MUJOCO_GL the user set is kept (see `rlbench doctor`).
if sys.platform.startswith("linux") and not os.environ.get("DISPLAY"):
    os.environ.setdefault("MUJOCO_GL", "egl")

from rlbench_suite.card_sources import register_cards, register_external_cards
from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.catalog import UnknownEnvError, cards, get_card
from rlbench_suite.mujoco_log import route_mujoco_log
from rlbench_suite.registry import make_batched, make_multiagent, register_all

# MuJoCo's warnings become Python warnings (known upstream deprecations dropped), never lines
# in a MUJOCO_LOG.TXT in the working directory; MuJoCo itself is imported only when used.
route_mujoco_log()
register_all()
register_external_cards()

__all__ = [
    "EnvCard",
    "UnknownEnvError",
    "__version__",
    "cards",
    "get_card",
    "make_batched",
    "make_multiagent",
    "register_cards",
]
