"""The demo's defaults, in one light module (the CLI's help reads them without importing the
demo itself)."""

from __future__ import annotations

DEFAULT_DATASET = "rlbench/CartPole-random-v0"
"""The dataset the demo mirrors and downloads."""
DEFAULT_PORT = 8000
"""The site's port on 127.0.0.1 (a free one when it is taken)."""
TRAIN_SECONDS, QUICK_TRAIN_SECONDS = 90.0, 5.0
"""Wall seconds of quadrotor training: by default, and with ``--quick``."""
