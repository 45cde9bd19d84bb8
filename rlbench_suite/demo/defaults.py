"""The demo's defaults, in one light module (the CLI's help reads them without importing the
demo itself)."""

from __future__ import annotations

DEFAULT_DATASET = "rlbench/CartPole-random-v0"
"""The dataset the demo mirrors and downloads."""
DEFAULT_PORT = 8000
"""The site's port on 127.0.0.1 (a free one when it is taken)."""
TRAIN_STEPS, QUICK_TRAIN_STEPS = 3_276_800, 65_536
"""Quadrotor training's budget in env steps (100 and 2 updates of 2048 drones x 16 steps), by
default and with ``--quick``; it stops earlier at the goal. Training is deterministic, so the
demo's seed reaches the goal at the same step on every machine (see ``demo.quad``): measured
2026-11-24, success 1.00 on the batched backend at the screen after 1,966,080 steps (60
updates), so the default leaves two fifths more."""
TRAIN_CAP_SECONDS = 600.0
"""A wall-time cap on quadrotor training, only for a machine far busier than expected: a run
it stops says so, with the ``--train-seconds`` to rerun with."""
