"""Run the benchmarks side by side and print one table of results (see benchmarks/README.md)."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from benchmarks.harness import CLOCKS, Row, Settings, compare, discover, measure
from benchmarks.report import REPO, table, write_json

DEFAULT_JSON = REPO / "benchmarks" / "results" / "latest.json"


def parse_args(argv: list[str], known: list[str]) -> argparse.Namespace:
    """The command line, with a clear error for unknown benchmark names."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="few short rounds (a smoke test)")
    parser.add_argument(
        "--only", nargs="+", action="extend", metavar="NAME", help=f"run only these: {known}"
    )
    parser.add_argument(
        "--clock", choices=sorted(CLOCKS), default="cpu", help="cpu: thread CPU time; wall"
    )
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write rows")
    args = parser.parse_args(argv)
    for name in args.only or []:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            parser.error(f"unknown benchmark {name!r}.{hint} Known: {', '.join(known)}")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks, print the table, write the JSON; return the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    registry = discover()
    args = parse_args(argv, sorted(registry))
    settings = Settings.for_mode(args.quick, args.clock)
    out = Console()
    if not out.is_terminal:
        out.width = max(out.width, 160)
    selected = [name for name in registry if not args.only or name in args.only]
    rows: list[Row] = []
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True)) as progress:
        for name in selected:
            for case in registry[name](settings):
                task = progress.add_task(
                    f"{name} {case.env}", total=settings.rounds * len(case.variants)
                )
                times, details = measure(case, settings, lambda t=task: progress.advance(t))
                rows += compare(name, case, settings, times, details)
    mode = "quick" if settings.quick else "full"
    title = (
        f"benchmarks ({mode}: {settings.rounds} interleaved rounds, "
        f"medians of {settings.clock} time per step)"
    )
    out.print(table(rows, title))
    write_json(args.json, rows, settings, argv)
    out.print(f"rows written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
