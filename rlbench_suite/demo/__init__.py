"""``rlbench demo``: the whole suite at work in one command, each step saying what it made
and where (``bash scripts/main.sh`` runs it after setting up).

1. the leaderboard's embedded database: created or migrated, the cards synced, the zoo's
   committed Results imported (:mod:`.board`);
2. the shipped reference baselines (``baseline:`` ONNX policies) evaluated by the harness on a
   quick suite chosen from the committed results, one or two cards per family
   (:mod:`.suite`), each under its card's full protocol; every Result stored, and its ONNX
   policy submitted for verification by the leaderboard's worker in the background;
3. a dataset built (or copied from the cache) into a mirror folder, served over HTTP on
   127.0.0.1 and downloaded from it into a fresh cache, verified (:mod:`.mirror`);
4. ``fast_ppo`` trained on QuadHover's batched NumPy backend for about a minute and flown on
   PyBullet (:mod:`.quad`), its Result stored and submitted too;
5. the verification jobs finished: what the worker reproduced is marked verified;
6. a summary table: env, baseline, the leaderboard's IQM normalized score with its 95%
   interval, verified (:mod:`.summary`);
7. the leaderboard site served on 127.0.0.1 until Ctrl-C (``--no-serve`` stops before).

Orchestration in :mod:`.run`, output in :mod:`.report`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DemoError", "DemoInterrupted", "DemoOptions", "run_demo"]


def __getattr__(name: str) -> Any:
    """The public names, imported on first use (``demo.defaults`` stays light for the CLI)."""
    if name in ("DemoError", "DemoInterrupted"):
        from rlbench_suite.demo import report

        return getattr(report, name)
    if name in ("DemoOptions", "run_demo"):
        from rlbench_suite.demo import run

        return getattr(run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
