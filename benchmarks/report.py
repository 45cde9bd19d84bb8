"""The results table, the JSON file and the machine description that goes with it."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.table import Table

from benchmarks.harness import Row, Settings
from rlbench_suite.core.provenance import cpu_model, git, package_versions

REPO = Path(__file__).resolve().parents[1]


def table(rows: list[Row], title: str) -> Table:
    """One rich table with every row, subject and peer side by side."""
    t = Table(title=title)
    for name, justify in [
        ("benchmark", "left"),
        ("env", "left"),
        ("subject", "left"),
        ("peer", "left"),
        ("subject rate", "right"),
        ("peer rate", "right"),
        ("ratio", "right"),
        ("ratio IQR", "right"),
        ("goal", "right"),
        ("met", "center"),
    ]:
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        met = "" if r.met is None else "[green]yes[/]" if r.met else "[red]no[/]"
        t.add_row(
            r.benchmark,
            r.env,
            r.subject,
            r.peer,
            f"{r.subject_rate:,.0f} {r.unit}/s",
            f"{r.peer_rate:,.0f} {r.unit}/s",
            f"{r.ratio:.3f}x",
            f"{r.ratio_p25:.3f}-{r.ratio_p75:.3f}",
            "" if r.goal is None else f"{'>=' if r.goal_at_least else '<='} {r.goal:.2f}x",
            met,
        )
    return t


def machine() -> dict[str, Any]:
    """Where and with what the numbers were measured."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    status = git("status", "--porcelain")
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "cpu_usable": usable,
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": dict(package_versions()),
        "git_commit": git("rev-parse", "HEAD") or None,
        "git_dirty": None if status is None else bool(status),
    }


def write_json(path: Path, rows: list[Row], settings: Settings, argv: list[str]) -> None:
    """Write the rows with the machine description, atomically (``PATH.tmp``, then rename)."""
    doc = {
        "schema": 1,
        "command": ["python", "-m", "benchmarks.run", *argv],
        "settings": asdict(settings),
        "machine": machine(),
        "rows": [asdict(r) for r in rows],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, path)
