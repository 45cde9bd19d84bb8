"""``rlbench demo``: the whole suite at work in one command (rlbench_suite.demo)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rlbench_suite.cli.common import app, console, errors, fail
from rlbench_suite.demo.defaults import (
    DEFAULT_DATASET,
    DEFAULT_PORT,
    QUICK_TRAIN_STEPS,
    TRAIN_CAP_SECONDS,
    TRAIN_STEPS,
)


@app.command()
def demo(
    data_dir: Annotated[
        Path | None,
        typer.Option(help="Where everything goes (default: $RLBENCH_DATA_DIR or the user data "
                     "dir): results/, leaderboard/, demo/ (mirror, downloads, quad)."),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(help="Leaderboard database URL (default: <data dir>/leaderboard/"
                     "leaderboard.sqlite)."),
    ] = None,
    quick: Annotated[
        bool, typer.Option(help=f"One card per family and {QUICK_TRAIN_STEPS:,} steps of "
                           "training (the tests).")
    ] = False,
    serve: Annotated[
        bool, typer.Option(help="Serve the site at the end until Ctrl-C (--no-serve: stop "
                           "after the summary).")
    ] = True,
    port: Annotated[
        int | None,
        typer.Option(min=0, max=65535, help=f"Port of the site on 127.0.0.1 (default "
                     f"{DEFAULT_PORT}, or a free one when taken; 0: any free port)."),
    ] = None,
    train_steps: Annotated[
        int | None,
        typer.Option(min=1, help=f"Quadrotor training's budget in env steps; it stops earlier "
                     f"at success 0.9 (default {TRAIN_STEPS}; --quick {QUICK_TRAIN_STEPS})."),
    ] = None,
    train_seconds: Annotated[
        float, typer.Option(min=1, help="A wall-time cap on quadrotor training, for a busy "
                            "machine (a run it stops says so).")
    ] = TRAIN_CAP_SECONDS,
    dataset: Annotated[
        str, typer.Option(help="The dataset to mirror and download.")
    ] = DEFAULT_DATASET,
) -> None:  # fmt: skip
    """Evaluate the shipped baselines, mirror and download a dataset, train the fast
    quadrotor, verify and rank everything on the embedded leaderboard, then serve its site."""
    from rlbench_suite.core.dataset_cards import UnknownDatasetError, get_dataset_card
    from rlbench_suite.demo import DemoError, DemoInterrupted, DemoOptions, run_demo
    from rlbench_suite.demo.report import print_wrapped
    from rlbench_suite.paths import data_dir as default_data_dir

    try:
        get_dataset_card(dataset)
    except UnknownDatasetError as exc:
        raise fail(exc) from None
    options = DemoOptions(
        data_dir=(data_dir or default_data_dir()).expanduser().resolve(), db=db, quick=quick,
        serve=serve, port=port, train_steps=train_steps, train_seconds=train_seconds,
        dataset=dataset,
    )  # fmt: skip
    demo_run = None
    try:
        demo_run = run_demo(options, console)
    except DemoError as exc:
        raise fail(exc, code=1) from None
    except DemoInterrupted as exc:
        print_wrapped(errors, f"interrupted during {exc}; what was made so far stays under "
                      f"{options.data_dir} (finished evaluations are kept and reused by the "
                      "next `rlbench demo`)")  # fmt: skip
        raise typer.Exit(130) from None
    except KeyboardInterrupt:  # between steps
        print_wrapped(errors, f"interrupted; what was made so far stays under "
                      f"{options.data_dir}")  # fmt: skip
        raise typer.Exit(130) from None
    if demo_run is not None and not options.serve:
        print_wrapped(console, f"done; serve the site with `rlbench leaderboard serve --db "
                      f"{demo_run.url}`")  # fmt: skip
