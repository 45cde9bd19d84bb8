"""``rlbench reproduce RUN_DIR``: re-train a training run and compare (baselines.reproduce_run)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from rlbench_suite.cli.common import console, fail
from rlbench_suite.cli.train_command import _Display


def _estimate(value) -> str:  # an IntervalEstimate or None
    if value is None:
        return "-"
    return f"{value.point:.4g} [{value.low:.4g}, {value.high:.4g}]"


def reproduce_training_run(path: Path, out: Path | None, workers: int) -> None:
    """Re-train, then print version changes, the aggregates side by side and every difference;
    exit 1 if anything but wall times differs."""
    from rlbench_suite.baselines.reproduce_run import read_run, reproduce_run
    from rlbench_suite.baselines.train import TrainError

    try:
        _, record = read_run(path)
        title = f"reproduce {record['env_id']} {record['algo']} seed {record['seed']}"
        with _Display(title) as display:
            found = reproduce_run(path, out, workers=workers, on_progress=display)
    except (TrainError, ValueError, FileNotFoundError, ImportError) as exc:
        raise fail(exc) from None
    for change in found.version_changes:
        console.print(Text.assemble(("provenance:", "yellow"), f" {change}"), soft_wrap=True)
    table = Table(title=f"final evaluation, {found.episodes} episodes (95% intervals)")
    for column in ("aggregate", "recorded", "now", "difference"):
        table.add_column(column)
    for name, (before, after) in found.aggregates.items():
        if before is None and after is None:
            continue
        gap = f"{after.point - before.point:+.4g}" if before and after else "-"
        table.add_row(name, _estimate(before), _estimate(after), gap)
    console.print(table)
    console.print(f"largest per-episode return difference: {found.max_return_difference:.6g}")
    if found.again_dir is not None:
        console.print(f"re-trained run: {found.again_dir}", soft_wrap=True, highlight=False)
    if found.identical:
        console.print(Text.assemble(("reproduced", "green"), f": policy, learning curve and "
                                    f"{found.episodes} episodes identical"))
        return
    for line in found.differences:
        console.print(Text.assemble(("differs:", "red"), f" {line}"), soft_wrap=True)
    raise typer.Exit(1)
