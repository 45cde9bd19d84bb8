"""``rlbench leaderboard import``: Result files (e.g. the zoo's) into the database."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from rlbench_suite.leaderboard.store import (
    RefusedResult,
    accept_result,
    default_method_name,
    method_named,
)

ZOO_FAMILIES = {
    "ppo": "policy-gradient",
    "a2c": "policy-gradient",
    "trpo": "policy-gradient",
    "sac": "off-policy actor-critic",
    "td3": "off-policy actor-critic",
    "ddpg": "off-policy actor-critic",
    "tqc": "off-policy actor-critic",
    "dqn": "value-based",
    "qrdqn": "value-based",
}
"""Algorithm family of the zoo's algorithms, for the ranking's family filter."""


@dataclass
class ImportReport:
    """What an import did, file by file."""

    added: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)


def result_files(paths: Iterable[Path]) -> list[Path]:
    """The files named, and every ``result.json``/``*.json`` Result under folders named."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(path.rglob("result.json")) or sorted(path.rglob("*.json"))
        else:
            files.append(path)
    return files


def _zoo_method_fields(policy: dict) -> dict:
    if policy.get("kind") != "baseline":
        return {}
    algo = default_method_name(policy).removeprefix("zoo-")
    return {
        "family": ZOO_FAMILIES.get(algo),
        "authors": "rlbench-suite zoo",
        "description": f"The suite's reference {algo.upper()} (Stable-Baselines3 with the "
        "zoo's hyperparameters in baselines/hyperparams), one result per training seed.",
    }


def import_files(
    factory: sessionmaker[Session], files: Iterable[Path], method: str | None = None
) -> ImportReport:
    """Import each file in its own transaction; a refused file does not stop the others."""
    report = ImportReport()
    for path in files:
        name = str(path)
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            report.refused.append((name, f"not a readable JSON file ({exc})"))
            continue
        try:
            with factory.begin() as session:
                if method is None and isinstance(data, dict):
                    policy = data.get("policy") if isinstance(data.get("policy"), dict) else {}
                    method_named(session, default_method_name(policy), **_zoo_method_fields(policy))
                stored = accept_result(session, data, method_name=method, kind="import")
        except RefusedResult as exc:
            report.refused.append((name, str(exc)))
            continue
        (report.added if stored.created else report.existing).append(name)
    return report
