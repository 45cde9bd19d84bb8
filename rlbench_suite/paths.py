"""Where the suite writes by default: one data directory for results, runs and datasets.

``RLBENCH_DATA_DIR`` if set, else the platform's user data directory for ``rlbench-suite``
(``~/.local/share/rlbench-suite`` on Linux); each folder function takes another data
directory as ``root`` (``rlbench demo --data-dir``). Commands print every path they write,
and each takes an explicit ``--out`` too; nothing is written into the current folder unasked.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV_VAR = "RLBENCH_DATA_DIR"


def data_dir() -> Path:
    """The suite's data directory (not created here)."""
    override = os.environ.get(DATA_DIR_ENV_VAR)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("rlbench-suite"))


def results_dir(root: Path | None = None) -> Path:
    """Default folder of ``rlbench eval`` results: ``<data dir>/results``."""
    return (root or data_dir()) / "results"


def result_file(namespace: str, name: str, policy: str, protocol_hash: str,
                root: Path | None = None) -> Path:  # fmt: skip
    """Where ``rlbench eval`` (and the demo) write a result by default:
    ``<results dir>/<namespace>/<env name>/<policy>-<protocol hash>.json``."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in policy)[:60]
    return results_dir(root) / namespace / name / f"{safe}-{protocol_hash[:12]}.json"


def leaderboard_dir(root: Path | None = None) -> Path:
    """Default folder of the leaderboard's embedded database: ``<data dir>/leaderboard``."""
    return (root or data_dir()) / "leaderboard"


def plot_cache_dir(root: Path | None = None) -> Path:
    """Where the leaderboard keeps the plots it drew: ``<leaderboard dir>/plot-cache``."""
    return leaderboard_dir(root) / "plot-cache"


def runs_dir(root: Path | None = None) -> Path:
    """Default folder of training runs: ``<data dir>/runs``."""
    return (root or data_dir()) / "runs"


def datasets_dir(root: Path | None = None) -> Path:
    """The dataset cache: ``<data dir>/datasets`` (a Minari data path: ``MINARI_DATASETS_PATH``
    set to it lets ``minari.load_dataset`` read the suite's datasets)."""
    return (root or data_dir()) / "datasets"
