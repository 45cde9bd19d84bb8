"""``rlbench results curves RUNS... --out FIG``: learning curves and the final-score table of
training runs (rlbench_suite.baselines.curve_report)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rlbench_suite.cli.common import console, fail
from rlbench_suite.cli.eval_commands import results_app


@results_app.command("curves")
def curves_command(
    runs: Annotated[
        list[Path],
        typer.Argument(help="Run folders, their run.json, or folders holding runs."),
    ],
    out: Annotated[Path, typer.Option(help="The figure: a .png or .svg file.")],
    table: Annotated[
        Path | None, typer.Option(help="Also write the score table as Markdown here.")
    ] = None,
) -> None:
    """Plot learning curves (IQM across seeds, 95% bootstrap bands) and print the table of
    final scores (IQM normalized score [95% CI] across seeds, budget, wall time)."""
    from rlbench_suite.baselines.curve_report import (
        find_runs,
        load_run,
        plot_curves,
        score_table,
        table_markdown,
    )

    try:
        loaded = [load_run(path) for path in find_runs(runs)]
        figure = plot_curves(loaded, out)
    except (FileNotFoundError, ValueError, KeyError) as exc:
        raise fail(exc) from None
    markdown = table_markdown(score_table(loaded))
    console.print(markdown, highlight=False, soft_wrap=True)
    if table is not None:
        table.parent.mkdir(parents=True, exist_ok=True)
        table.write_text(markdown, encoding="utf-8")
        console.print(f"table: {table}", soft_wrap=True, highlight=False)
    console.print(f"figure: {figure} ({len(loaded)} runs)", soft_wrap=True, highlight=False)
