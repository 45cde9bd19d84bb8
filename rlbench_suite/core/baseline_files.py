"""Where the suite's baselines are: ``baseline:NAME`` policy specs resolved to their files
(light: no policy code, so the leaderboard can find the zoo's shipped artifacts)."""

from __future__ import annotations

import difflib
from pathlib import Path

from rlbench_suite.resources import content_dir

BASELINE_FILES = ("policy.onnx", "policy.zip")
MAX_LISTED = 300
"""Characters of available names an unknown-baseline error lists in full; past it, only the
closest names are offered (the shipped zoo has hundreds)."""
TRAINED = "policies"
"""Trained baselines live in ``baselines/policies/<env-name>/<algo>/seed-<S>/`` (as
``rlbench train`` writes a run) and are named ``<env-name>/<algo>/seed-<S>``."""


def available_baselines() -> list[str]:
    """Names of the baselines in the content: ``NAME`` for ``baselines/NAME/policy.{onnx,zip}``,
    ``<env-name>/<algo>/seed-<S>`` for the trained ones under ``baselines/policies/``."""
    try:
        root = content_dir("baselines")
    except FileNotFoundError:
        return []
    found = {
        p.parent.relative_to(root).as_posix().removeprefix(f"{TRAINED}/")
        for name in BASELINE_FILES
        for p in root.rglob(name)
        if p.is_file() and p.parent != root
    }
    return sorted(found)


def _baseline_folders(root: Path, name: str) -> list[Path]:
    """Where baseline ``name`` may be: ``root/name``, the trained ``root/policies/name``, and
    for ``<env-name>/<algo>`` its seeds' folders, lowest seed first."""
    trained = root / TRAINED / name
    seeds = sorted(
        (p for p in trained.glob("seed-*") if p.name.removeprefix("seed-").isdigit()),
        key=lambda p: int(p.name.removeprefix("seed-")),
    )
    return [root / name, trained, *seeds]


def resolve_baseline(name: str) -> Path:
    """The artifact of baseline ``name``: ``baselines/<name>/policy.onnx``, else ``policy.zip``.

    ``name`` may have ``/`` (``ppo/CartPole-v1``). Trained baselines are
    ``<env-name>/<algo>/seed-<S>`` (``baselines/policies/<env-name>/<algo>/seed-<S>/``), or
    ``<env-name>/<algo>`` for the lowest seed there. The ONNX file is preferred: it runs
    without executing code. Its sidecar is ``policy.onnx.meta.json`` (or ``.zip.meta.json``).
    """
    parts = Path(name).parts
    if not name or Path(name).is_absolute() or ".." in parts:
        raise ValueError(f"invalid baseline name {name!r}: expected a relative name like 'ppo-x'")
    try:
        folders = _baseline_folders(content_dir("baselines"), name)
    except FileNotFoundError:
        folders = []
    for folder in folders:
        for file in BASELINE_FILES:
            if (folder / file).is_file():
                return folder / file
    known = available_baselines()
    close = difflib.get_close_matches(name, known, n=3)
    grouped = _grouped(known)
    if close and len(grouped) > MAX_LISTED:  # the likely ones, not every seed of every card
        raise ValueError(f"unknown baseline {name!r}; did you mean: {', '.join(close)}? "
                         f"({len(known)} baselines are available)")  # fmt: skip
    raise ValueError(
        f"unknown baseline {name!r}; available: {grouped or 'none yet'}"
        + (f"; did you mean: {', '.join(close)}" if close else "")
    )


def _grouped(names: list[str]) -> str:
    """Baseline names with their seeds gathered: ``CartPole-v1/ppo/seed-{0,1,2}``."""
    seeds: dict[str, list[str]] = {}
    for name in names:
        base, sep, seed = name.rpartition("/seed-")
        seeds.setdefault(base if sep else name, []).append(seed if sep else "")
    return ", ".join(
        f"{base}/seed-{{{','.join(found)}}}" if any(found) else base
        for base, found in seeds.items()
    )
