"""Find the suite's content folders (``envs/``, ``datasets/``, ...) in a checkout or a wheel.

In a wheel the folders are force-included under ``rlbench_suite/_content/``; in a
checkout (or an editable install) they sit next to the package at the repository root.
"""

from __future__ import annotations

import os
from pathlib import Path

CONTENT_FOLDERS = ("envs", "datasets", "baselines", "leaderboard")

_PACKAGE_DIR = Path(__file__).resolve().parent


def content_dir(name: str) -> Path:
    """Return the directory of content folder ``name`` (one of :data:`CONTENT_FOLDERS`).

    ``RLBENCH_CONTENT_ROOT`` overrides the search (a folder holding ``envs/`` etc.).
    """
    if name not in CONTENT_FOLDERS:
        raise ValueError(f"unknown content folder {name!r}; accepted: {', '.join(CONTENT_FOLDERS)}")
    override = os.environ.get("RLBENCH_CONTENT_ROOT")
    candidates = [Path(override) / name] if override else []
    candidates += [_PACKAGE_DIR / "_content" / name, _PACKAGE_DIR.parent / name]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    searched = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"content folder {name!r} not found; searched: {searched}")


def shown_path(path: str | Path) -> str:
    """``path`` as a record shows it: relative to the content root for the suite's own files
    (``baselines/hyperparams/ppo.yaml``), so no local folder leaks into published records;
    any other file as given."""
    resolved = Path(path).resolve()
    for name in CONTENT_FOLDERS:
        try:
            root = content_dir(name).resolve()
        except FileNotFoundError:
            continue
        if resolved.is_relative_to(root):
            return (Path(name) / resolved.relative_to(root)).as_posix()
    return str(path)
