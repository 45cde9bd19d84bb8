"""Offline datasets: building (``builder``), storage in Minari's HDF5 layout (``storage``),
the loader and transition sampler (``loader``), the cache (``cache``), remotes and downloads
(``remotes``), the HTTP mirror (``server``) and the offline ids (``offline``).

``load(ID)`` and ``recover_environment(ID)`` are the Minari-style entry points;
``gym.make(ID)`` gives the offline env with ``get_dataset()`` (D4RL style).
"""

from __future__ import annotations

from typing import Any

__all__ = ["OfflineDataset", "OfflineEnv", "load", "recover_environment"]


def __getattr__(name: str) -> Any:
    if name in ("OfflineEnv", "load", "recover_environment"):
        from rlbench_suite.datasets import offline

        return getattr(offline, name)
    if name == "OfflineDataset":
        from rlbench_suite.datasets.loader import OfflineDataset

        return OfflineDataset
    raise AttributeError(f"module 'rlbench_suite.datasets' has no attribute {name!r}")
